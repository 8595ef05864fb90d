/**
 * Presence: the modern, slim and legacy formats, `last_update_id` and
 * `history_limit_days`, Zulip's thresholds, the CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE
 * restriction, `presence` events (and none for a routine ping), convergence of
 * register plus events, tenant isolation and hostile input. Snapshots of presence:
 * presence_snapshot.test.ts.
 */
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { botCredentials, chatFixture, queueEvents, withRole, type ChatFixture, type Credentials } from './helpers.js';
import { register, verifyState } from './client_model.js';

const ping = (f: ChatFixture, who: Credentials, params: Record<string, unknown>) => f.call(who, 'POST', '/api/v1/users/me/presence', params);
const T0 = 1_800_000_000;

t.test('formats: modern with last_update_id, slim_presence, legacy; ping_only', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const r0 = await ping(f, f.owner, { status: 'idle', ping_only: true });
  t.same(r0.json, { result: 'success', msg: '' }, 'ping_only returns nothing more, as in Zulip');
  f.clock.t += 10_000;
  let r = await ping(f, alice, { status: 'active', last_update_id: -1 });
  t.equal(r.status, 200, r.body);
  const ownerJoined = Date.parse((await f.call(f.owner, 'GET', `/api/v1/users/${f.owner.user_id}`)).json.user.date_joined) / 1000;
  t.same(r.json.presences, {
    [f.owner.user_id]: { active_timestamp: ownerJoined, idle_timestamp: T0 },
    [alice.user_id]: { active_timestamp: T0 + 10, idle_timestamp: T0 + 10 },
  }, 'never active shows the join date');
  t.equal(r.json.presence_last_update_id, 2);
  t.equal(r.json.server_timestamp, T0 + 10);
  r = await ping(f, alice, { status: 'active', last_update_id: 2 });
  t.same([r.json.presences, r.json.presence_last_update_id], [{}, 2], 'nothing changed: the same id back');
  r = await ping(f, alice, { status: 'active', slim_presence: true });
  t.same(Object.keys(r.json.presences).sort(), [String(f.owner.user_id), String(alice.user_id)].sort(), 'slim_presence: keyed by id');
  r = await ping(f, alice, { status: 'active' });
  t.same(r.json.presences['alice@example.com'], {
    aggregated: { client: 'website', status: 'active', timestamp: T0 + 10 },
    website: { client: 'website', status: 'active', timestamp: T0 + 10, pushable: false },
  });
  t.same(r.json.presences['owner@example.com'].aggregated, { client: 'website', status: 'active', timestamp: ownerJoined }, 'never active: the join date counts, as in Zulip');
  t.notOk('zephyr_mirror_active' in r.json, 'no Zephyr mirror realms here (Zulip removed them)');
  // history_limit_days: 0 fetches nothing; a row older than the limit is left out unless last_update_id > 0.
  r = await ping(f, alice, { status: 'active', history_limit_days: 0, last_update_id: -1 });
  t.same([r.json.presences, r.json.presence_last_update_id], [{}, -1]);
  r = await ping(f, alice, { status: 'active', history_limit_days: 0 });
  t.same([r.json.presences, r.json.presence_last_update_id], [{}, -1], 'no id passed and nothing fetched: -1');
  f.clock.t += 3 * 86400_000;
  r = await ping(f, f.owner, { status: 'active', history_limit_days: 2, last_update_id: 1 });
  t.same(Object.keys(r.json.presences).sort(), [String(f.owner.user_id), String(alice.user_id)].sort(), 'Alice, seen 3 days ago: the limit is ignored when last_update_id > 0');
  r = await ping(f, f.owner, { status: 'active', history_limit_days: 2, last_update_id: 0 });
  t.same(Object.keys(r.json.presences), [String(f.owner.user_id)], 'Alice is past a 2-day limit');
  // GET /realm/presence: legacy, without presence_last_update_id.
  const realm = await f.call(f.owner, 'GET', '/api/v1/realm/presence');
  t.same(Object.keys(realm.json).sort(), ['msg', 'presences', 'result', 'server_timestamp']);
  t.same(Object.keys(realm.json.presences).sort(), ['alice@example.com', 'owner@example.com'], 'both seen within 14 days');
});

