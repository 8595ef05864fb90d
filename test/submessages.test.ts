/**
 * Widgets and submessages (Zulip's `test_widgets.py` and `test_submessage.py`): the
 * widget a `/poll` or `/todo` send attaches, `widget_content`, `POST /submessage` with
 * Zulip's checks and errors, `submessages` in message payloads and `message` events,
 * `submessage` events and who gets them, convergence of a client's cached messages,
 * and durability.
 */
import t from 'tap';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { widgetOfContent } from '../actors/rules/widgets.js';
import { Role } from '../actors/shared/types.js';
import { chatFixture, openTestStore, queueEvents, settle, storeClient, withRole, type ChatFixture, type Credentials, probeMessageId } from './helpers.js';
import { world } from './world.js';
import { applyEvent } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { fixturePath } from './paths.js';

const submit = (f: ChatFixture, who: Credentials, messageId: number, content: unknown, msgType = 'widget') =>
  f.call(who, 'POST', '/api/v1/submessage', { message_id: messageId, msg_type: msgType, content: typeof content === 'string' ? content : JSON.stringify(content) });

/** Carol is not in general; `send` posts to its topic widgets, `message` reads one back. */
async function widgets() {
  const w = await world({ users: { alice: 'Alice', bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'alice', 'bob'] } });
  const send = async (who: Credentials, content: string, extra: Record<string, unknown> = {}): Promise<number> => {
    const r = await w.f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'widgets', content, ...extra });
    if (r.status !== 200) throw new Error(r.body);
    return r.json.id as number;
  };
  const message = async (who: Credentials, id: number) => (await w.f.call(who, 'GET', `/api/v1/messages/${id}`)).json.message;
  return { ...w, send, message };
}

t.test("the widget data Zulip's parser gives (get_widget_data)", async (t) => {
  for (const content of ['', '     ', 'this is an ordinary message', '/bogus_command', '/me shrugs', 'use /poll', ' /poll leading space']) {
    t.equal(widgetOfContent(content), null, JSON.stringify(content));
  }
  t.same(widgetOfContent('/todo'), { widget_type: 'todo', extra_data: { task_list_title: '', tasks: [] } });
  t.same(widgetOfContent('/todo Title'), { widget_type: 'todo', extra_data: { task_list_title: 'Title', tasks: [] } });
  t.same(widgetOfContent('/todo\nTask'), { widget_type: 'todo', extra_data: { task_list_title: '', tasks: [{ task: 'Task', desc: '' }] } });
  t.same(widgetOfContent('/todo   School Work\nchemistry homework: assignment 2\nstudy for english test: pages 56-67'), {
    widget_type: 'todo', extra_data: { task_list_title: 'School Work', tasks: [{ task: 'chemistry homework', desc: 'assignment 2' }, { task: 'study for english test', desc: 'pages 56-67' }] },
  });
  t.same(widgetOfContent('/todo Example Task List Title\n\n    task without description\ntask: with description    \n\n - task as list : also with description'), {
    widget_type: 'todo',
    extra_data: { task_list_title: 'Example Task List Title', tasks: [{ task: 'task without description', desc: '' }, { task: 'task', desc: 'with description' }, { task: 'task as list', desc: 'also with description' }] },
  });
  t.same(widgetOfContent('/poll What is your favorite color?\n\nRed\nGreen  \n\n   Blue\n - Yellow'), { widget_type: 'poll', extra_data: { question: 'What is your favorite color?', options: ['Red', 'Green', 'Blue', 'Yellow'] } });
  t.same(widgetOfContent('/poll'), { widget_type: 'poll', extra_data: { question: '', options: [] } });
  t.same(widgetOfContent('/poll\r\n* one\r\n-two\r\n**bold**'), { widget_type: 'poll', extra_data: { question: '', options: ['one', 'two', '*bold**'] } }, 'one list marker comes off, as Zulip\'s re.sub does');
});

