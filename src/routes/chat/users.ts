/**
 * Users: list, fetch (by id or by email), create, deactivate and reactivate
 * (administrators only).
 */
import { checkEmail, checkFullName } from '../../../actors/rules/users.js';
import { hashPassword } from '../../../actors/rules/passwords.js';
import { getUser, getUserByEmail, listUsers } from '../../../actors/areas/users.js';
import { maxReceivedMessageId } from '../../../actors/areas/messages.js';
import { Role } from '../../../actors/shared/types.js';
import { userView } from '../../../actors/render/views.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import { route, S } from '../../http/route.js';

export const listUsersRoute = route({
  method: 'GET',
  path: '/api/v1/users',
  operationId: 'getUsers',
  auth: 'user',
  summary: 'List the users of the organization',
  params: { client_gravatar: { schema: S.bool }, include_custom_profile_fields: { schema: S.bool }, user_ids: { schema: S.intArray } },
  handler({ params, org, user, runtime }) {
    let members = listUsers(runtime, org.id, user, params.include_custom_profile_fields ?? false, params.client_gravatar ?? true);
    if (params.user_ids) {
      const wanted = new Set(params.user_ids);
      members = members.filter((m) => wanted.has(m.user_id as number));
    }
    return { json: { members } };
  },
});

export const getOwnUser = route({
  method: 'GET',
  path: '/api/v1/users/me',
  operationId: 'getOwnUser',
  auth: 'user',
  summary: 'Fetch the authenticated user',
  params: {},
  handler({ org, user, runtime }) {
    return { json: { ...userView(user, { profileData: true }), max_message_id: maxReceivedMessageId(runtime, org.id, user.user_id) } };
  },
});

export const getUserById = route({
  method: 'GET',
  path: '/api/v1/users/{user_id}',
  operationId: 'getUser',
  auth: 'user',
  summary: 'Fetch a user by id',
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true }, client_gravatar: { schema: S.bool }, include_custom_profile_fields: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    return { json: { user: getUser(runtime, org.id, user, params.user_id, params.include_custom_profile_fields ?? false, params.client_gravatar ?? true) } };
  },
});

export const getUserByEmailRoute = route({
  method: 'GET',
  path: '/api/v1/users/{email}',
  operationId: 'getUserByEmail',
  auth: 'user',
  summary: 'Fetch a user by email (or the dummy form user{id}@host)',
  params: { email: { schema: S.str, in: 'path', required: true }, client_gravatar: { schema: S.bool }, include_custom_profile_fields: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    return { json: { user: getUserByEmail(runtime, org.id, user, params.email, params.include_custom_profile_fields ?? false, params.client_gravatar ?? true) } };
  },
});

export const createUser = route({
  method: 'POST',
  path: '/api/v1/users',
  operationId: 'createUser',
  auth: 'user',
  requires: 'admin',
  summary: 'Create a user (organization administrators only)',
  params: {
    email: { schema: S.str, required: true },
    password: { schema: Type.String({ minLength: 1, maxLength: 1024 }), required: true },
    full_name: { schema: S.str, required: true },
  },
  async handler({ params, org, user, runtime }) {
    // Cheap checks before the expensive hash; the actor checks again.
    checkEmail(params.email);
    checkFullName(params.full_name);
    const password_hash = await hashPassword(params.password);
    const value = await runtime.execute({ type: 'CREATE_USER', org: org.id, actor_id: user.user_id, email: params.email, password_hash, full_name: params.full_name, role: Role.MEMBER });
    return { json: { user_id: value.user_id } };
  },
});

