/**
 * Push: the apps' tokens, checked as Zulip checks them; client devices with their
 * `device` events and `/register` section (events applied to the old state equal a
 * fresh fetch); E2EE registration with the relay; test notifications and their
 * errors in every configuration (no device, no relay, relay refusing, failing,
 * unreachable). Every relay is a local stand-in on 127.0.0.1.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { openStore, type Store } from '../src/store.js';
import { closedPort, fakeBouncer } from './fakes.js';
import { botCredentials, chatFixture, queueEvents, withRole, type ChatFixture, type Credentials } from './helpers.js';
import { verifyState } from './client_model.js';
import { pushHoldings } from '../actors/areas/push_devices.js';
import { quietLogger } from '../actors/core/logger.js';

const APNS = 'c0ffee00deadbeef';
const PUSH_KEY = Buffer.concat([Buffer.from([0x31]), Buffer.alloc(32, 7)]).toString('base64');
const tokenId = (n: number): string => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b.toString('base64'); };

t.test('push tokens: Zulip\'s checks, idempotent adds, removal of what exists', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const me = f.owner;
  t.match(await f.call(me, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: '' }), { status: 400, json: { code: 'BAD_REQUEST', msg: 'Empty or invalid length token' } });
  t.match(await f.call(me, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'x'.repeat(4097) }), { status: 400, json: { msg: 'Empty or invalid length token' } });
  t.match(await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: 'not hex', appid: 'org.zulip.Zulip' }), { status: 400, json: { msg: 'Invalid APNS token' } });
  t.match(await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: 'abc', appid: 'org.zulip.Zulip' }), { status: 400, json: { msg: 'Invalid APNS token' } });
  t.match(await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: APNS, appid: 'org/zulip' }), { status: 400, json: { msg: 'Invalid app ID' } });
  t.match(await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: APNS }), { status: 400, json: { code: 'REQUEST_VARIABLE_MISSING' } });
  t.equal((await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: APNS, appid: 'org.zulip.Zulip' })).status, 200);
  t.equal((await f.call(me, 'POST', '/api/v1/users/me/apns_device_token', { token: APNS, appid: 'org.zulip.Zulip' })).status, 200, 'twice is once');
  t.equal((await f.call(me, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'fcm-token-1' })).status, 200);
  t.same(pushHoldings(f.runtime, 1, me.user_id).tokens.map((p) => [p.kind, p.token, p.ios_app_id]), [['apns', APNS, 'org.zulip.Zulip'], ['fcm', 'fcm-token-1', null]]);
  t.match(await f.call(me, 'DELETE', '/api/v1/users/me/android_gcm_reg_id', { token: APNS }), { status: 400, json: { msg: 'Token does not exist' } }, 'kinds are apart');
  t.equal((await f.call(me, 'DELETE', '/api/v1/users/me/apns_device_token', { token: APNS })).status, 200);
  t.match(await f.call(me, 'DELETE', '/api/v1/users/me/apns_device_token', { token: APNS }), { status: 400, json: { msg: 'Token does not exist' } });
  // Another user cannot remove mine; bots cannot register at all.
  const other = await f.createUser('o@example.com');
  t.match(await f.call(other, 'DELETE', '/api/v1/users/me/android_gcm_reg_id', { token: 'fcm-token-1' }), { status: 400, json: { msg: 'Token does not exist' } });
  const bot = await f.call(me, 'POST', '/api/v1/bots', { full_name: 'Bot', short_name: 'pushbot' });
  const botCreds = await botCredentials(f, bot.json);
  t.match(await f.call(botCreds, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'bot' }), { status: 400, json: { msg: 'This endpoint does not accept bot requests.' } });
  t.match(await f.call(null, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'x' }), { status: 401 });
});

t.test('test notifications: each error in its configuration, and success through the relay', async (t) => {
  const bouncer = await fakeBouncer();
  t.teardown(() => bouncer.server.close());
  const none = await chatFixture();
  t.teardown(none.stop);
  const f = await chatFixture({ config: { pushBouncerUrl: bouncer.url } });
  t.teardown(f.stop);
  for (const g of [none, f]) {
    t.match(await g.call(g.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE', msg: 'No active registered push device' } });
    t.match(await g.call(g.owner, 'POST', '/api/v1/mobile_push/e2ee/test_notification'), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
    await g.call(g.owner, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'fcm-1' });
    t.match(await g.call(g.owner, 'POST', '/api/v1/mobile_push/test_notification', { token: 'fcm-2' }), { status: 400, json: { code: 'INVALID_PUSH_DEVICE_TOKEN', msg: 'Device not recognized' } });
  }
  t.match(await none.call(none.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 403, json: { code: 'ADMIN_ACTION_REQUIRED' } }, 'no relay configured');
  t.equal(bouncer.requests.length, 0);

  const ok = await f.call(f.owner, 'POST', '/api/v1/mobile_push/test_notification', { token: 'fcm-1' });
  t.equal(ok.status, 200, ok.body);
  t.match(bouncer.requests, [{ path: '/api/v1/remotes/push/test_notification', body: { user_id: f.owner.user_id, devices: [{ kind: 'fcm', token: 'fcm-1', appid: null }], payload: { event: 'test' } } }]);
  bouncer.mode = 'refuse';
  t.match(await f.call(f.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 403, json: { code: 'ADMIN_ACTION_REQUIRED' } }, 'the relay refuses this server');
  bouncer.mode = 'error500';
  t.match(await f.call(f.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 502, json: { code: 'INTERNAL_SERVER_ERROR_ON_BOUNCER' } });
  bouncer.mode = 'unknown_device';
  t.match(await f.call(f.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 400, json: { code: 'INVALID_REMOTE_PUSH_DEVICE_TOKEN' } });

  const port = await closedPort();
  const down = await chatFixture({ config: { pushBouncerUrl: `http://127.0.0.1:${port}` } });
  t.teardown(down.stop);
  await down.call(down.owner, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'fcm-1' });
  t.match(await down.call(down.owner, 'POST', '/api/v1/mobile_push/test_notification'), { status: 502, json: { code: 'FAILED_TO_CONNECT_BOUNCER' } });
});

/** Registers a client device and its E2EE push registration with the relay. */
async function e2eeDevice(f: ChatFixture, who: Credentials, token: number): Promise<number> {
  const { device_id } = (await f.call(who, 'POST', '/api/v1/register_client_device')).json;
  const res = await f.call(who, 'POST', '/api/v1/mobile_push/register', { device_id, token_kind: 'fcm', push_key: PUSH_KEY, push_key_id: 7, bouncer_public_key: 'bpk', encrypted_push_registration: 'ciphertext', token_id: tokenId(token) });
  if (res.status !== 200) throw new Error(res.body);
  return device_id;
}

