/**
 * User groups: create, list, change and deactivate them; change and read their
 * members and subgroups. Guests may not use these endpoints, as in Zulip.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { groupActor, allGroupViews, readableGroup } from '../../../actors/areas/user_groups.js';
import { groupMemberIds, isGroupMember, subgroupIds } from '../../../actors/rules/group_settings.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { USER_GROUP_SETTINGS } from '../../../actors/shared/types.js';
import { route, S } from '../../http/route.js';

const groupSetting = { schema: Type.Union([Type.Integer(), S.obj]) };
const settingParams = Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, groupSetting])) as Record<(typeof USER_GROUP_SETTINGS)[number], typeof groupSetting>;
const groupId = { user_group_id: { schema: S.int, in: 'path', required: true } } as const;

/** The permission settings a request gave. */
function settingsOf(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of USER_GROUP_SETTINGS) if (params[key] !== undefined) out[key] = params[key];
  return out;
}

export const createUserGroup = route({
  method: 'POST',
  path: '/api/v1/user_groups/create',
  operationId: 'createUserGroup',
  auth: 'user',
  summary: 'Create a user group',
  params: {
    name: { schema: S.str, required: true },
    description: { schema: S.str, required: true },
    members: { schema: S.intArray, required: true },
    subgroups: { schema: S.intArray },
    ...settingParams,
  },
  async handler({ params, org, user, runtime }) {
    const { group_id } = await runtime.execute({ type: 'CREATE_USER_GROUP', org: org.id, actor_id: user.user_id, name: params.name, description: params.description, members: params.members, subgroups: params.subgroups ?? [], settings: settingsOf(params) });
    return { json: { group_id } };
  },
});

export const listUserGroups = route({
  method: 'GET',
  path: '/api/v1/user_groups',
  operationId: 'getUserGroups',
  auth: 'user',
  summary: "The organization's user groups",
  params: { include_deactivated_groups: { schema: S.bool }, allow_deactivated: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const ctx = runtime.org(org.id)!;
    groupActor(ctx, user.user_id);
    return { json: { user_groups: allGroupViews(ctx, params.include_deactivated_groups ?? params.allow_deactivated ?? false) } };
  },
});

export const updateUserGroup = route({
  method: 'PATCH',
  path: '/api/v1/user_groups/{user_group_id}',
  operationId: 'updateUserGroup',
  auth: 'user',
  summary: "Change a user group's name, description or permissions, or reactivate it",
  params: { ...groupId, name: { schema: S.str }, description: { schema: S.str }, deactivated: { schema: S.bool }, ...settingParams },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UPDATE_USER_GROUP', org: org.id, actor_id: user.user_id, group_id: params.user_group_id, name: params.name, description: params.description, deactivated: params.deactivated, settings: settingsOf(params) });
    return { json: {} };
  },
});

export const deactivateUserGroup = route({
  method: 'POST',
  path: '/api/v1/user_groups/{user_group_id}/deactivate',
  operationId: 'deactivateUserGroup',
  auth: 'user',
  summary: 'Deactivate a user group that nothing uses',
  params: groupId,
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DEACTIVATE_USER_GROUP', org: org.id, actor_id: user.user_id, group_id: params.user_group_id });
    return { json: {} };
  },
});

export const updateUserGroupMembers = route({
  method: 'POST',
  path: '/api/v1/user_groups/{user_group_id}/members',
  operationId: 'updateUserGroupMembers',
  auth: 'user',
  summary: 'Add and remove members and subgroups of a user group',
  params: { ...groupId, add: { schema: S.intArray }, delete: { schema: S.intArray }, add_subgroups: { schema: S.intArray }, delete_subgroups: { schema: S.intArray } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UPDATE_USER_GROUP_MEMBERS', org: org.id, actor_id: user.user_id, group_id: params.user_group_id, add: params.add ?? [], delete: params.delete ?? [], add_subgroups: params.add_subgroups ?? [], delete_subgroups: params.delete_subgroups ?? [] });
    return { json: {} };
  },
});

export const updateUserGroupSubgroups = route({
  method: 'POST',
  path: '/api/v1/user_groups/{user_group_id}/subgroups',
  operationId: 'updateUserGroupSubgroups',
  auth: 'user',
  summary: 'Add and remove subgroups of a user group',
  params: { ...groupId, add: { schema: S.intArray }, delete: { schema: S.intArray } },
  async handler({ params, org, user, runtime }) {
    const add = params.add ?? [];
    const remove = params.delete ?? [];
    if (add.length === 0 && remove.length === 0) throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
    await runtime.execute({ type: 'UPDATE_USER_GROUP_MEMBERS', org: org.id, actor_id: user.user_id, group_id: params.user_group_id, add: [], delete: [], add_subgroups: add, delete_subgroups: remove });
    return { json: {} };
  },
});

export const getUserGroupMembers = route({
  method: 'GET',
  path: '/api/v1/user_groups/{user_group_id}/members',
  operationId: 'getUserGroupMembers',
  auth: 'user',
  summary: "A user group's members (through subgroups unless direct_member_only)",
  params: { ...groupId, direct_member_only: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const ctx = runtime.org(org.id)!;
    groupActor(ctx, user.user_id);
    readableGroup(ctx, params.user_group_id);
    return { json: { members: groupMemberIds(ctx, params.user_group_id, params.direct_member_only ?? false) } };
  },
});

export const getUserGroupSubgroups = route({
  method: 'GET',
  path: '/api/v1/user_groups/{user_group_id}/subgroups',
  operationId: 'getUserGroupSubgroups',
  auth: 'user',
  summary: "A user group's subgroups (all nested ones unless direct_subgroup_only)",
  params: { ...groupId, direct_subgroup_only: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const ctx = runtime.org(org.id)!;
    groupActor(ctx, user.user_id);
    readableGroup(ctx, params.user_group_id);
    return { json: { subgroups: subgroupIds(ctx, params.user_group_id, params.direct_subgroup_only ?? false) } };
  },
});

export const getIsUserGroupMember = route({
  method: 'GET',
  path: '/api/v1/user_groups/{user_group_id}/members/{user_id}',
  operationId: 'getIsUserGroupMember',
  auth: 'user',
  summary: 'Whether a user is in a user group',
  params: { ...groupId, user_id: { schema: S.int, in: 'path', required: true }, direct_member_only: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const ctx = runtime.org(org.id)!;
    groupActor(ctx, user.user_id);
    readableGroup(ctx, params.user_group_id);
    const target = ctx.users.get(params.user_id);
    if (!target) throw badRequest('No such user');
    return { json: { is_user_group_member: isGroupMember(ctx, target, params.user_group_id, params.direct_member_only ?? false) } };
  },
});
