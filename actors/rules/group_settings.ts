/**
 * User groups and group-setting values (Zulip's `zerver/lib/user_groups.py`): who is
 * in a group, and who holds a permission such as `can_move_messages_between_topics_group`.
 * A value is either the id of a group, or an anonymous group of direct members and
 * direct subgroups. Membership counts through subgroups, and only active users count.
 *
 * The system groups are derived from roles and nested as Zulip nests them: owners
 * within administrators within moderators within full members within members within
 * everyone within internet. A member is a direct member of `role:members` and, once past
 * the organization's waiting period, of `role:fullmembers`. Groups the organization
 * makes (`UserGroupRecord`) may hold users and any groups as subgroups, without cycles.
 */
import { ApiError, badRequest } from '../shared/errors.js';
import { Role, type GroupSettingValue, type UserGroupRecord, type UserGroupSettingName, type UserRecord } from '../shared/types.js';

/** Ids of the system user groups, the same in every organization. */
export const SYSTEM_GROUPS = {
  nobody: 1,
  owners: 2,
  administrators: 3,
  moderators: 4,
  full_members: 5,
  members: 6,
  everyone: 7,
  internet: 8,
} as const;

/** The highest system group id: an organization's own groups are numbered after it. */
export const LAST_SYSTEM_GROUP_ID = SYSTEM_GROUPS.internet;

export type { GroupSettingValue } from '../shared/types.js';

/** Each system group: its name, description and direct subgroup. */
export const SYSTEM_GROUP_INFO: Readonly<Record<number, { name: string; description: string; subgroup: number | null }>> = {
  [SYSTEM_GROUPS.nobody]: { name: 'role:nobody', description: 'Nobody', subgroup: null },
  [SYSTEM_GROUPS.owners]: { name: 'role:owners', description: 'Owners of this organization', subgroup: null },
  [SYSTEM_GROUPS.administrators]: { name: 'role:administrators', description: 'Administrators of this organization, including owners', subgroup: SYSTEM_GROUPS.owners },
  [SYSTEM_GROUPS.moderators]: { name: 'role:moderators', description: 'Moderators of this organization, including administrators', subgroup: SYSTEM_GROUPS.administrators },
  [SYSTEM_GROUPS.full_members]: { name: 'role:fullmembers', description: 'Members of this organization, not including new accounts and guests', subgroup: SYSTEM_GROUPS.moderators },
  [SYSTEM_GROUPS.members]: { name: 'role:members', description: 'Members of this organization, not including guests', subgroup: SYSTEM_GROUPS.full_members },
  [SYSTEM_GROUPS.everyone]: { name: 'role:everyone', description: 'Everyone in this organization, including guests', subgroup: SYSTEM_GROUPS.members },
  [SYSTEM_GROUPS.internet]: { name: 'role:internet', description: 'Everyone on the Internet', subgroup: SYSTEM_GROUPS.everyone },
};

/** Each system group with every system group nested in it, itself included. */
const WITHIN: ReadonlyMap<number, ReadonlySet<number>> = new Map(Object.keys(SYSTEM_GROUP_INFO).map((key) => {
  const within = new Set<number>();
  for (let id: number | null = Number(key); id !== null; id = SYSTEM_GROUP_INFO[id].subgroup) within.add(id);
  return [Number(key), within];
}));

/** What group lookups need of an organization (its context has both). */
export interface GroupDirectory {
  users: ReadonlyMap<number, UserRecord>;
  userGroups: ReadonlyMap<number, UserGroupRecord>;
}
type Member = Pick<UserRecord, 'user_id' | 'role' | 'is_active' | 'probation'>;

export function isSystemGroup(id: number): boolean {
  return WITHIN.has(id);
}

/**
 * The system groups a user is a direct member of, as Zulip keeps them: the role's
 * group, and for a member past the waiting period also `role:fullmembers`.
 */