t.test('client devices: events, register state, E2EE registration and its test notification', async (t) => {
  const bouncer = await fakeBouncer();
  t.teardown(() => bouncer.server.close());
  const f = await chatFixture({ config: { pushBouncerUrl: bouncer.url } });
  t.teardown(f.stop);
  const me = f.owner;
  const other = await f.createUser('o@example.com');
  const before = await f.call(me, 'POST', '/api/v1/register', { event_types: ['device'] });
  t.same(before.json.devices, {});
  const otherQueue = (await f.call(other, 'POST', '/api/v1/register', { event_types: ['device'] })).json.queue_id;

  const first = (await f.call(me, 'POST', '/api/v1/register_client_device')).json.device_id;
  const second = (await f.call(me, 'POST', '/api/v1/register_client_device')).json.device_id;
  t.same([first, second], [1, 2]);
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first }), { status: 400, json: { msg: 'Missing parameters: must provide either all push key fields, all token fields, or both.' } });
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: 99, push_key: PUSH_KEY, push_key_id: 1 }), { status: 400, json: { msg: 'Invalid `device_id`' } });
  t.match(await f.call(other, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: PUSH_KEY, push_key_id: 1 }), { status: 400, json: { msg: 'Invalid `device_id`' } }, 'a device of another user');
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: PUSH_KEY, push_key_id: 1 }), { status: 400, json: { msg: 'No push registration exists to rotate key for.' } });
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: 'short', push_key_id: 1, token_kind: 'fcm', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(5) }), { status: 400, json: { msg: 'Invalid push_key' } });
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: PUSH_KEY, push_key_id: 1, token_kind: 'fcm', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: 'xx' }), { status: 400, json: { msg: 'Invalid token_id' } });
  const reg = await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: PUSH_KEY, push_key_id: 1, token_kind: 'fcm', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(5) });
  t.equal(reg.status, 200, reg.body);
  t.match(bouncer.requests, [{ path: '/api/v1/remotes/push/e2ee/register', body: { bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(5) } }]);
  // The relay failing: the registration stays pending; refusing: it failed, with its code.
  bouncer.mode = 'error500';
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: second, push_key: PUSH_KEY, push_key_id: 2, token_kind: 'apns', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(6) }), { status: 502, json: { code: 'INTERNAL_SERVER_ERROR_ON_BOUNCER' } });
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: second, push_key: PUSH_KEY, push_key_id: 2, token_kind: 'apns', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(6) }), { status: 400, json: { msg: 'A registration for the device already in progress.' } });
  t.equal((await f.call(me, 'POST', '/api/v1/remove_client_device', { device_id: second })).status, 200);
  t.match(await f.call(me, 'POST', '/api/v1/remove_client_device', { device_id: second }), { status: 400, json: { msg: 'Invalid `device_id`' } });
  const third = (await f.call(me, 'POST', '/api/v1/register_client_device')).json.device_id;
  t.equal(third, 3, 'ids are not reused');
  bouncer.mode = 'refuse';
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: third, push_key: PUSH_KEY, push_key_id: 3, token_kind: 'fcm', bouncer_public_key: 'b', encrypted_push_registration: 'e', token_id: tokenId(8) }), { status: 403, json: { code: 'ADMIN_ACTION_REQUIRED' } });
  bouncer.mode = 'ok';
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/register', { device_id: first, push_key: Buffer.concat([Buffer.from([0x31]), Buffer.alloc(32, 9)]).toString('base64'), push_key_id: 11 })).status, 200, 'a key rotation');

  const fresh = await f.call(me, 'POST', '/api/v1/register', { event_types: ['device'] });
  t.same(fresh.json.devices, {
    1: { push_key_id: 11, push_token_id: 5, pending_push_token_id: null, push_registration_error_code: null },
    3: { push_key_id: 3, push_token_id: null, pending_push_token_id: 8, push_registration_error_code: 'ADMIN_ACTION_REQUIRED' },
  });
  t.notOk(JSON.stringify(fresh.json).includes(PUSH_KEY.slice(0, 12)), 'the key is never shown');
  // Convergence: the events, applied to the first state, give the fresh one.
  const events = await verifyState(t, f, me, before.json, ['device'], ['devices']);
  t.notOk(JSON.stringify(events).includes(PUSH_KEY.slice(0, 12)), 'nor in events');
  t.same(await queueEvents(f, other, otherQueue, 'device'), [], 'another user hears nothing');

  // E2EE test notifications: only devices registered with the relay count.
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { device_id: third }), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
  bouncer.requests.length = 0;
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification')).status, 200);
  t.match(bouncer.requests, [{ path: '/api/v1/remotes/push/e2ee/test_notification', body: { devices: [{ device_id: 1, push_token_id: 5, push_key_id: 11 }] } }]);
  t.match(await f.call(other, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { device_id: 1 }), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE' } }, 'not another user\'s');
  bouncer.mode = 'error500';
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification'), { status: 502, json: { code: 'INTERNAL_SERVER_ERROR_ON_BOUNCER' } });
});

