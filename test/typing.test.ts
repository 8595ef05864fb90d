/**
 * Typing notifications: `POST /typing` (direct and channel) and
 * `POST /messages/{message_id}/typing`, with Zulip's `typing` and
 * `typing_edit_message` events, audiences and errors.
 */
import t from 'tap';
import { queueEvents, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';
import { channelIdByName } from '../actors/areas/channels.js';

async function queue(f: ChatFixture, who: Credentials, capabilities: Record<string, boolean> = {}): Promise<string> {
  const res = await f.call(who, 'POST', '/api/v1/register', { event_types: ['typing', 'typing_edit_message'], client_capabilities: JSON.stringify(capabilities) });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.queue_id;
}

const events = (f: ChatFixture, who: Credentials, queueId: string): Promise<any[]> => queueEvents(f, who, queueId);

/** Carol is not in general. */
const GENERAL = { users: { alice: 'Alice', bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'alice', 'bob'] } } as const;

t.test('direct messages', async (t) => {
  const { f, alice, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const [qa, qb, qc] = [await queue(f, alice), await queue(f, bob), await queue(f, carol)];
  const res = await f.call(alice, 'POST', '/api/v1/typing', { op: 'start', to: JSON.stringify([bob.user_id]) });
  t.same([res.status, res.json.result], [200, 'success']);
  const expected = {
    type: 'typing', op: 'start', message_type: 'direct',
    sender: { user_id: alice.user_id, email: 'alice@example.com' },
    recipients: [{ user_id: bob.user_id, email: 'bob@example.com' }, { user_id: alice.user_id, email: 'alice@example.com' }],
  };
  t.same(await events(f, bob, qb), [expected], 'the recipient hears of it');
  t.same(await events(f, alice, qa), [expected], 'and the sender, as in Zulip');
  t.same(await events(f, carol, qc), [], 'nobody else');
  await f.call(alice, 'POST', '/api/v1/typing', { type: 'direct', op: 'stop', to: JSON.stringify([bob.user_id]) });
  t.same((await events(f, bob, qb)).map((e) => e.op), ['start', 'stop']);

  await f.call(f.owner, 'DELETE', `/api/v1/users/${carol.user_id}`);
  await f.call(alice, 'POST', '/api/v1/typing', { op: 'start', to: JSON.stringify([bob.user_id, carol.user_id]) });
  const group = (await events(f, bob, qb)).at(-1);
  t.same(group.recipients.map((r: any) => r.user_id), [bob.user_id, carol.user_id, alice.user_id], 'a deactivated recipient is still listed');

  const cases: Array<[Record<string, unknown>, string]> = [
    [{ op: 'start' }, "Missing 'to' argument"],
    [{ op: 'start', to: '[]' }, "Empty 'to' list"],
    [{ op: 'start', to: '[99999]' }, 'Invalid user ID 99999'],
    [{ op: 'begin', to: JSON.stringify([bob.user_id]) }, 'Invalid op'],
    [{ op: 'start', type: 'private', to: JSON.stringify([bob.user_id]) }, 'Invalid type'],
  ];
  for (const [params, msg] of cases) {
    const r = await f.call(alice, 'POST', '/api/v1/typing', params);
    t.equal(r.status, 400, JSON.stringify(params));
    t.match(r.json.msg, msg);
  }
});

t.test('channel topics', async (t) => {
  const { f, alice, bob, carol, channels: { general: generalId } } = await world(GENERAL);
  t.teardown(f.stop);
  const [qb, qc, qModern] = [await queue(f, bob), await queue(f, carol), await queue(f, alice, { empty_topic_name: true })];
  t.equal((await f.call(bob, 'POST', '/api/v1/typing', { type: 'channel', op: 'start', stream_id: generalId, topic: 'plans' })).status, 200);
  const want = { type: 'typing', op: 'start', message_type: 'stream', sender: { user_id: bob.user_id, email: 'bob@example.com' }, stream_id: generalId, topic: 'plans' };
  t.same(await events(f, bob, qb), [want], 'subscribers hear of it, the typist included');
  t.same(await events(f, carol, qc), [], 'non-subscribers do not');
  await f.call(bob, 'POST', '/api/v1/typing', { type: 'stream', op: 'start', stream_id: generalId, topic: 'general chat' });
  t.equal((await events(f, bob, qb)).at(-1).topic, 'general chat', 'the empty topic, shown by its display name');
  t.equal((await events(f, alice, qModern)).at(-1).topic, '', 'or as "" to a client with empty_topic_name');

  const cases: Array<[Credentials, Record<string, unknown>, string]> = [
    [bob, { type: 'channel', op: 'start', topic: 'x' }, 'Missing stream_id'],
    [bob, { type: 'channel', op: 'start', stream_id: generalId }, 'Missing topic'],
    [bob, { type: 'channel', op: 'start', stream_id: 99999, topic: 'x' }, 'Invalid channel ID'],
  ];
  await f.call(alice, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), invite_only: true });
  const secretId = channelIdByName(f.runtime, 1, 'secret');
  cases.push([bob, { type: 'channel', op: 'start', stream_id: secretId, topic: 'x' }, 'Invalid channel ID']);
  cases.push([f.owner, { type: 'channel', op: 'start', stream_id: secretId, topic: 'x' }, "Not authorized to send to channel 'secret'"]);
  for (const [who, params, msg] of cases) {
    const r = await f.call(who, 'POST', '/api/v1/typing', params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  }
});

t.test('editing a message', async (t) => {
  const { f, alice, bob, carol, channels: { general: generalId } } = await world(GENERAL);
  t.teardown(f.stop);
  const sent = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'plans', content: 'draft' })).json.id as number;
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'psst' })).json.id as number;
  const [qb, qc] = [await queue(f, bob), await queue(f, carol)];
  t.equal((await f.call(alice, 'POST', `/api/v1/messages/${sent}/typing`, { op: 'start' })).status, 200);
  t.same(await events(f, bob, qb), [{ type: 'typing_edit_message', op: 'start', sender_id: alice.user_id, message_id: sent, recipient: { type: 'channel', channel_id: generalId, topic: 'plans' } }]);
  t.same(await events(f, carol, qc), []);
  t.equal((await f.call(alice, 'POST', `/api/v1/messages/${dm}/typing`, { op: 'stop' })).status, 200);
  t.same((await events(f, bob, qb)).at(-1), { type: 'typing_edit_message', op: 'stop', sender_id: alice.user_id, message_id: dm, recipient: { type: 'direct', user_ids: [alice.user_id, bob.user_id] } });

  const other = await f.call(bob, 'POST', `/api/v1/messages/${sent}/typing`, { op: 'start' });
  t.same([other.status, other.json.msg], [400, "You don't have permission to edit this message"]);
  const unseen = await f.call(carol, 'POST', `/api/v1/messages/${dm}/typing`, { op: 'start' });
  t.same([unseen.status, unseen.json.msg], [400, 'Invalid message(s)'], 'a message the caller cannot see');
  t.equal((await f.call(alice, 'POST', '/api/v1/messages/99999/typing', { op: 'start' })).json.msg, 'Invalid message(s)');
  f.clock.t += 601_000;
  const late = await f.call(alice, 'POST', `/api/v1/messages/${sent}/typing`, { op: 'start' });
  t.same([late.status, late.json.msg], [400, 'The time limit for editing this message has passed']);
});
