/**
 * `GET /events` and `DELETE /events`: the long-poll. A poll with nothing to return
 * parks until its queue gets an event, a heartbeat comes due, or the client leaves.
 */
import type { Waiter } from '../../../actors/event_queues/index.js';
import { missingArgument } from '../../../actors/errors.js';
import { Type } from '@sinclair/typebox';
import { route, S, type Reply } from '../../http/route.js';
import { jsonResponse, LATER } from '../../http/types.js';
import { createQueue, REGISTER_PARAMS } from './register.js';

export const getEvents = route({
  method: 'GET',
  path: '/api/v1/events',
  operationId: 'getEvents',
  auth: 'user',
  summary: 'Long-poll an event queue for new events',
  unlimited: true,
  params: {
    queue_id: { schema: S.str },
    last_event_id: { schema: Type.Integer({ minimum: -1 }) },
    dont_block: { schema: S.bool },
    ...REGISTER_PARAMS,
  },
  handler({ params, org, user, runtime, exchange, client }): Reply | Promise<Reply> {
    const dontBlock = params.dont_block ?? false;
    if (params.queue_id === undefined) {
      if (!dontBlock) throw missingArgument('queue_id');
      const { queueId, durable } = createQueue(runtime, org, user, params, client);
      return durable.then(() => ({ raw: runtime.queues.poll(queueId, org.id, user.user_id, null, true, NO_WAITER)! }));
    }
    const queueId = params.queue_id;
    // A parked poll is answered straight from the queue's completion batch, with one corked write.
    const waiter: Waiter = { deliver: (raw, status = 200) => exchange.respond(jsonResponse(status, raw)) };
    const body = runtime.queues.poll(queueId, org.id, user.user_id, params.last_event_id ?? null, dontBlock, waiter);
    if (body !== null) return { raw: body };
    exchange.onAbort(() => runtime.queues.unpark(queueId, waiter));
    return LATER;
  },
});

/** Stands in for a waiter where the poll never blocks. */
const NO_WAITER: Waiter = { deliver: () => {} };

export const deleteEvents = route({
  method: 'DELETE',
  path: '/api/v1/events',
  operationId: 'deleteQueue',
  auth: 'user',
  summary: 'Delete an event queue',
  unlimited: true,
  params: { queue_id: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.queues.delete(params.queue_id, org.id, user.user_id);
    return { json: {} };
  },
});
