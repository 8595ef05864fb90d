/**
 * User groups (Zulip's `zerver/actions/user_groups.py` and `zerver/views/user_groups.py`):
 * created by those in `can_create_groups`, edited by each group's own permission
 * settings or the organization's `can_manage_all_groups`, deactivated when nothing
 * uses them, with `user_group` events to everyone. The system groups are derived from
 * roles (`actors/rules/group_settings.ts`); their membership events come with the user facts
 * that change a role or an account (`systemGroupDeliveries`).
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { AnyFact, Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest } from '../shared/errors.js';
import {
  asGroupSettingValue, checkGroupSetting, directSystemGroups, groupSettingChange, hasGroupPermission, hasGroupUpdatePermission, isSystemGroup, LAST_SYSTEM_GROUP_ID,
  sameGroupSetting, settingUsesGroup, SYSTEM_GROUP_INFO, SYSTEM_GROUPS, subgroupIds, type SettingRules,
} from '../rules/group_settings.js';
import { channelGroupSetting, CHANNEL_GROUP_DEFAULTS } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { codePointLength } from '../rules/messages.js';
import { realmSettings, REALM_SETTING_NAMES } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import {
  Role, USER_GROUP_SETTINGS, type ChannelGroupSettingKey, type GroupSettingValue, type UserGroupRecord, type UserGroupSettingName, type UserRecord,
} from '../shared/types.js';
import { notificationBotDirect } from './messages.js';
import { orgState, recordsById } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** The organization's own user groups, by id (deactivated ones included); system groups are derived from roles. */
    userGroups: Map<number, UserGroupRecord>;
    /** The highest user group id ever used (system groups take the ids up to `LAST_SYSTEM_GROUP_ID`). */
    lastGroupId: number;
  }
}

orgState({ userGroups: recordsById(), lastGroupId: { empty: () => LAST_SYSTEM_GROUP_ID } });

/** Zulip's `NamedUserGroup.MAX_NAME_LENGTH` and `INVALID_NAME_PREFIXES`. */
const MAX_NAME_LENGTH = 100;
const INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];
/** Parley's bound on a description (Zulip's column is unbounded). */
const MAX_DESCRIPTION_LENGTH = 10_000;

/** Each permission setting of a group: what it may be set to, and its default (`null`: the creator alone). */
const SETTING_RULES: Record<UserGroupSettingName, SettingRules & { default: number | null }> = {
  can_add_members_group: { allowEveryone: false, default: null },
  can_join_group: { default: SYSTEM_GROUPS.nobody },
  can_leave_group: { default: SYSTEM_GROUPS.everyone },
  can_manage_group: { allowEveryone: false, default: null },
  can_mention_group: { default: SYSTEM_GROUPS.everyone },
  can_remove_members_group: { default: SYSTEM_GROUPS.nobody },
};

/** A group was made. */
export interface UserGroupCreated { type: 'UserGroupCreated'; org: number; group: UserGroupRecord }
/** A group's name, description, settings or activation changed. */
export interface UserGroupUpdated {
  type: 'UserGroupUpdated';
  org: number;
  group_id: number;
  changes: { name?: string; description?: string; deactivated?: boolean; settings?: Partial<Record<UserGroupSettingName, GroupSettingValue>> };
}
/** Users and subgroups joined or left a group. */
export interface UserGroupMembersChanged {
  type: 'UserGroupMembersChanged';
  org: number;
  group_id: number;
  add: number[];
  remove: number[];
  add_subgroups: number[];
  remove_subgroups: number[];
}

