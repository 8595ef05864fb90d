/**
 * The event queues of the whole server, and the only way to change them.
 *
 * - `queue_actor.ts`: one queue's state and behaviour (its XState logic), event
 *   numbering, and rendering a `GET /events` reply.
 * - `registry.ts`: the cells of all queues, by id and by organization and user;
 *   tombstones of dropped ones.
 * - `fanout.ts`: the events of durable facts resolved to their queues and delivered in one batched pass.
 * - `parked_polls.ts`: parked long-polls and the heartbeat wheel.
 * - `idle.ts`: the idle clock, idle collection, and passivation of queue actors.
 *
 * `EventQueues` puts them together behind two interfaces: `QueueService`, what route
 * handlers, the server and operator tools may do (the runtime's public `queues`), and
 * `QueueDelivery`, what the runtime alone does (applying queue facts, resolving and
 * delivering events, restoring snapshots), which the runtime keeps private.
 *
 * - Every change to what a queue holds comes from a fact (registration, events derived
 *   from facts, heartbeats, drops, restarts), applied in log order. Acknowledgements
 *   are the only exception: the client re-sends `last_event_id` on every poll.
 * - One timer drives everything periodic: the heartbeat wheel, and a sweep for idle
 *   queues and for passivation.
 * - A queue with a parked poll is passivated: its actor is stopped when the poll parks
 *   and started again only to apply a batch (see `idle.ts`).
 */
import type { Chunk, ChunkThunk } from '../core/persistence.js';
import { badRequest } from '../shared/errors.js';
import { DELETED_BY_CLIENT, type QueueFact, type QueueRegistered, type QueuesDropped } from '../shared/queue_facts.js';
import type { NarrowTerm } from '../engines/narrow.js';
import type { Supervisor } from '../core/supervisor.js';
import { Fanout, type DeliveryObserver, type Routing } from './fanout.js';
import { markActive, QueueActors } from './idle.js';
import { ParkedPolls, type Waiter } from './parked_polls.js';
import { storedCapabilities, type StoredCapabilities } from '../core/capabilities.js';
import { acknowledge, renderEvents, type QueueContext, type SequencedEvent } from './queue_actor.js';
import { QueueRegistry, restoredContext, type Cell, type QueueCell } from './registry.js';

export type { Cell } from './registry.js';
export type { DeliveryObserver, Routing } from './fanout.js';
export type { Waiter } from './parked_polls.js';
export type { QueueContext, QueuedEvent, SequencedEvent } from './queue_actor.js';

/** Tunables of the queue system. Times are milliseconds. */
export interface QueueOptions {
  now(): number;
  token(): string;
  random(): number;
  /** Commits facts decided here (registration, heartbeats, drops); resolves when durable. */
  commit(facts: QueueFact[]): Promise<void>;
  /** Heartbeats go out between these two delays after a poll parks. */
  heartbeatMinMs: number;
  heartbeatMaxMs: number;
  /** Idle lifetime of a queue unless the client asked for another. */
  defaultLifespanMs: number;
  maxLifespanMs: number;
  /** Most events a queue may hold before it is collected as overflowed. */
  maxEvents: number;
  /** A queue unused for this long gives up its actor until its next message. */
  passivateAfterMs: number;
  /** Told of every delivery pass (metrics); nothing by default. */
  observer?: DeliveryObserver;
}

/** Options a client registers a queue with, and its capabilities (each absent one off). */
export interface QueueRegistration extends StoredCapabilities {
  org: number;
  user_id: number;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_secs: number | null;
}

/** What a client does with its queues: `POST /register`, `GET /events`, `DELETE /events`. */
export interface QueueClient {
  /**
   * Registers a new queue. The queue exists when this returns; `durable` resolves once
   * its registration is in the log.
   */
  register(reg: QueueRegistration): { queueId: string; durable: Promise<void> };
  /**
   * Answers a `GET /events`: prunes what the client acknowledged, then replies at once
   * when events are waiting (or the client will not block), else parks `waiter`.
   * Returns the reply body, or null when parked.
   */
  poll(queueId: string, org: number, userId: number, lastEventId: number | null, dontBlock: boolean, waiter: Waiter): string | null;
  /** Forgets a parked poll whose client went away, if it is still the parked one. */
  unpark(queueId: string, waiter: Waiter): void;
  /** Deletes a queue the user owns (`DELETE /events`); resolves once durable. */
  delete(queueId: string, org: number, userId: number): Promise<void>;
}

/**
 * The public face of the queue system (`Runtime.queues`): the client operations, the
 * server's lifecycle, counts, and read-only views of the queues' data.
 */