t.test("E2EE registration in the form of the level Parley reports (406's push_account_id, no device_id): push_device events, push_devices in register, convergence", async (t) => {
  const bouncer = await fakeBouncer();
  t.teardown(() => bouncer.server.close());
  const f = await chatFixture({ config: { pushBouncerUrl: bouncer.url } });
  t.teardown(f.stop);
  const me = f.owner;
  const before = await f.call(me, 'POST', '/api/v1/register', { event_types: ['push_device'] });
  t.same(before.json.push_devices, {});
  const publicKey = Buffer.alloc(32, 3).toString('base64');
  const form = { token_kind: 'fcm', push_account_id: 2408, push_public_key: publicKey, bouncer_public_key: 'bpk', encrypted_push_registration: 'ciphertext' };
  /** Waits until the relay's answer is recorded (the relay is asked after the reply, as Zulip's worker does). */
  const recorded = async (id: number, status: string) => {
    for (let i = 0; i < 200 && (await f.call(me, 'POST', '/api/v1/register', { fetch_event_types: ['push_device'] })).json.push_devices[id]?.status !== status; i++) await new Promise((r) => setTimeout(r, 5));
  };
  // Zulip's example call: no device_id, and it is not asked for.
  for (const missing of ['token_kind', 'push_account_id', 'push_public_key', 'bouncer_public_key', 'encrypted_push_registration']) {
    const { [missing]: _gone, ...rest } = form as Record<string, unknown>;
    t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', rest), { status: 400, json: { code: 'REQUEST_VARIABLE_MISSING', var_name: missing } }, `${missing} is required`);
  }
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/register', { ...form, push_public_key: 'not base64!' }), { status: 400, json: { msg: 'Invalid push_public_key' } });
  const ok = await f.call(me, 'POST', '/api/v1/mobile_push/register', form);
  t.equal(ok.status, 200, ok.body);
  await recorded(2408, 'active');
  t.match(bouncer.requests, [{ path: '/api/v1/remotes/push/e2ee/register', body: { push_account_id: 2408, bouncer_public_key: 'bpk', encrypted_push_registration: 'ciphertext' } }]);
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/register', form)).status, 200, 'again: idempotent');
  t.equal(bouncer.requests.length, 1, 'the relay is not asked twice');
  // A refusal: failed, with its code; registering again retries.
  bouncer.mode = 'refuse';
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/register', { ...form, push_account_id: 7 })).status, 200);
  await recorded(7, 'failed');
  bouncer.mode = 'ok';
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/register', { ...form, push_account_id: 7 })).status, 200);
  await recorded(7, 'active');
  const fresh = (await f.call(me, 'POST', '/api/v1/register', { event_types: ['push_device'] })).json.push_devices;
  t.same(fresh, { 2408: { status: 'active', error_code: null }, 7: { status: 'active', error_code: null } });
  t.notOk(JSON.stringify(fresh).includes(publicKey), 'the public key is not shown');
  const events = await queueEvents(f, me, before.json.queue_id, 'push_device');
  t.same(events, [
    { type: 'push_device', push_account_id: '2408', status: 'pending' },
    { type: 'push_device', push_account_id: '2408', status: 'active' },
    { type: 'push_device', push_account_id: '7', status: 'pending' },
    { type: 'push_device', push_account_id: '7', status: 'failed', error_code: 'ADMIN_ACTION_REQUIRED' },
    { type: 'push_device', push_account_id: '7', status: 'pending' },
    { type: 'push_device', push_account_id: '7', status: 'active' },
  ]);
  await verifyState(t, f, me, before.json, ['push_device'], ['push_devices']);

  // The E2EE test notification for one push account (Zulip 11.0's push_account_id), or all.
  const other = await f.createUser('other@example.com');
  bouncer.requests.length = 0;
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { push_account_id: 7 })).status, 200);
  t.match(bouncer.requests, [{ path: '/api/v1/remotes/push/e2ee/test_notification', body: { user_id: me.user_id, devices: [{ push_account_id: 7 }] } }], 'that account only');
  t.equal(bouncer.requests[0].body.devices.length, 1);
  bouncer.requests.length = 0;
  t.equal((await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification')).status, 200);
  t.same(bouncer.requests[0].body.devices.map((d: any) => d.push_account_id).sort((a: number, b: number) => a - b), [7, 2408], 'every active account');
  bouncer.requests.length = 0;
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { push_account_id: 99 }), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE', msg: 'No active registered push device' } }, 'an account of nobody');
  t.match(await f.call(other, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { push_account_id: 7 }), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE' } }, "another user's account");
  t.match(await f.call(me, 'POST', '/api/v1/mobile_push/e2ee/test_notification', { push_account_id: 'x' }), { status: 400, json: { code: 'BAD_REQUEST' } }, 'not an integer');
  t.equal(bouncer.requests.length, 0, 'nothing sent for a refusal');
});