export interface CreateUserGroup {
  type: 'CREATE_USER_GROUP';
  org: number;
  actor_id: number;
  name: string;
  description: string;
  members: number[];
  subgroups: number[];
  /** Permission settings as the request gives them (group-setting values). */
  settings: Record<string, unknown>;
}
export interface UpdateUserGroup {
  type: 'UPDATE_USER_GROUP';
  org: number;
  actor_id: number;
  group_id: number;
  name?: string;
  description?: string;
  deactivated?: boolean;
  /** Permission setting changes as `{new, old?}`. */
  settings: Record<string, unknown>;
}
export interface UpdateUserGroupMembers {
  type: 'UPDATE_USER_GROUP_MEMBERS';
  org: number;
  actor_id: number;
  group_id: number;
  add: number[];
  delete: number[];
  add_subgroups: number[];
  delete_subgroups: number[];
}
export interface DeactivateUserGroup { type: 'DEACTIVATE_USER_GROUP'; org: number; actor_id: number; group_id: number }

/** The acting user: active, and not a guest (Zulip's `require_member_or_admin`). */
export function groupActor(org: OrgContext, actorId: number): UserRecord {
  const actor = org.users.get(actorId);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  if (actor.role === Role.GUEST) throw badRequest('Not allowed for guest users');
  return actor;
}

/** A group of the organization by id, for reading (system groups included). */
export function readableGroup(org: OrgContext, groupId: number): void {
  if (!isSystemGroup(groupId) && !org.userGroups.has(groupId)) throw badRequest('Invalid user group');
}

/** Zulip's `check_user_group_name`, and that no other group has the name. */
function checkName(org: OrgContext, raw: string, self: number | null): string {
  const name = raw;
  if (name.trim() === '') throw badRequest("User group name can't be empty!");
  if (codePointLength(name) > MAX_NAME_LENGTH) throw badRequest(`User group name cannot exceed ${MAX_NAME_LENGTH} characters.`);
  for (const prefix of INVALID_NAME_PREFIXES) if (name.startsWith(prefix)) throw badRequest(`User group name cannot start with '${prefix}'.`);
  for (const g of org.userGroups.values()) if (g.id !== self && g.name === name) throw badRequest(`User group '${name}' already exists.`);
  return name;
}

function checkDescription(description: string): string {
  if (codePointLength(description) > MAX_DESCRIPTION_LENGTH) throw badRequest(`User group description cannot exceed ${MAX_DESCRIPTION_LENGTH} characters.`);
  return description;
}

/** A group the actor means to change: an existing group the organization made. */
function editableGroup(org: OrgContext, groupId: number): UserGroupRecord {
  if (isSystemGroup(groupId)) throw badRequest('Insufficient permission');
  const group = org.userGroups.get(groupId);
  if (!group) throw badRequest('Invalid user group');
  return group;
}

const mayUpdate = (org: OrgContext, actor: UserRecord, group: UserGroupRecord, setting: UserGroupSettingName): boolean =>
  hasGroupUpdatePermission(org, realmSettings(org).can_manage_all_groups, actor, group, setting);

/** Checks a subgroup id for `add_subgroups` or initial subgroups. */
function checkSubgroup(org: OrgContext, id: number): void {
  if (!isSystemGroup(id) && !org.userGroups.has(id)) throw badRequest(`Invalid user group ID: ${id}`);
  if (org.userGroups.get(id)?.deactivated) throw badRequest('User group is deactivated.');
  if (id === SYSTEM_GROUPS.internet || id === SYSTEM_GROUPS.nobody) throw badRequest(`Invalid user group ID: ${id}`);
}

function checkMember(org: OrgContext, id: number): void {
  const user = org.users.get(id);
  if (!user) throw badRequest(`Invalid user ID: ${id}`);
  if (!user.is_active) throw badRequest(`User ${id} is deactivated.`);
}

const sorted = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);

