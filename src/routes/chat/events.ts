/**
 * `GET /events` and `DELETE /events`: the long-poll. A poll with nothing to return
 * parks until its queue gets an event, a heartbeat comes due, or the client leaves.
 */
import type { Logger } from '../../../actors/core/logger.js';
import type { QueueClient, Waiter } from '../../../actors/event_queues/index.js';
import { missingArgument } from '../../../actors/shared/errors.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import { route, S, type Reply } from '../../http/route.js';
import { jsonResponse, LATER, type Exchange } from '../../http/types.js';
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
  handler({ params, org, user, runtime, exchange, client, log }): Reply | Promise<Reply> {
    const dontBlock = params.dont_block ?? false;
    if (params.queue_id === undefined) {
      if (!dontBlock) throw missingArgument('queue_id');
      const { queueId, durable } = createQueue(runtime, org, user, params, client);
      return durable.then(() => ({ raw: runtime.queues.poll(queueId, org.id, user.user_id, null, true, NO_WAITER)! }));
    }
    const queues = runtime.queues;
    const waiter = new PollWaiter(exchange, queues, log);
    const body = queues.poll(params.queue_id, org.id, user.user_id, params.last_event_id ?? null, dontBlock, waiter);
    if (body !== null) return { raw: body };
    waiter.parkedOn(queues.peek(params.queue_id)!.id, org.id, user.user_id);
    exchange.onAbort(waiter.gone.bind(waiter));
    return LATER;
  },
});

/**
 * A poll that may park. A parked poll is answered straight from its queue's delivery
 * pass, with one corked write, and leaves its queue when the client goes away. Parked,
 * it costs this object and the bound abort hook: no closure and no context per poll, and
 * it holds the queue's own id string, not the slice of the query string it was parsed
 * from, which would keep the whole query alive.
 *
 * The request log says a poll parked; how each parked poll ended is logged here
 * (`events.poll_finished`: its status, or null when the client went away, and how
 * long it was parked), at `debug` for a success and `info` for an error, as the
 * pipeline logs answers.
 */
class PollWaiter implements Waiter {
  private queueId = '';
  private org = 0;
  private user = 0;
  private parkedAt = 0;

  constructor(
    private readonly exchange: Exchange,
    private readonly queues: QueueClient,
    private readonly log: Logger,
  ) {}

  deliver(raw: string, status = 200): void {
    this.exchange.respond(jsonResponse(status, raw));
    this.finished(status);
  }

  /** The poll parked on this queue. */
  parkedOn(queueId: string, org: number, user: number): void {
    this.queueId = queueId;
    this.org = org;
    this.user = user;
    this.parkedAt = performance.now();
  }

  /** The client went away: the queue forgets the poll, if it is still the parked one. */
  gone(): void {
    this.queues.unpark(this.queueId, this);
    this.finished(null);
  }

  /** One log line for a parked poll's end (never for a poll answered at once: the request log has it). */
  private finished(status: number | null): void {
    if (this.parkedAt === 0) return;
    const level = status !== null && status >= 400 ? 'info' : 'debug';
    if (!this.log.isLevelEnabled(level)) return;
    const parkedMs = Math.round(performance.now() - this.parkedAt);
    this.log[level]({ event: 'events.poll_finished', api: 'chat', method: 'GET', route: '/api/v1/events', org: this.org, user: this.user, status, parked_ms: parkedMs }, `GET /api/v1/events ${status ?? 'client went away'} after ${parkedMs} ms parked`);
    this.parkedAt = 0;
  }
}

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