export function directSystemGroups(user: Pick<UserRecord, 'role' | 'probation'>): number[] {
  switch (user.role) {
    case Role.OWNER: return [SYSTEM_GROUPS.owners];
    case Role.ADMIN: return [SYSTEM_GROUPS.administrators];
    case Role.MODERATOR: return [SYSTEM_GROUPS.moderators];
    case Role.MEMBER: return user.probation ? [SYSTEM_GROUPS.members] : [SYSTEM_GROUPS.members, SYSTEM_GROUPS.full_members];
    default: return [SYSTEM_GROUPS.everyone];
  }
}

/** Whether `groupId` names a group of the organization (deactivated ones included). */
export function groupExists(org: GroupDirectory, groupId: number): boolean {
  return isSystemGroup(groupId) || org.userGroups.has(groupId);
}

/** Whether a user is in a group: directly, or (unless `directOnly`) through its subgroups. Deactivated users never are. */
export function isGroupMember(org: GroupDirectory, user: Member, groupId: number, directOnly = false): boolean {
  if (!user.is_active) return false;
  const seen = new Set<number>();
  const visit = (id: number): boolean => {
    if (seen.has(id)) return false;
    seen.add(id);
    const within = WITHIN.get(id);
    if (within) return directSystemGroups(user).some((d) => (directOnly ? d === id : within.has(d)));
    const group = org.userGroups.get(id);
    if (!group) return false;
    if (group.members.includes(user.user_id)) return true;
    return !directOnly && group.subgroups.some(visit);
  };
  return visit(groupId);
}

/** A group's members, ascending: active users only, through subgroups unless `directOnly`. */
export function groupMemberIds(org: GroupDirectory, groupId: number, directOnly = false): number[] {
  const out: number[] = [];
  for (const user of org.users.values()) if (isGroupMember(org, user, groupId, directOnly)) out.push(user.user_id);
  return out.sort((a, b) => a - b);
}

/** A group's direct subgroups, or all groups nested in it (itself excluded), ascending. */
export function subgroupIds(org: GroupDirectory, groupId: number, directOnly = false): number[] {
  const direct = (id: number): number[] => {
    if (isSystemGroup(id)) {
      const sub = SYSTEM_GROUP_INFO[id].subgroup;
      return sub === null ? [] : [sub];
    }
    return org.userGroups.get(id)?.subgroups ?? [];
  };
  if (directOnly) return [...direct(groupId)].sort((a, b) => a - b);
  const seen = new Set<number>();
  const stack = [...direct(groupId)];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...direct(id));
  }
  seen.delete(groupId);
  return [...seen].sort((a, b) => a - b);
}

/** Whether `user` holds the permission a group-setting value grants (through subgroups). */
export function hasGroupPermission(org: GroupDirectory, user: Member, value: GroupSettingValue): boolean {
  if (!user.is_active) return false;
  if (typeof value === 'number') return isGroupMember(org, user, value);
  return value.direct_members.includes(user.user_id) || value.direct_subgroups.some((id) => isGroupMember(org, user, id));
}

/** The system groups a setting may not name (Zulip's `GroupPermissionSetting` flags); `role:internet` never. */
export interface SettingRules {
  allowEveryone?: boolean;
  allowNobody?: boolean;
  allowOwners?: boolean;
}

/**
 * Checks a group-setting value from a request: groups that exist and are active,
 * direct members who are active users of the organization, and the setting's own
 * rules. Returns it normalized as Zulip stores it: sorted without repeats, and an
 * anonymous group of one subgroup alone (or of nothing) as that group (`role:nobody`).
 */
