/**
 * `DELETE /messages/{message_id}`: who may delete, `delete_message` events in both
 * shapes (with and without the `bulk_message_deletion` capability), what disappears
 * (the message, its unread and flags, its topic), and that a deletion survives a
 * restart from the log and from a snapshot.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Store } from '../src/store.js';
import { createOrganization } from '../src/bootstrap.js';
import { queueEvents, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { world } from './world.js';
import { verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

async function register(f: ChatFixture, who: Credentials, capabilities: Record<string, boolean> = {}): Promise<string> {
  const res = await f.call(who, 'POST', '/api/v1/register', { event_types: ['delete_message', 'message'], client_capabilities: JSON.stringify(capabilities) });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.queue_id;
}

const deletions = (f: ChatFixture, who: Credentials, queueId: string): Promise<any[]> => queueEvents(f, who, queueId, 'delete_message');

/** Carol is not in general. */
const GENERAL = { users: { alice: 'Alice', bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'alice', 'bob'] } } as const;

const send = async (f: ChatFixture, who: Credentials, topic: string, content = 'x'): Promise<number> =>
  (await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic, content })).json.id;

t.test('a sender deletes their channel message; everyone who held it is told', async (t) => {
  const { f, alice, bob, carol, channels: { general: generalId } } = await world(GENERAL);
  t.teardown(f.stop);
  const keep = await send(f, alice, 'plans', 'keep');
  const gone = await send(f, alice, 'Plans', 'gone');
  const [qModern, qLegacy, qCarol] = [await register(f, bob, { bulk_message_deletion: true }), await register(f, f.owner), await register(f, carol)];
  const res = await f.call(alice, 'DELETE', `/api/v1/messages/${gone}`);
  t.same([res.status, res.json.result], [200, 'success'], res.body);
  t.same(await deletions(f, bob, qModern), [{ type: 'delete_message', message_ids: [gone], message_type: 'stream', stream_id: generalId, topic: 'Plans' }]);
  t.same(await deletions(f, f.owner, qLegacy), [{ type: 'delete_message', message_id: gone, message_type: 'stream', stream_id: generalId, topic: 'Plans' }], 'a client without bulk_message_deletion gets message_id');
  t.same(await deletions(f, carol, qCarol), [], 'a non-subscriber of a channel does not hear of it');
  t.same((await f.call(bob, 'GET', `/api/v1/messages/${gone}`)).json.msg, 'Invalid message(s)');
  const left = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0 });
  t.same(left.json.messages.map((m: any) => m.id), [keep]);
  const topics = await f.call(bob, 'GET', `/api/v1/users/me/${generalId}/topics`);
  t.same(topics.json.topics, [{ name: 'plans', max_id: keep }], 'the topic falls back to its newest remaining message');
  await f.call(alice, 'DELETE', `/api/v1/messages/${keep}`);
  t.same((await f.call(bob, 'GET', `/api/v1/users/me/${generalId}/topics`)).json.topics, [], 'and disappears with its last one');
  const twice = await f.call(alice, 'DELETE', `/api/v1/messages/${gone}`);
  t.same([twice.status, twice.json.msg], [400, 'Invalid message(s)']);
});

