/**
 * User status: `POST /users/me/status` (text, emoji, the legacy `away`) and
 * `GET /users/{user_id}/status`.
 */
import { statusTargetFor, statusView } from '../../../actors/areas/user_status.js';
import type { StateView } from '../../../actors/core/state_view.js';
import { checkEmojiRequest, emojiByName } from '../../../actors/engines/emoji.js';
import { customEmojiOf } from '../../../actors/areas/realm_emoji.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { accessUser } from '../../../actors/rules/user_access.js';
import { route, S } from '../../http/route.js';

type EmojiParams = { emoji_name?: string; emoji_code?: string; reaction_type?: string };

/** The status emoji a request asks for, checked (Zulip's `update_user_status` view); undefined: unchanged, empty: cleared. */
function statusEmoji(runtime: StateView, org: number, params: EmojiParams): { emoji_name: string; emoji_code: string; reaction_type: string } | undefined {
  if (params.emoji_name === undefined && (params.emoji_code !== undefined || params.reaction_type !== undefined)) {
    throw badRequest('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  }
  if (params.emoji_name === undefined) return undefined;
  // Clearing resets the type to Zulip's default, as update_user_status_backend does: an event never says `""`.
  if (params.emoji_name === '') return { emoji_name: '', emoji_code: '', reaction_type: 'unicode_emoji' };
  const custom = customEmojiOf(runtime.org(org)!);
  const named = params.emoji_code === undefined ? emojiByName(params.emoji_name, custom) : undefined;
  const code = params.emoji_code ?? named!.code;
  const type = checkEmojiRequest(params.emoji_name, code, params.reaction_type ?? named?.type ?? 'unicode_emoji', custom);
  return { emoji_name: params.emoji_name, emoji_code: code, reaction_type: type };
}

export const updateStatus = route({
  method: 'POST',
  path: '/api/v1/users/me/status',
  operationId: 'updateStatus',
  auth: 'user',
  summary: "Change the caller's status text and emoji (and the legacy away)",
  params: { status_text: { schema: S.str }, away: { schema: S.bool }, emoji_name: { schema: S.str }, emoji_code: { schema: S.str }, reaction_type: { schema: S.str } },
  async handler({ params, org, user, runtime, config }) {
    const emoji = statusEmoji(runtime, org.id, params);
    await runtime.execute({ type: 'UPDATE_STATUS', org: org.id, user_id: user.user_id, status_text: params.status_text, away: params.away, emoji, limited: config.canAccessAllUsersGroupLimitsPresence });
    return { json: {} };
  },
});

export const getUserStatus = route({
  method: 'GET',
  path: '/api/v1/users/{user_id}/status',
  operationId: 'getUserStatus',
  auth: 'user',
  summary: "A user's status",
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true } },
  handler({ params, org, user, runtime }) {
    const target = runtime.org(org.id)!.users.get(params.user_id);
    if (!target) throw badRequest('No such user');
    accessUser(runtime, org.id, user, target);
    return { json: { status: statusView(target) } };
  },
});

export const updateStatusForUser = route({
  method: 'POST',
  path: '/api/v1/users/{user_id}/status',
  operationId: 'updateStatusForUser',
  auth: 'user',
  summary: "Change another user's status text and emoji (organization administrators, or a bot's owner)",
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true }, status_text: { schema: S.str }, emoji_name: { schema: S.str }, emoji_code: { schema: S.str }, reaction_type: { schema: S.str } },
  async handler({ params, org, user, runtime }) {
    // Who may is checked before what is asked, as in Zulip; the organization actor checks again.
    statusTargetFor(runtime.org(org.id)!, user.user_id, params.user_id);
    const emoji = statusEmoji(runtime, org.id, params);
    await runtime.execute({ type: 'UPDATE_STATUS', org: org.id, actor_id: user.user_id, user_id: params.user_id, status_text: params.status_text, emoji });
    return { json: {} };
  },
});