t.test('GET /users/{user_id_or_email}/presence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const get = (key: string, params: Record<string, unknown> = {}) => f.call(f.owner, 'GET', `/api/v1/users/${key}/presence`, params);
  t.same((await get(String(alice.user_id))).json.msg, 'No presence data for ' + alice.user_id);
  await ping(f, alice, { status: 'active' });
  f.clock.t += 100_000;
  await ping(f, alice, { status: 'idle' });
  t.same((await get('alice@example.com')).json.presence, { aggregated: { status: 'idle', timestamp: T0 + 100 }, website: { status: 'idle', timestamp: T0 + 100 } });
  t.same((await get(String(alice.user_id), { slim_presence: true })).json.presence, { active_timestamp: T0, idle_timestamp: T0 + 100 });
  f.clock.t += 201_000;
  t.equal((await get('alice@example.com')).json.presence.aggregated.status, 'offline', 'older than the offline threshold');
  t.equal((await get('nobody@example.com')).json.msg, 'No such user');
  t.equal((await get('99999')).json.msg, 'No such user');
  const bot = await f.call(alice, 'POST', '/api/v1/bots', { full_name: 'Helper Bot', short_name: 'helper' });
  t.equal((await get(String(bot.json.user_id))).json.msg, 'Presence is not supported for bot users.');
  t.equal((await ping(f, await botCredentials(f, bot.json), { status: 'active' })).json.msg, 'This endpoint does not accept bot requests.');
  // Deactivated users drop out of every fetch.
  await f.call(f.owner, 'DELETE', `/api/v1/users/${alice.user_id}`);
  t.equal((await get(String(alice.user_id))).json.msg, 'No such user');
  t.same((await ping(f, f.owner, { status: 'active', last_update_id: -1 })).json.presences[alice.user_id], undefined, 'deactivated: gone');
});

t.test('thresholds: a ping within 55 s changes nothing; idle moves only idle_timestamp', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const id = async () => (await ping(f, f.owner, { status: 'idle', last_update_id: 0 })).json.presence_last_update_id;
  await ping(f, alice, { status: 'active' });
  const first = await id();
  f.clock.t += 30_000;
  await ping(f, alice, { status: 'active' });
  t.equal(await id(), first, 'no new update id');
  f.clock.t += 60_000;
  await ping(f, alice, { status: 'idle' });
  const r = await ping(f, f.owner, { status: 'idle', last_update_id: first });
  t.same(r.json.presences[alice.user_id], { active_timestamp: T0, idle_timestamp: T0 + 90 });
});

t.test('events: first report and coming back online only; three forms; none for a routine ping', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const reg = async (params: Record<string, unknown>) => (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['presence'], ...params })).json.queue_id;
  const legacy = await reg({});
  const slim = await reg({ slim_presence: true });
  const modern = await reg({ client_capabilities: { simplified_presence_events: true } });
  await ping(f, alice, { status: 'active' });
  t.same(await queueEvents(f, f.owner, legacy, 'presence'), [{ type: 'presence', user_id: alice.user_id, email: 'alice@example.com', server_timestamp: T0, presence: { website: { client: 'website', status: 'active', timestamp: T0, pushable: false } } }]);
  t.same(await queueEvents(f, f.owner, slim, 'presence'), [{ type: 'presence', user_id: alice.user_id, server_timestamp: T0, presence: { website: { client: 'website', status: 'active', timestamp: T0, pushable: false } } }]);
  t.same(await queueEvents(f, f.owner, modern, 'presence'), [{ type: 'presence', presences: { [alice.user_id]: { active_timestamp: T0, idle_timestamp: T0 } } }]);
  // Routine pings, active or idle, within the thresholds: no event.
  for (const [dt, status] of [[60, 'active'], [60, 'idle'], [60, 'active'], [100, 'idle']] as const) {
    f.clock.t += dt * 1000;
    await ping(f, alice, { status });
  }
  t.equal((await queueEvents(f, f.owner, modern, 'presence')).length, 1, 'no event for pings that change nothing Zulip reports');
  f.clock.t += 200_000;
  await ping(f, alice, { status: 'active' });
  const now = T0 + 480;
  t.same((await queueEvents(f, f.owner, modern, 'presence'))[1], { type: 'presence', presences: { [alice.user_id]: { active_timestamp: now, idle_timestamp: now } } }, 'back online after more than 130 s');
});

t.test('a report that sends no event writes no log record', async (t) => {
  let appended = 0;
  const f = await chatFixture({ sink: { append(records, onDurable) { appended += records.length; queueMicrotask(onDurable); } } });
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await ping(f, alice, { status: 'active' });
  const after = appended;
  for (let i = 0; i < 20; i++) {
    f.clock.t += 60_000;
    await ping(f, alice, { status: i % 2 ? 'idle' : 'active', last_update_id: -1 });
  }
  t.equal(appended, after, '20 reports that changed presence, no records');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['presence'] })).json.presence_last_update_id, 21);
});

t.test('no events in organizations of more than 100 active users', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  for (let i = 0; i < 100; i++) await withRole(f, `u${i}@example.com`, 400);
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['presence'] })).json.queue_id;
  const alice = await f.createUser('alice@example.com', 'Alice');
  await ping(f, alice, { status: 'active' });
  t.same(await queueEvents(f, f.owner, q, 'presence'), []);
});

t.test('convergence: register plus presence events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await ping(f, alice, { status: 'active' });
  let n = 0;
  // With the users too: a never-active user's presence is dated from their joining.
  const types = ['presence', 'realm_user'];
  for (const params of [{ slim_presence: true }, {}, { client_capabilities: { simplified_presence_events: true } }]) {
    const reg = await register(f, f.owner, types, params);
    f.clock.t += 300_000;
    // A newcomer's first report and Alice coming back: the changes Zulip announces.
    const newcomer = await f.createUser(`new${++n}@example.com`);
    await ping(f, newcomer, { status: 'idle' });
    await ping(f, alice, { status: 'active' });
    await verifyState(t, f, f.owner, reg, types, ['presences', 'realm_users'], params);
  }
});