t.test('a /poll, end to end: widget, votes, a new option, the question, events and payloads', async (t) => {
  const { f, alice, bob, carol, send, message } = await widgets();
  t.teardown(f.stop);
  const qBob = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['message', 'submessage'] })).json.queue_id as string;
  const qCarol = (await f.call(carol, 'POST', '/api/v1/register', { event_types: ['submessage'] })).json.queue_id as string;
  const poll = await send(alice, '/poll Lunch? ☕\nPizza\n- Soup');
  const widget = { id: 1, message_id: poll, sender_id: alice.user_id, msg_type: 'widget', content: '{"widget_type": "poll", "extra_data": {"question": "Lunch? \\u2615", "options": ["Pizza", "Soup"]}}' };
  const [sentEvent] = await queueEvents(f, bob, qBob, 'message');
  t.same(sentEvent.message.submessages, [widget], "the message event carries the widget, written as Zulip's json.dumps writes it");
  t.same(JSON.parse(widget.content), { widget_type: 'poll', extra_data: { question: 'Lunch? ☕', options: ['Pizza', 'Soup'] } });
  t.same((await message(carol, poll)).submessages, [widget], 'GET /messages/{id}, to anyone who may read it');

  const vote = { type: 'vote', key: 'canned,0', vote: 1 };
  const voted = await submit(f, bob, poll, vote);
  t.same([voted.status, voted.json], [200, { result: 'success', msg: '' }], voted.body);
  t.equal((await submit(f, carol, poll, { type: 'new_option', idx: 1, option: 'Salad' })).status, 200, 'anyone who may read a public channel may take part');
  t.equal((await submit(f, alice, poll, { type: 'question', question: 'Dinner?' })).status, 200, 'the author edits the question');
  const notAuthor = await submit(f, bob, poll, { type: 'question', question: 'Mine now' });
  t.same([notAuthor.status, notAuthor.json.code, notAuthor.json.msg], [400, 'BAD_REQUEST', "You can't edit a question unless you are the author."]);

  const events = await queueEvents(f, bob, qBob, 'submessage');
  t.same(events[0], { type: 'submessage', msg_type: 'widget', message_id: poll, submessage_id: 2, sender_id: bob.user_id, content: JSON.stringify(vote) }, "Zulip's event shape");
  t.same(events.map((e) => [e.submessage_id, e.sender_id]), [[2, bob.user_id], [3, carol.user_id], [4, alice.user_id]]);
  t.same(await queueEvents(f, carol, qCarol, 'submessage'), [], 'a reader who never received the message is not told (Zulip tells those who hold it)');

  const all = (await message(alice, poll)).submessages;
  t.same(all.map((s: any) => [s.id, s.sender_id, s.msg_type]), [[1, alice.user_id, 'widget'], [2, bob.user_id, 'widget'], [3, carol.user_id, 'widget'], [4, alice.user_id, 'widget']], 'in id order');
  const page = await f.call(bob, 'GET', '/api/v1/messages', { anchor: poll, num_before: 0, num_after: 0 });
  t.same(page.json.messages[0].submessages, all, 'GET /messages shows the same');

  const edit = await f.call(alice, 'PATCH', `/api/v1/messages/${poll}`, { content: 'no longer a poll' });
  t.same([edit.status, edit.json.msg], [400, 'Widgets cannot be edited.']);
  t.equal((await f.call(alice, 'PATCH', `/api/v1/messages/${poll}`, { topic: 'moved' })).status, 200, 'a move is not an edit of the content');
  t.same((await message(alice, poll)).submessages, all, 'and its submessages move with it');
  const plain = await send(alice, 'just text');
  t.same((await message(alice, plain)).submessages, [], 'an ordinary message has none');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/messages/${plain}`, { content: '/poll now?' })).status, 200);
  t.same((await message(alice, plain)).submessages, [], 'an edit never makes a widget, as in Zulip');
});

t.test('a /todo, and submessages on messages without a widget', async (t) => {
  const { f, alice, bob, send, message } = await widgets();
  t.teardown(f.stop);
  const todo = await send(alice, '/todo Chores\nDishes: tonight');
  t.same(JSON.parse((await message(bob, todo)).submessages[0].content), { widget_type: 'todo', extra_data: { task_list_title: 'Chores', tasks: [{ task: 'Dishes', desc: 'tonight' }] } });
  for (const data of [{ type: 'new_task', key: 7, task: 'eat', desc: '', completed: false }, { type: 'strike', key: '5,9' }]) {
    t.equal((await submit(f, bob, todo, data)).status, 200, data.type);
  }
  t.equal((await submit(f, alice, todo, { type: 'new_task_list_title', title: 'Home' })).status, 200);
  t.same((await submit(f, bob, todo, { type: 'new_task_list_title', title: 'Mine' })).json.msg, "You can't edit the task list title unless you are the author.");

  // Zulip checks only JSON on a message with no widget, and its sender must go first.
  const plain = await send(alice, 'no widget here');
  t.same((await submit(f, bob, plain, {})).json.msg, 'You cannot attach a submessage to this message.');
  t.equal((await submit(f, alice, plain, { name: 'alice', salary: 20 }, 'whatever')).status, 200, 'its sender may attach anything that is JSON');
  t.equal((await submit(f, bob, plain, {})).status, 200, 'then the others may');
  t.same((await message(alice, plain)).submessages.map((s: any) => [s.msg_type, s.content]), [['whatever', '{"name":"alice","salary":20}'], ['widget', '{}']], 'content is kept as sent');
});

t.test('a scheduled /poll gets its widget when it is sent', async (t) => {
  const { f, alice, message } = await widgets();
  t.teardown(f.stop);
  const general = channelIdByName(f.runtime, 1, 'general');
  const at = Math.floor(f.clock.t / 1000) + 3600;
  const scheduled = await f.call(alice, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'later', content: '/poll Later?\nyes', scheduled_delivery_timestamp: at });
  t.equal(scheduled.status, 200, scheduled.body);
  f.clock.t = at * 1000;
  t.equal(await f.runtime.scheduled.sweep(), 1);
  const newest = await f.call(alice, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: general }, { operator: 'topic', operand: 'later' }] });
  const sent = newest.json.messages[0].id as number;
  t.equal((await message(alice, sent)).submessages[0].id, 1, 'checking the scheduled message assigned no submessage id: the first one given is its widget\'s');
  t.same((await message(alice, sent)).submessages.map((s: any) => [s.id, JSON.parse(s.content)]), [[1, { widget_type: 'poll', extra_data: { question: 'Later?', options: ['yes'] } }]]);
});

t.test("Zulip's errors", async (t) => {
  const { f, alice, bob, carol, send } = await widgets();
  t.teardown(f.stop);
  const poll = await send(alice, '/poll Preference?\n\nyes\nno');
  const todo = await send(alice, '/todo');
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: '/poll secret?' })).json.id as number;
  const cases: Array<[Credentials, number, string, string]> = [
    [bob, poll, 'bogus', 'Invalid json for submessage'],
    [bob, poll, '""', 'poll data is not a dict'],
    [bob, poll, '[]', 'poll data is not a dict'],
    [bob, poll, '{"type": 5}', 'poll data["type"] is not a string'],
    [bob, poll, '{"type": "bogus"}', 'Unknown type for poll data: bogus'],
    [bob, poll, '{"type": "vote"}', 'key key is missing from poll data'],
    [bob, poll, '{"type": "vote", "key": "1,1,", "vote": 99}', 'Invalid poll data["vote"]'],
    [bob, poll, '{"type": "vote", "key": "1,1", "vote": 1, "extra": 1}', 'Unexpected arguments: extra'],
    [alice, poll, '{"type": "question"}', 'question key is missing from poll data'],
    [alice, poll, '{"type": "question", "question": 7}', 'poll data["question"] is not a string'],
    [bob, poll, '{"type": "new_option"}', 'option key is missing from poll data'],
    [bob, poll, '{"type": "new_option", "idx": 7, "option": 999}', 'poll data["option"] is not a string'],
    [bob, poll, '{"type": "new_option", "idx": -1, "option": "pizza"}', 'poll data["idx"] is too small'],
    [bob, poll, '{"type": "new_option", "idx": 1001, "option": "pizza"}', 'poll data["idx"] is too large'],
    [bob, poll, '{"type": "new_option", "idx": "bogus", "option": "maybe"}', 'poll data["idx"] is not an integer'],
    [bob, todo, '{"type": "bogus"}', 'Unknown type for todo data: bogus'],
    [bob, todo, '{"type": "new_task"}', 'key key is missing from todo data'],
    [bob, todo, '{"type": "new_task", "key": 7, "task": 7, "desc": "", "completed": false}', 'todo data["task"] is not a string'],
    [bob, todo, '{"type": "new_task", "key": -1, "task": "eat", "desc": "", "completed": false}', 'todo data["key"] is too small'],
    [bob, todo, '{"type": "new_task", "key": 1001, "task": "eat", "desc": "", "completed": false}', 'todo data["key"] is too large'],
    [bob, todo, '{"type": "new_task", "key": 1, "task": "eat", "desc": "", "completed": "no"}', 'todo data["completed"] is not a boolean'],
    [bob, todo, '{"type": "strike"}', 'key key is missing from todo data'],
    [bob, todo, '{"type": "strike", "key": 999}', 'todo data["key"] is not a string'],
    [carol, dm, '{"type": "vote", "key": "canned,0", "vote": 1}', 'Invalid message(s)'],
    [bob, 999_999, '{}', 'Invalid message(s)'],
    [bob, -1, '{}', 'Invalid message(s)'],
  ];
  for (const [who, id, content, msg] of cases) {
    const r = await submit(f, who, id, content);
    t.same([r.status, r.json.result, r.json.code, r.json.msg], [400, 'error', 'BAD_REQUEST', msg], `${id === poll ? 'poll' : id === todo ? 'todo' : id} ${content}`);
  }
  const missing = await f.call(bob, 'POST', '/api/v1/submessage', { message_id: poll, msg_type: 'widget' });
  t.same([missing.status, missing.json.code, missing.json.msg], [400, 'REQUEST_VARIABLE_MISSING', "Missing 'content' argument"]);
  t.equal((await submit(f, bob, dm, { type: 'vote', key: 'canned,0', vote: -1 })).status, 200, 'a participant of a direct message may vote');
  t.equal((await submit(f, bob, poll, { type: 'vote', key: 'no such option', vote: true })).status, 200, "only types are checked, and a JSON true is Python's 1");

  // Nothing refused was kept.
  t.same((await f.call(alice, 'GET', `/api/v1/messages/${poll}`)).json.message.submessages.length, 2);
});

t.test('widget_content: a zform from an API client, checked as Zulip checks it', async (t) => {
  const { f, alice, bob, send, message } = await widgets();
  t.teardown(f.stop);
  const zform = { widget_type: 'zform', extra_data: { type: 'choices', heading: 'Options:', choices: [{ short_name: 'a', long_name: 'foo', reply: 'bar' }] } };
  const id = await send(alice, 'does-not-matter', { widget_content: JSON.stringify(zform) });
  const m = await message(bob, id);
  t.equal(m.content, '<p>does-not-matter</p>', 'the content is the message, as sent');
  t.same(m.submessages.map((s: any) => [s.msg_type, JSON.parse(s.content)]), [['widget', zform]]);
  t.same(JSON.parse((await message(bob, await send(alice, '/poll ignored', { widget_content: JSON.stringify(zform) }))).submessages[0].content).widget_type, 'zform', 'widget_content wins over a /poll');

  const errors: Array<[unknown, string]> = [
    ['{{{{{{', 'Widgets: API programmer sent invalid JSON content'],
    [5, 'Widgets: widget_content is not a dict'],
    [{}, 'Widgets: widget_type is not in widget_content'],
    [{ color: 'red', foo: 'bar', x: 2 }, 'Widgets: widget_type is not in widget_content'],
    [{ widget_type: 'whatever' }, 'Widgets: extra_data is not in widget_content'],
    [{ widget_type: 'zform', extra_data: 4 }, 'Widgets: extra_data is not a dict'],
    [{ widget_type: 'bogus', extra_data: {} }, 'Widgets: unknown widget type: bogus'],
    [{ widget_type: 'poll', extra_data: { question: 'q', options: [] } }, 'Widgets: unknown widget type: poll'],
    [{ widget_type: 'zform', extra_data: {} }, 'Widgets: zform is missing type field'],
    [{ widget_type: 'zform', extra_data: { type: 'bogus' } }, 'Widgets: unknown zform type: bogus'],
    [{ widget_type: 'zform', extra_data: { type: 'choices' } }, 'Widgets: heading key is missing from extra_data'],
    [{ widget_type: 'zform', extra_data: { type: 'choices', heading: 'h' } }, 'Widgets: choices key is missing from extra_data'],
    [{ widget_type: 'zform', extra_data: { type: 'choices', heading: 'h', choices: 99 } }, 'Widgets: extra_data["choices"] is not a list'],
    [{ widget_type: 'zform', extra_data: { type: 'choices', heading: 'h', choices: [99] } }, 'Widgets: extra_data["choices"][0] is not a dict'],
    [{ widget_type: 'zform', extra_data: { type: 'choices', heading: 'h', choices: [{ long_name: 'foo', reply: 'bar' }] } }, 'Widgets: short_name key is missing from extra_data["choices"][0]'],
  ];
  const probe = () => probeMessageId(f);
  const before = await probe();
  for (const [content, msg] of errors) {
    const raw = typeof content === 'string' ? content : JSON.stringify(content);
    const r = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'widgets', content: 'x', widget_content: raw });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', msg], raw);
  }
  const dm = await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'x', widget_content: '{}' });
  t.same(dm.json.msg, 'Widgets: widget_type is not in widget_content', 'direct messages too');
  t.equal(await probe(), before + 1, 'nothing was sent');
});

t.test('who may attach, and who is told: private channels, guests, direct messages, archived channels', async (t) => {
  const { f, alice, bob, carol } = await widgets();
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', Role.GUEST);
  // A private channel with protected history: only subscribers who received a message hold it.
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'secret' }], principals: [f.owner.user_id, alice.user_id], invite_only: true, history_public_to_subscribers: false });
  const poll = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'secret', topic: 't', content: '/poll ok?\nyes' })).json.id as number;
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'secret' }], principals: [bob.user_id] });
  const queues = new Map<Credentials, string>();
  for (const who of [f.owner, alice, bob, carol]) queues.set(who, (await f.call(who, 'POST', '/api/v1/register', { event_types: ['submessage'] })).json.queue_id);
  const vote = { type: 'vote', key: 'canned,0', vote: 1 };
  t.same((await submit(f, bob, poll, vote)).json.msg, 'Invalid message(s)', 'a later subscriber of protected history never received it');
  t.same((await submit(f, carol, poll, vote)).json.msg, 'Invalid message(s)', 'a non-subscriber of a private channel');
  t.equal((await submit(f, f.owner, poll, vote)).status, 200);
  for (const [who, expected] of [[f.owner, 1], [alice, 1], [bob, 0], [carol, 0]] as const) {
    t.equal((await queueEvents(f, who, queues.get(who)!, 'submessage')).length, expected, `${who.email} told: ${expected === 1}`);
  }

  // A public channel: a guest who is not subscribed may not take part.
  const open = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: '/poll open?' })).json.id as number;
  t.same((await submit(f, guest, open, vote)).json.msg, 'Invalid message(s)');
  // Archiving the channel puts its messages out of reach of changes, as in Zulip.
  const general = channelIdByName(f.runtime, 1, 'general');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${general}`)).status, 200);
  t.same((await submit(f, alice, open, vote)).json.msg, 'Invalid message(s)');
});

