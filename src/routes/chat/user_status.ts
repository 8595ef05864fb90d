/**
 * User status: `POST /users/me/status` (text, emoji, the legacy `away`) and
 * `GET /users/{user_id}/status`.
 */
import { statusView } from '../../../actors/areas/user_status.js';
import { checkEmojiRequest, emojiByName } from '../../../actors/emoji.js';
import { customEmojiOf } from '../../../actors/areas/realm_emoji.js';
import { badRequest } from '../../../actors/errors.js';
import { route, S } from '../../http/route.js';

export const updateStatus = route({
  method: 'POST',
  path: '/api/v1/users/me/status',
  operationId: 'updateStatus',
  auth: 'user',
  summary: "Change the caller's status text and emoji (and the legacy away)",
  params: { status_text: { schema: S.str }, away: { schema: S.bool }, emoji_name: { schema: S.str }, emoji_code: { schema: S.str }, reaction_type: { schema: S.str } },
  async handler({ params, org, user, runtime, config }) {
    let emoji: { emoji_name: string; emoji_code: string; reaction_type: string } | undefined;
    if (params.emoji_name === undefined && (params.emoji_code !== undefined || params.reaction_type !== undefined)) {
      throw badRequest('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
    }
    if (params.emoji_name !== undefined) {
      if (params.emoji_name === '') emoji = { emoji_name: '', emoji_code: '', reaction_type: '' };
      else {
        const custom = customEmojiOf(runtime.org(org.id)!);
        const named = params.emoji_code === undefined ? emojiByName(params.emoji_name, custom) : undefined;
        const code = params.emoji_code ?? named!.code;
        const type = checkEmojiRequest(params.emoji_name, code, params.reaction_type ?? named?.type ?? 'unicode_emoji', custom);
        emoji = { emoji_name: params.emoji_name, emoji_code: code, reaction_type: type };
      }
    }
    await runtime.execute({ kind: 'org', org: org.id, command: { type: 'UPDATE_STATUS', org: org.id, user_id: user.user_id, status_text: params.status_text, away: params.away, emoji, limited: config.canAccessAllUsersGroupLimitsPresence } });
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
  handler({ params, org, runtime }) {
    const target = runtime.org(org.id)!.users.get(params.user_id);
    if (!target) throw badRequest('No such user');
    return { json: { status: statusView(target) } };
  },
});
