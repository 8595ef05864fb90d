/**
 * The event queues of the whole server: creation, lookup, fan-out, parked long-polls,
 * heartbeats and idle collection.
 *
 * A parked `GET /events` is a `Waiter` kept beside its queue, never inside actor
 * state. One timer drives everything periodic: a wheel of one-second buckets for
 * heartbeats, and a sweep for idle queues. Completions are batched: queues woken
 * during a loop turn are completed together from `setImmediate`, outside any request
 * handler, so that each completion is one corked write.
 */
import { createActor, type Actor } from 'xstate';
import { ApiError, badQueue, badRequest } from '../src/http/errors.js';
import { queueLogic, renderEvents, type OutgoingEvent, type QueueContext } from './queue.js';
import type { NarrowTerm } from './narrow.js';

/** A parked long-poll, provided by the transport. */
export interface Waiter {
  /** Sends the reply body (status 200 unless given); called at most once. */
  deliver(body: string, status?: number): void;
}

/** Tunables of the queue system. Times are milliseconds. */
export interface QueueOptions {
  now(): number;
  token(): string;
  /** Heartbeats go out between these two delays after a poll parks. */
  heartbeatMinMs: number;
  heartbeatMaxMs: number;
  /** Idle lifetime of a queue unless the client asked for another. */
  defaultLifespanMs: number;
  maxLifespanMs: number;
  /** Most events a queue may hold before it is collected as overflowed. */
  maxEvents: number;
  random(): number;
}

/** Options a client registers a queue with. */
export interface QueueRegistration {
  org: number;
  user_id: number;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_secs: number | null;
}

type QueueActor = Actor<typeof queueLogic>;

interface Parked {
  waiter: Waiter;
  heartbeatAt: number;
}

const HEARTBEAT_JSON = '"type":"heartbeat"';
const MAX_TOMBSTONES = 10000;

export class EventQueues {
  private readonly queues = new Map<string, QueueActor>();
  private readonly byUser = new Map<string, Set<string>>();
  private readonly parked = new Map<string, Parked>();
  private readonly wheel = new Map<number, string[]>();
  private readonly woken = new Set<string>();
  private readonly staged = new Map<string, OutgoingEvent[]>();
  /** Why recently collected queues are gone, for a clearer `BAD_EVENT_QUEUE_ID`. */
  private readonly tombstones = new Map<string, string>();
  private flushScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private lastWheelSecond: number;
  private lastSweep: number;

  constructor(private readonly opts: QueueOptions) {
    this.lastWheelSecond = Math.floor(opts.now() / 1000);
    this.lastSweep = opts.now();
  }

