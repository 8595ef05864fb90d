/**
 * Emoji reactions: `POST` and `DELETE /messages/{message_id}/reactions` (Zulip's
 * `zerver/views/reactions.py`). A simple client may name the emoji only; its code
 * comes from the emoji table (`actors/engines/emoji.ts`).
 */
import { accessMessage } from '../../../actors/areas/messages.js';
import { checkEmojiRequest, emojiByName, REACTION_TYPES } from '../../../actors/engines/emoji.js';
import { activeEmojiNamed, customEmojiOf } from '../../../actors/areas/realm_emoji.js';
import { badRequest } from '../../../actors/shared/errors.js';
import type { Reaction, UserRecord } from '../../../actors/shared/types.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import { route, S } from '../../http/route.js';

async function react(runtime: Runtime, org: number, user: UserRecord, messageId: number, op: 'add' | 'remove', reaction: Reaction): Promise<void> {
  const m = accessMessage(runtime, org, user, messageId);
  await runtime.execute({ type: 'REACT', org, op, message_id: m.id, reaction });
}

export const addReaction = route({
  method: 'POST',
  path: '/api/v1/messages/{message_id}/reactions',
  operationId: 'addReaction',
  auth: 'user',
  summary: 'Add an emoji reaction to a message',
  params: {
    message_id: { schema: S.nonNegInt, in: 'path', required: true },
    emoji_name: { schema: S.str, required: true },
    emoji_code: { schema: S.str },
    reaction_type: { schema: S.str },
  },
  async handler({ params, org, user, runtime }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    const custom = customEmojiOf(runtime.org(org.id)!);
    let code = params.emoji_code;
    let type = params.reaction_type;
    if (code === undefined || type === undefined) {
      const named = emojiByName(params.emoji_name, custom);
      code ??= named.code;
      type ??= named.type;
    }
    // As Zulip's check_add_reaction: a reaction with an emoji someone already chose is a
    // vote for theirs (their name wins), and only a new one is checked.
    const vote = (m.reactions ?? []).some((r) => r.emoji_code === code && r.reaction_type === type);
    const reactionType = vote ? (type as Reaction['reaction_type']) : checkEmojiRequest(params.emoji_name, code, type, custom);
    await react(runtime, org.id, user, params.message_id, 'add', { emoji_name: params.emoji_name, emoji_code: code, reaction_type: reactionType, user_id: user.user_id });
    return { json: {} };
  },
});

export const removeReaction = route({
  method: 'DELETE',
  path: '/api/v1/messages/{message_id}/reactions',
  operationId: 'removeReaction',
  auth: 'user',
  summary: 'Remove an emoji reaction from a message',
  params: {
    message_id: { schema: S.nonNegInt, in: 'path', required: true },
    emoji_name: { schema: S.str },
    emoji_code: { schema: S.str },
    reaction_type: { schema: S.str },
  },
  async handler({ params, org, user, runtime }) {
    accessMessage(runtime, org.id, user, params.message_id);
    let code = params.emoji_code;
    let named: string | undefined;
    if (code === undefined) {
      if (params.emoji_name === undefined) throw badRequest('At least one of the following arguments must be present: emoji_name, emoji_code');
      // A deactivated custom emoji's reactions can still be taken back by name (Zulip looks deactivated ones up too).
      const ctx = runtime.org(org.id)!;
      const own = activeEmojiNamed(ctx, params.emoji_name) ?? [...ctx.realmEmoji.values()].find((e) => e.name === params.emoji_name);
      ({ code, type: named } = own ? { code: String(own.id), type: 'realm_emoji' } : emojiByName(params.emoji_name, customEmojiOf(ctx)));
    }
    const type = params.reaction_type ?? named ?? 'unicode_emoji';
    if (!(REACTION_TYPES as readonly string[]).includes(type)) throw badRequest('Invalid emoji type.');
    const reaction: Reaction = { emoji_name: params.emoji_name ?? '', emoji_code: code, reaction_type: type as Reaction['reaction_type'], user_id: user.user_id };
    await react(runtime, org.id, user, params.message_id, 'remove', reaction);
    return { json: {} };
  },
});
