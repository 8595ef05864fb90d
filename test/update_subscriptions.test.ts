/**
 * `PATCH /users/me/subscriptions` (Zulip's `update_subscriptions_backend`): `add` and
 * `delete` in one request, answered with what POST and DELETE answer merged, both or
 * neither; `color` for new subscriptions; Zulip's errors; the same events as POST then
 * DELETE; isolation; convergence of register plus events.
 */
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';
import { verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

const CHANNELS = { users: { alice: 'Alice', bob: 'Bob' }, channels: { general: ['owner', 'alice', 'bob'], random: ['owner', 'bob'], quiet: ['owner'] } } as const;
const patch = (f: ChatFixture, who: Credentials, params: { add?: unknown[]; delete?: string[] }) =>
  f.call(who, 'PATCH', '/api/v1/users/me/subscriptions', Object.fromEntries(Object.entries(params).map(([k, v]) => [k, JSON.stringify(v)])));
/** `who`'s subscriptions, as they list them. */
const subsOf = async (f: ChatFixture, who: Credentials): Promise<any[]> => (await f.call(who, 'GET', '/api/v1/users/me/subscriptions')).json.subscriptions;
const mine = async (f: ChatFixture, who: Credentials): Promise<string[]> => (await subsOf(f, who)).map((s) => s.name).sort();
const idOf = (f: ChatFixture, name: string): number => channelIdByName(f.runtime, 1, name);

t.test('add and delete at once: both answers merged, the events of POST then DELETE', async (t) => {
  const { f, alice, bob } = await world(CHANNELS);
  t.teardown(f.stop);
  const reg = (who: Credentials) => f.call(who, 'POST', '/api/v1/register', { event_types: ['subscription', 'stream'] });
  const [qAlice, qBob] = [(await reg(alice)).json.queue_id, (await reg(bob)).json.queue_id];
  const r = await patch(f, alice, { add: [{ name: 'random', color: '#abcdef' }, { name: 'general' }, { name: 'brand new', description: 'fresh' }], delete: ['general', 'quiet'] });
  t.same(r.json, {
    result: 'success', msg: '',
    subscribed: { [alice.user_id]: ['random', 'brand new'] }, already_subscribed: { [alice.user_id]: ['general'] },
    removed: ['general'], not_removed: ['quiet'],
  }, r.body);
  t.same(await mine(f, alice), ['brand new', 'random']);
  t.equal((await subsOf(f, alice)).find((s) => s.stream_id === idOf(f, 'random')).color, '#abcdef', 'the color asked for');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/streams/${idOf(f, 'brand new')}`)).json.stream.description, 'fresh');
  const aliceEvents = (await queueEvents(f, alice, qAlice)).map((e: any) => `${e.type} ${e.op}` + (e.subscriptions ? ` ${e.subscriptions.map((s: any) => s.name).join(',')}` : ''));
  t.same(aliceEvents, ['stream create', 'subscription add random,brand new', 'subscription remove general'], 'one add, then one remove');
  const bobEvents = (await queueEvents(f, bob, qBob)).map((e: any) => [e.type, e.op, e.stream_ids, e.user_ids]);
  t.same(bobEvents, [
    ['stream', 'create', undefined, undefined],
    ['subscription', 'peer_add', [idOf(f, 'random'), idOf(f, 'brand new')], [alice.user_id]],
    ['subscription', 'peer_remove', [idOf(f, 'general')], [alice.user_id]],
  ]);
});

t.test('one list alone; neither is an error', async (t) => {
  const { f, alice } = await world(CHANNELS);
  t.teardown(f.stop);
  t.same((await patch(f, alice, { add: [{ name: 'random' }] })).json, { result: 'success', msg: '', subscribed: { [alice.user_id]: ['random'] }, already_subscribed: {}, removed: [], not_removed: [] });
  t.same((await patch(f, alice, { delete: ['random'] })).json, { result: 'success', msg: '', subscribed: {}, already_subscribed: {}, removed: ['random'], not_removed: [] });
  for (const params of [{}, { add: [], delete: [] }]) {
    const r = await patch(f, alice, params);
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Nothing to do. Specify at least one of "add" or "delete".'], JSON.stringify(params));
  }
});

t.test("both or neither, and Zulip's errors", async (t) => {
  const { f, alice } = await world(CHANNELS);
  t.teardown(f.stop);
  const missing = await patch(f, alice, { add: [{ name: 'random' }, { name: 'would be new' }], delete: ['nosuch'] });
  t.same([missing.status, missing.json.code, missing.json.msg, missing.json.stream], [400, 'STREAM_DOES_NOT_EXIST', "Channel 'nosuch' does not exist", 'nosuch']);
  t.same(await mine(f, alice), ['general'], 'the add did not happen either');
  const lookup = await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'would be new' });
  t.same([lookup.status, lookup.json.code], [400, 'BAD_REQUEST'], 'nor was the channel created');
  const color = await patch(f, alice, { add: [{ name: 'random', color: 'red' }] });
  t.same([color.status, color.json.msg], [400, 'add.color is not a valid hex color code']);
  t.equal((await patch(f, alice, { add: [{ name: 'random', colour: '#fff' }] })).status, 400, 'an unknown field of add');
  t.equal((await patch(f, alice, { add: [{ name: '' }] })).json.msg, "Channel name can't be empty.");
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true });
  t.same((await patch(f, alice, { add: [{ name: 'vault' }] })).json.msg, 'Unable to access channel (vault).');
  t.same((await patch(f, alice, { delete: ['vault'] })).json.msg, "Channel 'vault' does not exist", "a private channel one cannot see is a missing one");
  const guest = await withRole(f, 'guest@example.com', 600);
  for (const params of [{ add: [{ name: 'general' }] }, { delete: ['general'] }]) {
    const r = await patch(f, guest, params);
    t.same([r.status, r.json.msg], [400, 'Not allowed for guest users'], `guest: ${JSON.stringify(params)}`);
  }
});

t.test('the delete sees what the add did: a channel created and left in one request', async (t) => {
  const { f, alice } = await world(CHANNELS);
  t.teardown(f.stop);
  const r = await patch(f, alice, { add: [{ name: 'Passing' }, { name: 'random' }], delete: ['passing', 'random'] });
  t.same(r.json, { result: 'success', msg: '', subscribed: { [alice.user_id]: ['Passing', 'random'] }, already_subscribed: {}, removed: ['Passing', 'random'], not_removed: [] }, r.body);
  t.same(await mine(f, alice), ['general']);
  t.equal((await f.call(f.owner, 'GET', `/api/v1/streams/${idOf(f, 'passing')}`)).status, 200, 'the channel stays, without her');
  const left = (await f.call(alice, 'POST', '/api/v1/register', { fetch_event_types: ['subscription'] })).json.unsubscribed;
  t.same(left.map((s: any) => s.stream_id).sort(), [idOf(f, 'passing'), idOf(f, 'random')].sort(), 'both left, as after POST then DELETE');
});

t.test('isolation: a channel of another organization is a missing one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'b@beta.example', ownerPassword: 'pw', ownerName: 'B' });
  await f.runtime.execute({ type: 'SUBSCRIBE', org: beta.organization_id, actor_id: 1, channels: [{ name: 'theirs' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const [theirs, missing] = [await patch(f, f.owner, { delete: ['theirs'] }), await patch(f, f.owner, { delete: ['nosuch'] })];
  t.same([theirs.status, theirs.json.code, theirs.json.msg.replace('theirs', 'X')], [missing.status, missing.json.code, missing.json.msg.replace('nosuch', 'X')]);
  const joined = await patch(f, f.owner, { add: [{ name: 'theirs' }] });
  t.same(joined.json.subscribed, { [f.owner.user_id]: ['theirs'] }, 'adding one of that name creates this organization\'s own');
  t.notSame(idOf(f, 'theirs'), undefined);
  const theirId = channelIdByName(f.runtime, beta.organization_id, 'theirs');
  t.equal((await f.call(beta.owner, 'GET', `/api/v1/streams/${theirId}/members`, {}, { headers: { host: 'beta.localhost' } })).json.subscribers.length, 1, 'theirs is untouched');
});

t.test('convergence: subscriptions from register plus the events equal a fresh register', async (t) => {
  const { f, alice, bob } = await world(CHANNELS);
  t.teardown(f.stop);
  const state = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['subscription'] })).json;
  const watchers = [{ who: alice, s: await state(alice) }, { who: bob, s: await state(bob) }];
  await patch(f, alice, { add: [{ name: 'random', color: '#123456' }, { name: 'new one' }], delete: ['general'] });
  await patch(f, bob, { add: [{ name: 'new one' }], delete: ['random'] });
  await patch(f, alice, { delete: ['new one'], add: [{ name: 'general' }] });
  // The client model's subscription: add and remove move channels between the lists; peer_add and peer_remove the subscribers.
  for (const { who, s } of watchers) {
    await verifyState(t, f, who, s, ['subscription'], ['subscriptions', 'unsubscribed', 'never_subscribed']);
    t.ok((await state(who)).subscriptions.length >= 2, 'and the state is not trivially empty');
  }
});
