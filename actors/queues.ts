/**
 * The event queues of the whole server: registration, lookup, fan-out, parked
 * long-polls, heartbeats, idle collection and passivation.
 *
 * - Every change to what a queue holds comes from a fact (registration, events derived
 *   from facts, heartbeats, drops, restarts), applied in log order. Acknowledgements
 *   are the only exception: the client re-sends `last_event_id` on every poll.
 * - A parked `GET /events` is a `Waiter` kept beside its queue, never in actor state.
 * - One timer drives everything periodic: a wheel of one-second buckets for heartbeats,
 *   and a sweep for idle queues and for passivation.
 * - Completions are batched: events that became durable during a loop turn are
 *   delivered in one synchronous pass from `setImmediate`, outside any request handler,
 *   so each completion is one corked write: parked polls are answered first, then the
 *   queue actors process their pushes.
 * - Passivation: a queue's XState actor is stopped when the queue has been unused for a
 *   while and kept as plain data, and started again on its next message, as Orleans
 *   deactivates idle grains. An idle queue then costs a few hundred bytes, not an actor.
 */
import type { Actor } from 'xstate';
import { ApiError, badQueue, badRequest } from './errors.js';
import type { QueueFact, QueueRegistered, QueuesDropped } from './queue_facts.js';
import type { NarrowTerm } from './narrow.js';
import { numberEvents, queueLogic, renderEvents, type QueueContext, type QueuedEvent, type QueueEvent, type SequencedEvent } from './queue.js';
import type { Supervisor } from './core/supervisor.js';

/** A parked long-poll, provided by the transport. */
export interface Waiter {
  /** Sends the reply body (status 200 unless given); called at most once. */
  deliver(body: string, status?: number): void;
}

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
}

/** Options a client registers a queue with. */
export interface QueueRegistration {
  org: number;
  user_id: number;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_secs: number | null;
  /** The client shows the empty topic as `""` (capability `empty_topic_name`). */
  empty_topic_name: boolean;
}

type QueueActor = Actor<typeof queueLogic>;

interface Parked {
  waiter: Waiter;
  heartbeatAt: number;
}

/**
 * A queue: its data, its actor while it is active, and what the fan-out path needs
 * beside it (the parked poll, events staged for the next flush). Fan-out holds cells,
 * not queue ids, so delivering to a queue costs no string-keyed lookups.
 */
export interface Cell {
  readonly ctx: QueueContext;
  actor: QueueActor | undefined;
  usedAt: number;
  parked: Parked | undefined;
  /** Events waiting for the next flush; undefined when none. */
  staged: SequencedEvent[] | undefined;
  /** Set once the queue is dropped, so that a staged delivery to it is skipped. */
  dropped: boolean;
}

const MAX_TOMBSTONES = 10000;

export class EventQueues {
  private readonly cells = new Map<string, Cell>();
  /** Queues by organization, then user: numeric keys, no string building on the fan-out path. */
  private readonly byUser = new Map<number, Map<number, Set<Cell>>>();
  private parkedTotal = 0;
  /** Heartbeat wheel: one-second buckets of queues whose parked poll may come due then. */
  private readonly wheel = new Map<number, Cell[]>();
  /** Cells with staged events, in staging order. */
  private stagedCells: Cell[] = [];
  /** Why recently dropped queues are gone, for a clearer `BAD_EVENT_QUEUE_ID`. */
  private readonly tombstones = new Map<string, string>();
  private flushScheduled = false;
  private afterFlush: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private lastWheelSecond: number;
  private lastSweep: number;

  constructor(
    private readonly system: Supervisor,
    private readonly opts: QueueOptions,
  ) {
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
    for (const cell of this.cells.values()) this.passivate(cell);
  }

  get size(): number {
    return this.cells.size;
  }

  get parkedCount(): number {
    return this.parkedTotal;
  }

  /** Number of queues whose actor is running. */
  get activeCount(): number {
    let n = 0;
    for (const cell of this.cells.values()) if (cell.actor) n++;
    return n;
  }

