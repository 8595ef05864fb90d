/**
 * `POST /streams/{stream_id}/delete_topic`: administrators delete every message of a
 * topic they can read (protected history: only those they received), newest first in
 * batches, answering `complete: false` when the time limit stops them; `delete_message`
 * events per batch in Zulip's two forms (one with `message_ids` for `bulk_message_deletion`
 * clients, one per message for the others), to the acting administrator too; the empty topic by its display name; visibility policies of
 * the gone topic reset; Zulip's errors, roles, isolation and convergence.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { TOPIC_DELETION_BATCH } from '../actors/areas/topic_deletion.js';
import { chatFixture, queueEvents, storeClient, withRole, type ChatFixture, type Credentials, openTestStore } from './helpers.js';
import { world } from './world.js';
import { verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

const GENERAL = { users: { alice: 'Alice', bob: 'Bob' }, channels: { general: ['owner', 'alice', 'bob'] } } as const;
const send = async (f: ChatFixture, who: Credentials, topic: string, to = 'general'): Promise<number> => {
  const r = await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to, topic, content: 'x' });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.id;
};
const del = (f: ChatFixture, who: Credentials, id: number | string, topic_name?: string) =>
  f.call(who, 'POST', `/api/v1/streams/${id}/delete_topic`, topic_name === undefined ? {} : { topic_name });
/** The ids of a channel's messages, ascending, as the organization's owner (or `who`, for a private channel) sees them. */
const idsIn = async (f: ChatFixture, stream: number, who: Credentials = f.owner): Promise<number[]> => {
  const r = await f.call(who, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 1000, narrow: [{ operator: 'channel', operand: stream }] });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.messages.map((m: any) => m.id);
};

t.test('an administrator deletes a topic, whatever its case; everyone who held it is told', async (t) => {
  const { f, alice, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const gone = [await send(f, alice, 'plans'), await send(f, bob, 'Plans'), await send(f, alice, 'PLANS')];
  const kept = await send(f, alice, 'lunch');
  const q = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) })).json.queue_id;
  const qOld = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['delete_message'] })).json.queue_id;
  const r = await del(f, f.owner, general, 'Plans');
  t.same(r.json, { result: 'success', msg: '', complete: true }, r.body);
  t.same(await idsIn(f, general), [kept], 'the other topic stays');
  t.same(await queueEvents(f, bob, q, 'delete_message'), [{ type: 'delete_message', message_ids: gone, message_type: 'stream', stream_id: general, topic: 'plans' }],
    'bulk_message_deletion: one event for the batch, its ids ascending, as Zulip\'s do_delete_messages sends it');
  t.same(await queueEvents(f, alice, qOld, 'delete_message'), gone.map((id) => ({ type: 'delete_message', message_id: id, message_type: 'stream', stream_id: general, topic: 'plans' })),
    'without it: one event per message, in the same order');
  t.same((await f.call(bob, 'GET', `/api/v1/users/me/${general}/topics`)).json.topics.map((x: any) => x.name), ['lunch']);
  t.same((await del(f, f.owner, general, 'plans')).json.complete, true, 'a topic with nothing left: complete');
  t.same((await del(f, f.owner, general, 'never')).json.complete, true, 'so is one that never existed');
});

