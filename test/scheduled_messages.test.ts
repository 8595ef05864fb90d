/**
 * Scheduled messages and reminders: the routes, delivery when due (the clock is
 * injected and the schedule swept by hand), the failed state, restarts, and events.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { openStore, type Store } from '../src/store.js';
import { NOTIFICATION_BOT } from '../actors/rules/system_bots.js';
import { queueEvents, settle, withRole, type ChatFixture, type Credentials, storeClient, probeMessageId } from './helpers.js';
import { world } from './world.js';
import { verifyState } from './client_model.js';
import { scheduledFailures, scheduledMessagesOf } from '../actors/areas/scheduled_messages.js';
import { quietLogger } from '../actors/core/logger.js';

const now = (f: ChatFixture): number => Math.floor(f.clock.t / 1000);

const GENERAL = { users: { bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'bob', 'carol'] } } as const;

/** Every message of a channel topic, or of the caller's direct messages with `with`. */
async function messagesIn(f: ChatFixture, who: Credentials, narrow: unknown[]): Promise<any[]> {
  const res = await f.call(who, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.messages;
}

t.test('schedule, list, and deliver exactly once when due', async (t) => {
  const { f, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['scheduled_messages', 'message'] });
  const at = now(f) + 3600;
  const res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'channel', to: general, topic: 'later', content: 'hello **later**', scheduled_delivery_timestamp: at });
  t.equal(res.status, 200, res.body);
  const id = res.json.scheduled_message_id;
  t.type(id, 'number');
  const list = await f.call(bob, 'GET', '/api/v1/scheduled_messages');
  t.same(list.json.scheduled_messages, [{ scheduled_message_id: id, type: 'stream', to: general, topic: 'later', content: 'hello **later**', rendered_content: '<p>hello <strong>later</strong></p>', scheduled_delivery_timestamp: at, failed: false }]);
  t.same((await f.call(f.owner, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages, [], "another user's list is their own");

  t.equal(await f.runtime.scheduled.sweep(), 0, 'nothing is due yet');
  f.clock.t += 3599_000;
  t.equal(await f.runtime.scheduled.sweep(), 0, 'a second early: still nothing');
  f.clock.t += 1000;
  t.equal(await f.runtime.scheduled.sweep(), 1, 'due: delivered');
  t.equal(await f.runtime.scheduled.sweep(), 0, 'and never again');
  const got = (await messagesIn(f, bob, [{ operator: 'channel', operand: general }])).filter((m) => m.content === '<p>hello <strong>later</strong></p>');
  t.equal(got.length, 1);
  t.equal(got[0].sender_id, bob.user_id);
  t.equal(got[0].subject, 'later');
  t.equal(got[0].timestamp, at, 'sent at the scheduled time');
  t.same((await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages, []);
  await settle();
  const events = await queueEvents(f, bob, reg.json.queue_id);
  t.same(events.map((e) => `${e.type}:${e.op ?? ''}`), ['scheduled_messages:add', 'message:', 'scheduled_messages:remove']);
  t.same(events[2], { type: 'scheduled_messages', op: 'remove', scheduled_message_id: id });
  const del = await f.call(bob, 'DELETE', `/api/v1/scheduled_messages/${id}`);
  t.equal(del.json.msg, 'Scheduled message does not exist', 'a delivered message is gone');
});

t.test('direct messages: to lists the others, or the owner alone; delivery to the participants', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const at = now(f) + 60;
  const toCarol = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'direct', to: [carol.user_id, bob.user_id], content: 'psst', scheduled_delivery_timestamp: at });
  t.equal(toCarol.status, 200, toCarol.body);
  const toSelf = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'private', to: [bob.user_id], content: 'note to self', scheduled_delivery_timestamp: at + 1 });
  const list = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages;
  t.same(list.map((m: any) => [m.scheduled_message_id, m.type, m.to, 'topic' in m]), [[toCarol.json.scheduled_message_id, 'private', [carol.user_id], false], [toSelf.json.scheduled_message_id, 'private', [bob.user_id], false]]);
  f.clock.t += 61_000;
  t.equal(await f.runtime.scheduled.sweep(), 2);
  const seen = await messagesIn(f, carol, [{ operator: 'dm', operand: [bob.user_id] }]);
  t.same(seen.map((m) => m.content), ['<p>psst</p>']);
  const self = await messagesIn(f, bob, [{ operator: 'dm', operand: [bob.user_id] }]);
  t.same(self.map((m) => m.content), ['<p>note to self</p>']);
});

