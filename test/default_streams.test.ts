/**
 * `POST` and `DELETE /default_streams`: administrators only; Zulip's errors (a private
 * channel, a channel the caller cannot reach, a missing, foreign or archived one); the
 * `default_streams` event (ids, to everyone but guests) and `realm_default_streams` in
 * `/register`; archiving takes a channel out; convergence; and a restart keeps it.
 * And `PATCH /streams/{id}` with `is_default_stream` (Zulip's update_stream_backend):
 * administrators only, and no request may leave a channel both private and default.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Store } from '../src/store.js';
import { createOrganization, type CreatedOrg } from '../src/bootstrap.js';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { world } from './world.js';
import { register, verifyAction, verifyState } from './client_model.js';
import { channelIdByName, listChannels } from '../actors/areas/channels.js';
import { findUserByEmail } from '../actors/areas/users.js';

/** Alice and the owner in lobby; news has only the owner. */
const LOBBY = { users: { alice: 'Alice' }, channels: { lobby: ['owner', 'alice'], news: ['owner'] } } as const;
const add = (f: ChatFixture, who: Credentials, id: number | string) => f.call(who, 'POST', '/api/v1/default_streams', { stream_id: id });
const remove = (f: ChatFixture, who: Credentials, id: number | string) => f.call(who, 'DELETE', '/api/v1/default_streams', { stream_id: id });
const registered = async (f: ChatFixture, who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['default_streams'] })).json.realm_default_streams;


/** A channel as the organization's owner lists it (every channel, archived ones too, with `is_default`), or as `org`'s owner does. */
async function shown(f: ChatFixture, id: number, org?: CreatedOrg): Promise<any> {
  const [orgId, email] = org ? [org.organization_id, org.owner.email] : [1, f.owner.email];
  const all = listChannels(f.runtime, orgId, findUserByEmail(f.runtime, orgId, email)!, { include_public: true, include_subscribed: true, include_all: true, include_default: true, include_archived: true });
  return all.find((s) => s.stream_id === id);
}

/** Every channel of an opened store's organization as its owner lists them, by id. */
async function shownIn(store: Store, owner: Credentials): Promise<Map<number, any>> {
  const { streams } = await storeClient(store, owner)('GET', '/api/v1/streams', { include_all: true, include_default: true });
  return new Map(streams.map((s: any) => [s.stream_id, s]));
}

/** A second organization and the id of one of its channels, which is not an id this organization has. */
async function foreignChannel(f: ChatFixture): Promise<{ org: number; foreign: number; beta: CreatedOrg }> {
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'b@beta.example', ownerPassword: 'pw', ownerName: 'B' });
  for (const name of ['a', 'b', 'c', 'secret']) {
    await f.runtime.execute({ type: 'SUBSCRIBE', org: beta.organization_id, actor_id: 1, channels: [{ name }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  }
  return { org: beta.organization_id, foreign: channelIdByName(f.runtime, beta.organization_id, 'secret'), beta };
}
t.test('add and remove, with default_streams events to everyone but guests', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', 600);
  const q = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['default_streams'] })).json.queue_id as string;
  const [qAlice, qGuest] = [await q(alice), await q(guest)];
  t.same(await registered(f, alice), [], 'no default channels yet');
  const r = await add(f, f.owner, news);
  t.same([r.status, r.json.result], [200, 'success'], r.body);
  t.equal((await add(f, f.owner, lobby)).status, 200);
  t.same(await registered(f, alice), [lobby, news], 'ids, ascending');
  t.same(await registered(f, guest), [], 'a guest sees none, as in Zulip');
  t.equal((await add(f, f.owner, news)).status, 200, 'adding a default channel again succeeds');
  t.same(await queueEvents(f, alice, qAlice), [{ type: 'default_streams', default_streams: [news] }, { type: 'default_streams', default_streams: [lobby, news] }], 'and tells no one');
  t.same(await queueEvents(f, guest, qGuest), [], 'guests are not told');
  t.ok((await shown(f, news)).is_default);
  t.equal((await remove(f, f.owner, news)).status, 200);
  t.same(await registered(f, alice), [lobby]);
  t.equal((await remove(f, f.owner, news)).status, 200, 'removing a channel that is not default succeeds');
  t.same((await queueEvents(f, alice, qAlice)).slice(2), [{ type: 'default_streams', default_streams: [lobby] }, { type: 'default_streams', default_streams: [lobby] }], 'and tells everyone again, as Zulip does');
  const listed = (await f.call(alice, 'GET', '/api/v1/streams', { include_default: true })).json.streams;
  t.same(listed.map((s: any) => [s.stream_id, s.is_default]), [[lobby, true], [news, false]], 'GET /streams?include_default=true marks them');
  t.notOk('is_default' in (await f.call(alice, 'GET', `/api/v1/streams/${lobby}`)).json.stream, 'other channel objects do not carry is_default, as in Zulip');
});