t.test('E2EE registration needs a relay; e2ee test errors without one or with it down', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const { device_id } = (await f.call(f.owner, 'POST', '/api/v1/register_client_device')).json;
  t.match(await f.call(f.owner, 'POST', '/api/v1/mobile_push/register', { device_id, push_key: PUSH_KEY, push_key_id: 1 }), { status: 400, json: { code: 'PUSH_SERVICE_NOT_CONFIGURED' } });

  // A device registered while a relay was up, then the relay gone or unconfigured.
  const bouncer = await fakeBouncer();
  t.teardown(() => bouncer.server.close());
  const dir = mkdtempSync(join(tmpdir(), 'parley-push-'));
  const g = await chatFixture({ config: { pushBouncerUrl: bouncer.url, dataDir: dir } });
  t.teardown(g.stop);
  await e2eeDevice(g, g.owner, 42);
  g.config.pushBouncerUrl = '';
  t.match(await g.call(g.owner, 'POST', '/api/v1/mobile_push/e2ee/test_notification'), { status: 403, json: { code: 'ADMIN_ACTION_REQUIRED', msg: 'Push notification configuration issue on server, contact the server administrator or retry later.' } });
  g.config.pushBouncerUrl = `http://127.0.0.1:${await closedPort()}`;
  t.match(await g.call(g.owner, 'POST', '/api/v1/mobile_push/e2ee/test_notification'), { status: 502, json: { code: 'FAILED_TO_CONNECT_BOUNCER' } });
});

