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
 *   The exception is a hot queue, one whose last two batches came less than
 *   `HOT_QUEUE_MS` apart: a busy client's poll parks again a moment after each batch,
 *   and stopping and starting its actor every time would cost about 4 us per reply
 *   (0.4 replies per message in the send bench). Its parked poll keeps the actor awake
 *   until the sweep finds it quiet for `HOT_QUEUE_MS`; a queue that hears from nobody
 *   but its heartbeat (every 45-55 s) is never hot.
 */
import type { Supervisor } from '../core/supervisor.js';
import { queueLogic, type QueueEvent } from './queue_actor.js';
import type { QueueCell } from './registry.js';

/** Batches closer together than this make a queue hot: its parked poll leaves its actor awake. */
export const HOT_QUEUE_MS = 1000;

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
    const now = this.opts.now();
    cell.hot = now - cell.usedAt < HOT_QUEUE_MS;
    cell.usedAt = now;
    cell.actor.send(event);
  }

  /** Passivates a queue whose poll is parked, unless it is hot. */
  parked(cell: QueueCell): void {
    if (!cell.hot) this.passivate(cell);
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
   * the others that have been unused for a while, and of parked queues that are no
   * longer hot.
   */
  sweep(cells: Iterable<QueueCell>, now: number): string[] {
    const idle: string[] = [];
    for (const cell of cells) {
      if (cell.parked) {
        if (cell.actor && now - cell.usedAt >= HOT_QUEUE_MS) {
          cell.hot = false;
          this.passivate(cell);
        }
        continue;
      }
      if (now - cell.lastActive > cell.ctx.lifespan_ms) idle.push(cell.ctx.id);
      else if (cell.actor && now - cell.usedAt >= this.opts.passivateAfterMs) this.passivate(cell);
    }
    return idle;
  }
}