t.test('batch events: one per batch in the bulk form; every id to everyone told; the acting administrator is told', async (t) => {
  const { f, alice, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const total = TOPIC_DELETION_BATCH + 20;
  const ids: number[] = [];
  for (let i = 0; i < total; i++) ids.push(await send(f, alice, 'big'));
  const register = async (who: Credentials, bulk: boolean) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: bulk }) })).json.queue_id as string;
  const [qBulk, qOld, qAdmin] = [await register(bob, true), await register(alice, false), await register(admin, true)];
  t.notOk((await f.call(f.owner, 'GET', `/api/v1/streams/${general}/members`)).json.subscribers.includes(admin.user_id), 'the administrator is not subscribed');
  t.same((await del(f, admin, general, 'big')).json.complete, true);
  const newest = ids.slice(-TOPIC_DELETION_BATCH);
  const oldest = ids.slice(0, total - TOPIC_DELETION_BATCH);
  const bulk = await queueEvents(f, bob, qBulk, 'delete_message');
  t.same(bulk.map((e) => e.message_ids), [newest, oldest], 'the newest batch first, each one event, ids ascending');
  t.same(bulk.map((e) => [e.message_type, e.stream_id, e.topic]), [['stream', general, 'big'], ['stream', general, 'big']]);
  const single = await queueEvents(f, alice, qOld, 'delete_message');
  t.same(single.map((e) => e.message_id), [...newest, ...oldest], 'one per message, batch by batch');
  t.ok(single.every((e) => !('message_ids' in e)), 'no message_ids in the per-message form');
  t.same((await queueEvents(f, admin, qAdmin, 'delete_message')).map((e) => e.message_ids), [newest, oldest], 'the acting administrator is told, as in Zulip, though not subscribed');
});

t.test('batch events with protected history: everyone who held any message of a batch gets all its ids', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true, history_public_to_subscribers: false, principals: JSON.stringify([f.owner.user_id, alice.user_id]) });
  const vault = channelIdByName(f.runtime, 1, 'vault');
  const early = await send(f, alice, 'secrets', 'vault');
  await f.call(alice, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), principals: JSON.stringify([bob.user_id]) });
  const late = await send(f, alice, 'secrets', 'vault');
  const register = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) })).json.queue_id as string;
  const [qBob, qCarol] = [await register(bob), await register(carol)];
  t.same((await del(f, f.owner, vault, 'secrets')).json.complete, true);
  t.same((await queueEvents(f, bob, qBob)).map((e) => e.message_ids), [[early, late]], 'Bob held only the later one, and is told of the batch (Zulip sends one event to everyone concerned)');
  t.same(await queueEvents(f, carol, qCarol), [], 'Carol, outside the channel, hears nothing');
});

t.test('the empty topic by its display name or by ""', async (t) => {
  const { f, alice, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  await send(f, alice, '');
  const named = await send(f, alice, 'general chat!');
  t.equal((await del(f, f.owner, general, 'general chat')).json.complete, true);
  t.same(await idsIn(f, general), [named], '"general chat" names the empty topic');
  await send(f, alice, '');
  t.equal((await del(f, f.owner, general, '')).status, 200);
  t.same(await idsIn(f, general), [named]);
});

t.test('protected history: only the messages the administrator received', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const admin = await withRole(f, 'admin@example.com', 200);
  const made = await f.call(alice, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true, history_public_to_subscribers: false });
  t.equal(made.status, 200, made.body);
  const vault = channelIdByName(f.runtime, 1, 'vault');
  const before = await send(f, alice, 'secrets', 'vault');
  t.same((await del(f, admin, vault, 'secrets')).json.msg, 'Invalid channel ID', 'no content access: an administrator outside a private channel');
  t.equal((await f.call(alice, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), principals: JSON.stringify([admin.user_id]) })).status, 200);
  const after = await send(f, alice, 'secrets', 'vault');
  const r = await del(f, admin, vault, 'secrets');
  t.same(r.json.complete, true, r.body);
  t.same((await idsIn(f, vault, alice)).filter((id) => id === before || id === after), [before], 'the message sent before they joined stays');
});

