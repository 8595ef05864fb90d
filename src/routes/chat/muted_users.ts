/**
 * Muting and unmuting users, for the caller.
 */
import { route, S } from '../../http/route.js';

const mutedUserId = { schema: S.int, required: true, in: 'path' } as const;

export const muteUser = route({
  method: 'POST',
  path: '/api/v1/users/me/muted_users/{muted_user_id}',
  operationId: 'muteUser',
  auth: 'user',
  summary: "Mute a user: their messages the caller has unread are marked read",
  params: { muted_user_id: mutedUserId },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'MUTE_USER', user_id: user.user_id, org: org.id, muted_user_id: params.muted_user_id });
    return { json: {} };
  },
});

export const unmuteUser = route({
  method: 'DELETE',
  path: '/api/v1/users/me/muted_users/{muted_user_id}',
  operationId: 'unmuteUser',
  auth: 'user',
  summary: 'Unmute a user',
  params: { muted_user_id: mutedUserId },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UNMUTE_USER', user_id: user.user_id, org: org.id, muted_user_id: params.muted_user_id });
    return { json: {} };
  },
});
