/**
 * Group-setting values (Zulip's `zerver/lib/user_groups.py`): who holds a permission
 * such as `can_move_messages_between_topics_group`. A value is either the id of a
 * user group, or an anonymous group of direct members and subgroups.
 *
 * The system groups are role groups, nested as Zulip nests them: owners within
 * administrators within moderators within members within everyone within internet,
 * and full members within members.
 */
import { ApiError, badRequest } from './errors.js';
import { Role, type GroupSettingValue, type UserRecord } from './types.js';

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

export type { GroupSettingValue } from './types.js';

/** The most privileged role each system group admits (`null`: nobody). */
const SYSTEM_GROUP_ROLE: Record<number, number | null> = {
  [SYSTEM_GROUPS.nobody]: null,
  [SYSTEM_GROUPS.owners]: Role.OWNER,
  [SYSTEM_GROUPS.administrators]: Role.ADMIN,
  [SYSTEM_GROUPS.moderators]: Role.MODERATOR,
  [SYSTEM_GROUPS.full_members]: Role.MEMBER,
  [SYSTEM_GROUPS.members]: Role.MEMBER,
  [SYSTEM_GROUPS.everyone]: Role.GUEST,
  [SYSTEM_GROUPS.internet]: Role.GUEST,
};

/** Whether a group id names a group of the organization. */
export function isGroupId(id: number): boolean {
  return id in SYSTEM_GROUP_ROLE;
}

function inGroup(user: Pick<UserRecord, 'role' | 'is_active'>, groupId: number): boolean {
  const role = SYSTEM_GROUP_ROLE[groupId];
  return role !== undefined && role !== null && user.role <= role;
}

/** Whether `user` holds the permission a group-setting value grants. */
export function hasGroupPermission(user: Pick<UserRecord, 'user_id' | 'role' | 'is_active'>, value: GroupSettingValue): boolean {
  if (!user.is_active) return false;
  if (typeof value === 'number') return inGroup(user, value);
  return value.direct_members.includes(user.user_id) || value.direct_subgroups.some((id) => inGroup(user, id));
}

/**
 * Checks a group-setting value from a request: known group ids, and direct members
 * who are users of the organization. Returns it normalized (sorted, without repeats).
 */
export function checkGroupSetting(value: GroupSettingValue, isUser: (id: number) => boolean): GroupSettingValue {
  if (typeof value === 'number') {
    if (!isGroupId(value)) throw badRequest('Invalid user group ID: ' + value);
    return value;
  }
  for (const id of value.direct_members) if (!isUser(id)) throw badRequest(`Invalid user ID: ${id}`);
  for (const id of value.direct_subgroups) if (!isGroupId(id)) throw badRequest('Invalid user group ID: ' + id);
  const sorted = (ids: number[]): number[] => [...new Set(ids)].sort((a, b) => a - b);
  return { direct_members: sorted(value.direct_members), direct_subgroups: sorted(value.direct_subgroups) };
}

/**
 * A group setting's change as requests give it (`{"new": value, "old": value}`,
 * Zulip's `GroupSettingChangeRequest`): `old`, when given, must be the current value
 * (`EXPECTATION_MISMATCH` otherwise); `new` is checked, and is never `role:internet`.
 */
export function groupSettingChange(name: string, request: unknown, current: GroupSettingValue, isUser: (id: number) => boolean): GroupSettingValue {
  if (typeof request !== 'object' || request === null || !('new' in request)) throw badRequest(`${name} is missing 'new'`);
  const { new: next, old } = request as { new: unknown; old?: unknown };
  const asValue = (v: unknown): GroupSettingValue => {
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    if (v && typeof v === 'object' && Array.isArray((v as { direct_members?: unknown }).direct_members) && Array.isArray((v as { direct_subgroups?: unknown }).direct_subgroups)) return v as GroupSettingValue;
    throw badRequest(`Invalid ${name}`);
  };
  if (old !== undefined && JSON.stringify(asValue(old)) !== JSON.stringify(current)) throw new ApiError('EXPECTATION_MISMATCH', "'old' value does not match the expected value.");
  const value = checkGroupSetting(asValue(next), isUser);
  if (value === SYSTEM_GROUPS.internet) throw badRequest(`'${name}' setting cannot be set to 'role:internet' group.`);
  return value;
}
