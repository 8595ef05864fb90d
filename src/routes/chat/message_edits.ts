/**
 * Editing and moving messages: `PATCH /messages/{message_id}` (content, topic,
 * channel; resolving a topic is a topic edit) and `GET /messages/{message_id}/history`
 * (Zulip's `zerver/views/message_edit.py`).
 */
import { messageHistory, type EditRequest } from '../../../actors/areas/message_edits.js';
import { accessMessage } from '../../../actors/areas/messages.js';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../../../actors/rules/messages.js';
import { Enum, route, S } from '../../http/route.js';

export const updateMessage = route({
  method: 'PATCH',
  path: '/api/v1/messages/{message_id}',
  operationId: 'updateMessage',
  auth: 'user',
  summary: "Edit a message's content, or move messages to another topic or channel",
  params: {
    message_id: { schema: S.nonNegInt, in: 'path', required: true },
    content: { schema: S.str },
    topic: { schema: S.str, aliases: ['subject'] },
    stream_id: { schema: S.nonNegInt },
    propagate_mode: { schema: Enum(['change_one', 'change_later', 'change_all']) },
    send_notification_to_old_thread: { schema: S.bool },
    send_notification_to_new_thread: { schema: S.bool },
    prev_content_sha256: { schema: S.str },
  },
  async handler({ params, org, user, runtime }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    const request: EditRequest = {
      org: org.id,
      editor_id: user.user_id,
      message_id: m.id,
      content: params.content,
      topic: params.topic,
      stream_id: params.stream_id,
      propagate_mode: params.propagate_mode ?? 'change_one',
      send_notification_to_old_thread: params.send_notification_to_old_thread ?? false,
      send_notification_to_new_thread: params.send_notification_to_new_thread ?? true,
      prev_content_sha256: params.prev_content_sha256,
    };
    const result = await runtime.execute({ type: 'EDIT_MESSAGE', ...request });
    return { json: { detached_uploads: result.detached_uploads } };
  },
});

export const getMessageHistory = route({
  method: 'GET',
  path: '/api/v1/messages/{message_id}/history',
  operationId: 'getMessageHistory',
  auth: 'user',
  summary: "A message's edit history, oldest first",
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true }, allow_empty_topic_name: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    const history = messageHistory(runtime, org.id, m);
    if (!params.allow_empty_topic_name) {
      for (const entry of history) {
        if (entry.topic === '') entry.topic = EMPTY_TOPIC_DISPLAY_NAME;
        if (entry.prev_topic === '') entry.prev_topic = EMPTY_TOPIC_DISPLAY_NAME;
      }
    }
    return { json: { message_history: history } };
  },
});
