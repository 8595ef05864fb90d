/**
 * Fan-out: events staged for queues and delivered in batches.
 *
 * Completions are batched: events that became durable during a loop turn are delivered
 * in one synchronous pass from `setImmediate`, outside any request handler, so each
 * completion is one corked write: parked polls are answered first, then the queue
 * actors process their pushes, then the callbacks waiting for the flush run.
 */
import type { QueueFact } from '../queue_facts.js';
import { markActive, type QueueActors } from './idle.js';
import type { ParkedPolls } from './parked_polls.js';
import { numberEvents, renderEvents, type QueuedEvent, type SequencedEvent } from './queue_actor.js';
import type { QueueCell } from './registry.js';

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
  /** Cells with staged events, in staging order. */
  private stagedCells: QueueCell[] = [];
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
   * Stages an event for a queue. Staged events reach their queues in one `push` per
   * queue at `flushStaged`, however many facts produced them.
   */
  stage(cell: QueueCell, event: SequencedEvent): void {
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
    let queues = 0;
    let delivered = 0;
    let polls = 0;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i];
      const events = cell.staged;
      cell.staged = undefined;
      if (!events || cell.dropped) continue;
      pushes[i] = events;
      queues++;
      delivered += events.length;
      const ctx = cell.ctx;
      if (cell.parked === undefined) continue;
      const added = numberEvents(ctx, events);
      if (added.length === 0 || ctx.events.length + added.length > this.opts.maxEvents) continue;
      const parked = this.parked.take(cell)!;
      markActive(cell, now);
      replied[i] = added;
      polls++;
      parked.waiter.deliver(renderEvents(ctx.id, ctx.events, added));
    }
    for (let i = 0; i < cells.length; i++) {
      const events = pushes[i];
      if (!events) continue;
      const cell = cells[i];
      this.actors.send(cell, { type: 'push', events, numbered: replied[i] });
      // A batch that answered nothing (no new event, or an overflow) leaves the poll parked, and its queue passivated.
      if (cell.parked !== undefined) this.actors.passivate(cell);
      if (cell.ctx.events.length > this.opts.maxEvents) overflowed.push(cell.ctx.id);
    }
    if (overflowed.length > 0) void this.opts.commit([{ type: 'QueuesDropped', queue_ids: overflowed, reason: `more than ${this.opts.maxEvents} events were not fetched` }]);
    if (queues > 0) this.observer.delivered(queues, delivered, polls);
  }

  /** Pushes events at once, without waking anyone: for replay at startup. */
  pushNow(cell: QueueCell, events: SequencedEvent[]): void {
    if (!cell.dropped) this.actors.send(cell, { type: 'push', events });
  }
}
