/**
 * Flags over ranges and scopes: `POST /messages/flags/narrow`, and the mark-as-read
 * endpoints clients still call (`/mark_all_as_read`, `/mark_stream_as_read`,
 * `/mark_topic_as_read`), with their `update_message_flags` events.
 */
import t from 'tap';
import { chatFixture, type ChatFixture, type Credentials } from './helpers.js';
import { register, verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

async function send(f: ChatFixture, who: Credentials, to: string, topic: string, content = 'hi'): Promise<number> {
  const res = await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to, topic, content });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.id;
}

async function unread(f: ChatFixture, who: Credentials): Promise<number[]> {
  const res = await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['update_message_flags'], event_types: ['message'] });
  const u = res.json.unread_msgs;
  return [...u.streams.flatMap((s: any) => s.unread_message_ids), ...u.pms.flatMap((p: any) => p.unread_message_ids)].sort((a: number, b: number) => a - b);
}

async function flagEvents(f: ChatFixture, who: Credentials, queueId: string): Promise<any[]> {
  const res = await f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
  return res.json.events.filter((e: any) => e.type === 'update_message_flags');
}

async function setup() {
  const f = await chatFixture();
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  await f.subscribe(f.owner, 'random', [f.owner.user_id, alice.user_id]);
  const ids = {
    a1: await send(f, f.owner, 'general', 'Lunch'),
    a2: await send(f, f.owner, 'general', 'lunch'),
    b1: await send(f, f.owner, 'general', 'other'),
    e1: await send(f, f.owner, 'general', ''),
    r1: await send(f, f.owner, 'random', 'Lunch'),
  };
  const queue = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['update_message_flags'] })).json.queue_id as string;
  const generalId = (await f.call(alice, 'GET', '/api/v1/get_stream_id', { stream: 'general' })).json.stream_id as number;
  const randomId = (await f.call(alice, 'GET', '/api/v1/get_stream_id', { stream: 'random' })).json.stream_id as number;
  return { f, alice, ids, queue, generalId, randomId };
}

t.test('POST /messages/flags/narrow', async (t) => {
  const { f, alice, ids, queue, generalId } = await setup();
  t.teardown(f.stop);
  const narrow = JSON.stringify([{ operator: 'channel', operand: generalId }]);
  const res = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'oldest', num_before: 0, num_after: 3, narrow, op: 'add', flag: 'read' });
  t.equal(res.status, 200, res.body);
  t.match(res.json, { processed_count: 3, updated_count: 3, first_processed_id: ids.a1, last_processed_id: ids.b1, found_oldest: true, found_newest: false });
  t.notOk('ignored_because_not_subscribed_channels' in res.json, 'only for marking unread');
  t.same(await unread(f, alice), [ids.e1, ids.r1]);
  t.same((await flagEvents(f, alice, queue)).map((e) => [e.op, e.flag, e.messages]), [['add', 'read', [ids.a1, ids.a2, ids.b1]]]);

  const again = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'newest', num_before: 10, num_after: 0, narrow, op: 'add', flag: 'read' });
  t.match(again.json, { processed_count: 4, updated_count: 1, first_processed_id: ids.a1, last_processed_id: ids.e1, found_oldest: true, found_newest: true }, 'only the unread one changes');

  const unmark = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: ids.a2, num_before: 0, num_after: 0, narrow: '[]', op: 'remove', flag: 'read' });
  t.match(unmark.json, { processed_count: 1, updated_count: 1, first_processed_id: ids.a2, last_processed_id: ids.a2, ignored_because_not_subscribed_channels: [] });

  const empty = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'newest', num_before: 0, num_after: 5, include_anchor: false, narrow: '[]', op: 'add', flag: 'starred' });
  t.match(empty.json, { processed_count: 0, updated_count: 0, first_processed_id: null, last_processed_id: null, found_newest: true });

  const middle = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: ids.a2, num_before: 1, num_after: 1, include_anchor: false, narrow: '[]', op: 'add', flag: 'read' });
  t.same([middle.status, middle.json.msg], [400, 'The anchor can only be excluded at an end of the range']);
  const serverFlag = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'newest', num_before: 1, num_after: 0, narrow: '[]', op: 'add', flag: 'mentioned' });
  t.same([serverFlag.status, serverFlag.json.msg], [400, "Flag not editable: 'mentioned'"]);
  const missing = await f.call(alice, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'newest', num_after: 0, narrow: '[]', op: 'add', flag: 'read' });
  t.same([missing.status, missing.json.code], [400, 'REQUEST_VARIABLE_MISSING'], 'num_before is required');
});

t.test('POST /mark_all_as_read', async (t) => {
  const { f, alice, ids, queue } = await setup();
  t.teardown(f.stop);
  const dm = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([alice.user_id]), content: 'psst' })).json.id as number;
  const ownersBefore = await unread(f, f.owner);
  t.same(await unread(f, alice), [ids.a1, ids.a2, ids.b1, ids.e1, ids.r1, dm]);
  const res = await f.call(alice, 'POST', '/api/v1/mark_all_as_read');
  t.same([res.status, res.json.complete], [200, true]);
  t.same(await unread(f, alice), []);
  t.same((await flagEvents(f, alice, queue)).map((e) => [e.op, e.flag, e.messages, e.all]), [['add', 'read', [ids.a1, ids.a2, ids.b1, ids.e1, ids.r1, dm], false]]);
  t.equal((await f.call(alice, 'POST', '/api/v1/mark_all_as_read')).status, 200, 'nothing left is fine');
  t.equal((await flagEvents(f, alice, queue)).length, 1, 'and sends no event');
  t.same(await unread(f, f.owner), ownersBefore, "nobody else's unread state moved");
});

