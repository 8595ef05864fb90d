/**
 * `PATCH /settings` and `PATCH /realm/user_settings_defaults`: each kind of setting
 * and its check, the name, time zone and password, the events each change sends,
 * defaults that apply only to users who join later, convergence of register plus
 * events, roles, and durability.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, type ChatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { register, verifyAction } from './client_model.js';


const settingsOf = async (f: ChatFixture, who: Credentials) =>
  (await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['user_settings'] })).json.user_settings;

t.test('personal settings: each kind, its check, and the events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const before = await settingsOf(f, alice);
  t.match(before, { enter_sends: false, color_scheme: 1, web_home_view: 'inbox', default_language: 'en', emojiset: 'google', timezone: '' });
  t.same(before.emojiset_choices.map((e: any) => e.key), ['google', 'twitter', 'text']);
  const q = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['user_settings', 'realm_user'] })).json.queue_id;
  const qOwner = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_settings', 'realm_user'] })).json.queue_id;
  const res = await f.call(alice, 'PATCH', '/api/v1/settings', { enter_sends: true, color_scheme: 2, web_home_view: 'recent', default_language: 'de', timezone: 'Europe/Berlin', full_name: 'Alice A.', dense_mode: true });
  t.same([res.status, res.json.ignored_parameters_unsupported], [200, ['dense_mode']], res.body);
  const mine = await queueEvents(f, alice, q, 'user_settings');
  t.same(mine.map((e: any) => [e.property, e.value]), [['color_scheme', 2], ['default_language', 'de'], ['web_home_view', 'recent'], ['enter_sends', true], ['timezone', 'Europe/Berlin']], 'one event per changed setting, in Zulip\'s order of settings');
  t.equal(mine[1].language_name, 'Deutsch');
  t.same(await queueEvents(f, f.owner, qOwner, 'user_settings'), [], 'settings events go to the user alone');
  const people = (await queueEvents(f, f.owner, qOwner, 'realm_user')).map((e: any) => e.person);
  t.same(people, [{ user_id: alice.user_id, full_name: 'Alice A.' }, { user_id: alice.user_id, timezone: 'Europe/Berlin' }]);
  t.match(await settingsOf(f, alice), { enter_sends: true, color_scheme: 2, web_home_view: 'recent', default_language: 'de', timezone: 'Europe/Berlin' });
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`)).json.user.full_name, 'Alice A.');
  const again = await f.call(alice, 'PATCH', '/api/v1/settings', { enter_sends: true });
  t.equal(again.status, 200);
  t.same(await queueEvents(f, alice, q, 'user_settings'), mine, 'an unchanged value sends nothing');
  const bad = async (params: Record<string, unknown>, msg: string) => {
    const r = await f.call(alice, 'PATCH', '/api/v1/settings', params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  };
  await bad({ color_scheme: 7 }, 'Invalid color_scheme');
  await bad({ web_home_view: 'feed' }, 'Invalid web_home_view');
  await bad({ default_language: 'xx' }, 'Invalid default_language');
  await bad({ timezone: 'Mars/Olympus' }, 'timezone is not a recognized time zone');
  await bad({ web_font_size_px: 3 }, 'Invalid web_font_size_px');
  await bad({ email: 'new@example.com' }, 'Email address changes are disabled in this organization.');
  await bad({ full_name: '' }, 'Name too short!');
  t.equal((await f.call(alice, 'PATCH', '/api/v1/settings/display', { high_contrast_mode: true })).status, 200, 'the deprecated alias works');
  t.equal((await settingsOf(f, alice)).high_contrast_mode, true);
});

t.test('changing the password', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const wrong = await f.call(alice, 'PATCH', '/api/v1/settings', { old_password: 'nope', new_password: 'n3w-secret' });
  t.same([wrong.status, wrong.json.msg], [400, 'Wrong password!']);
  const ok = await f.call(alice, 'PATCH', '/api/v1/settings', { old_password: 'pw-alice@example.com', new_password: 'n3w-secret' });
  t.equal(ok.status, 200, ok.body);
  t.equal((await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'alice@example.com', password: 'n3w-secret' })).status, 200);
  t.equal((await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'alice@example.com', password: 'pw-alice@example.com' })).status, 401, 'the old one no longer works');
});

t.test('defaults for new users: administrators only, later users only', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const early = await f.createUser('early@example.com');
  const roles: Array<[string, Credentials, boolean]> = [
    ['owner', f.owner, true], ['administrator', await withRole(f, 'admin@example.com', 200), true], ['moderator', await withRole(f, 'mod@example.com', 300), false],
    ['member', await withRole(f, 'member@example.com', 400), false], ['guest', await withRole(f, 'guest@example.com', 600), false],
  ];
  for (const [role, who, allowed] of roles) {
    const r = await f.call(who, 'PATCH', '/api/v1/realm/user_settings_defaults', { enter_sends: role === 'owner' });
    t.same([r.status, r.json.code], allowed ? [200, undefined] : [400, 'UNAUTHORIZED_PRINCIPAL'], `${role}: ${r.body}`);
  }
  const q = (await f.call(early, 'POST', '/api/v1/register', { event_types: ['realm_user_settings_defaults'] })).json.queue_id;
  const res = await f.call(f.owner, 'PATCH', '/api/v1/realm/user_settings_defaults', { enter_sends: true, emojiset: 'text', timezone: 'UTC' });
  t.same([res.status, res.json.ignored_parameters_unsupported], [200, ['timezone']], 'a per-user setting is not a default');
  t.same((await queueEvents(f, early, q)).map((e: any) => [e.type, e.op, e.property, e.value]), [
    ['realm_user_settings_defaults', 'update', 'emojiset', 'text'], ['realm_user_settings_defaults', 'update', 'enter_sends', true],
  ]);
  t.match((await f.call(early, 'POST', '/api/v1/register', { fetch_event_types: ['realm_user_settings_defaults'] })).json.realm_user_settings_defaults, { enter_sends: true, emojiset: 'text' });
  t.match(await settingsOf(f, early), { enter_sends: false, emojiset: 'google' }, 'existing users keep their settings');
  const late = await f.createUser('late@example.com');
  t.match(await settingsOf(f, late), { enter_sends: true, emojiset: 'text' }, 'users who join later start with the defaults');
  const bad = await f.call(f.owner, 'PATCH', '/api/v1/realm/user_settings_defaults', { emojiset: 'comic' });
  t.same([bad.status, bad.json.msg], [400, 'Invalid emojiset']);
});

t.test('convergence: register plus user_settings, realm_user_settings_defaults and realm_user events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const types = ['user_settings', 'realm_user_settings_defaults', 'realm_user'];
  // The settings, the defaults, every user and the client's own top-level fields, in one comparison.
  await verifyAction(t, f, f.owner, types, ['user_settings', 'realm_user_settings_defaults', 'realm_users', 'full_name'], async () => {
    await f.call(f.owner, 'PATCH', '/api/v1/settings', { twenty_four_hour_time: true, notification_sound: 'ding', timezone: 'Asia/Tokyo', full_name: 'Olivia O.' });
    await f.call(f.owner, 'PATCH', '/api/v1/realm/user_settings_defaults', { user_list_style: 3, web_channel_default_view: 4 });
    await f.call(f.owner, 'PATCH', '/api/v1/settings', { twenty_four_hour_time: false });
  });
  t.equal((await register(f, f.owner, types)).user_settings.notification_sound, 'ding', 'and the state really changed');
});

t.test('settings survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-settings-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id: org, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'UPDATE_SETTINGS', org, user_id: 1, settings: { enter_sends: true } });
  await store.snapshot();
  await rt.execute({ type: 'UPDATE_USER_DEFAULTS', org, actor_id: 1, settings: { color_scheme: 3 } });
  await rt.execute({ type: 'UPDATE_SETTINGS', org, user_id: 1, settings: { timezone: 'UTC', emojiset: 'text' } });
  /** The owner's settings and user record and the organization's defaults, as register shows them. */
  const snap = async () => {
    const reg = await storeClient(store, owner)('POST', '/api/v1/register', { fetch_event_types: ['user_settings', 'realm_user_settings_defaults', 'realm_user'] });
    return JSON.stringify({ settings: reg.user_settings, defaults: reg.realm_user_settings_defaults, me: reg.realm_users.find((u: any) => u.user_id === owner.user_id) });
  };
  const expected = await snap();
  await store.close();
  store = open();
  t.equal(await snap(), expected);
  t.match(JSON.parse(await snap()), { me: { timezone: 'UTC' }, settings: { enter_sends: true, emojiset: 'text' }, defaults: { color_scheme: 3 } });
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await snap(), expected, 'and from a fresh snapshot');
  await store.close();
});
