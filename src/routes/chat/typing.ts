/**
 * Typing notifications: `POST /typing` for a new message (to users, or to a channel
 * topic) and `POST /messages/{message_id}/typing` for an edit (Zulip's
 * `zerver/views/typing.py`).
 */
import { accessMessage } from '../../../actors/areas/messages.js';
import { checkCanEditContent } from '../../../actors/rules/message_edits.js';
import { realmMessageSettings } from '../../../actors/rules/realm_settings.js';
import { badRequest } from '../../../actors/shared/errors.js';
import type { TypingWhere } from '../../../actors/areas/typing.js';
import { Enum, route, S } from '../../http/route.js';

export const setTypingStatus = route({
  method: 'POST',
  path: '/api/v1/typing',
  // Typing notices are events only, stored nowhere.
  grows: false,
  operationId: 'setTypingStatus',
  auth: 'user',
  summary: 'Tell the recipients of a direct message or a channel topic that the user is typing',
  params: {
    type: { schema: Enum(['direct', 'stream', 'channel']) },
    op: { schema: Enum(['start', 'stop']), required: true },
    to: { schema: S.intArray },
    stream_id: { schema: S.int },
    topic: { schema: S.str },
  },
  async handler({ params, org, user, runtime }) {
    let where: TypingWhere;
    if (params.type === 'stream' || params.type === 'channel') {
      if (params.stream_id === undefined) throw badRequest('Missing stream_id');
      if (params.topic === undefined) throw badRequest('Missing topic');
      where = { kind: 'channel', stream_id: params.stream_id, topic: params.topic };
    } else {
      if (params.to === undefined) throw badRequest("Missing 'to' argument");
      where = { kind: 'direct', user_ids: params.to };
    }
    await runtime.execute({ type: 'SEND_TYPING', user_id: user.user_id, org: org.id, op: params.op, where, message_id: null });
    return { json: {} };
  },
});

export const setTypingStatusForEdit = route({
  method: 'POST',
  path: '/api/v1/messages/{message_id}/typing',
  grows: false,
  operationId: 'setTypingStatusForMessageEdit',
  auth: 'user',
  summary: "Tell a message's recipients that the user is editing it",
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true }, op: { schema: Enum(['start', 'stop']), required: true } },
  async handler({ params, org, user, runtime }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    checkCanEditContent(user, m, runtime.nowSeconds(), realmMessageSettings(runtime.org(org.id)), 0);
    const where: TypingWhere = m.stream_id !== null ? { kind: 'channel', stream_id: m.stream_id, topic: m.topic } : { kind: 'direct', user_ids: m.dm_user_ids! };
    await runtime.execute({ type: 'SEND_TYPING', user_id: user.user_id, org: org.id, op: params.op, where, message_id: m.id });
    return { json: {} };
  },
});
