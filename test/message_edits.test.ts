/**
 * `PATCH /messages/{message_id}` and `GET /messages/{message_id}/history`: content
 * edits and their mention flags, topic moves in each propagate mode, resolving and
 * unresolving, moves between channels (who loses the messages, who is told), the
 * notification bot's breadcrumbs, permissions and time limits per role, the error of
 * each rule, convergence of register plus events, and durability.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOTIFICATION_BOT } from '../actors/rules/system_bots.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { type Store } from '../src/store.js';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, queueEvents, type ChatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { world } from './world.js';
import { verifyState } from './client_model.js';

const CHANNELS = { users: { alice: 'Alice', bob: 'Bob' }, channels: { general: ['owner', 'alice', 'bob'], design: ['owner', 'alice', 'bob'] } } as const;

const send = async (f: ChatFixture, who: Credentials, topic: string, content = 'x', to = 'general'): Promise<number> =>
  (await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to, topic, content })).json.id;


const patch = (f: ChatFixture, who: Credentials, id: number, params: Record<string, unknown>) => f.call(who, 'PATCH', `/api/v1/messages/${id}`, params);

async function register(f: ChatFixture, who: Credentials, types = ['update_message', 'message', 'delete_message'], capabilities: Record<string, boolean> = {}): Promise<string> {
  const res = await f.call(who, 'POST', '/api/v1/register', { event_types: types, client_capabilities: JSON.stringify(capabilities) });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.queue_id;
}

const fetchOne = async (f: ChatFixture, who: Credentials, id: number) => (await f.call(who, 'GET', `/api/v1/messages/${id}`)).json.message;
const topicsOf = async (f: ChatFixture, who: Credentials, streamId: number) =>
  (await f.call(who, 'GET', `/api/v1/users/me/${streamId}/topics`)).json.topics.map((x: any) => x.name);

t.test('a content edit: the new content, its history, the event and the mention flags', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const id = await send(f, alice, 'plans', 'hello');
  const q = await register(f, bob);
  f.clock.t += 5000;
  const res = await patch(f, alice, id, { content: 'hello @**Bob**' });
  t.same([res.status, res.json], [200, { result: 'success', msg: '', detached_uploads: [] }], res.body);
  const m = await fetchOne(f, bob, id);
  t.match(m.content, /user-mention/);
  t.equal(m.last_edit_timestamp, Math.floor(f.clock.t / 1000));
  t.notOk('last_moved_timestamp' in m, 'a content edit is not a move');
  t.ok(m.flags.includes('mentioned'), 'the edit mentions Bob now');
  t.same(m.edit_history, [{ user_id: alice.user_id, timestamp: m.last_edit_timestamp, prev_content: 'hello', prev_rendered_content: '<p>hello</p>' }]);
  const [event] = await queueEvents(f, bob, q, 'update_message');
  t.match(event, {
    type: 'update_message', user_id: alice.user_id, message_id: id, message_ids: [id], rendering_only: false, stream_id: channels.general, stream_name: 'general',
    orig_content: 'hello', orig_rendered_content: '<p>hello</p>', content: 'hello @**Bob**', is_me_message: false,
  });
  t.ok(event.flags.includes('mentioned'), 'the event carries the new flags');
  t.notOk('propagate_mode' in event || 'orig_subject' in event, 'no move fields for a content edit');
  await patch(f, alice, id, { content: 'hello again' });
  t.notOk((await fetchOne(f, bob, id)).flags.includes('mentioned'), 'a later edit takes the mention away again');
  const history = (await f.call(bob, 'GET', `/api/v1/messages/${id}/history`)).json.message_history;
  t.same(history.map((h: any) => h.content), ['hello', 'hello @**Bob**', 'hello again'], 'oldest first, each with the content after it');
  t.equal(history[2].prev_content, 'hello @**Bob**');
  t.match(history[2].content_html_diff, /highlight_text_(inserted|deleted)/);
  const blank = await patch(f, alice, id, { content: '   ' });
  t.equal(blank.status, 200);
  t.equal((await fetchOne(f, alice, id)).content, '<p>(deleted)</p>', 'blank content is "(deleted)", as in Zulip');
});

t.test('content edit rules and their errors', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const id = await send(f, alice, 'plans', 'hello');
  const err = async (who: Credentials, params: Record<string, unknown>, msg: string, code = 'BAD_REQUEST', mid = id) => {
    const res = await patch(f, who, mid, params);
    t.same([res.status, res.json.code, res.json.msg], [400, code, msg], JSON.stringify(params));
  };
  await err(bob, { content: 'mine now' }, "You don't have permission to edit this message");
  await err(alice, {}, 'Nothing to change');
  await err(alice, { content: 'x', propagate_mode: 'change_all' }, 'Invalid propagate_mode without topic edit');
  await err(alice, { content: 'x', stream_id: channels.design }, 'Cannot change message content while changing channel');
  await err(alice, { content: 'x', prev_content_sha256: 'beef' }, "'prev_content_sha256' value does not match the expected value.", 'EXPECTATION_MISMATCH');
  const good = createHash('sha256').update('hello').digest('hex');
  t.equal((await patch(f, alice, id, { content: 'checked', prev_content_sha256: good })).status, 200, 'the right hash is accepted');
  await err(alice, { content: 'x' }, 'Invalid message(s)', 'BAD_REQUEST', 99999);
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'psst' })).json.id;
  await err(alice, { topic: 'new' }, 'Direct messages cannot have topics.', 'BAD_REQUEST', dm);
  await err(alice, { stream_id: channels.general }, 'Direct messages cannot be moved to channels.', 'BAD_REQUEST', dm);
  t.equal((await patch(f, alice, dm, { content: 'psst!' })).status, 200, 'a direct message content edit');
  t.equal((await fetchOne(f, bob, dm)).content, '<p>psst!</p>');
  f.clock.t += 700_000;
  await err(alice, { content: 'late' }, 'The time limit for editing this message has passed');
  t.equal((await patch(f, f.owner, id, { content: 'admin' })).json.msg, "You don't have permission to edit this message", 'nobody edits another user\'s content, administrators included');
});

t.test('topic moves in each propagate mode, with breadcrumbs', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const general = channels.general;
  const ids = [await send(f, alice, 'plans', 'one'), await send(f, bob, 'plans', 'two'), await send(f, alice, 'plans', 'three')];
  const other = await send(f, alice, 'other', 'elsewhere');
  const q = await register(f, bob);
  let res = await patch(f, alice, ids[1], { topic: 'later', propagate_mode: 'change_later', send_notification_to_new_thread: false });
  t.equal(res.status, 200, res.body);
  let [event] = await queueEvents(f, bob, q, 'update_message');
  t.match(event, { propagate_mode: 'change_later', orig_subject: 'plans', subject: 'later', topic_links: [], message_ids: [ids[1], ids[2]], stream_id: general });
  t.notOk('new_stream_id' in event);
  t.same((await fetchOne(f, bob, ids[0])).subject, 'plans', 'change_later leaves the earlier message');
  t.same((await fetchOne(f, bob, ids[2])).subject, 'later');
  t.ok((await fetchOne(f, bob, ids[2])).last_moved_timestamp, 'a moved message says when');
  t.same(await topicsOf(f, bob, general), ['other', 'later', 'plans'], 'newest first');

  res = await patch(f, bob, ids[2], { topic: 'single' });
  t.equal(res.status, 200, 'anyone may move topics by default (everyone group)');
  t.same((await fetchOne(f, bob, ids[1])).subject, 'later', 'change_one moves one');
  const crumbs = (await queueEvents(f, bob, q, 'message')).map((e: any) => e.message);
  const crumb = crumbs.find((m: any) => m.subject === 'single');
  t.equal(crumb.sender_id, NOTIFICATION_BOT.user_id, 'the notification bot posts the breadcrumb');
  t.equal(crumb.sender_email, 'notification-bot@zulip.com');
  t.equal(crumb.sender_realm_str, 'zulipinternal');
  t.match(crumb.content, /moved here from/);
  const bySender = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: 'sender', operand: 'notification-bot@zulip.com' }]) });
  t.same(bySender.json.messages.map((m: any) => m.id), [crumb.id], 'a sender: narrow finds the bot\'s messages');

  res = await patch(f, alice, ids[0], { topic: 'all', propagate_mode: 'change_all', send_notification_to_old_thread: true });
  t.equal(res.status, 200);
  [event] = (await queueEvents(f, bob, q, 'update_message')).slice(-1);
  t.same(event.message_ids, [ids[0]], 'change_all moves the whole topic (one message left in it)');
  const last = (await queueEvents(f, bob, q, 'message')).map((e: any) => e.message);
  t.ok(last.some((m: any) => m.subject === 'plans' && /This topic was moved to/.test(m.content)), 'the old thread is told when asked');
  t.ok(last.some((m: any) => m.subject === 'all' && /This topic was moved here from/.test(m.content)), 'and the new thread by default');
  t.equal((await fetchOne(f, bob, other)).subject, 'other', 'other topics stay');
  const err = await patch(f, alice, other, { topic: '✔' });
  t.same([err.status, err.json.msg], [400, 'General chat cannot be marked as resolved']);
});

t.test('resolving and unresolving a topic', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const ids = [await send(f, alice, 'bug', 'a'), await send(f, alice, 'bug', 'b')];
  const q = await register(f, bob);
  const res = await patch(f, bob, ids[0], { topic: '✔ bug', propagate_mode: 'change_all' });
  t.equal(res.status, 200, res.body);
  const notices = (await queueEvents(f, bob, q, 'message')).map((e: any) => e.message);
  t.equal(notices.length, 1, 'one notice, and no "moved here" breadcrumb');
  t.equal(notices[0].content.includes('has marked this topic as resolved'), true);
  t.equal(notices[0].subject, '✔ bug');
  const [event] = await queueEvents(f, bob, q, 'update_message');
  t.same(event.message_ids, ids);
  t.notOk('last_moved_timestamp' in (await fetchOne(f, bob, ids[0])), 'resolving is not a move');
  t.same(await topicsOf(f, bob, channels.general), ['✔ bug']);
  t.ok((await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: JSON.stringify([{ operator: 'is', operand: 'resolved' }]) })).json.messages.length >= 2, 'is:resolved finds them');
  // Unresolving within the grace period removes the notice instead of adding one.
  f.clock.t += 10_000;
  t.equal((await patch(f, bob, ids[0], { topic: 'bug', propagate_mode: 'change_all' })).status, 200);
  t.same((await queueEvents(f, bob, q, 'delete_message')).map((e: any) => e.message_id), [notices[0].id], 'the fresh notice goes');
  t.same(await topicsOf(f, bob, channels.general), ['bug']);
  // Later, unresolving posts a notice.
  await patch(f, bob, ids[0], { topic: '✔ bug', propagate_mode: 'change_all' });
  f.clock.t += 120_000;
  await patch(f, bob, ids[0], { topic: 'bug', propagate_mode: 'change_all' });
  const all = (await queueEvents(f, bob, q, 'message')).map((e: any) => e.message.content);
  t.ok(all.some((c: string) => c.includes('has marked this topic as unresolved')));
});

t.test('moving to another channel: who keeps the messages, who is told', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), principals: JSON.stringify([f.owner.user_id, alice.user_id]), invite_only: true });
  await f.subscribe(f.owner, 'general', [carol.user_id]);
  const secret = (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'secret' })).json.stream_id as number;
  const general = channels.general;
  const ids = [await send(f, alice, 'move me', 'one'), await send(f, alice, 'move me', 'two')];
  const [qBob, qAlice] = [await register(f, bob, undefined, { bulk_message_deletion: true }), await register(f, alice)];
  const res = await patch(f, alice, ids[0], { stream_id: secret, propagate_mode: 'change_all' });
  t.equal(res.status, 200, res.body);
  const [event] = await queueEvents(f, alice, qAlice, 'update_message');
  t.match(event, { stream_id: general, new_stream_id: secret, orig_subject: 'move me', message_ids: ids, propagate_mode: 'change_all' });
  t.notOk('subject' in event, 'no subject when only the channel changes');
  t.same((await queueEvents(f, bob, qBob, 'delete_message')).map((e: any) => e.message_ids).flat(), ids, 'Bob cannot read the private channel: the messages are gone for him');
  t.same((await queueEvents(f, bob, qBob, 'update_message')), [], 'and he is not told of the edit');
  t.equal((await f.call(bob, 'GET', `/api/v1/messages/${ids[0]}`)).json.msg, 'Invalid message(s)');
  const moved = await fetchOne(f, alice, ids[1]);
  t.match(moved, { stream_id: secret, display_recipient: 'secret', subject: 'move me' });
  t.notOk(moved.flags.includes('historical'), 'Alice keeps the messages as received');
  t.same(await topicsOf(f, alice, secret), ['move me']);
  t.same(await topicsOf(f, alice, general), ['move me'], 'the old topic holds the breadcrumb only... ');
  const unread = (await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['message', 'update_message_flags'] })).json;
  t.notOk(JSON.stringify(unread.unread_msgs).includes(String(ids[0])), 'Bob\'s unread no longer holds them');
  const back = await patch(f, f.owner, ids[0], { stream_id: general, propagate_mode: 'change_all', send_notification_to_new_thread: false });
  t.equal(back.status, 200, back.body);
  const again = await fetchOne(f, bob, ids[0]);
  t.ok(again.flags.includes('historical'), 'moved back to a public channel, Bob reads it as history');
});

t.test('permissions and time limits per role', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const moderator = await withRole(f, 'mod@example.com', 300);
  const guest = await withRole(f, 'guest@example.com', 600);
  const admin = await withRole(f, 'admin@example.com', 200);
  await f.subscribe(f.owner, 'general', [moderator.user_id, guest.user_id, admin.user_id]);
  await f.subscribe(f.owner, 'design', [moderator.user_id, guest.user_id, admin.user_id]);
  const old = await send(f, alice, 'old', 'from last week');
  f.clock.t += 8 * 24 * 3600 * 1000;
  const fresh = await send(f, alice, 'old', 'today');
  const cases: Array<[string, Credentials, number, number]> = [];
  const roles: Array<[string, Credentials]> = [['owner', f.owner], ['administrator', admin], ['moderator', moderator], ['member', bob], ['guest', guest]];
  for (const [name, who] of roles) {
    const topic = await patch(f, who, fresh, { topic: `by ${name}` });
    const channel = await patch(f, who, fresh, { stream_id: channels.design });
    if (channel.status === 200) await patch(f, f.owner, fresh, { stream_id: channels.general, send_notification_to_new_thread: false });
    const late = await patch(f, who, old, { topic: `late ${name}` });
    cases.push([name, who, topic.status, channel.status]);
    if (name === 'guest') t.equal(channel.json.msg, "You don't have permission to move this message", 'guests cannot move between channels');
    if (name === 'member' || name === 'guest') t.same([late.status, late.json.msg], [400, "The time limit for editing this message's topic has passed."], `${name}: the within-channel limit`);
    else t.equal(late.status, 200, `${name}: moderators and above have no move time limit: ${late.body}`);
    t.equal(topic.status, 200, `${name}: moves topics (everyone may, by default)`);
  }
  t.same(cases.map((c) => c[3]), [200, 200, 200, 200, 400], 'channel moves: members and above');
  // change_all over a topic that holds messages older than the limit.
  const t2 = [await send(f, alice, 'mixed', 'today 1')];
  await patch(f, f.owner, old, { topic: 'mixed', send_notification_to_new_thread: false });
  const res = await patch(f, bob, t2[0], { topic: 'renamed', propagate_mode: 'change_all' });
  t.same([res.status, res.json.code], [400, 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'], res.body);
  t.match(res.json, { first_message_id_allowed_to_move: t2[0], total_messages_in_topic: 2, total_messages_allowed_to_move: 1, msg: 'You only have permission to move the 1/2 most recent messages in this topic.' });
  t.equal((await patch(f, moderator, t2[0], { topic: 'renamed', propagate_mode: 'change_all' })).status, 200, 'a moderator moves the whole topic');
});

t.test('convergence: unread messages from register plus update_message events equal a fresh register', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const ids = [await send(f, alice, 'a', 'one'), await send(f, alice, 'a', 'two'), await send(f, alice, 'b', 'three')];
  const types = ['message', 'update_message_flags'];
  const params = { client_capabilities: JSON.stringify({ bulk_message_deletion: true }) };
  const reg = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['update_message', 'message', 'delete_message'], fetch_event_types: types, ...params })).json;
  await patch(f, alice, ids[0], { topic: 'moved', propagate_mode: 'change_all', send_notification_to_new_thread: false });
  await patch(f, alice, ids[2], { stream_id: channels.design, send_notification_to_new_thread: false });
  await patch(f, alice, ids[1], { content: 'now @**Bob**' });
  // The client model's update_message: moved ids take the new channel and topic; a content
  // edit sets or clears the mention by the event's flags. Where each is and the mentions, in one comparison.
  await verifyState(t, f, bob, reg, types, ['unread_msgs', 'max_message_id'], params);
  const fresh = (await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: types, ...params })).json.unread_msgs;
  t.same(fresh.streams.find((s: any) => s.unread_message_ids.includes(ids[2])), { stream_id: channels.design, topic: 'b', unread_message_ids: [ids[2]] }, 'and the state moved for real');
  t.same(fresh.mentions, [ids[1]]);
});

t.test('topic policies follow a moved topic', async (t) => {
  const { f, alice, bob, channels } = await world(CHANNELS);
  t.teardown(f.stop);
  const general = channels.general;
  const id = await send(f, alice, 'watched', 'x');
  await f.call(bob, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'watched', visibility_policy: 3 });
  const q = await register(f, bob, ['user_topic']);
  await patch(f, alice, id, { topic: 'renamed', propagate_mode: 'change_all' });
  const events = await queueEvents(f, bob, q, 'user_topic');
  t.same(events.map((e: any) => [e.topic_name, e.visibility_policy]), [['watched', 0], ['renamed', 3]]);
  const reg = (await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['user_topic'] })).json;
  t.same(reg.user_topics.map((x: any) => [x.topic_name, x.visibility_policy]), [['renamed', 3]]);
});

t.test('edits and moves survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-edit-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id: org, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const subscribe = (name: string) => rt.execute({ type: 'SUBSCRIBE', org, actor_id: 1, channels: [{ name }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  await subscribe('a');
  await subscribe('b');
  const a = channelIdByName(rt, org, 'a');
  const b = channelIdByName(rt, org, 'b');
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push((await rt.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { stream_id: a, topic: 't' }, content: `m${i}`, client: 't', read_by_sender: false })).id);
  const edit = (id: number, streamId: number, extra: Record<string, unknown>) => rt.execute({ type: 'EDIT_MESSAGE', org, editor_id: 1, message_id: id, propagate_mode: 'change_one', send_notification_to_old_thread: false, send_notification_to_new_thread: false, ...extra });
  await edit(ids[0], a, { content: 'edited before the snapshot' });
  await store.snapshot();
  await edit(ids[1], a, { stream_id: b, propagate_mode: 'change_later' });
  await edit(ids[0], a, { topic: 'renamed' });
  /** Each channel's messages (with their edit history) and topics, as the API shows them. */
  const channels = async () => {
    const api = storeClient(store, owner);
    return Promise.all([a, b].map(async (id) => ({
      msgs: (await api('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, apply_markdown: false, narrow: [{ operator: 'channel', operand: id }] })).messages,
      topics: (await api('GET', `/api/v1/users/me/${id}/topics`)).topics,
    })));
  };
  const expected = JSON.stringify(await channels());
  await store.close();
  store = open();
  const got = await channels();
  t.equal(JSON.stringify(got), expected, 'channels are the same after replay over the snapshot');
  t.same(got[1].msgs.map((m: any) => m.id), ids.slice(1));
  t.equal((await storeClient(store, owner)('GET', `/api/v1/messages/${ids[3]}`)).message.stream_id, b);
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(JSON.stringify(await channels()), expected, 'and from a fresh snapshot');
  await store.close();
});