t.test('scheduling is checked as a send: errors in Zulip shape', async (t) => {
  const { f, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const at = now(f) + 60;
  let res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: 9999, topic: 'x', content: 'c', scheduled_delivery_timestamp: at });
  t.equal(res.status, 400);
  t.same(res.json, { result: 'error', code: 'STREAM_DOES_NOT_EXIST', msg: "Channel with ID '9999' does not exist", stream_id: 9999 });
  res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'direct', to: [9999], content: 'c', scheduled_delivery_timestamp: at });
  t.same([res.status, res.json.msg], [400, 'Invalid user ID 9999']);
  res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'x', content: 'c', scheduled_delivery_timestamp: now(f) });
  t.same([res.status, res.json.code, res.json.msg], [400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.']);
  res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, content: 'c', scheduled_delivery_timestamp: at });
  t.same([res.status, res.json.msg], [400, 'Missing topic']);
  res = await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'x', content: '   ', scheduled_delivery_timestamp: at });
  t.equal(res.status, 400);
  res = await f.call(null, 'GET', '/api/v1/scheduled_messages');
  t.equal(res.status, 401);
  t.same((await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages, [], 'nothing was scheduled');
});

t.test('roles: a guest schedules only where it may send', async (t) => {
  const { f, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', 600);
  const at = now(f) + 60;
  let res = await f.call(guest, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'x', content: 'c', scheduled_delivery_timestamp: at });
  t.equal(res.status, 400, 'a guest not subscribed to the channel cannot post there');
  t.match(res.json.msg, /Not authorized to send to channel/);
  res = await f.call(guest, 'POST', '/api/v1/scheduled_messages', { type: 'direct', to: [f.owner.user_id], content: 'hi', scheduled_delivery_timestamp: at });
  t.equal(res.status, 200, res.body);
});

t.test('PATCH: Zulip rules for type, to, topic, content and time; update events', async (t) => {
  const { f, bob, carol, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['scheduled_messages'] });
  const at = now(f) + 600;
  const { scheduled_message_id: id } = (await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'a', content: 'one', scheduled_delivery_timestamp: at })).json;
  const patch = (params: Record<string, unknown>, who: Credentials = bob, sid: number = id) => f.call(who, 'PATCH', `/api/v1/scheduled_messages/${sid}`, params);
  t.equal((await patch({})).json.msg, 'Nothing to change');
  t.equal((await patch({ type: 'direct' })).json.msg, 'Recipient required when updating type of scheduled message.');
  t.equal((await patch({ type: 'channel', to: general })).json.msg, 'Topic required when updating scheduled message type to stream.');
  t.equal((await patch({ scheduled_delivery_timestamp: now(f) - 1 })).json.msg, 'Scheduled delivery time must be in the future.');
  const unknown = await patch({ content: 'x' }, bob, 999);
  t.same([unknown.status, unknown.json.code, unknown.json.msg], [404, 'BAD_REQUEST', 'Scheduled message does not exist'], "Zulip's ResourceNotFoundError: 404");
  t.equal((await patch({ content: 'x' }, carol)).json.msg, 'Scheduled message does not exist', "someone else's scheduled message does not exist for them");
  const missing = await patch({ to: 4242 });
  t.same([missing.json.code, missing.json.stream_id], ['STREAM_DOES_NOT_EXIST', 4242]);

  t.equal((await patch({ topic: 'b' })).status, 200);
  t.equal((await patch({ content: 'two' })).status, 200);
  let m = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages[0];
  t.same([m.topic, m.content, m.rendered_content, m.scheduled_delivery_timestamp], ['b', 'two', '<p>two</p>', at]);
  t.equal((await patch({ type: 'direct', to: [carol.user_id] })).status, 200);
  m = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages[0];
  t.same([m.type, m.to, 'topic' in m, m.content], ['private', [carol.user_id], false, 'two']);
  t.equal((await patch({ topic: 'ignored' })).status, 200, 'a topic for a direct message is ignored');
  t.equal((await patch({ to: [9999] })).json.msg, 'Invalid user ID 9999');
  t.equal((await patch({ type: 'stream', to: general, topic: 'back' })).status, 200);
  t.equal((await patch({ scheduled_delivery_timestamp: at + 60 })).status, 200);
  m = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages[0];
  t.same([m.type, m.to, m.topic, m.scheduled_delivery_timestamp], ['stream', general, 'back', at + 60]);

  f.clock.t += 600_000;
  t.equal(await f.runtime.scheduled.sweep(), 0, 'the old time no longer counts');
  f.clock.t += 60_000;
  t.equal(await f.runtime.scheduled.sweep(), 1);
  await settle();
  const events = await queueEvents(f, bob, reg.json.queue_id, 'scheduled_messages');
  t.same(events.map((e) => e.op), ['add', 'update', 'update', 'update', 'update', 'update', 'update', 'remove']);
  t.same(events[6].scheduled_message, { scheduled_message_id: id, type: 'stream', to: general, topic: 'back', content: 'two', rendered_content: '<p>two</p>', scheduled_delivery_timestamp: at + 60, failed: false });
});