export const deactivateUser = route({
  method: 'DELETE',
  path: '/api/v1/users/{user_id}',
  operationId: 'deactivateUser',
  auth: 'user',
  summary: 'Deactivate a user (organization administrators only)',
  params: {
    user_id: { schema: S.nonNegInt, in: 'path', required: true },
    actions: { schema: S.obj },
    deactivation_notification_comment: { schema: S.str },
  },
  async handler({ params, org, user, runtime, mailer, log }) {
    const actions = deactivationActions(params.actions);
    const target = runtime.org(org.id)!.users.get(params.user_id);
    // The user, the bots they own, (delete_profile) their renaming and the job deleting their
    // messages, as one decision; the job runs on its own (and resumes after a restart).
    const { job } = await runtime.execute({ type: 'DEACTIVATE_USER', org: org.id, actor_id: user.user_id, user_id: params.user_id, ...actions });
    if (params.deactivation_notification_comment !== undefined && target) {
      const comment = params.deactivation_notification_comment;
      // As in Zulip, the notice is an email to the deactivated user, sent once the deactivation is
      // committed, at most once (not part of the job); mail that fails is logged, the deactivation stands.
      await mailer.send({
        to: target.delivery_email,
        subject: `Your account on ${org.name || 'Parley'} has been deactivated`,
        text: [`Hi ${target.full_name},`, '', `Your account on ${org.name || 'Parley'} has been deactivated by an administrator.`, ...(comment === '' ? [] : ['', comment]), ''].join('\n'),
      }).catch((err: Error) => log.warn({ event: 'mail.failed', mail: 'deactivation', org: org.id, user_id: target.user_id, error: err.message }, `deactivation mail to user ${target.user_id} failed: ${err.message}`));
    }
    // The answer comes once the messages asked for are deleted, as it did when the handler deleted them.
    if (job !== null) await runtime.deletionJobs.settled(org.id, job);
    return { json: {} };
  },
});

/** What `DELETE /users/{id}` may do besides deactivating (its `actions` object). */
interface DeactivationActions {
  delete_profile: boolean;
  delete_public_channel_messages: boolean;
  delete_private_channel_messages: boolean;
  delete_direct_messages: boolean;
}

function deactivationActions(raw: Record<string, unknown> | undefined): DeactivationActions {
  const out: DeactivationActions = { delete_profile: false, delete_public_channel_messages: false, delete_private_channel_messages: false, delete_direct_messages: false };
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (!(key in out)) throw badRequest(`Invalid action: ${key}`);
    if (typeof value !== 'boolean') throw badRequest(`actions.${key} is not a boolean`);
    out[key as keyof DeactivationActions] = value;
  }
  return out;
}

const updateUserParams = {
  full_name: { schema: S.str },
  role: { schema: S.int },
  new_email: { schema: S.str },
  profile_data: { schema: Type.Array(Type.Object({ id: Type.Integer(), value: Type.Union([Type.String(), Type.Array(Type.Integer()), Type.Null()]) }, { additionalProperties: false })) },
};

export const updateUserById = route({
  method: 'PATCH',
  path: '/api/v1/users/{user_id}',
  operationId: 'updateUser',
  auth: 'user',
  summary: "Change a user's name, role, custom profile values or email (organization administrators only)",
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true }, ...updateUserParams },
  async handler({ params, org, user, runtime }) {
    const { user_id, ...changes } = params;
    await runtime.execute({ type: 'UPDATE_USER', org: org.id, actor_id: user.user_id, user_id, ...changes });
    return { json: {} };
  },
});

export const updateUserByEmail = route({
  method: 'PATCH',
  path: '/api/v1/users/{email}',
  operationId: 'updateUserByEmail',
  auth: 'user',
  summary: "Change a user, addressed by email (organization administrators only)",
  params: { email: { schema: S.str, in: 'path', required: true }, ...updateUserParams },
  async handler({ params, org, user, runtime }) {
    const { email, ...changes } = params;
    const target = getUserByEmail(runtime, org.id, user, email);
    await runtime.execute({ type: 'UPDATE_USER', org: org.id, actor_id: user.user_id, user_id: target.user_id as number, ...changes });
    return { json: {} };
  },
});

export const deactivateOwnAccount = route({
  method: 'DELETE',
  path: '/api/v1/users/me',
  operationId: 'deactivateOwnUser',
  auth: 'user',
  summary: "Deactivate the caller's own account (and the bots it owns)",
  params: {},
  async handler({ org, user, runtime }) {
    await runtime.execute({ type: 'SET_USER_ACTIVE', org: org.id, actor_id: user.user_id, user_id: user.user_id, active: false });
    return { json: {} };
  },
});

export const reactivateUser = route({
  method: 'POST',
  path: '/api/v1/users/{user_id}/reactivate',
  operationId: 'reactivateUser',
  auth: 'user',
  summary: 'Reactivate a deactivated user (organization administrators only)',
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_USER_ACTIVE', org: org.id, actor_id: user.user_id, user_id: params.user_id, active: true });
    return { json: {} };
  },
});
