/**
 * Scheduled messages: list, schedule, edit, delete. The owner's user actor decides;
 * `actors/runtime/delivery_schedule.ts` delivers them when due.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { scheduledMessagesOf } from '../../../actors/areas/scheduled_messages.js';
import { Enum, OneOf, route, S } from '../../http/route.js';
import { INTERACTIVE_CLIENTS } from './messages.js';

const TYPES = ['direct', 'channel', 'stream', 'private'];
const toSchema = OneOf(S.int, Type.Array(S.int));

/** Zulip's names for the two kinds of message, as scheduled messages report them. */
function messageType(type: string): 'stream' | 'private' {
  return type === 'stream' || type === 'channel' ? 'stream' : 'private';
}

export const getScheduledMessages = route({
  method: 'GET',
  path: '/api/v1/scheduled_messages',
  operationId: 'getScheduledMessages',
  auth: 'user',
  summary: "The caller's undelivered scheduled messages, earliest first",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { scheduled_messages: scheduledMessagesOf(runtime, org.id, user.user_id) } };
  },
});

export const createScheduledMessage = route({
  method: 'POST',
  path: '/api/v1/scheduled_messages',
  operationId: 'createScheduledMessage',
  auth: 'user',
  summary: 'Schedule a channel or direct message for a future time (checked now as a send, and again when due)',
  params: {
    type: { schema: Enum(TYPES), required: true },
    to: { schema: toSchema, required: true },
    topic: { schema: S.str },
    content: { schema: S.str, required: true },
    scheduled_delivery_timestamp: { schema: S.int, required: true },
    read_by_sender: { schema: S.bool },
  },
  async handler({ params, org, user, runtime, client }) {
    const type = messageType(params.type);
    const to = params.to;
    const toSelf = type === 'private' && [to].flat().every((id) => id === user.user_id);
    const readBySender = params.read_by_sender ?? (INTERACTIVE_CLIENTS.has(client.toLowerCase()) && !toSelf);
    const value = await runtime.execute({ type: 'SCHEDULE_MESSAGE', org: org.id, user_id: user.user_id, client, read_by_sender: readBySender, message: { type, to, topic: params.topic, content: params.content }, deliver_at: params.scheduled_delivery_timestamp });
    return { json: value };
  },
});

export const updateScheduledMessage = route({
  method: 'PATCH',
  path: '/api/v1/scheduled_messages/{scheduled_message_id}',
  operationId: 'updateScheduledMessage',
  auth: 'user',
  summary: 'Edit a scheduled message; a new type needs `to` (and `topic` for a channel); a failed one needs a new time',
  params: {
    scheduled_message_id: { schema: S.nonNegInt, in: 'path', required: true },
    type: { schema: Enum(TYPES) },
    to: { schema: toSchema },
    topic: { schema: S.str },
    content: { schema: S.str },
    scheduled_delivery_timestamp: { schema: S.int },
  },
  async handler({ params, org, user, runtime, client }) {
    await runtime.execute({ type: 'EDIT_SCHEDULED_MESSAGE', org: org.id, user_id: user.user_id, id: params.scheduled_message_id, client, message_type: params.type === undefined ? undefined : messageType(params.type), to: params.to, topic: params.topic, content: params.content, deliver_at: params.scheduled_delivery_timestamp });
    return { json: {} };
  },
});

export const deleteScheduledMessage = route({
  method: 'DELETE',
  path: '/api/v1/scheduled_messages/{scheduled_message_id}',
  operationId: 'deleteScheduledMessage',
  auth: 'user',
  summary: 'Delete (cancel) a scheduled message',
  params: { scheduled_message_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    const id = params.scheduled_message_id;
    await runtime.execute({ type: 'DELETE_SCHEDULED', org: org.id, user_id: user.user_id, id, kind: 'message' });
    return { json: {} };
  },
});