t.test('batches: a large topic goes in several; the time limit answers complete: false, and a repeat finishes', async (t) => {
  const { f, alice, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const total = 2 * TOPIC_DELETION_BATCH + 50;
  for (let i = 0; i < total; i++) await send(f, alice, 'big');
  const other = await send(f, alice, 'small');
  // Every reading of the clock now moves it 20 s on: the 50 s limit is reached after a batch or two.
  let now = f.clock.t;
  Object.defineProperty(f.clock, 't', { configurable: true, get: () => (now += 20_000) });
  const first = await del(f, f.owner, general, 'big');
  Object.defineProperty(f.clock, 't', { configurable: true, writable: true, value: now });
  t.same(first.json, { result: 'success', msg: '', complete: false }, first.body);
  const left = (await idsIn(f, general)).length - 1;
  t.ok(left > 0 && left < total && (total - left) % TOPIC_DELETION_BATCH === 0, `whole batches deleted (${total - left}), the oldest ${left} left`);
  const second = await del(f, f.owner, general, 'big');
  t.same(second.json.complete, true);
  t.same(await idsIn(f, general), [other]);
});

t.test('a followed or muted topic goes back to the default for those who no longer see it', async (t) => {
  const { f, alice, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  await send(f, alice, 'plans');
  t.equal((await f.call(alice, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'plans', visibility_policy: 3 })).status, 200);
  t.equal((await f.call(bob, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'other', visibility_policy: 1 })).status, 200);
  const q = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['user_topic'] })).json.queue_id;
  t.equal((await del(f, f.owner, general, 'Plans')).json.complete, true);
  t.match(await queueEvents(f, alice, q, 'user_topic'), [{ stream_id: general, topic_name: 'plans', visibility_policy: 0 }]);
  t.same((await f.call(alice, 'POST', '/api/v1/register', { fetch_event_types: ['user_topic'] })).json.user_topics, []);
  t.equal((await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['user_topic'] })).json.user_topics.length, 1, "another topic's policy stays");
});

