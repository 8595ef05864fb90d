/**
 * Fan-out: events of durable facts delivered to their queues in batched passes.
 *
 * Completions are batched: the facts that became durable during a loop turn are
 * delivered in one synchronous pass from `setImmediate`, outside any request handler,
 * so each completion is one corked write. The pass resolves each batch of facts to its
 * queues as it goes (a `Routing`, see `actors/runtime/event_routing.ts`): a parked poll
 * is answered as soon as nothing more can reach its queue in the pass, so the first
 * reply leaves after one queue has been resolved, not after all of them. Then the queue
 * actors process their pushes, then the callbacks waiting for the flush run.
 */
import type { QueueFact } from '../shared/queue_facts.js';
import { markActive, type QueueActors } from './idle.js';
import type { ParkedPolls } from './parked_polls.js';
import { numberEvents, renderEvents, type QueuedEvent, type SequencedEvent } from './queue_actor.js';
import type { Cell, QueueCell } from './registry.js';

/**
 * The events of one batch of facts, resolved to their queues when walked. A routing is
 * walked once, by the delivery pass that follows its facts' durability.
 */
export interface Routing {
  /**
   * Calls `visit` for every queue and event, in routing order (the facts' seq order,
   * then each fact's deliveries in order). `once` is true when this routing gives `cell`
   * no other event: its reply may go out at once.
   */
  walk(visit: (cell: Cell, event: SequencedEvent, once: boolean) => void): void;
}

export interface FanoutOptions {
  now(): number;
  /** Most events a queue may hold before it is collected as overflowed. */
  maxEvents: number;
  /** Commits facts decided here (overflow drops); resolves when durable. */
  commit(facts: QueueFact[]): Promise<void>;
  /** Told of every delivery pass (metrics); nothing by default. */
  observer?: DeliveryObserver;
}

/** What delivery reports of its work, once per delivery pass, never per queue. */
export interface DeliveryObserver {
  /** A pass pushed `events` events to `queues` queues and answered `polls` parked polls. */
  delivered(queues: number, events: number, polls: number): void;
}

/** An observer that records nothing. */
export const NO_DELIVERY_OBSERVER: DeliveryObserver = { delivered() {} };

export class Fanout {
  /** Routings whose facts are durable, in log order, for the next pass. */
  private ready: Routing[] = [];
  private flushScheduled = false;
  private afterFlush: Array<() => void> = [];
  private readonly observer: DeliveryObserver;

  constructor(
    private readonly parked: ParkedPolls,
    private readonly actors: QueueActors,
    private readonly opts: FanoutOptions,
  ) {
    this.observer = opts.observer ?? NO_DELIVERY_OBSERVER;
  }

  /**
   * Takes the events of facts that are now durable, for the next pass. Routings are
   * delivered in the order they are given, which is log order: the log calls back in
   * append order.
   */
  deliver(routing: Routing): void {
    this.ready.push(routing);
  }

  /**
   * Delivers what is ready on the next loop turn, once per turn however many facts
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
   * Delivers the ready routings in one synchronous pass. Each routing is walked in
   * order and its events staged on their queues (`QueueCell.staged`), so a queue gets
   * everything of the pass in one push, in seq order. A parked poll is answered, with the
   * reply rendered from what its queue holds plus `numberEvents` of what is staged, as
   * soon as its queue can get nothing more in this pass: while the last routing is
   * walked when that routing gives it one event (a message: every queue), else after
   * the walk. Then each queue's actor processes its push, which appends those very event
   * objects. All of it is one synchronous pass, so no request ever sees a queue between
   * its reply and its push, and the replies leave before the pushes (about 1.5 us per
   * queue). Overflowing queues are dropped.
   */
  flushStaged(): void {
    const routings = this.ready;
    this.ready = [];
    const now = this.opts.now();
    // Queues in the order they were first staged; `replied[i]`: what `cells[i]`'s reply carried.
    const cells: QueueCell[] = [];
    const replied: Array<QueuedEvent[] | undefined> = [];
    let polls = 0;
    const last = routings.length - 1;
    for (let r = 0; r <= last; r++) {
      const final = r === last;
      routings[r].walk((c, event, once) => {
        const cell = c as QueueCell;
        if (cell.dropped) return;
        const fresh = cell.staged === undefined;
        if (fresh) {
          cell.staged = [event];
          cells.push(cell);
        } else cell.staged!.push(event);
        if (!final || !once || cell.parked === undefined) return;
        const added = this.answer(cell, now);
        if (added === undefined) return;
        polls++;
        // A queue staged by an earlier routing of the pass is not at the end: its push numbers its events again (the same way).
        if (fresh) replied[cells.length - 1] = added;
      });
    }
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i];
      if (cell.parked === undefined || cell.dropped) continue;
      const added = this.answer(cell, now);
      if (added === undefined) continue;
      replied[i] = added;
      polls++;
    }
    const overflowed: string[] = [];
    let delivered = 0;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i];
      const events = cell.staged;
      cell.staged = undefined;
      if (!events || cell.dropped) continue;
      delivered += events.length;
      this.actors.send(cell, { type: 'push', events, numbered: replied[i] });
      // A batch that answered nothing (no new event, or an overflow) leaves the poll parked, and its queue passivated unless hot.
      if (cell.parked !== undefined) this.actors.parked(cell);
      if (cell.ctx.events.length > this.opts.maxEvents) overflowed.push(cell.ctx.id);
    }
    if (overflowed.length > 0) void this.opts.commit([{ type: 'QueuesDropped', queue_ids: overflowed, reason: `more than ${this.opts.maxEvents} events were not fetched` }]);
    if (cells.length > 0) this.observer.delivered(cells.length, delivered, polls);
  }

  /**
   * Answers a queue's parked poll with what it holds plus what is staged for it; returns
   * the events the reply added (its push appends them), or undefined when the poll stays
   * parked: nothing new for it, or more than the queue may hold (it is dropped instead).
   */
  private answer(cell: QueueCell, now: number): QueuedEvent[] | undefined {
    const ctx = cell.ctx;
    const added = numberEvents(ctx, cell.staged!);
    if (added.length === 0 || ctx.events.length + added.length > this.opts.maxEvents) return undefined;
    const parked = this.parked.take(cell)!;
    markActive(cell, now);
    parked.waiter.deliver(renderEvents(ctx.id, ctx.events, added));
    return added;
  }

  /** Pushes events at once, without waking anyone: for replay at startup. */
  pushNow(cell: QueueCell, events: SequencedEvent[]): void {
    if (!cell.dropped) this.actors.send(cell, { type: 'push', events });
  }
}