export interface QueueService extends QueueClient {
  /** Starts the periodic timer that drives `tick`. */
  start(tickMs?: number): void;
  /** Stops the timer and every queue actor (their data stays). */
  stop(): void;
  /** Completes every parked poll with what its queue holds (at shutdown). */
  releaseAll(): void;
  /** Due heartbeats, then (every few seconds) `sweepIdle`. The timer calls it; so may tests, with their own clock. */
  tick(): void;
  /** Drops queues idle past their lifespan and passivates unused actors; returns how many queues were dropped. */
  sweepIdle(now: number): number;
  /** Number of queues. */
  readonly size: number;
  /** Number of queues in one organization. */
  sizeOf(org: number): number;
  /** Number of parked polls. */
  readonly parkedCount: number;
  /** Number of queues whose actor is running. */
  readonly activeCount: number;
  /** The data of a queue, if it exists. */
  peek(queueId: string): Readonly<QueueContext> | undefined;
  /** The data of every queue (live objects, for the snapshot writer and tools). */
  exportQueues(): Array<Readonly<QueueContext>>;
}

/**
 * What the runtime does with the queues, and nothing else does: apply the facts that
 * create and drop them, resolve which queues an event goes to, stage and deliver it,
 * and adopt queues restored from a snapshot.
 */
export interface QueueDelivery {
  /** Creates the queue a `QueueRegistered` fact describes. */
  applyRegistered(fact: QueueRegistered, seq: number): void;
  /** Removes the queues a `QueuesDropped` fact names; a parked poll learns at once. */
  applyDropped(fact: QueuesDropped): void;
  /** Every queue, for facts addressed to all queues. */
  allCells(): Cell[];
  /** The queues with these ids that still exist. */
  cellsOf(queueIds: string[]): Cell[];
  /** The queues of one user, for fan-out. */
  queuesOf(org: number, userId: number): Iterable<Cell>;
  /** Takes the events of facts now durable, resolved to their queues by the next flush as it walks them. */
  deliver(routing: Routing): void;
  /** Delivers what is ready on the next loop turn, then calls `afterFlush`. */
  scheduleFlush(afterFlush: () => void): void;
  /** Pushes events at once, without waking anyone: for replay at startup. */
  pushNow(cell: Cell, events: SequencedEvent[]): void;
  /** Adopts a queue restored from a snapshot; its idle clock starts afresh. */
  restore(ctx: QueueContext): void;
  /** Every queue's snapshot chunks, lazily (see `Persistence` in `actors/core/persistence.ts`). */
  chunks(sliceSize: number): Generator<ChunkThunk>;
  /** Takes back one of those chunks. */
  restoreChunk(chunk: Chunk): void;
}

/** The queues' snapshot chunk: queue contexts, in slices. */
interface QueuesChunk {
  k: 'queues';
  list: QueueContext[];
}

/** The chunk tag the event queues write. */
export const QUEUE_CHUNK_TAGS: readonly string[] = ['queues'];

export class EventQueues implements QueueService, QueueDelivery {
  private readonly registry = new QueueRegistry();
  private readonly actors: QueueActors;
  private readonly parkedPolls: ParkedPolls;
  private readonly fanout: Fanout;
  private timer: NodeJS.Timeout | undefined;
  private lastSweep: number;

  constructor(
    system: Supervisor,
    private readonly opts: QueueOptions,
  ) {
    this.actors = new QueueActors(system, opts);
    this.parkedPolls = new ParkedPolls(opts, opts.now());
    this.fanout = new Fanout(this.parkedPolls, this.actors, opts);
    this.lastSweep = opts.now();
  }

  // Lifecycle and counts.

