/**
 * Custom profile fields: administrators create, change, reorder and delete the
 * organization's fields (every type Zulip has, with its rules); users set and remove
 * their own values (validated by type; `rendered_value` for the text types), within
 * `editable_by_user`; `custom_profile_fields` and `realm_user` events converge with
 * `/register`; everything survives a restart.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, type ChatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { register, verifyAction } from './client_model.js';


const create = (f: ChatFixture, who: Credentials, params: Record<string, unknown>) => f.call(who, 'POST', '/api/v1/realm/profile_fields', params);
const setData = (f: ChatFixture, who: Credentials, data: unknown) => f.call(who, 'PATCH', '/api/v1/users/me/profile_data', { data: JSON.stringify(data) });

t.test('administrators define fields of every type; the rules of each', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const err = async (params: Record<string, unknown>, msg: string) => {
    const r = await create(f, f.owner, params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  };
  const ids: Record<string, number> = {};
  const ok = async (key: string, params: Record<string, unknown>) => {
    const r = await create(f, f.owner, params);
    t.equal(r.status, 200, r.body);
    ids[key] = r.json.id;
  };
  await ok('phone', { name: 'Phone', hint: 'Your number', field_type: 1 });
  await ok('bio', { name: 'Biography', field_type: 2 });
  await ok('lang', { name: 'Language', field_type: 3, field_data: JSON.stringify({ py: { text: 'Python', order: '1' }, js: { text: 'JavaScript', order: '2' } }) });
  await ok('birthday', { name: 'Birthday', field_type: 4, display_in_profile_summary: true });
  await ok('site', { name: 'Website', field_type: 5, required: true });
  await ok('mentor', { name: 'Mentor', field_type: 6, editable_by_user: false });
  await ok('github', { field_type: 7, field_data: JSON.stringify({ subtype: 'github' }) });
  await ok('pronouns', { name: 'Pronouns', field_type: 8, display_in_profile_summary: true });
  await err({ name: 'x', field_type: 9 }, 'Invalid field type.');
  await err({ name: '  ', field_type: 1 }, 'Label cannot be blank.');
  await err({ name: 'Phone', field_type: 1 }, 'A field with that label already exists.');
  await err({ name: 'n'.repeat(41), field_type: 1 }, 'name is too long (limit: 40 characters)');
  await err({ name: 'Hinted', hint: 'h'.repeat(81), field_type: 1 }, 'hint is too long (limit: 80 characters)');
  await err({ name: 'Choice', field_type: 3, field_data: '{}' }, 'Field must have at least one choice.');
  await err({ name: 'Choice', field_type: 3, field_data: JSON.stringify({ a: { text: '', order: '1' } }) }, 'field_data["a"]["text"] cannot be blank.');
  await err({ name: 'Ext', field_type: 7, field_data: JSON.stringify({ subtype: 'myspace' }) }, 'Invalid external account type');
  await err({ name: 'Ext', field_type: 7, field_data: JSON.stringify({ subtype: 'custom', url_pattern: 'https://example.com/' }) }, 'Malformed URL pattern.');
  await err({ name: 'Long', field_type: 2, display_in_profile_summary: true }, 'Field type not supported for display in profile summary.');
  await err({ name: 'Third', field_type: 1, display_in_profile_summary: true }, 'Only 2 custom profile fields can be displayed in the profile summary.');
  const list = (await f.call(f.owner, 'GET', '/api/v1/realm/profile_fields')).json.custom_fields;
  t.same(list.map((x: any) => x.name), ['Phone', 'Biography', 'Language', 'Birthday', 'Website', 'Mentor', 'GitHub', 'Pronouns']);
  t.match(list[6], { type: 7, hint: 'Enter your GitHub username', field_data: '{"subtype":"github"}', editable_by_user: true, required: false });
  t.equal(list[3].display_in_profile_summary, true);
  t.notOk('display_in_profile_summary' in list[0], 'only present when true, as in Zulip');
  const member = await f.createUser('m@example.com');
  const refused = await create(f, member, { name: 'Mine', field_type: 1 });
  t.same([refused.status, refused.json.code], [400, 'UNAUTHORIZED_PRINCIPAL']);
  // Changes, reordering and deletion.
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/realm/profile_fields/${ids.phone}`, { name: 'Telephone', hint: 'Work number' })).status, 200);
  t.same((await f.call(f.owner, 'PATCH', `/api/v1/realm/profile_fields/${ids.github}`, { name: 'Code' })).json.msg, 'Default custom field cannot be updated.');
  t.same((await f.call(f.owner, 'PATCH', '/api/v1/realm/profile_fields/999', { name: 'x' })).json.msg, 'Field id 999 not found.');
  const order = Object.values(ids).reverse();
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm/profile_fields', { order: JSON.stringify(order) })).status, 200);
  t.same((await f.call(f.owner, 'PATCH', '/api/v1/realm/profile_fields', { order: JSON.stringify(order.slice(1)) })).json.msg, 'Invalid order mapping.');
  t.same((await f.call(f.owner, 'GET', '/api/v1/realm/profile_fields')).json.custom_fields.map((x: any) => x.id), order);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/realm/profile_fields/${ids.bio}`)).status, 200);
  t.same((await f.call(f.owner, 'DELETE', `/api/v1/realm/profile_fields/${ids.bio}`)).json.msg, `Field id ${ids.bio} not found.`);
});

t.test('users set their own values, validated by type', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bot = await f.runtime.execute({ type: 'CREATE_USER', org: 1, actor_id: null, email: 'bot@example.com', password_hash: '', full_name: 'Bot', role: 400 });
  void bot;
  const field = async (params: Record<string, unknown>) => (await create(f, f.owner, params)).json.id as number;
  const bio = await field({ name: 'Biography', field_type: 2 });
  const lang = await field({ name: 'Language', field_type: 3, field_data: JSON.stringify({ py: { text: 'Python', order: '1' } }) });
  const birthday = await field({ name: 'Birthday', field_type: 4 });
  const site = await field({ name: 'Website', field_type: 5 });
  const mentor = await field({ name: 'Mentor', field_type: 6 });
  const locked = await field({ name: 'Badge', field_type: 1, editable_by_user: false });
  const bad = async (data: unknown, msg: string) => {
    const r = await setData(f, alice, data);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(data));
  };
  await bad([{ id: birthday, value: '2024-02-30' }], 'Birthday is not a date');
  await bad([{ id: site, value: 'javascript:alert(1)' }], 'Website is not a URL');
  await bad([{ id: lang, value: 'rust' }], "'rust' is not a valid choice for 'Language'.");
  await bad([{ id: mentor, value: [999] }], 'Invalid user ID: 999');
  await bad([{ id: bio, value: 'x'.repeat(501) }], 'Biography is too long (limit: 500 characters)');
  await bad([{ id: 12345, value: 'x' }], 'Field id 12345 not found.');
  await bad([{ id: locked, value: 'gold' }], 'You are not allowed to change this field. Contact an administrator to update it.');
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user', 'custom_profile_fields'] })).json.queue_id;
  const good = await setData(f, alice, [{ id: bio, value: 'I like **Markdown**' }, { id: lang, value: 'py' }, { id: birthday, value: '1990-01-31' }, { id: site, value: 'https://example.com' }, { id: mentor, value: [f.owner.user_id] }]);
  t.equal(good.status, 200, good.body);
  const me = (await f.call(alice, 'GET', '/api/v1/users/me')).json;
  t.same(me.profile_data[bio], { value: 'I like **Markdown**', rendered_value: '<p>I like <strong>Markdown</strong></p>' });
  t.same(me.profile_data[mentor], { value: `[${f.owner.user_id}]` });
  const byId = (await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`, { include_custom_profile_fields: true })).json.user;
  t.same(byId.profile_data[lang], { value: 'py' });
  t.notOk('profile_data' in (await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`)).json.user, 'only when asked');
  const events = await queueEvents(f, f.owner, q, 'realm_user');
  t.same(events.map((e: any) => e.person.custom_profile_field.id), [bio, lang, birthday, site, mentor], 'one realm_user update per value');
  t.equal(events[0].person.user_id, alice.user_id);
  t.equal((await setData(f, alice, [{ id: lang, value: 'py' }])).status, 200);
  t.same(await queueEvents(f, f.owner, q, 'realm_user'), events, 'an unchanged value sends nothing');
  t.equal((await f.call(alice, 'DELETE', '/api/v1/users/me/profile_data', { data: JSON.stringify([site]) })).status, 200);
  t.equal((await setData(f, alice, [{ id: birthday, value: null }])).status, 200, 'null removes a value');
  const after = (await f.call(alice, 'GET', '/api/v1/users/me')).json.profile_data;
  t.same(Object.keys(after).map(Number).sort((a, b) => a - b), [bio, lang, mentor]);
  // Removing an option of a list field removes the values that chose it; deleting a field, all of its values.
  await f.call(f.owner, 'PATCH', `/api/v1/realm/profile_fields/${lang}`, { field_data: JSON.stringify({ rs: { text: 'Rust', order: '1' } }) });
  await f.call(f.owner, 'DELETE', `/api/v1/realm/profile_fields/${bio}`);
  t.same(Object.keys((await f.call(alice, 'GET', '/api/v1/users/me')).json.profile_data).map(Number), [mentor]);
});

t.test('convergence: register plus custom_profile_fields and realm_user events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const first = (await create(f, f.owner, { name: 'Team', field_type: 1 })).json.id;
  await setData(f, alice, [{ id: first, value: 'blue' }]);
  const types = ['realm_user', 'custom_profile_fields'];
  // The fields, and the users with their values, in one comparison.
  await verifyAction(t, f, f.owner, types, ['custom_profile_fields', 'realm_users'], async () => {
    const second = (await create(f, f.owner, { name: 'Floor', field_type: 1 })).json.id;
    await setData(f, alice, [{ id: second, value: '3' }, { id: first, value: 'red' }]);
    await f.call(f.owner, 'PATCH', '/api/v1/realm/profile_fields', { order: JSON.stringify([second, first]) });
    const bob = await f.createUser('bob@example.com', 'Bob');
    await setData(f, bob, [{ id: first, value: 'green' }]);
    await f.call(alice, 'DELETE', '/api/v1/users/me/profile_data', { data: JSON.stringify([second]) });
    await f.call(f.owner, 'PATCH', `/api/v1/realm/profile_fields/${first}`, { name: 'Squad' });
  });
  t.equal((await register(f, f.owner, types)).custom_profile_fields[0].name, 'Floor', 'and the state really changed');
});

t.test('fields and values survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-profile-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const rt = store.runtime;
  const { organization_id: org, owner } = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const { id } = await rt.execute({ type: 'CREATE_PROFILE_FIELD', org, actor_id: 1, name: 'Team', field_type: 1 });
  await store.snapshot();
  await rt.execute({ type: 'SET_PROFILE_DATA', org, actor_id: 1, user_id: 1, data: [{ id, value: 'core' }] });
  const { id: second } = await rt.execute({ type: 'CREATE_PROFILE_FIELD', org, actor_id: 1, name: 'Floor', field_type: 1 });
  await rt.execute({ type: 'DELETE_PROFILE_FIELD', org, actor_id: 1, field_id: id });
  /** The fields and the owner's values, as the API shows them. */
  const again = async () => {
    const api = storeClient(store, owner);
    return JSON.stringify({ fields: (await api('GET', '/api/v1/realm/profile_fields')).custom_fields, user: (await api('GET', '/api/v1/users/1', { include_custom_profile_fields: true })).user.profile_data });
  };
  const expected = await again();
  t.match(expected, /"Floor"/);
  t.notMatch(expected, /"Team"/, 'the deleted field is gone');
  await store.close();
  store = open();
  t.equal(await again(), expected);
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await again(), expected, 'and from a fresh snapshot');
  const { id: third } = await store.runtime.execute({ type: 'CREATE_PROFILE_FIELD', org, actor_id: 1, name: 'Desk', field_type: 1 });
  t.ok(third > second && third > id, 'a deleted field\'s id is never reused');
  await store.close();
});

t.test('per role: only administrators define fields; everyone sets their own values', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const people: Array<[string, Credentials, boolean]> = [
    ['owner', f.owner, true],
    ['administrator', await withRole(f, 'admin@example.com', 200), true],
    ['moderator', await withRole(f, 'mod@example.com', 300), false],
    ['member', await withRole(f, 'member@example.com', 400), false],
    ['guest', await withRole(f, 'guest@example.com', 600), false],
  ];
  const field = (await create(f, f.owner, { name: 'Team', field_type: 1 })).json.id;
  for (const [role, who, admin] of people) {
    const r = await create(f, who, { name: `By ${role}`, field_type: 1 });
    t.same([r.status, r.json.code], admin ? [200, undefined] : [400, 'UNAUTHORIZED_PRINCIPAL'], `${role} creates a field: ${r.body}`);
    t.equal((await setData(f, who, [{ id: field, value: role }])).status, 200, `${role} sets their own value`);
    t.equal((await f.call(who, 'GET', '/api/v1/users/me')).json.profile_data[field].value, role);
  }
});