t.test("Zulip's errors", async (t) => {
  const { f, alice, channels: { lobby } } = await world(LOBBY);
  t.teardown(f.stop);
  const err = async (res: Promise<any>, status: number, msg: string, code = 'BAD_REQUEST', what = msg) => {
    const r = await res;
    t.same([r.status, r.json.msg, r.json.code], [status, msg, code], what);
  };
  await err(add(f, alice, lobby), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
  await err(remove(f, alice, lobby), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
  await err(add(f, alice, 9999), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL', 'the role is checked first');
  const priv = (who: Credentials, name: string) => f.call(who, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), invite_only: true });
  await priv(f.owner, 'inner');
  const inner = channelIdByName(f.runtime, 1, 'inner');
  await err(add(f, f.owner, inner), 400, 'Private channels cannot be made default.');
  await priv(alice, 'hidden');
  const hidden = channelIdByName(f.runtime, 1, 'hidden');
  await err(add(f, f.owner, hidden), 400, 'Invalid channel ID', 'BAD_REQUEST', 'adding needs content access: a private channel the administrator is not in');
  t.equal((await remove(f, f.owner, hidden)).status, 200, 'removing needs only metadata access');
  await err(add(f, f.owner, 9999), 400, 'Invalid channel ID');
  await err(remove(f, f.owner, 9999), 400, 'Invalid channel ID');
  t.equal((await add(f, f.owner, 'abc')).status, 400, 'not an integer');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/default_streams', {})).json.code, 'REQUEST_VARIABLE_MISSING');
  t.notOk((await shown(f, inner)).is_default, 'nothing changed');
});

t.test('archived channels: archiving takes a default channel out, and an archived one is a missing one', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  await add(f, f.owner, lobby);
  await add(f, f.owner, news);
  const qAlice = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['default_streams'] })).json.queue_id;
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${news}`)).status, 200);
  t.same(await queueEvents(f, alice, qAlice, 'default_streams'), [{ type: 'default_streams', default_streams: [lobby] }]);
  t.same(await registered(f, alice), [lobby]);
  t.notOk((await shown(f, news)).is_default);
  t.same((await add(f, f.owner, news)).json.msg, 'Invalid channel ID');
  t.same((await remove(f, f.owner, news)).json.msg, 'Invalid channel ID');
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/streams/${news}`, { is_archived: false })).status, 200);
  t.same(await registered(f, alice), [lobby], 'unarchiving does not make it default again');
});

t.test('per role', async (t) => {
  const { f, channels: { news } } = await world(LOBBY);
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, number]> = [
    ['owner', f.owner, 200], ['administrator', await withRole(f, 'a@example.com', 200), 200], ['moderator', await withRole(f, 'm@example.com', 300), 400],
    ['member', await withRole(f, 'u@example.com', 400), 400], ['guest', await withRole(f, 'g@example.com', 600), 400],
  ];
  for (const [role, who, status] of roles) {
    const code = status === 200 ? undefined : 'UNAUTHORIZED_PRINCIPAL';
    const added = await add(f, who, news);
    t.same([added.status, added.json.code], [status, code], `${role} adds`);
    const removed = await remove(f, who, news);
    t.same([removed.status, removed.json.code], [status, code], `${role} removes`);
  }
});

t.test('isolation: a channel id of another organization is a missing one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const { org: beta, foreign } = await foreignChannel(f);
  t.notOk(f.runtime.channelIdsOf(1).includes(foreign), 'the id is not one of this organization');
  for (const call of [add, remove]) {
    const [theirs, missing] = [await call(f, f.owner, foreign), await call(f, f.owner, 99999)];
    t.same([theirs.status, theirs.json], [missing.status, missing.json]);
    t.equal(theirs.json.msg, 'Invalid channel ID');
  }
  await f.runtime.execute({ type: 'SET_DEFAULT_CHANNEL', stream_id: foreign, org: beta, actor_id: 1, is_default: true });
  t.same(await registered(f, f.owner), [], "another organization's default channel is not this one's");
});

t.test('convergence: realm_default_streams and streams from register plus the events equal a fresh register', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const types = ['default_streams', 'stream'];
  // The client model: default_streams replaces the list; stream create adds, update sets the
  // property. The defaults and the channel objects (no is_default in them), in one comparison.
  await verifyAction(t, f, alice, types, ['realm_default_streams', 'streams'], async () => {
    await add(f, f.owner, news);
    await add(f, f.owner, lobby);
    await remove(f, f.owner, news);
    await f.call(f.owner, 'POST', '/api/v1/channels/create', { name: 'fresh', subscribers: '[]', is_default_stream: true });
  });
  t.equal((await register(f, alice, types)).realm_default_streams.length, 2, 'and the state is not trivially empty');
});