export function checkGroupSetting(org: GroupDirectory, name: string, value: GroupSettingValue, rules: SettingRules = {}): GroupSettingValue {
  const checkGroup = (id: number): void => {
    const group = org.userGroups.get(id);
    if (!isSystemGroup(id) && !group) throw badRequest('Invalid user group ID: ' + id);
    if (group?.deactivated) throw badRequest(`User group ${id} is deactivated and cannot be used in '${name}'.`);
  };
  const refuse = (id: number): void => {
    const systemName = SYSTEM_GROUP_INFO[id]?.name;
    const refused = id === SYSTEM_GROUPS.internet
      || (id === SYSTEM_GROUPS.everyone && rules.allowEveryone === false)
      || (id === SYSTEM_GROUPS.nobody && rules.allowNobody === false)
      || (id === SYSTEM_GROUPS.owners && rules.allowOwners === false);
    if (refused) throw badRequest(`'${name}' setting cannot be set to '${systemName}' group.`);
  };
  if (typeof value === 'number') {
    checkGroup(value);
    refuse(value);
    return value;
  }
  for (const id of value.direct_members) if (org.users.get(id)?.is_active !== true) throw badRequest(`Invalid user ID: ${id}`);
  for (const id of value.direct_subgroups) checkGroup(id);
  const sorted = (ids: number[]): number[] => [...new Set(ids)].sort((a, b) => a - b);
  const members = sorted(value.direct_members);
  const subgroups = sorted(value.direct_subgroups);
  if (members.length === 0 && subgroups.length <= 1) {
    const id = subgroups[0] ?? SYSTEM_GROUPS.nobody;
    refuse(id);
    return id;
  }
  if (subgroups.includes(SYSTEM_GROUPS.internet)) refuse(SYSTEM_GROUPS.internet);
  return { direct_members: members, direct_subgroups: subgroups };
}

/** A group-setting value as a request gives it: a group id, or `{direct_members, direct_subgroups}`. */
export function asGroupSettingValue(name: string, v: unknown): GroupSettingValue {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (v && typeof v === 'object') {
    const { direct_members: members, direct_subgroups: subgroups } = v as { direct_members?: unknown; direct_subgroups?: unknown };
    const ids = (list: unknown): list is number[] => Array.isArray(list) && list.every((id) => Number.isInteger(id));
    if (ids(members) && ids(subgroups)) return { direct_members: members, direct_subgroups: subgroups };
  }
  throw badRequest(`Invalid ${name}`);
}

/**
 * A group setting's change as requests give it (`{"new": value, "old": value}`,
 * Zulip's `GroupSettingChangeRequest`): `old`, when given, must be the current value
 * (`EXPECTATION_MISMATCH` otherwise); `new` is checked as `checkGroupSetting` does.
 */
export function groupSettingChange(org: GroupDirectory, name: string, request: unknown, current: GroupSettingValue, rules: SettingRules = {}): GroupSettingValue {
  if (typeof request !== 'object' || request === null || !('new' in request)) throw badRequest(`${name} is missing 'new'`);
  const { new: next, old } = request as { new: unknown; old?: unknown };
  if (old !== undefined && !sameGroupSetting(asGroupSettingValue(name, old), current)) throw new ApiError('EXPECTATION_MISMATCH', "'old' value does not match the expected value.");
  return checkGroupSetting(org, name, asGroupSettingValue(name, next), rules);
}

/** Whether two group-setting values are the same (anonymous groups compared as sets). */
export function sameGroupSetting(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  const same = (x: number[], y: number[]): boolean => {
    const sx = [...new Set(x)].sort((p, q) => p - q);
    const sy = [...new Set(y)].sort((p, q) => p - q);
    return sx.length === sy.length && sx.every((v, i) => v === sy[i]);
  };
  return same(a.direct_members, b.direct_members) && same(a.direct_subgroups, b.direct_subgroups);
}

/** Whether a group-setting value names group `groupId` (as itself or as a direct subgroup). */
export function settingUsesGroup(value: GroupSettingValue, groupId: number): boolean {
  return typeof value === 'number' ? value === groupId : value.direct_subgroups.includes(groupId);
}


/**
 * Whether `actor` holds one of a group's own permissions (Zulip's
 * `has_user_group_access_for_update`): the organization's `can_manage_all_groups`
 * (`manageAllGroups`), the group's `can_manage_group`, or the named setting itself.
 */
export function hasGroupUpdatePermission(org: GroupDirectory, manageAllGroups: GroupSettingValue, actor: Member, group: UserGroupRecord, setting: UserGroupSettingName): boolean {
  return hasGroupPermission(org, actor, manageAllGroups)
    || hasGroupPermission(org, actor, group.settings.can_manage_group)
    || (setting !== 'can_manage_group' && hasGroupPermission(org, actor, group.settings[setting]));
}