t.test('DELETE cancels; only the owner can', async (t) => {
  const { f, bob, carol, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const { scheduled_message_id: id } = (await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'a', content: 'one', scheduled_delivery_timestamp: now(f) + 60 })).json;
  t.equal((await f.call(carol, 'DELETE', `/api/v1/scheduled_messages/${id}`)).json.msg, 'Scheduled message does not exist');
  t.equal((await f.call(bob, 'DELETE', `/api/v1/reminders/${id}`)).json.msg, 'Reminder does not exist', 'a scheduled message is not a reminder');
  t.equal((await f.call(bob, 'DELETE', `/api/v1/scheduled_messages/${id}`)).status, 200);
  f.clock.t += 61_000;
  t.equal(await f.runtime.scheduled.sweep(), 0, 'a cancelled message is not sent');
  t.equal((await messagesIn(f, bob, [{ operator: 'channel', operand: general }])).filter((m) => m.content === '<p>one</p>').length, 0);
});

t.test('a message that cannot be sent fails; the sender is told; PATCH then needs a new time', async (t) => {
  const { f, bob, carol, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['scheduled_messages', 'message'] });
  const at = now(f) + 60;
  const toChannel = (await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'a', content: 'to the channel', scheduled_delivery_timestamp: at })).json.scheduled_message_id;
  const toCarol = (await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'direct', to: [carol.user_id], content: 'to carol', scheduled_delivery_timestamp: at })).json.scheduled_message_id;
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${general}`)).status, 200, 'the channel is archived');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${carol.user_id}`)).status, 200, 'carol is deactivated');
  f.clock.t += 60_000;
  t.equal(await f.runtime.scheduled.sweep(), 0, 'neither could be delivered');
  t.equal(await f.runtime.scheduled.sweep(), 0, 'and failed ones are not retried');
  const list = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages;
  t.same(list.map((m: any) => [m.scheduled_message_id, m.failed]), [[toChannel, true], [toCarol, true]]);
  const notices = await messagesIn(f, bob, [{ operator: 'dm', operand: [NOTIFICATION_BOT.user_id] }]);
  t.equal(notices.length, 2, 'one notice per failed message');
  t.ok(notices.every((m) => m.sender_id === NOTIFICATION_BOT.user_id));
  t.ok(notices.some((m) => m.content.includes('was not sent because of the following error') && m.content.includes('no longer using Zulip')));
  t.ok(notices.some((m) => m.content.includes('Not authorized to send to channel')));
  await settle();
  const events = await queueEvents(f, bob, reg.json.queue_id, 'scheduled_messages');
  t.same(events.filter((e) => e.op === 'update').map((e) => [e.scheduled_message.scheduled_message_id, e.scheduled_message.failed]), [[toChannel, true], [toCarol, true]]);

  const noTime = await f.call(bob, 'PATCH', `/api/v1/scheduled_messages/${toCarol}`, { to: [f.owner.user_id] });
  t.same([noTime.status, noTime.json.msg], [400, 'Scheduled delivery time must be in the future.']);
  const fixed = await f.call(bob, 'PATCH', `/api/v1/scheduled_messages/${toCarol}`, { to: [f.owner.user_id], scheduled_delivery_timestamp: now(f) + 30 });
  t.equal(fixed.status, 200, fixed.body);
  const m = (await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages.find((x: any) => x.scheduled_message_id === toCarol);
  t.same([m.failed, m.to], [false, [f.owner.user_id]]);
  f.clock.t += 30_000;
  t.equal(await f.runtime.scheduled.sweep(), 1, 'rescheduled, it goes out');
  t.same((await messagesIn(f, f.owner, [{ operator: 'dm', operand: [bob.user_id] }])).map((x) => x.content), ['<p>to carol</p>']);
});

