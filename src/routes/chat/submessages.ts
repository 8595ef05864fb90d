/**
 * Submessages: `POST /submessage` (Zulip's `zerver/views/submessage.py`), how clients
 * vote on a poll, add an option or a task, or strike a task. The actor that owns the
 * message checks access and content (`actors/areas/submessages.ts`); another
 * organization's message, or one the caller may not read, is "Invalid message(s)".
 */
import { R, route, S } from '../../http/route.js';

export const addSubmessage = route({
  method: 'POST',
  path: '/api/v1/submessage',
  operationId: 'addSubmessage',
  auth: 'user',
  summary: 'Attach a submessage (a widget update) to a message',
  response: R.empty,
  description: "Zulip's experimental widget API: a vote or new option on a `/poll`, a new or struck task on a `/todo`. The message's sender attaches the first one; everyone who holds the message gets a `submessage` event.",
  params: {
    content: { schema: S.str, required: true, description: 'JSON text; on a poll or a to-do list, one of its operations' },
    message_id: { schema: S.int, required: true },
    msg_type: { schema: S.str, required: true, description: 'Clients send `widget`' },
  },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'ADD_SUBMESSAGE', org: org.id, sender_id: user.user_id, message_id: params.message_id, msg_type: params.msg_type, content: params.content });
    return { json: {} };
  },
});