  // Applying facts (live and in replay).

  /** Creates the queue a `QueueRegistered` fact describes. */
  applyRegistered(fact: QueueRegistered, seq: number): void {
    if (this.cells.has(fact.queue_id)) return;
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
      last_active: this.opts.now(),
      lifespan_ms: fact.lifespan_ms,
      empty_topic_name: fact.empty_topic_name,
      seq,
    };
    this.adopt(ctx);
  }

  /** Removes the queues a `QueuesDropped` fact names; a parked poll learns at once. */
  applyDropped(fact: QueuesDropped): void {
    for (const queueId of fact.queue_ids) {
      const cell = this.cells.get(queueId);
      if (!cell) continue;
      this.passivate(cell);
      this.cells.delete(queueId);
      this.byUser.get(cell.ctx.org)?.get(cell.ctx.user_id)?.delete(cell);
      cell.dropped = true;
      cell.staged = undefined;
      const parked = this.takeParked(cell);
      if (parked) parked.waiter.deliver(JSON.stringify({ result: 'error', msg: `Bad event queue ID: ${queueId} (${fact.reason})`, code: 'BAD_EVENT_QUEUE_ID', queue_id: queueId }), 400);
      this.tombstones.set(queueId, fact.reason);
      if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value as string);
    }
  }

  /** Every queue, for facts addressed to all queues. */
  allCells(): Cell[] {
    return [...this.cells.values()];
  }

  /** The queues with these ids that still exist. */
  cellsOf(queueIds: string[]): Cell[] {
    const out: Cell[] = [];
    for (const id of queueIds) {
      const cell = this.cells.get(id);
      if (cell) out.push(cell);
    }
    return out;
  }

  // Client operations.

  /**
   * Registers a new queue. The queue exists when this returns; `durable` resolves once
   * its registration is in the log.
   */
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
      empty_topic_name: reg.empty_topic_name,
    }]);
    return { queueId, durable };
  }

  /** The context of a queue the user owns, or `BAD_EVENT_QUEUE_ID`. */
  access(queueId: string, org: number, userId: number): QueueContext {
    return this.accessCell(queueId, org, userId).ctx;
  }

  private accessCell(queueId: string, org: number, userId: number): Cell {
    const cell = this.cells.get(queueId);
    if (!cell || cell.ctx.org !== org || cell.ctx.user_id !== userId) {
      const why = this.tombstones.get(queueId);
      if (why && cell === undefined) throw new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId} (${why})`, { queue_id: queueId });
      throw badQueue(queueId);
    }
    return cell;
  }

  /**
   * Answers a `GET /events`: prunes what the client acknowledged, then replies at once
   * when events are waiting (or the client will not block), else parks `waiter`.
   * Returns the reply body, or null when parked.
   */
  poll(queueId: string, org: number, userId: number, lastEventId: number | null, dontBlock: boolean, waiter: Waiter): string | null {
    const cell = this.accessCell(queueId, org, userId);
    const ctx = cell.ctx;
    const now = this.opts.now();
    if (lastEventId !== null) {
      let error: string | null = null;
      this.send(cell, { type: 'ack', last_event_id: lastEventId, now, reply: (e) => (error = e) });
      if (error !== null) throw badRequest(error);
    } else {
      this.send(cell, { type: 'touch', now });
    }
    // One waiter per queue, as in Zulip: an older poll is answered with what there is.
    const previous = this.takeParked(cell);
    if (previous) previous.waiter.deliver(renderEvents(queueId, ctx.events));
    if (ctx.events.length > 0 || dontBlock) return renderEvents(queueId, ctx.events);
    const span = this.opts.heartbeatMaxMs - this.opts.heartbeatMinMs;
    const heartbeatAt = now + this.opts.heartbeatMinMs + Math.floor(this.opts.random() * (span + 1));
    cell.parked = { waiter, heartbeatAt };
    this.parkedTotal++;
    const second = Math.ceil(heartbeatAt / 1000);
    const bucket = this.wheel.get(second);
    if (bucket) bucket.push(cell);
    else this.wheel.set(second, [cell]);
    return null;
  }

  /** Forgets a parked poll whose client went away, if it is still the parked one. */
  unpark(queueId: string, waiter: Waiter): void {
    const cell = this.cells.get(queueId);
    if (cell && cell.parked?.waiter === waiter) {
      this.takeParked(cell);
      cell.ctx.last_active = this.opts.now();
    }
  }

  private takeParked(cell: Cell): Parked | undefined {
    const parked = cell.parked;
    if (parked) {
      cell.parked = undefined;
      this.parkedTotal--;
    }
    return parked;
  }

  /** Deletes a queue the user owns (`DELETE /events`); resolves once durable. */
  delete(queueId: string, org: number, userId: number): Promise<void> {
    this.access(queueId, org, userId);
    return this.opts.commit([{ type: 'QueuesDropped', queue_ids: [queueId], reason: 'deleted by its client' }]);
  }

  /** The queues of one user, for fan-out. */
  queuesOf(org: number, userId: number): Iterable<Cell> {
    return this.byUser.get(org)?.get(userId) ?? NO_QUEUES;
  }

  /** The context of a queue, if it exists. */
  peek(queueId: string): QueueContext | undefined {
    return this.cells.get(queueId)?.ctx;
  }

  // Delivery.

  /**
   * Stages an event for a queue. Staged events reach their queues in one `push` per
   * queue at `flushStaged`, however many facts produced them.
   */
  stage(cell: Cell, event: SequencedEvent): void {
    if (cell.dropped) return;
    if (cell.staged) cell.staged.push(event);
    else {
      cell.staged = [event];
      this.stagedCells.push(cell);
    }
  }

  /**
   * Delivers what is staged on the next loop turn, once per turn however many facts
   * became durable. It runs from `setImmediate`: after the writes that caused the events
   * have been acknowledged (their replies go out first), before any later request is
   * read, and never inside a request handler, so each completion is one corked write.
   */
  scheduleFlush(afterFlush: () => void): void {
    this.afterFlush.push(afterFlush);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flushStaged();
      const done = this.afterFlush;
      this.afterFlush = [];
      for (const fn of done) fn();
    });
  }

  /**
   * Delivers the staged events. First every parked poll is answered, with the reply
   * rendered from what its queue holds plus `numberEvents` of what is staged; then each
   * queue's actor processes its push, which appends those very event objects. Both loops
   * run in one synchronous pass, so no request ever sees a queue between the two, and
   * the last reply leaves before the pushes rather than after them (they cost about
   * 1.5 us per queue). Overflowing queues are dropped.
   */
  flushStaged(): void {
    const overflowed: string[] = [];
    const now = this.opts.now();
    const cells = this.stagedCells;
    this.stagedCells = [];
    const pushes: Array<SequencedEvent[] | undefined> = new Array(cells.length);
    // What a parked queue's reply carried: its push appends these very events.
    const replied: Array<QueuedEvent[] | undefined> = new Array(cells.length);
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i];
      const events = cell.staged;
      cell.staged = undefined;
      if (!events || cell.dropped) continue;
      pushes[i] = events;
      const ctx = cell.ctx;
      if (cell.parked === undefined) continue;
      const added = numberEvents(ctx, events);
      if (added.length === 0 || ctx.events.length + added.length > this.opts.maxEvents) continue;
      const parked = this.takeParked(cell)!;
      ctx.last_active = now;
      replied[i] = added;
      parked.waiter.deliver(renderEvents(ctx.id, ctx.events, added));
    }
    for (let i = 0; i < cells.length; i++) {
      const events = pushes[i];
      if (!events) continue;
      const cell = cells[i];
      this.send(cell, { type: 'push', events, numbered: replied[i] });
      if (cell.ctx.events.length > this.opts.maxEvents) overflowed.push(cell.ctx.id);
    }
    if (overflowed.length > 0) void this.opts.commit([{ type: 'QueuesDropped', queue_ids: overflowed, reason: `more than ${this.opts.maxEvents} events were not fetched` }]);
  }

  /** Pushes events at once, without waking anyone: for replay at startup. */
  pushNow(cell: Cell, events: SequencedEvent[]): void {
    if (!cell.dropped) this.send(cell, { type: 'push', events });
  }

  private send(cell: Cell, event: QueueEvent): void {
    if (!cell.actor) {
      cell.actor = this.system.spawn(queueLogic, cell.ctx);
    }
    cell.usedAt = this.opts.now();
    cell.actor.send(event);
  }

  private passivate(cell: Cell): void {
    if (!cell.actor) return;
    this.system.stop(cell.actor);
    cell.actor = undefined;
  }

  // Periodic work.

  /** Due heartbeats, then (every few seconds) idle collection and passivation. */
  tick(): void {
    const now = this.opts.now();
    const second = Math.floor(now / 1000);
    const due: string[] = [];
    for (let s = this.lastWheelSecond; s <= second + 1; s++) {
      const bucket = this.wheel.get(s);
      if (!bucket) continue;
      const later: Cell[] = [];
      for (const cell of bucket) {
        const parked = cell.parked;
        if (!parked || cell.dropped || parked.heartbeatAt === Infinity) continue;
        if (parked.heartbeatAt > now) {
          // An entry left by an earlier poll of this queue; the current poll has its own.
          if (Math.ceil(parked.heartbeatAt / 1000) === s) later.push(cell);
        } else {
          parked.heartbeatAt = Infinity;
          due.push(cell.ctx.id);
        }
      }
      if (later.length > 0) this.wheel.set(s, later);
      else this.wheel.delete(s);
    }
    this.lastWheelSecond = second;
    if (due.length > 0) void this.opts.commit([{ type: 'HeartbeatsDue', queue_ids: due }]);
    if (now - this.lastSweep >= Math.min(10000, this.opts.defaultLifespanMs / 4)) {
      this.lastSweep = now;
      this.sweepIdle(now);
    }
  }

  /**
   * Drops queues that have had no request attached for longer than their lifespan,
   * and passivates actors unused for a while. Returns how many queues were dropped.
   */
  sweepIdle(now: number): number {
    const idle: string[] = [];
    for (const [queueId, cell] of this.cells) {
      if (cell.parked) continue;
      if (now - cell.ctx.last_active > cell.ctx.lifespan_ms) idle.push(queueId);
      else if (cell.actor && now - cell.usedAt >= this.opts.passivateAfterMs) this.passivate(cell);
    }
    if (idle.length > 0) void this.opts.commit([{ type: 'QueuesDropped', queue_ids: idle, reason: 'it was idle for too long' }]);
    return idle.length;
  }

  /** Completes every parked poll with what its queue holds (at shutdown). */
  releaseAll(): void {
    for (const cell of this.cells.values()) {
      const parked = this.takeParked(cell);
      if (parked) parked.waiter.deliver(renderEvents(cell.ctx.id, cell.ctx.events));
    }
  }

  // Snapshots.

  /** The data of every queue, for a snapshot. */
  exportQueues(): QueueContext[] {
    return [...this.cells.values()].map((c) => c.ctx);
  }

  /** Adopts a queue restored from a snapshot; its idle clock starts afresh. */
  restore(ctx: QueueContext): void {
    ctx.last_active = this.opts.now();
    this.adopt(ctx);
  }

  private adopt(ctx: QueueContext): void {
    const cell: Cell = { ctx, actor: undefined, usedAt: this.opts.now(), parked: undefined, staged: undefined, dropped: false };
    this.cells.set(ctx.id, cell);
    let users = this.byUser.get(ctx.org);
    if (!users) this.byUser.set(ctx.org, (users = new Map()));
    let cells = users.get(ctx.user_id);
    if (!cells) users.set(ctx.user_id, (cells = new Set()));
    cells.add(cell);
  }
}

const NO_QUEUES: ReadonlySet<Cell> = new Set();