t.test('a deactivated sender: failed without a notice, as in Zulip', async (t) => {
  const { f, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  await f.call(bob, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'a', content: 'x', scheduled_delivery_timestamp: now(f) + 60 });
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`)).status, 200);
  f.clock.t += 60_000;
  const probe = () => probeMessageId(f);
  const before = await probe();
  t.equal(await f.runtime.scheduled.sweep(), 0);
  const failures = new Map(scheduledFailures(f.runtime, 1, bob.user_id).map((x) => [x.id, x.failure_message]));
  const r = scheduledMessagesOf(f.runtime, 1, bob.user_id);
  t.same(r.map((x) => [x.failed, failures.get(x.scheduled_message_id as number)]), [[true, 'Account is deactivated']]);
  t.equal(await probe(), before + 1, 'no notice: no message was sent');
});

t.test('reminders: create, list, delete, and delivery by the notification bot', async (t) => {
  const { f, bob, carol, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['reminders'] });
  const sent = await f.call(carol, 'POST', '/api/v1/messages', { type: 'stream', to: general, topic: 'plans', content: 'ship it on **Friday**' });
  const at = now(f) + 300;
  let res = await f.call(bob, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: at, note: 'check the release' });
  t.equal(res.status, 200, res.body);
  const rid = res.json.reminder_id;
  const other = (await f.call(bob, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: at + 10 })).json.reminder_id;
  const list = (await f.call(bob, 'GET', '/api/v1/reminders')).json.reminders;
  t.equal(list.length, 2);
  t.same([list[0].reminder_id, list[0].type, list[0].to, list[0].reminder_target_message_id, list[0].scheduled_delivery_timestamp, list[0].failed], [rid, 'private', [bob.user_id], sent.json.id, at, false]);
  const expected =
    'You requested a reminder for the following message. Note:\n > check the release\n\n' +
    `@_**Carol|${carol.user_id}** [said](#narrow/channel/${general}-general/topic/plans/near/${sent.json.id}) in #**general>plans@${sent.json.id}**:\n` +
    '```quote\nship it on **Friday**\n```';
  t.equal(list[0].content, expected);
  t.same((await f.call(bob, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages, [], 'reminders are not scheduled messages');
  t.equal((await f.call(carol, 'DELETE', `/api/v1/reminders/${other}`)).json.msg, 'Reminder does not exist');
  t.equal((await f.call(bob, 'DELETE', `/api/v1/reminders/${other}`)).status, 200);

  res = await f.call(bob, 'POST', '/api/v1/reminders', { message_id: 999999, scheduled_delivery_timestamp: at });
  t.same([res.status, res.json.msg], [400, 'Invalid message(s)']);
  res = await f.call(bob, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: now(f) });
  t.equal(res.json.msg, 'Scheduled delivery time must be in the future.');
  res = await f.call(bob, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: at, note: 'n'.repeat(1001) });
  t.equal(res.json.msg, 'Maximum reminder note length: 1000 characters');

  // The message is edited before the reminder is due: the reminder quotes it as it then reads.
  t.equal((await f.call(carol, 'PATCH', `/api/v1/messages/${sent.json.id}`, { content: 'ship it on Monday' })).status, 200);
  f.clock.t += 300_000;
  t.equal(await f.runtime.scheduled.sweep(), 1);
  const dms = await messagesIn(f, bob, [{ operator: 'dm', operand: [NOTIFICATION_BOT.user_id] }]);
  t.equal(dms.length, 1);
  t.equal(dms[0].sender_id, NOTIFICATION_BOT.user_id);
  t.match(dms[0].content, /ship it on Monday/);
  t.match(dms[0].content, /check the release/);
  t.same((await f.call(bob, 'GET', '/api/v1/reminders')).json.reminders, []);
  await settle();
  const events = await queueEvents(f, bob, reg.json.queue_id, 'reminders');
  t.same(events.map((e) => e.op), ['add', 'add', 'remove', 'remove']);
  t.same(events[3], { type: 'reminders', op: 'remove', reminder_id: rid });
});

t.test('a reminder of a direct message', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const sent = await f.call(carol, 'POST', '/api/v1/messages', { type: 'direct', to: [bob.user_id], content: 'call me' });
  const res = await f.call(bob, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: now(f) + 5 });
  t.equal(res.status, 200, res.body);
  const r = (await f.call(bob, 'GET', '/api/v1/reminders')).json.reminders[0];
  t.match(r.content, /^You requested a reminder for the following direct message\.\n\n/);
  t.match(r.content, new RegExp(`@_\\*\\*Carol\\|${carol.user_id}\\*\\* \\[said\\]\\(#narrow/dm/[\\d,]+-dm/near/${sent.json.id}\\) to @_\\*\\*Bob\\|${bob.user_id}\\*\\*:`));
  t.equal((await f.call(f.owner, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: now(f) + 5 })).json.msg, 'Invalid message(s)', 'only a message one can read');
});

