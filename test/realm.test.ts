/**
 * `PATCH /realm`: the organization's name and description, and the settings Parley's
 * features read, each taking effect (editing, moving, deleting, edit history), with
 * Zulip's `update` and `update_dict` events; group settings as `{new, old}`; roles;
 * convergence of register plus events; durability.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SYSTEM_GROUPS } from '../actors/rules/group_settings.js';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, type ChatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { register, verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

const patchRealm = (f: ChatFixture, who: Credentials, params: Record<string, unknown>) => f.call(who, 'PATCH', '/api/v1/realm', params);
const realmState = async (f: ChatFixture, who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] })).json;

t.test('name, description and the events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm'] })).json.queue_id;
  const r = await patchRealm(f, f.owner, { name: 'Renamed Org', description: 'We **build** <things>', invite_required: false });
  t.same([r.status, r.json.ignored_parameters_unsupported], [200, ['invite_required']], r.body);
  t.same(await queueEvents(f, f.owner, q, 'realm'), [
    { type: 'realm', op: 'update', property: 'name', value: 'Renamed Org' },
    { type: 'realm', op: 'update', property: 'description', value: 'We **build** <things>' },
  ]);
  const state = await realmState(f, f.owner);
  t.equal(state.realm_name, 'Renamed Org');
  t.notMatch(state.realm_description, /<things>/, 'the description is never raw HTML');
  t.equal((await f.call(null, 'GET', '/api/v1/server_settings')).json.realm_name, 'Renamed Org');
  const bad = async (params: Record<string, unknown>, msg: string) => {
    const res = await patchRealm(f, f.owner, params);
    t.same([res.status, res.json.msg], [400, msg], JSON.stringify(params));
  };
  await bad({ name: '  ' }, "Organization name can't be empty.");
  await bad({ name: 'n'.repeat(41) }, 'Organization name is too long.');
  await bad({ description: 'd'.repeat(1001) }, 'Organization description is too long.');
  await bad({ message_content_edit_limit_seconds: 0 }, "Bad value for 'message_content_edit_limit_seconds': 0");
  await bad({ message_edit_history_visibility_policy: 'some' }, 'Invalid message_edit_history_visibility_policy');
  await bad({ waiting_period_threshold: -1 }, 'Invalid waiting_period_threshold');
  await bad({ can_resolve_topics_group: JSON.stringify({ new: SYSTEM_GROUPS.internet }) }, "'can_resolve_topics_group' setting cannot be set to 'role:internet' group.");
  await bad({ can_resolve_topics_group: JSON.stringify({ new: 999 }) }, 'Invalid user group ID: 999');
  const mismatch = await patchRealm(f, f.owner, { can_resolve_topics_group: JSON.stringify({ new: SYSTEM_GROUPS.members, old: SYSTEM_GROUPS.nobody }) });
  t.same([mismatch.status, mismatch.json.code], [400, 'EXPECTATION_MISMATCH']);
});

t.test('who may change what', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, number, number]> = [
    ['owner', f.owner, 200, 200], ['administrator', await withRole(f, 'admin@example.com', 200), 200, 400],
    ['moderator', await withRole(f, 'mod@example.com', 300), 400, 400], ['member', await withRole(f, 'member@example.com', 400), 400, 400],
    ['guest', await withRole(f, 'guest@example.com', 600), 400, 400],
  ];
  for (const [role, who, plain, ownerOnly] of roles) {
    const codeFor = (status: number) => (status === 200 ? undefined : 'UNAUTHORIZED_PRINCIPAL');
    const waiting = await patchRealm(f, who, { waiting_period_threshold: 3 + plain });
    t.same([waiting.status, waiting.json.code], [plain, codeFor(plain)], `${role}: waiting_period_threshold`);
    const billing = await patchRealm(f, who, { can_manage_billing_group: JSON.stringify({ new: SYSTEM_GROUPS.administrators }) });
    t.same([billing.status, billing.json.code], [ownerOnly, codeFor(ownerOnly)], `${role}: can_manage_billing_group (owners only): ${billing.body}`);
  }
});

t.test('the settings take effect', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  await f.subscribe(f.owner, 'other', [f.owner.user_id, alice.user_id]);
  const other = channelIdByName(f.runtime, 1, 'other');
  const send = async (content: string) => (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content })).json.id as number;
  const q = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['realm'] })).json.queue_id;
  const id = await send('first');
  t.equal((await patchRealm(f, f.owner, { allow_message_editing: false })).status, 200);
  t.same((await f.call(alice, 'PATCH', `/api/v1/messages/${id}`, { content: 'x' })).json.msg, 'Your organization has turned off message editing');
  await patchRealm(f, f.owner, { allow_message_editing: true, message_content_edit_limit_seconds: 'unlimited' });
  f.clock.t += 3600_000;
  t.equal((await f.call(alice, 'PATCH', `/api/v1/messages/${id}`, { content: 'an hour later' })).status, 200, 'no edit limit');
  await patchRealm(f, f.owner, { can_move_messages_between_channels_group: JSON.stringify({ new: SYSTEM_GROUPS.administrators }) });
  t.same((await f.call(alice, 'PATCH', `/api/v1/messages/${id}`, { stream_id: other })).json.msg, "You don't have permission to move this message");
  await patchRealm(f, f.owner, { can_move_messages_between_channels_group: JSON.stringify({ new: { direct_members: [alice.user_id], direct_subgroups: [] } }) });
  t.equal((await f.call(alice, 'PATCH', `/api/v1/messages/${id}`, { stream_id: other })).status, 200, 'an anonymous group naming her');
  await patchRealm(f, f.owner, { can_delete_own_message_group: JSON.stringify({ new: SYSTEM_GROUPS.nobody }) });
  const mine = await send('keep me');
  t.same((await f.call(alice, 'DELETE', `/api/v1/messages/${mine}`)).json.msg, "You don't have permission to delete this message");
  await patchRealm(f, f.owner, { can_delete_own_message_group: JSON.stringify({ new: SYSTEM_GROUPS.everyone }), message_content_delete_limit_seconds: 60 });
  f.clock.t += 120_000;
  t.same((await f.call(alice, 'DELETE', `/api/v1/messages/${mine}`)).json.msg, 'The time limit for deleting this message has passed');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/messages/${mine}`)).status, 200, 'administrators delete any message, any time');
  // Edit history visibility.
  t.ok((await f.call(alice, 'GET', `/api/v1/messages/${id}`)).json.message.edit_history.some((e: any) => e.prev_content !== undefined));
  await patchRealm(f, f.owner, { message_edit_history_visibility_policy: 'moves' });
  const moves = (await f.call(alice, 'GET', `/api/v1/messages/${id}`)).json.message.edit_history;
  t.ok(moves.length > 0 && moves.every((e: any) => e.prev_content === undefined && e.prev_stream !== undefined), 'only the moves');
  t.notOk((await f.call(alice, 'GET', `/api/v1/messages/${id}/history`)).json.message_history.some((e: any) => e.prev_content !== undefined));
  await patchRealm(f, f.owner, { message_edit_history_visibility_policy: 'none' });
  t.notOk('edit_history' in (await f.call(alice, 'GET', `/api/v1/messages/${id}`)).json.message);
  t.same((await f.call(alice, 'GET', `/api/v1/messages/${id}/history`)).json.msg, 'Message edit history is disabled in this organization');
  const events = await queueEvents(f, alice, q, 'realm');
  t.same(events[0], { type: 'realm', op: 'update_dict', property: 'default', data: { allow_message_editing: false } });
  t.ok(events.some((e: any) => e.op === 'update_dict' && e.data.can_move_messages_between_channels_group === SYSTEM_GROUPS.administrators), 'group settings as update_dict');
  t.ok(events.some((e: any) => e.op === 'update' && e.property === 'message_content_delete_limit_seconds' && e.value === 60));
});

t.test('convergence: register plus realm events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const reg = await register(f, f.owner, ['realm']);
  await patchRealm(f, f.owner, { name: 'N2', allow_message_editing: false, message_content_edit_limit_seconds: 'unlimited', move_messages_within_stream_limit_seconds: 3600 });
  await patchRealm(f, f.owner, { can_resolve_topics_group: JSON.stringify({ new: { direct_members: [1], direct_subgroups: [SYSTEM_GROUPS.moderators] } }), waiting_period_threshold: 7 });
  await patchRealm(f, f.owner, { message_edit_history_visibility_policy: 'moves' });
  // Every realm_ section, in one comparison (allow_edit_history is derived in the model).
  await verifyState(t, f, f.owner, reg, ['realm'], ['realm_*']);
  const fresh = await realmState(f, f.owner);
  t.equal(fresh.realm_name, 'N2', 'and it really changed');
  t.equal(fresh.realm_message_content_edit_limit_seconds, null);
});

t.test('settings survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-realm-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await store.runtime.execute({ type: 'UPDATE_REALM', org, actor_id: 1, name: 'Acme 2', settings: { waiting_period_threshold: 3 } });
  await store.snapshot();
  await store.runtime.execute({ type: 'UPDATE_REALM', org, actor_id: 1, description: 'hi', settings: { can_resolve_topics_group: { new: SYSTEM_GROUPS.moderators } } });
  /** The organization's settings as register shows them, and the server's entry for it (GET /server_settings). */
  const snap = async () => {
    const api = storeClient(store, owner);
    const reg = await api('POST', '/api/v1/register', { fetch_event_types: ['realm'] });
    const { msg: _msg, result: _result, ...server } = await api('GET', '/api/v1/server_settings');
    return JSON.stringify({ realm: Object.fromEntries(Object.entries(reg).filter(([k]) => k.startsWith('realm_'))), server });
  };
  const expected = await snap();
  t.match(JSON.parse(expected), { realm: { realm_name: 'Acme 2', realm_description: 'hi' }, server: { realm_name: 'Acme 2' } });
  await store.close();
  store = open();
  t.equal(await snap(), expected);
  t.match(JSON.parse(await snap()).realm, { realm_waiting_period_threshold: 3, realm_can_resolve_topics_group: SYSTEM_GROUPS.moderators });
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await snap(), expected, 'and from a fresh snapshot');
  await store.close();
});

t.test('default_code_block_language: fences without a language take it, with the update event', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general', [f.owner.user_id]);
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm'] })).json.queue_id;
  t.equal((await realmState(f, f.owner)).realm_default_code_block_language, '', "Zulip's default: none");
  const send = async () => {
    const id = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: '```\nx = 1\n```' })).json.id as number;
    return (await f.call(f.owner, 'GET', `/api/v1/messages/${id}`)).json.message.content as string;
  };
  t.equal(await send(), '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>');
  t.equal((await patchRealm(f, f.owner, { default_code_block_language: 'python' })).status, 200);
  t.same(await queueEvents(f, f.owner, q, 'realm'), [{ type: 'realm', op: 'update', property: 'default_code_block_language', value: 'python' }]);
  t.equal((await realmState(f, f.owner)).realm_default_code_block_language, 'python');
  t.equal(await send(), '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>\n</code></pre></div>');
  t.equal((await patchRealm(f, f.owner, { default_code_block_language: '' })).status, 200);
  t.equal(await send(), '<div class="codehilite"><pre><span></span><code>x = 1\n</code></pre></div>', 'back to none');
});
