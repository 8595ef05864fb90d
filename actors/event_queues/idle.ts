/**
 * Idle queues: the idle clock that collects a queue nobody polls, and passivation.
 *
 * - A queue's idle clock (`QueueCell.lastActive`) is the last time a request was
 *   attached to it: a registration, a poll, a parked poll answered or abandoned.
 *   `markActive` is the only thing that moves it. It is bookkeeping beside the queue,
 *   neither actor state nor snapshot data: a restored queue's clock starts afresh.
 * - Passivation: a queue's XState actor is stopped when the queue has been unused for a
 *   while and kept as plain data, and started again on its next message, as Orleans
 *   deactivates idle grains. An idle queue then costs a few hundred bytes, not an actor.
 *   A queue whose poll is parked is passivated at once (`EventQueues.poll`), however
 *   recently it was used: a parked poll waits for a batch or a heartbeat, tens of
 *   seconds, and a million of them must fit in memory. A batch starts the actor again.
 */
import type { Supervisor } from '../core/supervisor.js';
import { queueLogic, type QueueEvent } from './queue_actor.js';
import type { QueueCell } from './registry.js';

/** Restarts a queue's idle clock: a request was attached to it at `now`. */
export function markActive(cell: QueueCell, now: number): void {
  cell.lastActive = now;
}

export interface QueueActorOptions {
  now(): number;
  /** A queue unused for this long gives up its actor until its next message. */
  passivateAfterMs: number;
}

/** The actors of the queues: started on a queue's first message, stopped when it idles. */
export class QueueActors {
  constructor(
    private readonly system: Supervisor,
    private readonly opts: QueueActorOptions,
  ) {}

  /** Sends a message to a queue's actor, starting it if the queue was passivated. */
  send(cell: QueueCell, event: QueueEvent): void {
    if (!cell.actor) {
      cell.actor = this.system.spawn(queueLogic, cell.ctx);
    }
    cell.usedAt = this.opts.now();
    cell.actor.send(event);
  }

  /** Stops a queue's actor, if it runs; its data stays on the cell. */
  passivate(cell: QueueCell): void {
    if (!cell.actor) return;
    this.system.stop(cell.actor);
    cell.actor = undefined;
  }

  /** Number of these queues whose actor is running. */
  activeCount(cells: Iterable<QueueCell>): number {
    let n = 0;
    for (const cell of cells) if (cell.actor) n++;
    return n;
  }

  /**
   * The ids of the queues that have had no request attached for longer than their
   * lifespan (and no poll parked), for the caller to drop; passivates the actors of
   * the others that have been unused for a while.
   */
  sweep(cells: Iterable<QueueCell>, now: number): string[] {
    const idle: string[] = [];
    for (const cell of cells) {
      if (cell.parked) continue;
      if (now - cell.lastActive > cell.ctx.lifespan_ms) idle.push(cell.ctx.id);
      else if (cell.actor && now - cell.usedAt >= this.opts.passivateAfterMs) this.passivate(cell);
    }
    return idle;
  }
}