export const createUserGroup = command({
  type: 'CREATE_USER_GROUP',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateUserGroup, env: DecideEnv): Decision<{ group_id: number }, UserGroupCreated> {
    const actor = groupActor(ctx, c.actor_id);
    if (!hasGroupPermission(ctx, actor, realmSettings(ctx).can_create_groups)) throw badRequest('Insufficient permission');
    const name = checkName(ctx, c.name, null);
    for (const id of c.members) checkMember(ctx, id);
    for (const id of c.subgroups) checkSubgroup(ctx, id);
    const settings = {} as Record<UserGroupSettingName, GroupSettingValue>;
    for (const key of USER_GROUP_SETTINGS) {
      const rules = SETTING_RULES[key];
      const raw = c.settings[key];
      settings[key] = raw === undefined
        ? rules.default ?? { direct_members: [actor.user_id], direct_subgroups: [] }
        : checkGroupSetting(ctx, key, asGroupSettingValue(key, raw), rules);
    }
    const group: UserGroupRecord = {
      id: ctx.lastGroupId + 1, name, description: checkDescription(c.description), members: sorted(c.members), subgroups: sorted(c.subgroups),
      creator_id: actor.user_id, date_created: env.now(), deactivated: false, settings,
    };
    return { facts: [{ type: 'UserGroupCreated', org: c.org, group }], value: { group_id: group.id } };
  },
});

export const updateUserGroup = command({
  type: 'UPDATE_USER_GROUP',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateUserGroup, _env: DecideEnv, view: StateView): Decision<Record<string, never>, UserGroupUpdated> {
    const actor = groupActor(ctx, c.actor_id);
    const settingKeys = Object.keys(c.settings).filter((k) => (USER_GROUP_SETTINGS as readonly string[]).includes(k)) as UserGroupSettingName[];
    if (c.name === undefined && c.description === undefined && c.deactivated === undefined && settingKeys.length === 0) throw badRequest('No new data supplied');
    const group = editableGroup(ctx, c.group_id);
    if (!mayUpdate(ctx, actor, group, 'can_manage_group')) throw badRequest('Insufficient permission');
    const changes: UserGroupUpdated['changes'] = {};
    if (c.name !== undefined && c.name !== group.name) changes.name = checkName(ctx, c.name, group.id);
    if (c.description !== undefined && c.description !== group.description) changes.description = checkDescription(c.description);
    for (const key of settingKeys) {
      const value = groupSettingChange(ctx, key, c.settings[key], group.settings[key], SETTING_RULES[key]);
      if (!sameGroupSetting(value, group.settings[key])) (changes.settings ??= {})[key] = value;
    }
    if (c.deactivated !== undefined && c.deactivated !== group.deactivated) {
      if (c.deactivated) checkNotInUse(ctx, view, group.id);
      changes.deactivated = c.deactivated;
    }
    return { facts: Object.keys(changes).length === 0 ? [] : [{ type: 'UserGroupUpdated', org: c.org, group_id: group.id, changes }], value: {} };
  },
});

/**
 * Refuses to deactivate a group something still uses (Zulip's
 * `check_user_group_can_be_deactivated`): an active supergroup, or a permission
 * setting of the organization, a channel or another group.
 */
function checkNotInUse(org: OrgContext, view: StateView, groupId: number): void {
  const objections: Record<string, unknown>[] = [];
  const supergroups = [...org.userGroups.values()].filter((g) => !g.deactivated && g.subgroups.includes(groupId)).map((g) => g.id);
  if (supergroups.length > 0) objections.push({ type: 'subgroup', supergroup_ids: supergroups });
  const settings = realmSettings(org) as Record<string, unknown>;
  const realmUses = REALM_SETTING_NAMES.filter((k) => typeof settings[k] === 'number' || (typeof settings[k] === 'object' && settings[k] !== null))
    .filter((k) => settingUsesGroup(settings[k] as GroupSettingValue, groupId));
  if (realmUses.length > 0) objections.push({ type: 'realm', settings: realmUses });
  for (const streamId of [...org.channelsByName.values()].sort((a, b) => a - b)) {
    const channel = view.channel(org.org.id, streamId)?.channel;
    if (!channel || channel.is_archived) continue;
    const uses = (Object.keys(CHANNEL_GROUP_DEFAULTS) as ChannelGroupSettingKey[]).filter((k) => settingUsesGroup(channelGroupSetting(channel, k), groupId));
    if (uses.length > 0) objections.push({ type: 'channel', channel_id: streamId, settings: uses });
  }
  for (const g of org.userGroups.values()) {
    if (g.deactivated || g.id === groupId) continue;
    const uses = USER_GROUP_SETTINGS.filter((k) => settingUsesGroup(g.settings[k], groupId));
    if (uses.length > 0) objections.push({ type: 'user_group', group_id: g.id, settings: uses });
  }
  if (objections.length > 0) throw new ApiError('CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.', { objections });
}