t.test("Zulip's errors", async (t) => {
  const { f, alice, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  await send(f, alice, 'plans');
  const refused = await del(f, alice, general, 'plans');
  t.same([refused.status, refused.json.code, refused.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator']);
  t.same((await del(f, alice, 9999, 'plans')).json.msg, 'Must be an organization administrator', 'the role is checked first');
  t.same([(await del(f, f.owner, 9999, 'plans')).status, (await del(f, f.owner, 9999, 'plans')).json.msg], [400, 'Invalid channel ID']);
  t.equal((await del(f, f.owner, general)).json.code, 'REQUEST_VARIABLE_MISSING');
  t.equal((await idsIn(f, general)).length, 1, 'nothing deleted');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${general}`)).status, 200);
  t.same((await del(f, f.owner, general, 'plans')).json.msg, 'Invalid channel ID', 'an archived channel');
});

t.test('per role', async (t) => {
  const { f, alice, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, number]> = [
    ['owner', f.owner, 200], ['administrator', await withRole(f, 'a@example.com', 200), 200], ['moderator', await withRole(f, 'm@example.com', 300), 400],
    ['member', await withRole(f, 'u@example.com', 400), 400], ['guest', await withRole(f, 'g@example.com', 600), 400],
  ];
  for (const [role, who, status] of roles) {
    const id = await send(f, alice, role);
    const r = await del(f, who, general, role);
    t.same([r.status, r.json.code], [status, status === 200 ? undefined : 'UNAUTHORIZED_PRINCIPAL'], role);
    t.equal((await idsIn(f, general)).includes(id), status !== 200, `${role}: the topic is ${status === 200 ? 'gone' : 'still there'}`);
  }
});

t.test('isolation: a channel id of another organization is a missing one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'b@beta.example', ownerPassword: 'pw', ownerName: 'B' });
  for (const name of ['a', 'b', 'secret']) {
    await f.runtime.execute({ type: 'SUBSCRIBE', org: beta.organization_id, actor_id: 1, channels: [{ name }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  }
  const foreign = channelIdByName(f.runtime, beta.organization_id, 'secret');
  t.notOk(f.runtime.channelIdsOf(1).includes(foreign));
  await f.runtime.execute({ type: 'SEND_MESSAGE', org: beta.organization_id, sender_id: 1, to: { stream_id: foreign, topic: 't' }, content: 'theirs', client: 't', read_by_sender: false });
  const [theirs, missing] = [await del(f, f.owner, foreign, 't'), await del(f, f.owner, 99999, 't')];
  t.same([theirs.status, theirs.json], [missing.status, missing.json]);
  const stays = await f.call(beta.owner, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 10, narrow: [{ operator: 'channel', operand: foreign }] }, { headers: { host: 'beta.localhost' } });
  t.equal(stays.json.messages.length, 1, 'their message stays');
});

t.test('convergence: unread messages and user topics from register plus the events equal a fresh register', async (t) => {
  const { f, alice, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const ids = [await send(f, alice, 'a'), await send(f, alice, 'b'), await send(f, alice, 'a'), await send(f, alice, 'c')];
  await f.call(bob, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'a', visibility_policy: 3 });
  await f.call(bob, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'c', visibility_policy: 1 });
  const types = ['update_message_flags', 'user_topic'];
  const params = { client_capabilities: JSON.stringify({ bulk_message_deletion: true }) };
  const unread = (reg: any): number[] => reg.unread_msgs.streams.flatMap((s: any) => s.unread_message_ids).sort((a: number, b: number) => a - b);
  const s = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['delete_message', 'user_topic'], fetch_event_types: types, ...params })).json;
  t.same(unread(s), ids);
  await del(f, f.owner, general, 'a');
  // The client model: delete_message drops the ids from unread; user_topic replaces (or, with policy 0, removes) the entry.
  await verifyState(t, f, bob, s, types, ['unread_msgs', 'user_topics'], params);
  const fresh = (await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: types, ...params })).json;
  t.same([unread(fresh), fresh.user_topics.map((x: any) => x.topic_name)], [[ids[1], ids[3]], ['c']], 'and the state is not trivially empty');
});

t.test('convergence without bulk_message_deletion: the per-message events drop the same ids', async (t) => {
  const { f, alice, bob, channels: { general } } = await world(GENERAL);
  t.teardown(f.stop);
  const ids = [await send(f, alice, 'a'), await send(f, alice, 'b'), await send(f, alice, 'A')];
  const unreadOf = (reg: any): number[] => reg.unread_msgs.streams.flatMap((x: any) => x.unread_message_ids).sort((a: number, b: number) => a - b);
  const reg = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['delete_message'], fetch_event_types: ['update_message_flags'] })).json;
  t.same(unreadOf(reg), ids);
  await del(f, f.owner, general, 'a');
  await verifyState(t, f, bob, reg, ['update_message_flags'], ['unread_msgs']);
  t.same(unreadOf((await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['update_message_flags'] })).json), [ids[1]]);
});

t.test('after a restart, both queues hold the same batch events, rebuilt from the log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-delete-topic-'));
  const open = (): Store => openTestStore(dir);

  const a = open();
  const org = await createOrganization(a.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const owner = { email: org.owner.email, api_key: org.owner.api_key };
  let call = storeClient(a, owner);
  await call('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
  const { stream_id: general } = await call('GET', '/api/v1/get_stream_id', { stream: 'general' });
  for (let i = 0; i < 3; i++) await call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'doomed', content: `m${i}` });
  const bulkQ = (await call('POST', '/api/v1/register', { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) })).queue_id as string;
  const oldQ = (await call('POST', '/api/v1/register', { event_types: ['delete_message'] })).queue_id as string;
  t.equal((await call('POST', `/api/v1/streams/${general}/delete_topic`, { topic_name: 'doomed' })).result, 'success');
  const before = [await call('GET', '/api/v1/events', { queue_id: bulkQ, last_event_id: -1, dont_block: true }), await call('GET', '/api/v1/events', { queue_id: oldQ, last_event_id: -1, dont_block: true })];
  t.same(before.map((r) => r.events.length), [1, 3]);
  await a.writer.drain();
  a.crash();
  const b = open();
  t.teardown(() => b.close());
  call = storeClient(b, owner);
  const after = [await call('GET', '/api/v1/events', { queue_id: bulkQ, last_event_id: -1, dont_block: true }), await call('GET', '/api/v1/events', { queue_id: oldQ, last_event_id: -1, dont_block: true })];
  t.same(after.map((r) => r.events), before.map((r) => r.events), 'the same events with the same ids after a crash restart');
});
