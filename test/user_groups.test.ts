/**
 * User groups: creating, editing, membership and subgroups with Zulip's permission
 * settings; deactivation and the objections to it; group-setting values resolved
 * through subgroups where permissions are checked; group mentions; `user_group`
 * events converging with `/register` over group changes, user creation, role
 * changes, deactivation and reactivation; and survival across a restart.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { verifyState } from './client_model.js';
import { SYSTEM_GROUPS } from '../actors/rules/group_settings.js';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';

async function create(f: ChatFixture, who: Credentials, name: string, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await f.call(who, 'POST', '/api/v1/user_groups/create', { name, description: `the ${name}`, members: [], ...extra });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.group_id;
}

const members = (f: ChatFixture, who: Credentials, id: number, params: Record<string, unknown>) => f.call(who, 'POST', `/api/v1/user_groups/${id}/members`, params);

t.test('creating and listing groups: who may, the checks, the response', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const guest = await withRole(f, 'guest@example.com', 600);
  const id = await create(f, alice, 'backend', { members: [alice.user_id, f.owner.user_id] });
  t.equal(id, SYSTEM_GROUPS.internet + 1, 'numbered after the system groups');
  const listed = await f.call(alice, 'GET', '/api/v1/user_groups');
  t.equal(listed.status, 200, listed.body);
  t.same(listed.json.user_groups.map((g: any) => g.name), ['role:nobody', 'role:owners', 'role:administrators', 'role:moderators', 'role:fullmembers', 'role:members', 'role:everyone', 'role:internet', 'backend']);
  t.match(listed.json.user_groups.at(-1), {
    id, name: 'backend', description: 'the backend', members: [f.owner.user_id, alice.user_id].sort((a, b) => a - b), direct_subgroup_ids: [], is_system_group: false,
    creator_id: alice.user_id, date_created: Math.floor(f.clock.t / 1000), deactivated: false,
    can_manage_group: { direct_members: [alice.user_id], direct_subgroups: [] }, can_add_members_group: { direct_members: [alice.user_id], direct_subgroups: [] },
    can_join_group: SYSTEM_GROUPS.nobody, can_leave_group: SYSTEM_GROUPS.everyone, can_mention_group: SYSTEM_GROUPS.everyone, can_remove_members_group: SYSTEM_GROUPS.nobody,
  });
  const system = listed.json.user_groups.find((g: any) => g.name === 'role:members');
  t.same([system.members, system.direct_subgroup_ids], [[alice.user_id], [SYSTEM_GROUPS.full_members]], 'role:members holds members and nests role:fullmembers');

  const bad = async (who: Credentials, params: Record<string, unknown>, msg: string) => {
    const r = await f.call(who, 'POST', '/api/v1/user_groups/create', { name: 'x', description: '', members: [], ...params });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', msg], msg);
  };
  await bad(guest, {}, 'Not allowed for guest users');
  await bad(alice, { name: 'backend' }, "User group 'backend' already exists.");
  await bad(alice, { name: '  ' }, "User group name can't be empty!");
  await bad(alice, { name: 'role:mine' }, "User group name cannot start with 'role:'.");
  await bad(alice, { name: 'x'.repeat(101) }, 'User group name cannot exceed 100 characters.');
  await bad(alice, { members: [999] }, 'Invalid user ID: 999');
  await bad(alice, { subgroups: [999] }, 'Invalid user group ID: 999');
  await bad(alice, { can_manage_group: SYSTEM_GROUPS.everyone }, "'can_manage_group' setting cannot be set to 'role:everyone' group.");
  await bad(alice, { can_mention_group: SYSTEM_GROUPS.internet }, "'can_mention_group' setting cannot be set to 'role:internet' group.");
  t.equal((await f.call(guest, 'GET', '/api/v1/user_groups')).json.msg, 'Not allowed for guest users');

  const restricted = await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_create_groups: JSON.stringify({ new: SYSTEM_GROUPS.moderators }) });
  t.equal(restricted.status, 200, restricted.body);
  await bad(alice, {}, 'Insufficient permission');
  t.ok(await create(f, f.owner, 'owners-made'), 'an owner still may');
});

t.test('members and subgroups: permissions, the checks, and reading them back', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const [alice, bob, carol] = [await f.createUser('alice@example.com', 'Alice'), await f.createUser('bob@example.com', 'Bob'), await f.createUser('carol@example.com', 'Carol')];
  const team = await create(f, alice, 'team', { members: [alice.user_id] });
  const inner = await create(f, bob, 'inner', { members: [bob.user_id] });

  t.equal((await members(f, bob, team, { add: [carol.user_id] })).json.msg, 'Insufficient permission', 'not a manager of team');
  t.equal((await members(f, bob, team, { add: [bob.user_id] })).json.msg, 'Insufficient permission', 'joining needs can_join_group');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/user_groups/${team}`, { can_join_group: JSON.stringify({ new: SYSTEM_GROUPS.members }) })).status, 200);
  t.equal((await members(f, bob, team, { add: [bob.user_id] })).status, 200, 'now bob may join');
  t.equal((await members(f, bob, team, { delete: [bob.user_id] })).status, 200, 'and leave (can_leave_group is everyone)');
  t.equal((await members(f, alice, team, { add: [carol.user_id] })).status, 200, 'the creator adds others');
  t.equal((await members(f, alice, team, { add: [carol.user_id] })).json.msg, `User ${carol.user_id} is already a member of this group`);
  t.equal((await members(f, alice, team, { delete: [bob.user_id] })).json.msg, `There is no member '${bob.user_id}' in this user group`);
  t.equal((await members(f, alice, team, {})).json.msg, 'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
  t.equal((await members(f, alice, SYSTEM_GROUPS.members, { add: [bob.user_id] })).json.msg, 'Insufficient permission', 'system groups follow roles only');

  t.equal((await members(f, alice, team, { add_subgroups: [inner] })).status, 200, 'inner nests in team');
  t.equal((await members(f, bob, inner, { add_subgroups: [team] })).json.msg, `User group ${inner} is already a subgroup of one of the passed subgroups.`, 'no cycles');
  t.equal((await members(f, alice, team, { add_subgroups: [inner] })).json.msg, `User group ${inner} is already a subgroup of this group.`);
  t.equal((await members(f, alice, team, { delete_subgroups: [SYSTEM_GROUPS.owners] })).json.msg, `User group ${SYSTEM_GROUPS.owners} is not a subgroup of this group.`);
  t.equal((await members(f, alice, team, { add_subgroups: [SYSTEM_GROUPS.owners] })).status, 200, 'a system group may be a subgroup');
  t.same((await f.call(bob, 'GET', `/api/v1/user_groups/${team}/members`)).json.members, [f.owner.user_id, alice.user_id, bob.user_id, carol.user_id].sort((a, b) => a - b), 'through subgroups');
  t.same((await f.call(bob, 'GET', `/api/v1/user_groups/${team}/members`, { direct_member_only: true })).json.members, [alice.user_id, carol.user_id]);
  t.same((await f.call(bob, 'GET', `/api/v1/user_groups/${team}/subgroups`)).json.subgroups, [SYSTEM_GROUPS.owners, inner]);
  t.same((await f.call(bob, 'GET', `/api/v1/user_groups/${SYSTEM_GROUPS.moderators}/subgroups`)).json.subgroups, [SYSTEM_GROUPS.owners, SYSTEM_GROUPS.administrators]);
  const isMember = async (group: number, user: number, direct = false) => (await f.call(carol, 'GET', `/api/v1/user_groups/${group}/members/${user}`, { direct_member_only: direct })).json.is_user_group_member;
  t.same([await isMember(team, bob.user_id), await isMember(team, bob.user_id, true), await isMember(SYSTEM_GROUPS.everyone, bob.user_id), await isMember(SYSTEM_GROUPS.moderators, bob.user_id)], [true, false, true, false]);
  t.equal((await f.call(carol, 'GET', '/api/v1/user_groups/999/members')).json.msg, 'Invalid user group');

  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`)).status, 200, 'bob is deactivated');
  t.equal(await isMember(team, bob.user_id), false, 'deactivated users are never members');
  t.notOk((await f.call(carol, 'GET', '/api/v1/user_groups')).json.user_groups.find((g: any) => g.id === inner).members.includes(bob.user_id), 'nor listed');
  t.equal((await members(f, alice, team, { add: [bob.user_id] })).json.msg, `User ${bob.user_id} is deactivated.`, 'and cannot be added');
  t.equal((await f.call(f.owner, 'POST', `/api/v1/users/${bob.user_id}/reactivate`)).status, 200);
  t.equal(await isMember(team, bob.user_id), true, 'reactivated, he counts again');

  const dm = await f.call(carol, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: JSON.stringify([{ operator: 'is', operand: 'dm' }]) });
  t.match(dm.json.messages.at(-1), { sender_email: 'notification-bot@zulip.com', content: `<p><span class="user-mention silent" data-user-id="${alice.user_id}">Alice</span> added you to the group <span class="user-group-mention silent" data-user-group-id="${team}">team</span>.</p>` }, 'the added user hears of it from the notification bot');
  const reg = await f.call(carol, 'POST', '/api/v1/register', {});
  t.equal(reg.status, 200, 'and registers with that conversation among their unreads');
  t.same(reg.json.unread_msgs.pms.map((c: any) => c.other_user_id), [2_000_000_001]);
});

t.test('group-setting values resolve through subgroups where permissions are checked', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const [alice, bob, carol] = [await f.createUser('alice@example.com', 'Alice'), await f.createUser('bob@example.com', 'Bob'), await f.createUser('carol@example.com', 'Carol')];
  const creators = await create(f, f.owner, 'creators', { members: [alice.user_id] });
  const nested = await create(f, f.owner, 'nested', { members: [bob.user_id] });
  t.equal((await members(f, f.owner, creators, { add_subgroups: [nested] })).status, 200);
  const set = await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_create_public_channel_group: JSON.stringify({ new: { direct_members: [], direct_subgroups: [creators] } }) });
  t.equal(set.status, 200, set.body);
  const reg = await f.call(carol, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] });
  t.equal(reg.json.realm_can_create_public_channel_group, creators, 'an anonymous group of one subgroup is stored as that group');
  const channel = (who: Credentials, name: string) => f.call(who, 'POST', '/api/v1/channels/create', { name, subscribers: JSON.stringify([who.user_id]) });
  t.equal((await channel(alice, 'a')).status, 200, 'a direct member may');
  t.equal((await channel(bob, 'b')).status, 200, 'a member of a subgroup may');
  t.equal((await channel(carol, 'c')).json.msg, 'Insufficient permission', 'others may not');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_create_private_channel_group: JSON.stringify({ new: 999 }) })).json.msg, 'Invalid user group ID: 999');
});

t.test('deactivating a group: the objections, the events by capability, reactivation', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const used = await create(f, alice, 'used');
  const outer = await create(f, alice, 'outer');
  const free = await create(f, alice, 'free');
  t.equal((await members(f, alice, outer, { add_subgroups: [used] })).status, 200);
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_resolve_topics_group: JSON.stringify({ new: { direct_members: [alice.user_id], direct_subgroups: [used] } }) })).status, 200);
  const refused = await f.call(alice, 'POST', `/api/v1/user_groups/${used}/deactivate`);
  t.same([refused.status, refused.json.code, refused.json.msg], [400, 'CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.']);
  t.same(refused.json.objections, [{ type: 'subgroup', supergroup_ids: [outer] }, { type: 'realm', settings: ['can_resolve_topics_group'] }]);

  const queue = async (caps: boolean) => (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_group'], client_capabilities: JSON.stringify({ include_deactivated_groups: caps }) })).json;
  const [plain, keeping] = [await queue(false), await queue(true)];
  t.notOk(plain.realm_user_groups.some((g: any) => g.deactivated), 'none deactivated yet');
  t.equal((await f.call(f.owner, 'POST', `/api/v1/user_groups/${free}/deactivate`)).status, 200, 'an unused group is deactivated by can_manage_all_groups');
  t.equal((await f.call(alice, 'POST', `/api/v1/user_groups/${free}/deactivate`)).json.msg, 'User group is already deactivated.');
  t.same(await queueEvents(f, f.owner, plain.queue_id, 'user_group'), [{ type: 'user_group', op: 'remove', group_id: free }]);
  t.same(await queueEvents(f, f.owner, keeping.queue_id, 'user_group'), [{ type: 'user_group', op: 'update', group_id: free, data: { deactivated: true } }]);
  t.notOk((await f.call(alice, 'GET', '/api/v1/user_groups')).json.user_groups.some((g: any) => g.id === free), 'listed only when asked');
  t.ok((await f.call(alice, 'GET', '/api/v1/user_groups', { include_deactivated_groups: true })).json.user_groups.find((g: any) => g.id === free).deactivated);
  t.equal((await members(f, alice, outer, { add_subgroups: [free] })).json.msg, 'User group is deactivated.', 'a deactivated group cannot be nested');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_resolve_topics_group: JSON.stringify({ new: free }) })).json.msg, `User group ${free} is deactivated and cannot be used in 'can_resolve_topics_group'.`);
  t.equal((await members(f, alice, free, { add: [alice.user_id] })).status, 200, 'its members can still be edited');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/user_groups/${free}`, { deactivated: false })).status, 200, 'reactivated');
  const back = (await queueEvents(f, f.owner, plain.queue_id, 'user_group')).at(-1);
  t.same([back.op, back.group.id, back.group.members], ['add', free, [alice.user_id]], 'a client without the capability gets the whole group back');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/user_groups/${free}`, {})).json.msg, 'No new data supplied');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/user_groups/${SYSTEM_GROUPS.members}`, { name: 'mine' })).json.msg, 'Insufficient permission');
});

t.test('group mentions: members get the flag; can_mention_group is enforced', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const [alice, bob] = [await f.createUser('alice@example.com', 'Alice'), await f.createUser('bob@example.com', 'Bob')];
  const inner = await create(f, alice, 'inner', { members: [bob.user_id] });
  const team = await create(f, alice, 'team', { subgroups: [inner], can_mention_group: JSON.stringify({ direct_members: [alice.user_id], direct_subgroups: [] }) });
  await f.subscribe(f.owner, 'general', [alice.user_id, bob.user_id, f.owner.user_id]);
  const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi @*team*' });
  t.equal(sent.status, 200, sent.body);
  const got = await f.call(bob, 'GET', `/api/v1/messages/${sent.json.id}`);
  t.equal(got.json.message.content, `<p>hi <span class="user-group-mention" data-user-group-id="${team}">@team</span></p>`);
  t.ok(got.json.message.flags.includes('mentioned'), 'a member through a subgroup is mentioned');
  const refused = await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi @*team*' });
  t.same([refused.status, refused.json.msg], [400, "You are not allowed to mention user group 'team'."]);
  t.equal((await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi @_*team*' })).status, 200, 'a silent mention is free');
});

t.test('convergence: realm_user_groups plus user_group events equal a fresh register, over users and groups changing', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const watchers = [false, true].map(async (caps) => {
    const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_group', 'realm_user'], fetch_event_types: ['realm_user_groups'], client_capabilities: JSON.stringify({ include_deactivated_groups: caps }) })).json;
    return { caps, reg };
  });
  const ok = (r: { status: number; body: string }, what: string) => t.equal(r.status, 200, `${what}: ${r.body}`);
  const started = await Promise.all(watchers);

  const bob = await f.createUser('bob@example.com', 'Bob');
  const guest = await withRole(f, 'guest@example.com', 600);
  const mod = await withRole(f, 'mod@example.com', 300);
  ok(await f.call(f.owner, 'PATCH', `/api/v1/users/${bob.user_id}`, { role: 200 }), 'bob becomes an administrator');
  ok(await f.call(f.owner, 'PATCH', `/api/v1/users/${mod.user_id}`, { role: 400 }), 'the moderator becomes a member');
  ok(await f.call(f.owner, 'PATCH', `/api/v1/users/${guest.user_id}`, { role: 300 }), 'the guest becomes a moderator');
  const team = await create(f, alice, 'team', { members: [alice.user_id, bob.user_id] });
  const other = await create(f, alice, 'other', { members: [mod.user_id] });
  ok(await members(f, alice, team, { add: [guest.user_id], delete: [bob.user_id], add_subgroups: [other, SYSTEM_GROUPS.moderators] }), 'members and subgroups');
  ok(await members(f, alice, team, { delete_subgroups: [SYSTEM_GROUPS.moderators] }), 'a subgroup leaves');
  ok(await f.call(alice, 'PATCH', `/api/v1/user_groups/${team}`, { name: 'the team', description: 'new', can_join_group: JSON.stringify({ new: SYSTEM_GROUPS.members }) }), 'renamed');
  ok(await f.call(f.owner, 'DELETE', `/api/v1/users/${mod.user_id}`), 'a member of other is deactivated');
  ok(await f.call(f.owner, 'DELETE', `/api/v1/users/${alice.user_id}`), 'alice is deactivated');
  ok(await f.call(f.owner, 'POST', `/api/v1/users/${alice.user_id}/reactivate`), 'and reactivated');
  ok(await members(f, f.owner, team, { delete_subgroups: [other] }), 'other is no longer nested');
  ok(await f.call(f.owner, 'POST', `/api/v1/user_groups/${other}/deactivate`), 'other is deactivated');
  ok(await members(f, f.owner, other, { add: [bob.user_id] }), 'a deactivated group is still edited');
  await f.createUser('dee@example.com', 'Dee');

  for (const { caps, reg } of started) {
    await verifyState(t, f, f.owner, reg, ['realm_user_groups'], ['realm_user_groups'], { client_capabilities: JSON.stringify({ include_deactivated_groups: caps }) });
  }
});

t.test('groups survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-groups-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const exec = (command: any): Promise<any> => store.runtime.execute({ org, actor_id: owner.user_id, ...command } as any);
  const { group_id: a } = await exec({ type: 'CREATE_USER_GROUP', name: 'a', description: '', members: [owner.user_id], subgroups: [], settings: {} });
  await store.snapshot();
  const { group_id: b } = await exec({ type: 'CREATE_USER_GROUP', name: 'b', description: '', members: [], subgroups: [a], settings: {} });
  await exec({ type: 'DEACTIVATE_USER_GROUP', group_id: b });
  const snap = async () => JSON.stringify((await storeClient(store, owner)('GET', '/api/v1/user_groups', { include_deactivated_groups: true })).user_groups);
  const expected = await snap();
  t.match(expected, /"deactivated":true/);
  await store.close();
  store = open();
  t.equal(await snap(), expected, 'from the log after a snapshot');
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await snap(), expected, 'and from a fresh snapshot');
  const { group_id: c } = await exec({ type: 'CREATE_USER_GROUP', name: 'c', description: '', members: [], subgroups: [], settings: {} });
  t.ok(c > b, 'the group ids continue after the snapshot: none is reused');
  await store.close();
});

t.test('an invitation with group_ids: the new account joins those groups, with add_members events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const team = await create(f, f.owner, 'team');
  const system = await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', { group_ids: JSON.stringify([SYSTEM_GROUPS.members]) });
  t.same([system.status, system.json.msg], [400, 'Insufficient permission'], 'no one adds members to a system group');
  const link = await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', { group_ids: JSON.stringify([team]) });
  t.equal(link.status, 200, link.body);
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_group'] })).json;
  const key = String(link.json.invite_link).split('/join/')[1].replace('/', '');
  const joined = await f.call(null, 'POST', '/api/v1/parley/invites/accept', { key, full_name: 'Newt', password: 'pw-newt', email: 'newt@example.com' });
  t.equal(joined.status, 200, joined.body);
  t.same((await f.call(f.owner, 'GET', `/api/v1/user_groups/${team}/members`)).json.members, [joined.json.user_id]);
  t.same((await queueEvents(f, f.owner, reg.queue_id, 'user_group')).filter((e) => e.group_id === team), [{ type: 'user_group', op: 'add_members', group_id: team, user_ids: [joined.json.user_id] }]);
});

t.test('the waiting period: new members wait outside role:fullmembers; the check and a new threshold move them, with events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const fullMembers = async () => (await f.call(f.owner, 'GET', `/api/v1/user_groups/${SYSTEM_GROUPS.full_members}/members`, { direct_member_only: true })).json.members;
  const early = await f.createUser('early@example.com', 'Early');
  t.same(await fullMembers(), [early.user_id], 'no waiting period: a full member at once');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { waiting_period_threshold: 3 })).status, 200);
  t.same(await fullMembers(), [], 'a three-day period takes the day-old member out at once');
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_group'], fetch_event_types: ['realm_user_groups'] })).json;
  const late = await f.createUser('late@example.com', 'Late');
  t.notOk(await f.call(late, 'GET', `/api/v1/user_groups/${SYSTEM_GROUPS.full_members}/members/${late.user_id}`).then((r) => r.json.is_user_group_member), 'a new member waits');
  t.ok(await f.call(late, 'GET', `/api/v1/user_groups/${SYSTEM_GROUPS.members}/members/${late.user_id}`).then((r) => r.json.is_user_group_member), 'but is a member');
  const promote = () => f.runtime.execute({ type: 'PROMOTE_FULL_MEMBERS', org: 1 });
  t.same(await promote(), { promoted: 0 });
  f.clock.t += 3 * 24 * 3600 * 1000 + 1000;
  t.same(await promote(), { promoted: 2 }, 'three days on, both are promoted');
  t.same(await fullMembers(), [early.user_id, late.user_id]);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${late.user_id}`, { role: 300 })).status, 200);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${late.user_id}`, { role: 400 })).status, 200, 'a moderator made a member again is past the period');
  await verifyState(t, f, f.owner, reg, ['realm_user_groups'], ['realm_user_groups']);
});