t.test('CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE limits what a guest sees', async (t) => {
  for (const limited of [false, true]) {
    const f = await chatFixture({ config: { canAccessAllUsersGroupLimitsPresence: limited } });
    const alice = await f.createUser('alice@example.com', 'Alice');
    const bob = await f.createUser('bob@example.com', 'Bob');
    const guest = await withRole(f, 'guest@example.com', 600);
    const patched = await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: 6 }) });
    t.equal(patched.status, 200, patched.body);
    await f.subscribe(f.owner, 'shared', [guest.user_id, alice.user_id]);
    const q = (await f.call(guest, 'POST', '/api/v1/register', { event_types: ['presence'] })).json.queue_id;
    await ping(f, alice, { status: 'active' });
    await ping(f, bob, { status: 'active' });
    const seen = Object.keys((await ping(f, guest, { status: 'active', last_update_id: -1 })).json.presences).map(Number).sort();
    const expected = limited ? [alice.user_id, guest.user_id] : [alice.user_id, bob.user_id, guest.user_id];
    t.same(seen, expected.sort(), `limited=${limited}: presences`);
    t.same((await queueEvents(f, guest, q, 'presence')).map((e) => e.user_id), limited ? [alice.user_id, guest.user_id] : [alice.user_id, bob.user_id, guest.user_id], `limited=${limited}: events`);
    const bobs = await f.call(guest, 'GET', `/api/v1/users/${bob.user_id}/presence`);
    t.equal(bobs.status, limited ? 400 : 200);
    if (limited) t.equal(bobs.json.msg, 'Insufficient permission');
    t.same(Object.keys((await f.call(f.owner, 'GET', '/api/v1/realm/presence')).json.presences).length, 3, 'a member sees everyone');
    f.stop();
  }
});

t.test('tenant isolation: another organization sees none of this one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const acme = await createOrganization(f.runtime, { name: 'Acme', subdomain: 'acme', ownerEmail: 'boss@acme.test', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss: Credentials = { user_id: acme.owner.user_id, email: acme.owner.email, api_key: acme.owner.api_key };
  const inAcme = { headers: { host: 'acme.localhost' } };
  await ping(f, f.owner, { status: 'active' });
  const r = await f.call(boss, 'POST', '/api/v1/users/me/presence', { status: 'active', last_update_id: -1 }, inAcme);
  t.same(Object.keys(r.json.presences), [String(boss.user_id)], 'only Acme');
  t.equal(r.json.presence_last_update_id, 1, 'Acme numbers its own updates');
  t.equal((await f.call(boss, 'GET', '/api/v1/users/owner@example.com/presence', {}, inAcme)).json.msg, 'No such user');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/users/me/presence', { status: 'active' }, inAcme)).status, 401, 'credentials do not cross');
});

t.test('hostile input gets Zulip-shaped errors', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bad = async (params: Record<string, unknown>, code: string, msg: string) => {
    const r = await ping(f, f.owner, params);
    t.same([r.status, r.json.code, r.json.msg], [400, code, msg], JSON.stringify(params));
  };
  await bad({}, 'REQUEST_VARIABLE_MISSING', "Missing 'status' argument");
  await bad({ status: 'away' }, 'BAD_REQUEST', 'Invalid status: away');
  await bad({ status: 'active', last_update_id: 'x' }, 'BAD_REQUEST', 'last_update_id is not an integer');
  await bad({ status: 'active', ping_only: 'maybe' }, 'BAD_REQUEST', 'ping_only is not a boolean');
  t.equal((await f.call(null, 'POST', '/api/v1/users/me/presence', { status: 'active' })).status, 401);
});

t.test('presence_enabled off: the user shows offline at once, to everyone, and later reports change nothing; on again: active', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await ping(f, alice, { status: 'active' });
  const reg = await register(f, f.owner, ['presence'], { slim_presence: true });
  t.equal(reg.presences[alice.user_id].active_timestamp, T0);
  f.clock.t += 100_000;
  t.equal((await f.call(alice, 'PATCH', '/api/v1/settings', { presence_enabled: false })).status, 200);
  const off = (await queueEvents(f, f.owner, reg.queue_id, 'presence')).at(-1);
  t.ok(off, 'turning presence off is announced');
  const idle = T0 + 100 - 320;
  t.equal(off.presences?.[alice.user_id]?.idle_timestamp ?? off.presence.website.timestamp, idle, 'as idle 320 s ago: offline to every client');
  f.clock.t += 100_000;
  t.same((await ping(f, alice, { status: 'active', last_update_id: -1 })).status, 200);
  const seen = (await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}/presence`)).json.presence;
  t.equal(seen.aggregated.status, 'offline', 'her reports while off change nothing');
  t.equal((await f.call(alice, 'POST', '/api/v1/users/me/status', { away: false })).status, 200, 'the legacy away toggles it too');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}/presence`)).json.presence.aggregated.status, 'active', 'on again: active now');
  await verifyState(t, f, f.owner, reg, ['presence'], ['presences'], { slim_presence: true });
});