t.test('default channels survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-defaults-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id: org, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org, actor_id: 1, channels: [{ name: 'a' }, { name: 'b' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const [a, b] = ['a', 'b'].map((n) => channelIdByName(rt, org, n));
  const set = (stream_id: number, is_default: boolean) => rt.execute({ type: 'SET_DEFAULT_CHANNEL', stream_id, org, actor_id: 1, is_default });
  await set(a, true);
  await store.snapshot();
  await set(b, true);
  await set(a, false);
  await store.close();
  store = open();
  t.teardown(() => store.close());
  const channels = await shownIn(store, owner);
  t.same([a, b].map((id) => channels.get(id).is_default), [false, true]);
});

const patch = (f: ChatFixture, who: Credentials, id: number | string, params: Record<string, unknown>) => f.call(who, 'PATCH', `/api/v1/streams/${id}`, params);

t.test('PATCH /streams/{id} with is_default_stream: adds and removes, with the same events as /default_streams', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', 600);
  const q = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['default_streams', 'stream'] })).json.queue_id as string;
  const [qAlice, qGuest] = [await q(alice), await q(guest)];
  let r = await patch(f, f.owner, news, { is_default_stream: true });
  t.same([r.status, r.json.result], [200, 'success'], r.body);
  t.same(await registered(f, alice), [news]);
  t.equal((await patch(f, f.owner, news, { is_default_stream: true })).status, 200, 'making a default channel default again succeeds');
  r = await patch(f, f.owner, lobby, { is_default_stream: true, description: 'The lobby' });
  t.equal(r.status, 200, 'together with another change');
  t.same(await registered(f, alice), [lobby, news]);
  t.equal((await patch(f, f.owner, news, { is_default_stream: false })).status, 200);
  t.equal((await patch(f, f.owner, news, { is_default_stream: false })).status, 200, 'taking out a channel that is not default succeeds');
  t.same(await registered(f, alice), [lobby]);
  t.same(await queueEvents(f, alice, qAlice, 'default_streams'), [
    { type: 'default_streams', default_streams: [news] },
    { type: 'default_streams', default_streams: [lobby, news] },
    { type: 'default_streams', default_streams: [lobby] },
    { type: 'default_streams', default_streams: [lobby] },
  ], 'adding again tells no one; removing always tells, as in Zulip');
  const streamEvents = await queueEvents(f, alice, qAlice, 'stream');
  t.same(streamEvents.map((e) => e.property).filter((p) => p !== 'first_message_id'), ['description'], 'no stream update event for the default status (the description notice sets first_message_id)');
  t.same(await queueEvents(f, guest, qGuest, 'default_streams'), [], 'guests are not told');
  t.same([(await shown(f, lobby)).is_default, (await shown(f, news)).is_default], [true, false]);
});

t.test('PATCH /streams/{id}: a default channel cannot be private, whichever the request changes', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const err = async (res: Promise<any>, msg: string, what: string) => {
    const r = await res;
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', msg], what);
  };
  await patch(f, f.owner, news, { is_default_stream: true });
  const qAlice = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['default_streams', 'stream'] })).json.queue_id as string;
  await err(patch(f, f.owner, news, { is_private: true }), 'A default channel cannot be private.', 'making a default channel private, in a later request');
  await err(patch(f, f.owner, news, { is_private: true, is_default_stream: true }), 'A default channel cannot be private.', 'private and default in one request');
  await err(patch(f, f.owner, lobby, { is_private: true, is_default_stream: true }), 'A default channel cannot be private.', 'a public channel made private and default at once');
  t.same([(await shown(f, news)).invite_only, (await shown(f, lobby)).invite_only], [false, false], 'nothing changed');
  t.same(await queueEvents(f, alice, qAlice), [], 'and no one was told');
  // Taking it out in the same request makes it possible.
  const r = await patch(f, f.owner, news, { is_private: true, is_default_stream: false });
  t.equal(r.status, 200, r.body);
  t.same([(await shown(f, news)).invite_only, (await shown(f, news)).is_default], [true, false]);
  t.same(await registered(f, f.owner), []);
  await err(patch(f, f.owner, news, { is_default_stream: true }), 'A default channel cannot be private.', 'a private channel cannot be made default');
  t.same((await add(f, f.owner, news)).json.msg, 'Private channels cannot be made default.', 'POST /default_streams keeps its own message, as in Zulip');
  t.equal((await patch(f, f.owner, news, { is_private: false, is_default_stream: true })).status, 200, 'made public and default at once');
  t.same(await registered(f, f.owner), [news]);
  t.equal((await patch(f, f.owner, news, { is_private: true, is_default_stream: false })).status, 200);
  t.equal((await patch(f, f.owner, news, { is_default_stream: false })).status, 200, 'taking a private channel out is allowed');
  const created = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name: 'both', subscribers: '[]', is_default_stream: true, invite_only: true });
  t.same([created.status, created.json.msg], [400, 'A default channel cannot be private.'], 'creating one is refused alike');
});