t.test('deleting a message takes its submessages with it', async (t) => {
  const { f, alice, bob, send } = await widgets();
  t.teardown(f.stop);
  const poll = await send(alice, '/poll gone?');
  t.equal((await submit(f, bob, poll, { type: 'vote', key: 'canned,0', vote: 1 })).status, 200);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/messages/${poll}`)).status, 200);
  t.same((await submit(f, bob, poll, { type: 'vote', key: 'canned,0', vote: -1 })).json.msg, 'Invalid message(s)');
  t.same((await f.call(f.owner, 'GET', `/api/v1/messages/${poll}`)).json.msg, 'Invalid message(s)', 'the message is gone');
});

t.test("a message of another organization is one that does not exist", async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const org = beta.organization_id;
  // Its owner has user id 1, as this organization's owner has: a check by sender id alone would let this through.
  const foreignDm = (await f.runtime.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { user_ids: [1] }, content: '/poll theirs?', client: 't', read_by_sender: false })).id;
  const r = await submit(f, f.owner, foreignDm, { type: 'vote', key: 'canned,0', vote: 1 });
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Invalid message(s)']);
  const theirs = await f.call(beta.owner, 'GET', `/api/v1/messages/${foreignDm}`, {}, { headers: { host: 'beta.localhost' } });
  t.same(theirs.json.message.submessages.length, 1, 'theirs is untouched');
});

t.test("convergence: a client's cached messages plus the events equal a fresh fetch", async (t) => {
  const { f, alice, bob, send } = await widgets();
  t.teardown(f.stop);
  const first = await send(alice, '/poll Before?\nA\nB');
  await submit(f, bob, first, { type: 'vote', key: 'canned,0', vote: 1 });
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['message', 'submessage', 'delete_message'] });
  const fetchAll = async () => (await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100 })).json.messages as any[];
  const cache = { messages: await fetchAll() };

  await submit(f, alice, first, { type: 'new_option', idx: 2, option: 'C' });
  const second = await send(alice, '/todo Later\nOne');
  await submit(f, bob, second, { type: 'strike', key: '0,canned' });
  const doomed = await send(alice, '/poll doomed?');
  await submit(f, bob, doomed, { type: 'vote', key: 'canned,0', vote: 1 });
  await f.call(alice, 'DELETE', `/api/v1/messages/${doomed}`);
  await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'x', widget_content: JSON.stringify({ widget_type: 'zform', extra_data: { type: 'choices', heading: 'h', choices: [] } }) });
  await settle();

  // The client model, as Zulip's web client: a message event adds the message, a submessage event appends to its list, a deletion drops it.
  for (const e of await queueEvents(f, bob, reg.json.queue_id)) applyEvent(cache, e, bob.user_id);
  const fresh = await fetchAll();
  const submessagesOf = (ms: any[]) => ms.map((m) => [m.id, m.submessages]);
  t.same(submessagesOf([...cache.messages].sort((a, b) => a.id - b.id)), submessagesOf(fresh), 'every message\'s submessages');
  t.equal(fresh.length, 3);
  t.equal(fresh.flatMap((m) => m.submessages).length, 6);
});

t.test('submessages survive a restart, from the log and from a snapshot, and ids go on', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-submessages-'));
  let store = openTestStore(dir);
  const made = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const owner = { email: made.owner.email, api_key: made.owner.api_key };
  let api = storeClient(store, owner);
  const dm = (await api('POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([made.owner.user_id]), content: '/poll durable?\nyes' })).id as number;
  await api('POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'general' }]) });
  const channelPoll = (await api('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: '/todo Tasks' })).id as number;
  const vote = (id: number, content: unknown) => api('POST', '/api/v1/submessage', { message_id: id, msg_type: 'widget', content: JSON.stringify(content) });
  t.equal((await vote(dm, { type: 'vote', key: 'canned,0', vote: 1 })).result, 'success');
  await store.snapshot();
  t.equal((await vote(dm, { type: 'vote', key: 'canned,0', vote: -1 })).result, 'success');
  t.equal((await vote(channelPoll, { type: 'new_task', key: 1, task: 't', desc: '', completed: false })).result, 'success');
  const before = [(await api('GET', `/api/v1/messages/${dm}`)).message.submessages, (await api('GET', `/api/v1/messages/${channelPoll}`)).message.submessages];
  await store.close();

  store = openTestStore(dir);
  t.teardown(() => store.close());
  api = storeClient(store, owner);
  const after = [(await api('GET', `/api/v1/messages/${dm}`)).message.submessages, (await api('GET', `/api/v1/messages/${channelPoll}`)).message.submessages];
  t.same(after, before, 'the same submessages, ids and order');
  t.same(before.map((list: any[]) => list.map((s) => s.id)), [[1, 3, 4], [2, 5]]);
  t.same(after.flat().map((s: any) => s.id).sort((a: number, b: number) => a - b), [1, 2, 3, 4, 5], 'the highest id given is 5');
  t.equal((await vote(dm, { type: 'vote', key: 'canned,0', vote: 1 })).result, 'success');
  t.same((await api('GET', `/api/v1/messages/${dm}`)).message.submessages.map((s: any) => s.id), [1, 3, 4, 6], 'a new id after the highest ever given');
  t.equal((await api('GET', `/api/v1/messages/${dm}`)).message.id, dm);
});

t.test('a data directory written before submessages existed loads with none, and widgets work on it', async (t) => {
  const fixture = fixturePath('format-v1');
  const dir = mkdtempSync(join(tmpdir(), 'parley-submessages-v1-'));
  cpSync(join(fixture, 'store'), dir, { recursive: true });
  const owner = JSON.parse(readFileSync(join(fixture, 'credentials.json'), 'utf8')).owner;
  let store = openTestStore(dir);
  let api = storeClient(store, owner);
  const old = (await api('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 1000 })).messages as any[];
  t.ok(old.length > 0 && old.every((m) => Array.isArray(m.submessages) && m.submessages.length === 0), 'older message records read as having none');
  const poll = (await api('POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([owner.user_id]), content: '/poll still?\nyes' })).id as number;
  t.same((await api('GET', `/api/v1/messages/${poll}`)).message.submessages.map((s: any) => s.id), [1], 'a server chunk without the field: none assigned, so the first id is 1');
  t.equal((await api('POST', '/api/v1/submessage', { message_id: poll, msg_type: 'widget', content: '{"type":"vote","key":"canned,0","vote":1}' })).result, 'success');
  await store.close();
  store = openTestStore(dir);
  t.teardown(() => store.close());
  api = storeClient(store, owner);
  t.same((await api('GET', `/api/v1/messages/${poll}`)).message.submessages.map((s: any) => [s.id, s.sender_id]), [[1, owner.user_id], [2, owner.user_id]]);
});