t.test('tenant isolation: devices and tokens are per organization', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { email: 'boss@beta.example', api_key: beta.owner.api_key, user_id: beta.owner.user_id };
  const host = { headers: { host: 'beta.localhost' } };
  await f.call(f.owner, 'POST', '/api/v1/register_client_device');
  await f.call(f.owner, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'alpha-token' });
  // Both owners are user 1 of their organization.
  t.match(await f.call(boss, 'POST', '/api/v1/remove_client_device', { device_id: 1 }, host), { status: 400, json: { msg: 'Invalid `device_id`' } });
  t.match(await f.call(boss, 'DELETE', '/api/v1/users/me/android_gcm_reg_id', { token: 'alpha-token' }, host), { status: 400, json: { msg: 'Token does not exist' } });
  t.same((await f.call(boss, 'POST', '/api/v1/register', { event_types: ['device'] }, host)).json.devices, {});
  t.equal(Object.keys((await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['device'] })).json.devices).length, 1);
});

t.test('registrations survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-push-restart-'));
  const open = (): Store => openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 10, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; }, runtime: {} });
  let store = open();
  const { organization_id: org } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const exec = (command: any) => store.runtime.execute({ ...command, user_id: 1 });
  await exec({ type: 'ADD_PUSH_TOKEN', org, kind: 'apns', token: APNS, ios_app_id: 'org.zulip.Zulip' });
  await exec({ type: 'REGISTER_CLIENT_DEVICE', org });
  await exec({ type: 'REGISTER_PUSH_DEVICE', org, device_id: 1, push_key: PUSH_KEY, push_key_id: 4, token_kind: 'fcm', token_id: tokenId(9), relay_fields: true });
  await exec({ type: 'FINISH_PUSH_REGISTRATION', org, device_id: 1, token_id: 9, error_code: null });
  const publicKey = Buffer.alloc(32, 5).toString('base64');
  await exec({ type: 'REGISTER_PUSH_ACCOUNT', org, push_account_id: 2408, token_kind: 'apns', push_public_key: publicKey });
  await exec({ type: 'FINISH_PUSH_ACCOUNT', org, push_account_id: 2408, error_code: null });
  await store.close();
  store = open();
  const state = () => {
    const held = pushHoldings(store.runtime, org, 1);
    return [held.tokens.map((p) => p.token), held.devices, held.nextDeviceId, held.accounts];
  };
  const accounts = [[2408, { token_kind: 'apns', push_public_key: publicKey, status: 'active', error_code: null }]];
  const expected = [[APNS], [[1, { push_key_id: 4, push_token_id: 9, pending_push_token_id: null, push_registration_error_code: null, push_key: PUSH_KEY, push_token_kind: 'fcm' }]], 2, accounts];
  t.same(state(), expected, 'replayed from the log');
  await store.snapshot();
  await exec({ type: 'REGISTER_CLIENT_DEVICE', org });
  await exec({ type: 'REMOVE_CLIENT_DEVICE', org, device_id: 2 });
  await store.close();
  store = open();
  t.same(state(), [[APNS], expected[1], 3, accounts], 'from the snapshot and the log after it');
  await store.snapshot();
  await store.close();
  store = open();
  t.same(state(), [[APNS], expected[1], 3, accounts], 'from the snapshot alone');
  await store.close();
});

t.test('roles: guests register tokens and devices like members', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', 600);
  t.equal((await f.call(guest, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'guest-token' })).status, 200);
  t.same((await f.call(guest, 'POST', '/api/v1/register_client_device')).json, { result: 'success', msg: '', device_id: 1 });
  t.match(await f.call(guest, 'POST', '/api/v1/mobile_push/test_notification'), { status: 403, json: { code: 'ADMIN_ACTION_REQUIRED' } });
});

t.test('deactivating a user clears their push tokens, as Zulip does', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const m = await f.createUser('m@example.com');
  t.equal((await f.call(m, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'm-token' })).status, 200);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${m.user_id}`)).status, 200);
  t.same(pushHoldings(f.runtime, 1, m.user_id).tokens, []);
  t.equal((await f.call(f.owner, 'POST', `/api/v1/users/${m.user_id}/reactivate`)).status, 200);
  t.match(await f.call(m, 'POST', '/api/v1/mobile_push/test_notification'), { status: 400, json: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
});