t.test('who may delete', async (t) => {
  const { f, alice, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const mine = await send(f, alice, 'x');
  const refused = await f.call(bob, 'DELETE', `/api/v1/messages/${mine}`);
  t.same([refused.status, refused.json.code, refused.json.msg], [400, 'BAD_REQUEST', "You don't have permission to delete this message"]);
  t.equal((await f.call(bob, 'GET', `/api/v1/messages/${mine}`)).status, 200, 'a refused delete deletes nothing');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/messages/${mine}`)).status, 200, 'an administrator deletes anyone\'s');
  t.equal((await f.call(bob, 'DELETE', '/api/v1/messages/99999')).json.msg, 'Invalid message(s)');
  t.equal((await f.call(bob, 'DELETE', '/api/v1/messages/abc')).status, 404);
});

t.test('direct messages, and unread state', async (t) => {
  const { f, alice, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'psst' })).json.id as number;
  const channelMsg = await send(f, alice, 'y');
  await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: JSON.stringify([channelMsg]), op: 'add', flag: 'starred' });
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['delete_message', 'message', 'update_message_flags'], fetch_event_types: ['update_message_flags'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  t.equal(reg.json.unread_msgs.count, 2);
  t.same(reg.json.starred_messages, [channelMsg]);
  t.same((await f.call(carol, 'DELETE', `/api/v1/messages/${dm}`)).json.msg, 'Invalid message(s)', 'a message the caller cannot see');
  t.equal((await f.call(bob, 'DELETE', `/api/v1/messages/${dm}`)).json.msg, "You don't have permission to delete this message", 'a recipient is not its sender');
  t.equal((await f.call(alice, 'DELETE', `/api/v1/messages/${dm}`)).status, 200);
  t.equal((await f.call(alice, 'DELETE', `/api/v1/messages/${channelMsg}`)).status, 200);
  t.same(await deletions(f, bob, reg.json.queue_id), [
    { type: 'delete_message', message_ids: [dm], message_type: 'private' },
    { type: 'delete_message', message_ids: [channelMsg], message_type: 'stream', stream_id: channelIdByName(f.runtime, 1, 'general'), topic: 'y' },
  ]);
  const after = await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['update_message_flags'] });
  t.same([after.json.unread_msgs.count, after.json.starred_messages], [0, []], 'unread and starred no longer hold them');
});

t.test('convergence: unread and starred from register plus delete_message events equal a fresh register', async (t) => {
  const { f, alice, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const ids = [await send(f, alice, 'a'), await send(f, alice, 'b'), await send(f, alice, 'c')];
  await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: JSON.stringify(ids), op: 'add', flag: 'starred' });
  const params = { client_capabilities: JSON.stringify({ bulk_message_deletion: true }) };
  const unread = (reg: any): number[] => reg.unread_msgs.streams.flatMap((s: any) => s.unread_message_ids);
  const initial = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['delete_message'], fetch_event_types: ['update_message_flags'], ...params })).json;
  t.same(unread(initial), ids);
  await f.call(alice, 'DELETE', `/api/v1/messages/${ids[0]}`);
  await f.call(f.owner, 'DELETE', `/api/v1/messages/${ids[2]}`);
  // The client model's delete_message: the ids leave unread and starred.
  await verifyState(t, f, bob, initial, ['update_message_flags'], ['unread_msgs', 'starred_messages'], params);
  const fresh = (await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['update_message_flags'], ...params })).json;
  t.same(unread(fresh), [ids[1]], 'and the state is not trivially empty');
});

t.test('a deletion survives a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-delete-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const org = { id: organization_id };
  await rt.execute({ type: 'SUBSCRIBE', org: org.id, actor_id: 1, channels: [{ name: 'c' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const streamId = channelIdByName(rt, org.id, 'c');
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push((await rt.execute({ type: 'SEND_MESSAGE', org: org.id, sender_id: 1, to: { stream_id: streamId, topic: 't' }, content: `m${i}`, client: 't', read_by_sender: false })).id);
  const dm = (await rt.execute({ type: 'SEND_MESSAGE', org: org.id, sender_id: 1, to: { user_ids: [1] }, content: 'note', client: 't', read_by_sender: false })).id;
  await rt.execute({ type: 'DELETE_MESSAGE', org: org.id, actor_id: 1, message_id: ids[1] });
  await store.snapshot();
  await rt.execute({ type: 'DELETE_MESSAGE', org: org.id, actor_id: 1, message_id: ids[2] });
  await rt.execute({ type: 'DELETE_MESSAGE', org: org.id, actor_id: 1, message_id: dm });
  await store.close();
  store = open();
  t.teardown(() => store.close());
  const api = storeClient(store, owner);
  const idsIn = async (narrow: unknown[]) => (await api('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow })).messages.map((m: any) => m.id);
  t.same(await idsIn([{ operator: 'channel', operand: streamId }]), [ids[0], ids[3]], 'one deletion from the snapshot, one from the log');
  t.equal((await api('GET', `/api/v1/messages/${dm}`)).msg, 'Invalid message(s)');
  t.same(await idsIn([{ operator: 'is', operand: 'unread' }]), [ids[0], ids[3]]);
});