t.test('PATCH /streams/{id} with is_default_stream: organization administrators only; other errors first', async (t) => {
  const { f, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const admin = await withRole(f, 'a@example.com', 200);
  const moderator = await withRole(f, 'm@example.com', 300);
  const member = await withRole(f, 'u@example.com', 400);
  // The moderator administers a channel they created; that is not enough for the default status.
  await f.call(moderator, 'POST', '/api/v1/channels/create', { name: 'modchan', subscribers: '[]' });
  const modchan = channelIdByName(f.runtime, 1, 'modchan');
  for (const value of [true, false]) {
    const r = await patch(f, moderator, modchan, { is_default_stream: value });
    t.same([r.json.code, r.json.msg], ['UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], `a channel administrator who is a moderator, is_default_stream=${value}`);
  }
  const r = await patch(f, moderator, modchan, { is_default_stream: true, description: 'changed?' });
  t.equal(r.json.code, 'UNAUTHORIZED_PRINCIPAL');
  t.equal((await shown(f, modchan)).description, '', 'the request changes nothing at all');
  t.equal((await patch(f, moderator, modchan, { description: 'fine' })).status, 200, 'they may still change the rest');
  const m = await patch(f, member, lobby, { is_default_stream: true });
  t.same([m.status, m.json.msg], [400, 'You do not have permission to administer this channel.'], 'a member who does not administer the channel');
  t.equal((await patch(f, admin, news, { is_default_stream: true })).status, 200, 'an administrator');
  t.equal((await patch(f, f.owner, lobby, { is_default_stream: true })).status, 200, 'the owner');
  t.same(await registered(f, f.owner), [lobby, news]);
  t.equal((await patch(f, f.owner, news, { is_default_stream: 'yes' })).status, 400, 'not a boolean');
  t.same((await patch(f, f.owner, 9999, { is_default_stream: true })).json.msg, 'Invalid channel ID');
  await f.call(f.owner, 'DELETE', `/api/v1/streams/${news}`);
  t.same((await patch(f, f.owner, news, { is_default_stream: true })).json.msg, 'Channel is archived.', 'an archived channel');
  t.same(await registered(f, f.owner), [lobby]);
});

t.test('PATCH /streams/{id} with is_default_stream: a channel of another organization is a missing one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const { foreign, beta } = await foreignChannel(f);
  t.notOk(f.runtime.channelIdsOf(1).includes(foreign));
  for (const value of [true, false]) {
    const [theirs, missing] = [await patch(f, f.owner, foreign, { is_default_stream: value }), await patch(f, f.owner, 99999, { is_default_stream: value })];
    t.same([theirs.status, theirs.json], [missing.status, missing.json]);
    t.equal(theirs.json.msg, 'Invalid channel ID');
  }
  t.equal((await shown(f, foreign, beta)).is_default, false, 'theirs is untouched');
});

t.test('PATCH /streams/{id} with is_default_stream: convergence and a restart', async (t) => {
  const { f, alice, channels: { lobby, news } } = await world(LOBBY);
  t.teardown(f.stop);
  const reg = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['default_streams'] })).json;
  await patch(f, f.owner, news, { is_default_stream: true });
  await patch(f, f.owner, lobby, { is_default_stream: true });
  await patch(f, f.owner, news, { is_default_stream: false, is_private: true });
  await patch(f, f.owner, lobby, { is_default_stream: true });
  await verifyState(t, f, alice, reg, ['default_streams'], ['realm_default_streams']);
  t.same(await registered(f, alice), [lobby]);

  const dir = mkdtempSync(join(tmpdir(), 'parley-defaults-patch-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id: org, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org, actor_id: 1, channels: [{ name: 'a' }, { name: 'b' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const [a, b] = ['a', 'b'].map((n) => channelIdByName(rt, org, n));
  const update = (stream_id: number, is_default_stream: boolean, is_private?: boolean) =>
    rt.execute({ type: 'UPDATE_CHANNEL', stream_id, org, actor_id: 1, is_default_stream, is_private });
  await update(a, true);
  await store.snapshot();
  await update(b, true);
  await update(a, false, true);
  await store.close();
  store = open();
  t.teardown(() => store.close());
  const channels = await shownIn(store, owner);
  t.same([a, b].map((id) => [channels.get(id).is_default, channels.get(id).invite_only]), [[false, true], [true, false]]);
});
