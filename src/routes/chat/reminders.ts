/**
 * Reminders: list, create, delete. The notification bot sends each to its owner when due.
 */
import { remindersOf } from '../../../actors/areas/reminders.js';
import { route, S } from '../../http/route.js';

export const getReminders = route({
  method: 'GET',
  path: '/api/v1/reminders',
  operationId: 'getReminders',
  auth: 'user',
  summary: "The caller's undelivered reminders, earliest first",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { reminders: remindersOf(runtime, org.id, user.user_id) } };
  },
});

export const createReminder = route({
  method: 'POST',
  path: '/api/v1/reminders',
  operationId: 'createMessageReminder',
  auth: 'user',
  summary: 'Be reminded of a message at a future time, by a direct message from the notification bot',
  params: {
    message_id: { schema: S.int, required: true },
    scheduled_delivery_timestamp: { schema: S.int, required: true },
    note: { schema: S.str },
  },
  async handler({ params, org, user, runtime, client }) {
    const value = await runtime.execute({ type: 'CREATE_REMINDER', org: org.id, user_id: user.user_id, message_id: params.message_id, deliver_at: params.scheduled_delivery_timestamp, note: params.note, client });
    return { json: value };
  },
});

export const deleteReminder = route({
  method: 'DELETE',
  path: '/api/v1/reminders/{reminder_id}',
  operationId: 'deleteReminder',
  auth: 'user',
  summary: 'Delete (cancel) a reminder',
  params: { reminder_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    const id = params.reminder_id;
    await runtime.execute({ type: 'DELETE_SCHEDULED', org: org.id, user_id: user.user_id, id, kind: 'reminder' });
    return { json: {} };
  },
});