t.test('convergence: register plus scheduled_messages and reminders events equals a fresh register', async (t) => {
  const { f, bob, carol, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const types = ['scheduled_messages', 'reminders'];
  const fetchState = async () => (await f.call(bob, 'POST', '/api/v1/register', { event_types: types })).json;
  const initial = await fetchState();

  const at = now(f) + 100;
  const post = (p: Record<string, unknown>) => f.call(bob, 'POST', '/api/v1/scheduled_messages', { scheduled_delivery_timestamp: at, ...p });
  const a = (await post({ type: 'stream', to: general, topic: 't', content: 'a' })).json.scheduled_message_id;
  const b = (await post({ type: 'direct', to: [carol.user_id], content: 'b', scheduled_delivery_timestamp: at + 50 })).json.scheduled_message_id;
  const c = (await post({ type: 'direct', to: [carol.user_id], content: 'c', scheduled_delivery_timestamp: at + 500 })).json.scheduled_message_id;
  await post({ type: 'stream', to: general, topic: 't', content: 'd', scheduled_delivery_timestamp: at + 900 });
  await f.call(bob, 'PATCH', `/api/v1/scheduled_messages/${c}`, { type: 'stream', to: general, topic: 'moved', content: 'c2' });
  await f.call(bob, 'DELETE', `/api/v1/scheduled_messages/${a}`);
  const msg = await f.call(carol, 'POST', '/api/v1/messages', { type: 'stream', to: general, topic: 't', content: 'remember me' });
  await f.call(bob, 'POST', '/api/v1/reminders', { message_id: msg.json.id, scheduled_delivery_timestamp: at + 10 });
  const r2 = (await f.call(bob, 'POST', '/api/v1/reminders', { message_id: msg.json.id, scheduled_delivery_timestamp: at + 900 })).json.reminder_id;
  await f.call(bob, 'DELETE', `/api/v1/reminders/${r2}`);
  await f.call(bob, 'POST', '/api/v1/reminders', { message_id: msg.json.id, scheduled_delivery_timestamp: at + 950 });
  await f.call(f.owner, 'DELETE', `/api/v1/users/${carol.user_id}`);
  f.clock.t += 200_000;
  t.equal(await f.runtime.scheduled.sweep(), 1, 'the first reminder is delivered; b fails (carol is gone)');
  void b;
  await settle();

  // Both lists, in delivery order, in one comparison.
  await verifyState(t, f, bob, initial, types, ['scheduled_messages', 'reminders']);
  const fresh = await fetchState();
  t.equal(fresh.scheduled_messages.length, 3);
  t.equal(fresh.reminders.length, 1);
});

t.test('restart: an item due while the server was down goes out once at the next start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-scheduled-'));
  const clock = { t: 1_800_000_000_000 };
  const open = (): Store => openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 10, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; }, runtime: { now: () => clock.t } });
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const at = Math.floor(clock.t / 1000) + 60;
  const pending = async () => (await storeClient(store, owner)('GET', '/api/v1/scheduled_messages')).scheduled_messages.map((r: any) => r.content);
  const schedule = (content: string, deliver_at: number) =>
    store.runtime.execute({ type: 'SCHEDULE_MESSAGE', org, user_id: 1, client: 't', read_by_sender: false, message: { type: 'private', to: [1], topic: undefined, content }, deliver_at });
  await schedule('from the log', at);
  await schedule('later', at + 3600);
  await store.close();

  clock.t += 120_000;
  store = open();
  t.same(await pending(), ['from the log', 'later'], 'both pending after replay');
  t.equal(await store.runtime.scheduled.sweep(), 1, 'the one due while down is delivered');
  /** Every direct message of the organization: its one user's, as they see them. */
  const dms = async () => (await storeClient(store, owner)('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, apply_markdown: false, narrow: [{ operator: 'is', operand: 'dm' }] })).messages.map((m: any) => m.content);
  t.same(await dms(), ['from the log']);
  await store.snapshot();
  await schedule('after the snapshot', Math.floor(clock.t / 1000) + 30);
  await store.close();

  clock.t += 60_000;
  store = open();
  t.same(await dms(), ['from the log'], 'replay does not deliver again');
  t.equal(await store.runtime.scheduled.sweep(), 1, 'the pending index is rebuilt from the snapshot and the log');
  t.same(await dms(), ['from the log', 'after the snapshot']);
  t.equal(await store.runtime.scheduled.sweep(), 0);
  await store.close();
  store = open();
  t.same(await dms(), ['from the log', 'after the snapshot'], 'still once each after another restart');
  t.same(await pending(), ['later']);
  await store.close();
});