export const deactivateUserGroup = command({
  type: 'DEACTIVATE_USER_GROUP',
  actor: 'org',
  decide(ctx: OrgContext, c: DeactivateUserGroup, _env: DecideEnv, view: StateView): Decision<Record<string, never>, UserGroupUpdated> {
    const actor = groupActor(ctx, c.actor_id);
    const group = editableGroup(ctx, c.group_id);
    if (!mayUpdate(ctx, actor, group, 'can_manage_group')) throw badRequest('Insufficient permission');
    if (group.deactivated) throw badRequest('User group is already deactivated.');
    checkNotInUse(ctx, view, group.id);
    return { facts: [{ type: 'UserGroupUpdated', org: c.org, group_id: group.id, changes: { deactivated: true } }], value: {} };
  },
});

export const updateUserGroupMembers = command({
  type: 'UPDATE_USER_GROUP_MEMBERS',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateUserGroupMembers, env: DecideEnv): Decision<Record<string, never>, AnyFact> {
    const actor = groupActor(ctx, c.actor_id);
    if (c.add.length + c.delete.length + c.add_subgroups.length + c.delete_subgroups.length === 0) {
      throw badRequest('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
    }
    const group = editableGroup(ctx, c.group_id);
    const add = sorted(c.add);
    const remove = sorted(c.delete);
    const addSubgroups = sorted(c.add_subgroups);
    const removeSubgroups = sorted(c.delete_subgroups);
    if (add.length > 0) {
      for (const id of add) checkMember(ctx, id);
      for (const id of add) if (group.members.includes(id)) throw badRequest(`User ${id} is already a member of this group`);
      const joiningAlone = add.length === 1 && add[0] === actor.user_id;
      if (!mayUpdate(ctx, actor, group, 'can_add_members_group') && !(joiningAlone && hasGroupPermission(ctx, actor, group.settings.can_join_group))) {
        throw badRequest('Insufficient permission');
      }
    }
    if (remove.length > 0) {
      for (const id of remove) if (!ctx.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
      for (const id of remove) if (!group.members.includes(id)) throw badRequest(`There is no member '${id}' in this user group`);
      const leavingAlone = remove.length === 1 && remove[0] === actor.user_id;
      if (!mayUpdate(ctx, actor, group, 'can_remove_members_group') && !(leavingAlone && hasGroupPermission(ctx, actor, group.settings.can_leave_group))) {
        throw badRequest('Insufficient permission');
      }
    }
    if (addSubgroups.length > 0) {
      for (const id of addSubgroups) checkSubgroup(ctx, id);
      for (const id of addSubgroups) if (group.subgroups.includes(id)) throw badRequest(`User group ${id} is already a subgroup of this group.`);
      if (addSubgroups.some((id) => id === group.id || subgroupIds(ctx, id).includes(group.id))) {
        throw badRequest(`User group ${group.id} is already a subgroup of one of the passed subgroups.`);
      }
      if (!mayUpdate(ctx, actor, group, 'can_add_members_group')) throw badRequest('Insufficient permission');
    }
    if (removeSubgroups.length > 0) {
      for (const id of removeSubgroups) if (!isSystemGroup(id) && !ctx.userGroups.has(id)) throw badRequest(`Invalid user group ID: ${id}`);
      for (const id of removeSubgroups) if (!group.subgroups.includes(id)) throw badRequest(`User group ${id} is not a subgroup of this group.`);
      if (!mayUpdate(ctx, actor, group, 'can_remove_members_group')) throw badRequest('Insufficient permission');
    }
    const changed: UserGroupMembersChanged = { type: 'UserGroupMembersChanged', org: c.org, group_id: group.id, add, remove, add_subgroups: addSubgroups, remove_subgroups: removeSubgroups };
    const facts: AnyFact[] = [changed];
    // Those added or removed by someone else hear of it from the notification bot, as in Zulip.
    const actorMention = `@_**${actor.full_name}|${actor.user_id}**`;
    for (const [ids, verb] of [[add, 'added you to'], [remove, 'removed you from']] as const) {
      for (const id of ids) {
        const user = ctx.users.get(id)!;
        if (id === actor.user_id || user.is_bot || !user.is_active) continue;
        facts.push(notificationBotDirect(env, ctx, user, `${actorMention} ${verb} the group @_*${group.name}*.`));
      }
    }
    return { facts, value: {} };
  },
});

/** A group as the API shows it: active members only. */
export function groupView(org: OrgContext, group: UserGroupRecord): Record<string, unknown> {
  return {
    id: group.id, name: group.name, description: group.description,
    members: group.members.filter((id) => org.users.get(id)?.is_active === true),
    direct_subgroup_ids: group.subgroups, is_system_group: false, creator_id: group.creator_id, date_created: group.date_created,
    deactivated: group.deactivated, ...group.settings,
  };
}

/** The system groups, as the API shows them (members are the active direct members). */
export function systemGroupViews(org: OrgContext): Record<string, unknown>[] {
  const direct = new Map<number, number[]>(Object.keys(SYSTEM_GROUP_INFO).map((id) => [Number(id), []]));
  for (const user of org.users.values()) {
    if (!user.is_active) continue;
    for (const id of directSystemGroups(user)) direct.get(id)!.push(user.user_id);
  }
  return [...direct].map(([id, members]) => ({
    id, name: SYSTEM_GROUP_INFO[id].name, description: SYSTEM_GROUP_INFO[id].description, members: members.sort((a, b) => a - b),
    direct_subgroup_ids: SYSTEM_GROUP_INFO[id].subgroup === null ? [] : [SYSTEM_GROUP_INFO[id].subgroup], is_system_group: true,
    creator_id: null, date_created: null, deactivated: false,
    can_add_members_group: SYSTEM_GROUPS.nobody, can_join_group: SYSTEM_GROUPS.nobody, can_leave_group: SYSTEM_GROUPS.nobody,
    can_manage_group: SYSTEM_GROUPS.nobody, can_mention_group: SYSTEM_GROUPS.everyone, can_remove_members_group: SYSTEM_GROUPS.nobody,
  }));
}

/** Every group, system groups first, then the organization's own by id (deactivated ones only if asked). */
export function allGroupViews(org: OrgContext, includeDeactivated: boolean): Record<string, unknown>[] {
  const own = [...org.userGroups.values()].filter((g) => includeDeactivated || !g.deactivated).sort((a, b) => a.id - b.id);
  return [...systemGroupViews(org), ...own.map((g) => groupView(org, g))];
}

/**
 * The `user_group` membership events a change of a user's system groups causes: a
 * new account joins its role's groups, a role change moves between them, and a
 * reactivated user returns to every group they were in. (A deactivation sends none:
 * clients drop deactivated users from groups on the `realm_user` update, as Zulip's do.)
 */
export function systemGroupDeliveries(org: number, seq: number, view: StateView, userId: number, before: readonly number[], after: readonly number[]): Delivery[] {
  const everyone = activeUsersWhere(view, org);
  const out: Delivery[] = [];
  for (const id of before) if (!after.includes(id)) out.push({ org, seq, type: 'user_group', user_ids: everyone, event: eventJson('user_group', { op: 'remove_members', group_id: id, user_ids: [userId] }) });
  for (const id of after) if (!before.includes(id)) out.push({ org, seq, type: 'user_group', user_ids: everyone, event: eventJson('user_group', { op: 'add_members', group_id: id, user_ids: [userId] }) });
  return out;
}

/** The groups a user is a direct member of: system ones and the organization's own. */
export function directGroupsOf(org: OrgContext, user: UserRecord): number[] {
  return [...directSystemGroups(user), ...[...org.userGroups.values()].filter((g) => g.members.includes(user.user_id)).map((g) => g.id)];
}

const userGroupCreated = orgFact<UserGroupCreated>({
  type: 'UserGroupCreated',
  apply(ctx, f) {
    ctx.userGroups.set(f.group.id, { ...f.group });
    ctx.lastGroupId = Math.max(ctx.lastGroupId, f.group.id);
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    return [{ org: f.org, seq, type: 'user_group', user_ids: activeUsersWhere(view, f.org), event: eventJson('user_group', { op: 'add', group: groupView(org, org.userGroups.get(f.group.id)!) }) }];
  },
});

const userGroupUpdated = orgFact<UserGroupUpdated>({
  type: 'UserGroupUpdated',
  apply(ctx, f) {
    const group = ctx.userGroups.get(f.group_id);
    if (!group) return;
    const { settings, ...rest } = f.changes;
    ctx.userGroups.set(f.group_id, { ...group, ...rest, settings: { ...group.settings, ...settings } });
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const group = org.userGroups.get(f.group_id);
    if (!group) return [];
    const everyone = activeUsersWhere(view, f.org);
    const { deactivated, settings, ...rest } = f.changes;
    const out: Delivery[] = [];
    const data = { ...rest, ...settings };
    if (Object.keys(data).length > 0) out.push({ org: f.org, seq, type: 'user_group', user_ids: everyone, event: eventJson('user_group', { op: 'update', group_id: f.group_id, data }) });
    if (deactivated !== undefined) {
      // Clients that keep deactivated groups hear of the flag; the others see the group go or come back.
      const kept = eventJson('user_group', { op: 'update', group_id: f.group_id, data: { deactivated } });
      const gone = deactivated ? eventJson('user_group', { op: 'remove', group_id: f.group_id }) : eventJson('user_group', { op: 'add', group: groupView(org, group) });
      out.push({ org: f.org, seq, type: 'user_group', user_ids: everyone, event: (_userId, caps) => (caps.include_deactivated_groups ? kept : gone) });
    }
    return out;
  },
});

const userGroupMembersChanged = orgFact<UserGroupMembersChanged>({
  type: 'UserGroupMembersChanged',
  apply(ctx, f) {
    const group = ctx.userGroups.get(f.group_id);
    if (!group) return;
    const members = sorted([...group.members.filter((id) => !f.remove.includes(id)), ...f.add]);
    const subgroups = sorted([...group.subgroups.filter((id) => !f.remove_subgroups.includes(id)), ...f.add_subgroups]);
    ctx.userGroups.set(f.group_id, { ...group, members, subgroups });
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const everyone = activeUsersWhere(view, f.org);
    const out: Delivery[] = [];
    const push = (op: string, field: string, ids: number[]): void => {
      if (ids.length > 0) out.push({ org: f.org, seq, type: 'user_group', user_ids: everyone, event: eventJson('user_group', { op, group_id: f.group_id, [field]: ids }) });
    };
    const active = (ids: number[]): number[] => ids.filter((id) => org.users.get(id)?.is_active === true);
    push('add_members', 'user_ids', active(f.add));
    push('remove_members', 'user_ids', active(f.remove));
    push('add_subgroups', 'direct_subgroup_ids', f.add_subgroups);
    push('remove_subgroups', 'direct_subgroup_ids', f.remove_subgroups);
    return out;
  },
});

export const userGroups = area({
  name: 'user groups',
  commands: [createUserGroup, updateUserGroup, deactivateUserGroup, updateUserGroupMembers],
  facts: [userGroupCreated, userGroupUpdated, userGroupMembersChanged],
  register: [{
    types: ['realm_user_groups', 'user_group'],
    fill: (state, r, view) => void (state.realm_user_groups = allGroupViews(view.org(r.org.id)!, r.caps.include_deactivated_groups)),
  }],
});
