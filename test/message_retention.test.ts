/**
 * Message retention: the organization's `message_retention_days` (owners set it through
 * `PATCH /realm`), a channel's own, and the server's retention pass that deletes what is
 * past its period, in batches, telling clients as a deletion does.
 */
import t from 'tap';
import { Role } from '../actors/shared/types.js';
import { RETENTION_BATCH } from '../actors/areas/message_retention.js';
import { expireMessages } from '../src/retention.js';
import { world } from './world.js';
import { register, verifyAction } from './client_model.js';
import type { ChatFixture, Credentials } from './helpers.js';

const DAY_MS = 24 * 3600_000;

const send = async (f: ChatFixture, who: Credentials, to: string, content: string): Promise<number> => {
  const r = await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to, topic: 'old news', content });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.id;
};

const sendDirect = async (f: ChatFixture, who: Credentials, to: number, content: string): Promise<number> => {
  const r = await f.call(who, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([to]), content });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.id;
};

/** The ids of every message `who` can read, oldest first. */
const visible = async (f: ChatFixture, who: Credentials): Promise<number[]> =>
  (await f.call(who, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 1000, narrow: '[]' })).json.messages.map((m: { id: number }) => m.id);

t.test('owners set the organization retention period; everyone sees it in register', async (t) => {
  const { f, admin } = await world({ users: { admin: 'Ada' }, roles: { admin: Role.ADMIN } });
  t.teardown(f.stop);
  t.equal((await register(f, admin, ['realm'])).realm_message_retention_days, -1, 'forever by default');
  const refused = await f.call(admin, 'PATCH', '/api/v1/realm', { message_retention_days: 30 });
  t.equal(refused.status, 400);
  t.match(refused.json, { result: 'error', msg: 'Must be an organization owner' });
  for (const bad of [0, -5, 'forever']) {
    const r = await f.call(f.owner, 'PATCH', '/api/v1/realm', { message_retention_days: bad });
    t.equal(r.status, 400, `${bad} refused`);
    t.equal(r.json.result, 'error');
  }
  await verifyAction(t, f, admin, ['realm'], ['realm_message_retention_days'], async () => {
    t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { message_retention_days: 30 })).status, 200);
  });
  t.equal((await register(f, admin, ['realm'])).realm_message_retention_days, 30);
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { message_retention_days: 'unlimited' })).status, 200);
  t.equal((await register(f, admin, ['realm'])).realm_message_retention_days, -1, '"unlimited" is -1, as Zulip shows it');
});

t.test('the retention pass deletes what is past its period, channel by channel, direct messages by the organization\'s', async (t) => {
  const { f, alice, channels } = await world({ users: { alice: 'Alice' }, channels: { news: ['owner', 'alice'], archive: ['owner', 'alice'], daily: ['owner', 'alice'] } });
  t.teardown(f.stop);
  // Sent 40 days ago: more than a batch in news, some in the others, direct messages too.
  const oldNews: number[] = [];
  for (let i = 0; i < RETENTION_BATCH + 20; i++) oldNews.push(await send(f, f.owner, 'news', `old ${i}`));
  const oldArchive = await send(f, f.owner, 'archive', 'kept forever');
  const oldDaily = await send(f, f.owner, 'daily', 'a day old is too old here');
  const oldDirect = await sendDirect(f, f.owner, alice.user_id, 'an old secret');
  f.clock.t += 40 * DAY_MS;
  const fresh = await send(f, f.owner, 'news', 'fresh');
  const freshDirect = await sendDirect(f, f.owner, alice.user_id, 'a new secret');
  f.clock.t += 2 * DAY_MS;

  t.equal(await expireMessages(f.runtime), 0, 'nothing goes while every period is forever');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { message_retention_days: 30 })).status, 200);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/streams/${channels.archive}`, { message_retention_days: JSON.stringify('unlimited') })).status, 200);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/streams/${channels.daily}`, { message_retention_days: 1 })).status, 200);

  const events = await verifyAction(t, f, alice, ['message', 'delete_message', 'update_message_flags'], ['unread_msgs'], async () => {
    t.equal(await expireMessages(f.runtime), oldNews.length + 2, 'the old news (two batches), the day-old message, the old direct message');
  });
  t.same(events.filter((e) => e.type === 'delete_message').flatMap((e) => e.message_ids ?? [e.message_id]).sort((a: number, b: number) => a - b),
    [...oldNews, oldDaily, oldDirect].sort((a, b) => a - b), 'each deletion told');
  t.same(await visible(f, alice), [oldArchive, fresh, freshDirect], 'what is left: the channel kept forever, and what is within its period');
  t.equal((await f.call(alice, 'GET', `/api/v1/messages/${oldDirect}`)).status, 400, 'the old direct message is gone');
  t.equal(await expireMessages(f.runtime), 0, 'a second pass finds nothing');
});

t.test('a stopped pass is finished by the next', async (t) => {
  const { f } = await world({ channels: { news: ['owner'] } });
  t.teardown(f.stop);
  for (let i = 0; i < RETENTION_BATCH + 5; i++) await send(f, f.owner, 'news', `old ${i}`);
  f.clock.t += 10 * DAY_MS;
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { message_retention_days: 7 })).status, 200);
  let batches = 0;
  t.equal(await expireMessages(f.runtime, () => batches++ >= 1), RETENTION_BATCH, 'stopped after one batch');
  t.equal(await expireMessages(f.runtime), 5, 'the rest');
  t.same(await visible(f, f.owner), []);
});