t.test('a large topic moves in several log records, each within the budget', async (t) => {
  const logged: Array<{ type: string; bytes: number; ids: number[] }> = [];
  const f = await chatFixture({
    sink: {
      append(records, onDurable) {
        for (const r of records) {
          const fact = r.fact as any;
          if (fact.type === 'MessagesEdited') logged.push({ type: fact.type, bytes: JSON.stringify(fact).length, ids: fact.messages.map((m: any) => m.id) });
        }
        queueMicrotask(onDurable);
      },
    },
  });
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  const streamId = channelIdByName(f.runtime, 1, 'general');
  const big = 'word '.repeat(1990);
  const ids: number[] = [];
  for (let i = 0; i < 600; i++) {
    ids.push((await f.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: streamId, topic: 'huge' }, content: big + i, client: 't', read_by_sender: true })).id);
  }
  const res = await patch(f, f.owner, ids[0], { topic: 'moved', propagate_mode: 'change_all', send_notification_to_new_thread: false });
  t.equal(res.status, 200, res.body);
  t.ok(logged.length > 1, `${logged.length} records`);
  for (const r of logged) t.ok(r.bytes < 24 * 1024 * 1024, `a record of ${r.bytes} bytes`);
  t.same([...new Set(logged.flatMap((r) => r.ids))].sort((a, b) => a - b), ids, 'together they move every message');
  t.ok(logged.every((r) => r.ids.includes(ids[0])), 'each names the target message');
  t.same(await topicsOf(f, f.owner, streamId), ['moved']);
});
