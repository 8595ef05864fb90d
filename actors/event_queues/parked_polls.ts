/**
 * Parked long-polls and their heartbeats. A parked `GET /events` is a `Waiter` kept on
 * its queue's cell, never in actor state; at most one per queue, as in Zulip. Each
 * parked poll has a heartbeat deadline, and a wheel of one-second buckets says which
 * queues may come due when, so a tick looks only at the buckets it passed.
 */
import type { Parked, QueueCell, Waiter } from './registry.js';

export type { Parked, Waiter } from './registry.js';
import { renderEvents } from './queue_actor.js';

export interface ParkedPollOptions {
  random(): number;
  /** Heartbeats go out between these two delays after a poll parks. */
  heartbeatMinMs: number;
  heartbeatMaxMs: number;
}

export class ParkedPolls {
  private parkedTotal = 0;
  /** Heartbeat wheel: one-second buckets of queues whose parked poll may come due then. */
  private readonly wheel = new Map<number, QueueCell[]>();
  private lastWheelSecond: number;

  constructor(
    private readonly opts: ParkedPollOptions,
    now: number,
  ) {
    this.lastWheelSecond = Math.floor(now / 1000);
  }

  /** Number of polls parked. */
  get size(): number {
    return this.parkedTotal;
  }

  /** Parks `waiter` on a queue that has none parked, with a heartbeat deadline counted from `now`. */
  park(cell: QueueCell, waiter: Waiter, now: number): void {
    const span = this.opts.heartbeatMaxMs - this.opts.heartbeatMinMs;
    const heartbeatAt = now + this.opts.heartbeatMinMs + Math.floor(this.opts.random() * (span + 1));
    cell.parked = { waiter, heartbeatAt };
    this.parkedTotal++;
    const second = Math.ceil(heartbeatAt / 1000);
    const bucket = this.wheel.get(second);
    if (bucket) bucket.push(cell);
    else this.wheel.set(second, [cell]);
  }

  /** Takes the parked poll off a queue, if there is one; the caller answers it. */
  take(cell: QueueCell): Parked | undefined {
    const parked = cell.parked;
    if (parked) {
      cell.parked = undefined;
      this.parkedTotal--;
    }
    return parked;
  }

  /** Forgets `waiter` if it is still the queue's parked poll; says whether it was. */
  unpark(cell: QueueCell, waiter: Waiter): boolean {
    if (cell.parked?.waiter !== waiter) return false;
    this.take(cell);
    return true;
  }

  /**
   * Advances the wheel to `now`: the ids of the queues whose parked poll is due a
   * heartbeat (each asked for once), and drops entries for polls already completed.
   */
  dueHeartbeats(now: number): string[] {
    const second = Math.floor(now / 1000);
    const due: string[] = [];
    for (let s = this.lastWheelSecond; s <= second + 1; s++) {
      const bucket = this.wheel.get(s);
      if (!bucket) continue;
      const later: QueueCell[] = [];
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
    return due;
  }

  /** Completes every parked poll with what its queue holds (at shutdown). */
  releaseAll(cells: Iterable<QueueCell>): void {
    for (const cell of cells) {
      const parked = this.take(cell);
      if (parked) parked.waiter.deliver(renderEvents(cell.ctx.id, cell.ctx.events));
    }
  }
}
