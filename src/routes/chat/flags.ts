/**
 * Personal message flags: on given messages, on a range of a narrow, and the
 * deprecated mark-as-read endpoints that clients still call (Zulip's
 * `zerver/views/message_flags.py`).
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { accessMessage } from '../../../actors/areas/messages.js';
import { getChannel } from '../../../actors/areas/channels.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { received } from '../../../actors/kinds/channel.js';
import { queryMessages } from '../../../actors/engines/message_query.js';
import { topicNamed } from '../../../actors/rules/messages.js';
import { checkNarrow } from '../../../actors/engines/narrow.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import type { UserRecord } from '../../../actors/shared/types.js';
import { Enum, OneOf, route, S } from '../../http/route.js';
import { parseAnchor } from './messages.js';

/** Most messages one `POST /messages/flags/narrow` updates, as in Zulip. */
export const MAX_MESSAGES_PER_UPDATE = 5000;

/** Applies a flag change to messages the caller may see, through the user's actor. */
async function changeFlags(runtime: Runtime, org: number, user: UserRecord, op: 'add' | 'remove', flag: string, ids: number[]) {
  const channels: Record<number, number> = {};
  for (const id of ids) {
    const m = accessMessage(runtime, org, user, id);
    if (m.stream_id !== null) channels[id] = m.stream_id;
  }
  return runtime.execute({ type: 'UPDATE_FLAGS', user_id: user.user_id, org, op, flag, messages: ids, channels });
}

export const updateFlags = route({
  method: 'POST',
  path: '/api/v1/messages/flags',
  operationId: 'updateMessageFlags',
  auth: 'user',
  summary: 'Add or remove a personal flag on messages',
  params: {
    messages: { schema: S.intArray, required: true },
    op: { schema: Enum(['add', 'remove']), required: true },
    flag: { schema: S.str, required: true },
  },
  async handler({ params, org, user, runtime }) {
    const value = await changeFlags(runtime, org.id, user, params.op, params.flag, params.messages);
    const json: Record<string, unknown> = { messages: value.messages };
    if (params.flag === 'read' && params.op === 'remove') json.ignored_because_not_subscribed_channels = value.ignored_because_not_subscribed_channels;
    return { json };
  },
});

export const updateFlagsForNarrow = route({
  method: 'POST',
  path: '/api/v1/messages/flags/narrow',
  operationId: 'updateMessageFlagsForNarrow',
  auth: 'user',
  summary: 'Add or remove a personal flag on a range of the messages of a narrow',
  params: {
    anchor: { schema: OneOf(S.int, S.str), required: true },
    include_anchor: { schema: S.bool },
    num_before: { schema: S.nonNegInt, required: true },
    num_after: { schema: S.nonNegInt, required: true },
    // Required, as Zulip's description says (no default); null is taken as an empty narrow.
    narrow: { schema: Type.Union([S.list, Type.Null()]), required: true },
    op: { schema: Enum(['add', 'remove']), required: true },
    flag: { schema: S.str, required: true },
  },
  async handler({ params, org, user, runtime, exchange }) {
    const includeAnchor = params.include_anchor ?? true;
    if (params.num_before > 0 && params.num_after > 0 && !includeAnchor) throw badRequest('The anchor can only be excluded at an end of the range');
    // As Zulip: num_before + num_after is clamped to MAX_MESSAGES_PER_UPDATE.
    const numBefore = Math.min(params.num_before, Math.max(MAX_MESSAGES_PER_UPDATE - params.num_after, MAX_MESSAGES_PER_UPDATE / 2));
    const numAfter = Math.min(params.num_after, MAX_MESSAGES_PER_UPDATE - numBefore);
    const page = await queryMessages(
      runtime,
      { org: org.id, user_id: user.user_id, anchor: parseAnchor(params.anchor, false), num_before: numBefore, num_after: numAfter, include_anchor: includeAnchor, narrow: checkNarrow(params.narrow ?? []) },
      { aborted: () => exchange.aborted },
    );
    const ids = page.messages.map((m) => m.id);
    const value = await changeFlags(runtime, org.id, user, params.op, params.flag, ids);
    const json: Record<string, unknown> = {
      processed_count: ids.length,
      updated_count: value.messages.length,
      first_processed_id: ids.length > 0 ? ids[0] : null,
      last_processed_id: ids.length > 0 ? ids[ids.length - 1] : null,
      found_oldest: page.found_oldest,
      found_newest: page.found_newest,
    };
    if (params.flag === 'read' && params.op === 'remove') json.ignored_because_not_subscribed_channels = value.ignored_because_not_subscribed_channels;
    return { json };
  },
});

export const markAllAsRead = route({
  method: 'POST',
  path: '/api/v1/mark_all_as_read',
  operationId: 'markAllAsRead',
  auth: 'user',
  summary: 'Mark all of the user\'s messages read (deprecated in Zulip)',
  params: {},
  async handler({ org, user, runtime }) {
    await runtime.execute({ type: 'MARK_AS_READ', user_id: user.user_id, org: org.id, scope: { kind: 'all' } });
    // One fact marks everything: never partial.
    return { json: { complete: true } };
  },
});

export const markStreamAsRead = route({
  method: 'POST',
  path: '/api/v1/mark_stream_as_read',
  operationId: 'markStreamAsRead',
  auth: 'user',
  summary: 'Mark the messages of a channel read (deprecated in Zulip)',
  params: { stream_id: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    getChannel(runtime, org.id, user, params.stream_id);
    await runtime.execute({ type: 'MARK_AS_READ', user_id: user.user_id, org: org.id, scope: { kind: 'channel', stream_id: params.stream_id } });
    return { json: {} };
  },
});

/** Whether the user received any message of a channel topic (Zulip's `user_message_exists_for_topic`). */
function receivedInTopic(runtime: Runtime, org: number, userId: number, streamId: number, topic: string): boolean {
  const ch = runtime.channel(org, streamId);
  const key = topic.toLowerCase();
  if (!ch || !ch.topics.has(key)) return false;
  const ids = ch.messages.ids;
  const inTopic = ch.messages.inTopic(key);
  for (let i = ids.length - 1; i >= 0; i--) {
    if (inTopic(i) && received(ch, userId, ids[i])) return true;
  }
  return false;
}

export const markTopicAsRead = route({
  method: 'POST',
  path: '/api/v1/mark_topic_as_read',
  operationId: 'markTopicAsRead',
  auth: 'user',
  summary: 'Mark the messages of a channel topic read (deprecated in Zulip)',
  params: { stream_id: { schema: S.int, required: true }, topic_name: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    getChannel(runtime, org.id, user, params.stream_id);
    // The empty topic's display name names the empty topic.
    const topic = topicNamed(params.topic_name);
    if (topic !== '' && !receivedInTopic(runtime, org.id, user.user_id, params.stream_id, topic)) throw badRequest(`No such topic '${params.topic_name}'`);
    await runtime.execute({ type: 'MARK_AS_READ', user_id: user.user_id, org: org.id, scope: { kind: 'topic', stream_id: params.stream_id, topic } });
    return { json: {} };
  },
});