  /** Starts the periodic timer; `tickMs` defaults to a quarter of the shortest heartbeat, at most a second. */
  start(tickMs = Math.max(10, Math.min(1000, Math.floor(this.opts.heartbeatMinMs / 4)))): void {
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  get size(): number {
    return this.queues.size;
  }

  get parkedCount(): number {
    return this.parked.size;
  }

  /** Registers a new queue and returns its id. */
  create(reg: QueueRegistration): string {
    const id = this.opts.token();
    const lifespan = reg.lifespan_secs === null ? this.opts.defaultLifespanMs : Math.min(reg.lifespan_secs * 1000, this.opts.maxLifespanMs);
    const context: QueueContext = {
      id,
      org: reg.org,
      user_id: reg.user_id,
      event_types: reg.event_types,
      narrow: reg.narrow,
      client: reg.client,
      events: [],
      next_id: 0,
      newest_pruned_id: -1,
      last_active: this.opts.now(),
      lifespan_ms: Math.max(lifespan, 1000),
      overflowed: false,
    };
    const actor = createActor(queueLogic, { input: context });
    actor.start();
    this.queues.set(id, actor);
    const key = userKey(reg.org, reg.user_id);
    let ids = this.byUser.get(key);
    if (!ids) this.byUser.set(key, (ids = new Set()));
    ids.add(id);
    return id;
  }

  /** The context of a queue the user owns, or `BAD_EVENT_QUEUE_ID`. */
  access(queueId: string, org: number, userId: number): QueueContext {
    const actor = this.queues.get(queueId);
    const ctx = actor?.getSnapshot().context;
    if (!ctx || ctx.org !== org || ctx.user_id !== userId) {
      const why = this.tombstones.get(queueId);
      if (why && ctx === undefined) throw new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId} (${why})`, { queue_id: queueId });
      throw badQueue(queueId);
    }
    return ctx;
  }

  /**
   * Answers a `GET /events`: prunes what the client acknowledged, then replies at once
   * when events are waiting (or the client will not block), else parks `waiter`.
   * Returns the reply body, or null when parked.
   */
  poll(queueId: string, org: number, userId: number, lastEventId: number | null, dontBlock: boolean, waiter: Waiter): string | null {
    const ctx = this.access(queueId, org, userId);
    const actor = this.queues.get(queueId)!;
    const now = this.opts.now();
    if (lastEventId !== null) {
      let error: string | null = null;
      actor.send({ type: 'ack', last_event_id: lastEventId, now, reply: (e) => (error = e) });
      if (error !== null) throw badRequest(error);
    } else {
      actor.send({ type: 'touch', now });
    }
    const previous = this.parked.get(queueId);
    if (previous) {
      this.parked.delete(queueId);
      previous.waiter.deliver(renderEvents(queueId, ctx.events));
    }
    if (ctx.events.length > 0 || dontBlock) return renderEvents(queueId, ctx.events);
    const span = this.opts.heartbeatMaxMs - this.opts.heartbeatMinMs;
    const heartbeatAt = now + this.opts.heartbeatMinMs + Math.floor(this.opts.random() * (span + 1));
    this.parked.set(queueId, { waiter, heartbeatAt });
    const second = Math.ceil(heartbeatAt / 1000);
    const bucket = this.wheel.get(second);
    if (bucket) bucket.push(queueId);
    else this.wheel.set(second, [queueId]);
    return null;
  }

  /** Forgets a parked poll whose client went away, if it is still the parked one. */
  unpark(queueId: string, waiter: Waiter): void {
    const current = this.parked.get(queueId);
    if (current && current.waiter === waiter) {
      this.parked.delete(queueId);
      this.queues.get(queueId)?.send({ type: 'touch', now: this.opts.now() });
    }
  }

  /** Deletes a queue the user owns (`DELETE /events`). */
  delete(queueId: string, org: number, userId: number): void {
    this.access(queueId, org, userId);
    this.collect(queueId, 'deleted by its client');
  }

  /** The queues of one user, for fan-out. */
  queuesOf(org: number, userId: number): Iterable<string> {
    return this.byUser.get(userKey(org, userId)) ?? [];
  }

  /** The context of a queue, if it exists. */
  peek(queueId: string): QueueContext | undefined {
    return this.queues.get(queueId)?.getSnapshot().context;
  }

  /**
   * Stages events for a queue. Staged events reach their queues in one `push` per
   * queue at `flushStaged`, however many facts produced them.
   */
  stage(queueId: string, event: OutgoingEvent): void {
    const list = this.staged.get(queueId);
    if (list) list.push(event);
    else this.staged.set(queueId, [event]);
  }

  /** Pushes every staged event into its queue and wakes the parked polls. */
  flushStaged(): void {
    for (const [queueId, events] of this.staged) {
      const actor = this.queues.get(queueId);
      if (!actor) continue;
      actor.send({ type: 'push', events, cap: this.opts.maxEvents });
      if (actor.getSnapshot().context.overflowed) this.collect(queueId, `more than ${this.opts.maxEvents} events were not fetched`);
      else if (this.parked.has(queueId)) this.wake(queueId);
    }
    this.staged.clear();
  }

  private wake(queueId: string): void {
    this.woken.add(queueId);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.completeWoken());
  }

  /** Completes every woken parked poll; runs once per loop turn, outside any handler. */
  private completeWoken(): void {
    this.flushScheduled = false;
    const now = this.opts.now();
    for (const queueId of this.woken) {
      const parked = this.parked.get(queueId);
      const actor = this.queues.get(queueId);
      if (!parked || !actor) continue;
      const ctx = actor.getSnapshot().context;
      if (ctx.events.length === 0) continue;
      this.parked.delete(queueId);
      ctx.last_active = now;
      parked.waiter.deliver(renderEvents(queueId, ctx.events));
    }
    this.woken.clear();
  }

  /** Periodic work: due heartbeats, then idle collection. */
  tick(): void {
    const now = this.opts.now();
    const second = Math.floor(now / 1000);
    for (let s = this.lastWheelSecond; s <= second + 1; s++) {
      const bucket = this.wheel.get(s);
      if (!bucket) continue;
      const later: string[] = [];
      for (const queueId of bucket) {
        const parked = this.parked.get(queueId);
        if (!parked) continue;
        if (parked.heartbeatAt > now) later.push(queueId);
        else {
          this.queues.get(queueId)?.send({ type: 'push', events: [{ type: 'heartbeat', json: HEARTBEAT_JSON }], cap: this.opts.maxEvents });
          this.wake(queueId);
        }
      }
      if (later.length > 0) this.wheel.set(s, later);
      else this.wheel.delete(s);
    }
    this.lastWheelSecond = second;
    if (now - this.lastSweep >= Math.min(10000, this.opts.defaultLifespanMs / 4)) {
      this.lastSweep = now;
      this.sweepIdle(now);
    }
  }

  /** Collects queues that have had no request attached for longer than their lifespan. */
  sweepIdle(now: number): number {
    let collected = 0;
    for (const [queueId, actor] of this.queues) {
      if (this.parked.has(queueId)) continue;
      const ctx = actor.getSnapshot().context;
      if (now - ctx.last_active > ctx.lifespan_ms) {
        this.collect(queueId, 'it was idle for too long');
        collected++;
      }
    }
    return collected;
  }

  /** Completes every parked poll with what its queue holds (used at shutdown). */
  releaseAll(): void {
    for (const [queueId, parked] of this.parked) {
      const ctx = this.queues.get(queueId)?.getSnapshot().context;
      parked.waiter.deliver(renderEvents(queueId, ctx?.events ?? []));
    }
    this.parked.clear();
  }

  private collect(queueId: string, why: string): void {
    const actor = this.queues.get(queueId);
    if (!actor) return;
    const ctx = actor.getSnapshot().context;
    actor.stop();
    this.queues.delete(queueId);
    this.byUser.get(userKey(ctx.org, ctx.user_id))?.delete(queueId);
    const parked = this.parked.get(queueId);
    this.parked.delete(queueId);
    if (parked) parked.waiter.deliver(JSON.stringify({ result: 'error', msg: `Bad event queue ID: ${queueId} (${why})`, code: 'BAD_EVENT_QUEUE_ID', queue_id: queueId }), 400);
    this.tombstones.set(queueId, why);
    if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value as string);
  }
}

function userKey(org: number, userId: number): string {
  return `${org}:${userId}`;
}