  /** Starts the periodic timer; `tickMs` defaults to a quarter of the shortest heartbeat, at most a second. */
  start(tickMs = Math.max(10, Math.min(1000, Math.floor(this.opts.heartbeatMinMs / 4)))): void {
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const cell of this.registry.all()) this.actors.passivate(cell);
  }

  get size(): number {
    return this.registry.size;
  }

  sizeOf(org: number): number {
    return this.registry.sizeOf(org);
  }

  get parkedCount(): number {
    return this.parkedPolls.size;
  }

  get activeCount(): number {
    return this.actors.activeCount(this.registry.all());
  }

  // Applying facts (live and in replay).

  applyRegistered(fact: QueueRegistered, seq: number): void {
    if (this.registry.has(fact.queue_id)) return;
    const ctx: QueueContext = {
      id: fact.queue_id,
      org: fact.org,
      user_id: fact.user_id,
      event_types: fact.event_types,
      narrow: fact.narrow,
      client: fact.client,
      events: [],
      next_id: 0,
      newest_pruned_id: -1,
      lifespan_ms: fact.lifespan_ms,
      ...storedCapabilities(fact),
      seq,
    };
    this.registry.adopt(ctx, this.opts.now());
  }

  applyDropped(fact: QueuesDropped): void {
    for (const queueId of fact.queue_ids) {
      const cell = this.registry.remove(queueId, fact.reason);
      if (!cell) continue;
      this.actors.passivate(cell);
      const parked = this.parkedPolls.take(cell);
      if (!parked) continue;
      // As Zulip's ClientDescriptor.cleanup: a queue its client deletes first finishes its
      // parked poll with what it held. A queue dropped for overflowing is refused instead.
      if (fact.reason === DELETED_BY_CLIENT) parked.waiter.deliver(renderEvents(queueId, cell.ctx.events));
      else parked.waiter.deliver(JSON.stringify({ result: 'error', msg: `Bad event queue ID: ${queueId} (${fact.reason})`, code: 'BAD_EVENT_QUEUE_ID', queue_id: queueId }), 400);
    }
  }

  allCells(): Cell[] {
    return [...this.registry.all()];
  }

  cellsOf(queueIds: string[]): Cell[] {
    return this.registry.cellsOf(queueIds);
  }

  queuesOf(org: number, userId: number): Iterable<Cell> {
    return this.registry.queuesOf(org, userId);
  }

  // Client operations.

  register(reg: QueueRegistration): { queueId: string; durable: Promise<void> } {
    const queueId = this.opts.token();
    // As in Zulip, an absent or zero lifespan means the default one.
    const lifespan = !reg.lifespan_secs ? this.opts.defaultLifespanMs : Math.min(reg.lifespan_secs * 1000, this.opts.maxLifespanMs);
    const durable = this.opts.commit([{
      type: 'QueueRegistered',
      org: reg.org,
      user_id: reg.user_id,
      queue_id: queueId,
      event_types: reg.event_types,
      narrow: reg.narrow,
      client: reg.client,
      lifespan_ms: Math.max(lifespan, 1000),
      ...storedCapabilities(reg),
    }]);
    return { queueId, durable };
  }

  poll(queueId: string, org: number, userId: number, lastEventId: number | null, dontBlock: boolean, waiter: Waiter): string | null {
    const cell = this.registry.access(queueId, org, userId);
    const ctx = cell.ctx;
    const now = this.opts.now();
    // Any request renews the queue's life, one that acknowledges too much included.
    markActive(cell, now);
    if (lastEventId !== null) {
      const error = acknowledge(cell.ctx, lastEventId);
      if (error !== null) throw badRequest(error);
    }
    // One waiter per queue, as in Zulip: an older poll is answered with what there is.
    const previous = this.parkedPolls.take(cell);
    if (previous) previous.waiter.deliver(renderEvents(queueId, ctx.events));
    if (ctx.events.length > 0 || dontBlock) return renderEvents(queueId, ctx.events);
    this.parkedPolls.park(cell, waiter, now);
    // A parked queue is plain data and the poll's handle: its actor starts again to apply a batch (unless it is hot, see idle.ts).
    this.actors.parked(cell);
    return null;
  }

  unpark(queueId: string, waiter: Waiter): void {
    const cell = this.registry.get(queueId);
    if (cell && this.parkedPolls.unpark(cell, waiter)) markActive(cell, this.opts.now());
  }

  delete(queueId: string, org: number, userId: number): Promise<void> {
    this.registry.access(queueId, org, userId);
    return this.opts.commit([{ type: 'QueuesDropped', queue_ids: [queueId], reason: DELETED_BY_CLIENT }]);
  }

  peek(queueId: string): QueueContext | undefined {
    return this.registry.get(queueId)?.ctx;
  }

  // Delivery. Every `Cell` is one of the registry's `QueueCell`s.

  deliver(routing: Routing): void {
    this.fanout.deliver(routing);
  }

  scheduleFlush(afterFlush: () => void): void {
    this.fanout.scheduleFlush(afterFlush);
  }

  pushNow(cell: Cell, events: SequencedEvent[]): void {
    this.fanout.pushNow(cell as QueueCell, events);
  }

  // Periodic work.

  tick(): void {
    const now = this.opts.now();
    const due = this.parkedPolls.dueHeartbeats(now);
    if (due.length > 0) void this.opts.commit([{ type: 'HeartbeatsDue', queue_ids: due }]);
    if (now - this.lastSweep >= Math.min(10000, this.opts.defaultLifespanMs / 4)) {
      this.lastSweep = now;
      this.sweepIdle(now);
    }
  }

  sweepIdle(now: number): number {
    const idle = this.actors.sweep(this.registry.all(), now);
    if (idle.length > 0) void this.opts.commit([{ type: 'QueuesDropped', queue_ids: idle, reason: 'it was idle for too long' }]);
    return idle.length;
  }

  releaseAll(): void {
    this.parkedPolls.releaseAll(this.registry.all());
  }

  // Snapshots.

  exportQueues(): QueueContext[] {
    return this.registry.contexts();
  }

  restore(ctx: QueueContext): void {
    this.registry.adopt(restoredContext(ctx), this.opts.now());
  }

  *chunks(sliceSize: number): Generator<ChunkThunk> {
    // The queues when the snapshot starts; one dropped before its slice is taken is left out.
    const queues = this.exportQueues();
    for (let from = 0; from < queues.length; from += sliceSize) {
      const start = from;
      yield (): QueuesChunk => ({ k: 'queues', list: queues.slice(start, start + sliceSize).filter((q) => this.peek(q.id) === q) });
    }
  }

  restoreChunk(chunk: Chunk): void {
    for (const q of (chunk as QueuesChunk).list) this.restore(q);
  }
}