t.test('POST /mark_stream_as_read', async (t) => {
  const { f, alice, ids, queue, generalId, randomId } = await setup();
  t.teardown(f.stop);
  const res = await f.call(alice, 'POST', '/api/v1/mark_stream_as_read', { stream_id: randomId });
  t.same([res.status, res.json.result], [200, 'success']);
  t.same(await unread(f, alice), [ids.a1, ids.a2, ids.b1, ids.e1]);
  t.same((await flagEvents(f, alice, queue))[0].messages, [ids.r1]);
  await f.call(alice, 'POST', '/api/v1/mark_stream_as_read', { stream_id: generalId });
  t.same(await unread(f, alice), []);
  for (const bad of [99999, 0]) {
    const r = await f.call(alice, 'POST', '/api/v1/mark_stream_as_read', { stream_id: bad });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Invalid channel ID'], `stream_id ${bad}`);
  }
  const secret = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), invite_only: true });
  t.equal(secret.status, 200);
  const secretId = channelIdByName(f.runtime, 1, 'secret');
  const hidden = await f.call(alice, 'POST', '/api/v1/mark_stream_as_read', { stream_id: secretId });
  t.same([hidden.status, hidden.json.msg], [400, 'Invalid channel ID'], 'a private channel is as if missing');
  t.equal((await f.call(alice, 'POST', '/api/v1/mark_stream_as_read', {})).json.code, 'REQUEST_VARIABLE_MISSING');
});

t.test('POST /mark_topic_as_read', async (t) => {
  const { f, alice, ids, generalId } = await setup();
  t.teardown(f.stop);
  const res = await f.call(alice, 'POST', '/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'LUNCH' });
  t.equal(res.status, 200, res.body);
  t.same(await unread(f, alice), [ids.b1, ids.e1, ids.r1], 'topics match case-insensitively, in that channel only');
  await f.call(alice, 'POST', '/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'general chat' });
  t.same(await unread(f, alice), [ids.b1, ids.r1], "the empty topic's display name reads as the empty topic");
  const none = await f.call(alice, 'POST', '/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'dinner' });
  t.same([none.status, none.json.msg], [400, "No such topic 'dinner'"]);
  const late = await f.createUser('late@example.com', 'Late');
  await f.subscribe(f.owner, 'general', [late.user_id]);
  const notReceived = await f.call(late, 'POST', '/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'other' });
  t.same([notReceived.status, notReceived.json.msg], [400, "No such topic 'other'"], 'a topic the user never received is no such topic for them');
  t.equal((await f.call(alice, 'POST', '/api/v1/mark_topic_as_read', { stream_id: 99999, topic_name: 'x' })).json.msg, 'Invalid channel ID');
});

t.test('convergence: unread and starred state from register plus the events equals a fresh register', async (t) => {
  const { f, alice, ids, generalId, randomId } = await setup();
  t.teardown(f.stop);
  const types = ['message', 'update_message_flags'];
  const initial = await register(f, alice, types);
  const narrowOf = (id: number) => JSON.stringify([{ operator: 'channel', operand: id }]);
  const steps: Array<[string, Record<string, unknown>]> = [
    ['/api/v1/messages/flags/narrow', { anchor: 'oldest', num_before: 0, num_after: 2, narrow: narrowOf(generalId), op: 'add', flag: 'read' }],
    ['/api/v1/messages/flags/narrow', { anchor: 'newest', num_before: 3, num_after: 0, narrow: '[]', op: 'add', flag: 'starred' }],
    ['/api/v1/mark_topic_as_read', { stream_id: generalId, topic_name: 'other' }],
    ['/api/v1/messages/flags/narrow', { anchor: ids.a1, num_before: 0, num_after: 1, narrow: narrowOf(generalId), op: 'remove', flag: 'read' }],
    ['/api/v1/mark_stream_as_read', { stream_id: randomId }],
  ];
  for (const [path, params] of steps) t.equal((await f.call(alice, 'POST', path, params)).status, 200, path);
  await send(f, f.owner, 'general', 'late');
  await send(f, f.owner, 'random', 'late');
  t.equal((await f.call(alice, 'POST', '/api/v1/mark_topic_as_read', { stream_id: randomId, topic_name: 'late' })).status, 200);
  // Unread (where each message is, mentions, the count) and starred, in one comparison.
  await verifyState(t, f, alice, initial, types, ['unread_msgs', 'starred_messages', 'max_message_id']);
  const fresh = await register(f, alice, types);
  t.ok(fresh.unread_msgs.count > 0 && fresh.starred_messages.length > 0, 'and neither is trivially empty');
  t.equal((await f.call(alice, 'POST', '/api/v1/mark_all_as_read')).status, 200);
  await verifyState(t, f, alice, fresh, types, ['unread_msgs']);
  t.same((await register(f, alice, types)).unread_msgs, { count: 0, pms: [], streams: [], huddles: [], mentions: [], old_unreads_missing: false }, 'mark_all_as_read: nothing unread');
});
