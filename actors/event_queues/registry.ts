/**
 * The registry of event queues: one cell per queue, found by queue id or by
 * organization and user, and tombstones saying why recently dropped queues are gone.
 * Cells come into being from `QueueRegistered` facts or snapshots (`adopt`) and leave
 * with `QueuesDropped` facts (`remove`).
 */
import { ApiError, badQueue } from '../shared/errors.js';
import { storedCapabilities } from '../core/capabilities.js';
import type { QueueActor, QueueContext, SequencedEvent } from './queue_actor.js';


/** A parked long-poll, provided by the transport. */
export interface Waiter {
  /** Sends the reply body (status 200 unless given); called at most once. */
  deliver(body: string, status?: number): void;
}

/** A parked poll as its queue's cell holds it. */
export interface Parked {
  waiter: Waiter;
  /** Unix ms at which a heartbeat is due; Infinity once it has been asked for. */
  heartbeatAt: number;
}

/**
 * A queue as code outside this module holds it: a handle to route events to, and the
 * queue's data to read. Every `Cell` is a `QueueCell`; only this module changes one.
 */
export interface Cell {
  readonly ctx: Readonly<QueueContext>;
}

/**
 * A queue: its data, its actor while it is active, and what the fan-out path needs
 * beside it (the parked poll, events staged for the next flush). Fan-out holds cells,
 * not queue ids, so delivering to a queue costs no string-keyed lookups.
 */
export interface QueueCell extends Cell {
  readonly ctx: QueueContext;
  /** The queue's actor while it runs; undefined while passivated (see `idle.ts`). */
  actor: QueueActor | undefined;
  /** Unix ms of the last message to the actor, for passivation (-Infinity before the first). */
  usedAt: number;
  /** The last two messages to the actor came within `HOT_QUEUE_MS` of each other: its parked poll keeps it awake (see `idle.ts`). */
  hot: boolean;
  /** Unix ms of the last time a request was attached to the queue: its idle clock. Set only by `markActive`. */
  lastActive: number;
  /** The parked long-poll, if any (see `parked_polls.ts`). */
  parked: Parked | undefined;
  /** Events waiting for the next flush; undefined when none (see `fanout.ts`). */
  staged: SequencedEvent[] | undefined;
  /** Set once the queue is dropped, so that a staged delivery to it is skipped. */
  dropped: boolean;
}

const MAX_TOMBSTONES = 10000;

const NO_QUEUES: ReadonlySet<QueueCell> = new Set();

export class QueueRegistry {
  private readonly cells = new Map<string, QueueCell>();
  /** Queues by organization, then user: numeric keys, no string building on the fan-out path. */
  private readonly byUser = new Map<number, Map<number, Set<QueueCell>>>();
  /** The copies of event-type lists, narrows and client names that queues share. */
  private readonly shared = new SharedValues();
  /** Why recently dropped queues are gone, for a clearer `BAD_EVENT_QUEUE_ID`. */
  private readonly tombstones = new Map<string, string>();

  get size(): number {
    return this.cells.size;
  }

  /** Number of queues in one organization. */
  sizeOf(org: number): number {
    let n = 0;
    for (const cells of this.byUser.get(org)?.values() ?? []) n += cells.size;
    return n;
  }

  get(queueId: string): QueueCell | undefined {
    return this.cells.get(queueId);
  }

  has(queueId: string): boolean {
    return this.cells.has(queueId);
  }

  /** Every queue. */
  all(): IterableIterator<QueueCell> {
    return this.cells.values();
  }

  /** The queues with these ids that still exist. */
  cellsOf(queueIds: string[]): QueueCell[] {
    const out: QueueCell[] = [];
    for (const id of queueIds) {
      const cell = this.cells.get(id);
      if (cell) out.push(cell);
    }
    return out;
  }

  /** The queues of one user, for fan-out. */
  queuesOf(org: number, userId: number): Iterable<QueueCell> {
    return this.byUser.get(org)?.get(userId) ?? NO_QUEUES;
  }

  /** A queue the user owns, or `BAD_EVENT_QUEUE_ID` (saying why, if it was dropped lately). */
  access(queueId: string, org: number, userId: number): QueueCell {
    const cell = this.cells.get(queueId);
    if (!cell || cell.ctx.org !== org || cell.ctx.user_id !== userId) {
      const why = this.tombstones.get(queueId);
      if (why && cell === undefined) throw new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId} (${why})`, { queue_id: queueId });
      throw badQueue(queueId);
    }
    return cell;
  }

  /**
   * Takes in a queue; its idle clock starts at `now`. Its event types, narrow and client
   * name are read-only and nearly always one of a few values, so queues share one copy of
   * each (a few hundred thousand queues of the same client would otherwise hold as many
   * arrays and strings alike).
   */
  adopt(ctx: QueueContext, now: number): QueueCell {
    ctx.event_types = ctx.event_types === null ? null : this.shared.list(ctx.event_types);
    ctx.narrow = this.shared.list(ctx.narrow);
    ctx.client = this.shared.text(ctx.client);
    const cell: QueueCell = { ctx, actor: undefined, usedAt: -Infinity, hot: false, lastActive: now, parked: undefined, staged: undefined, dropped: false };
    this.cells.set(ctx.id, cell);
    let users = this.byUser.get(ctx.org);
    if (!users) this.byUser.set(ctx.org, (users = new Map()));
    let cells = users.get(ctx.user_id);
    if (!cells) users.set(ctx.user_id, (cells = new Set()));
    cells.add(cell);
    return cell;
  }

  /**
   * Forgets a queue, remembering `reason` for later requests. The cell is marked dropped
   * and its staged events discarded, so that the fan-out skips it. Returns the cell, or
   * undefined when there was no such queue; its actor and parked poll are the caller's.
   */
  remove(queueId: string, reason: string): QueueCell | undefined {
    const cell = this.cells.get(queueId);
    if (!cell) return undefined;
    this.cells.delete(queueId);
    this.byUser.get(cell.ctx.org)?.get(cell.ctx.user_id)?.delete(cell);
    cell.dropped = true;
    cell.staged = undefined;
    this.tombstones.set(queueId, reason);
    if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.keys().next().value as string);
    return cell;
  }

  /** The data of every queue. */
  contexts(): QueueContext[] {
    return [...this.cells.values()].map((c) => c.ctx);
  }
}

/** How many distinct values `SharedValues` keeps of each kind before it starts afresh (a bound, not a cache size anyone tunes). */
const MAX_SHARED = 10000;

/**
 * One copy of each value that many queues hold alike: lists by their JSON, strings by
 * themselves. The lists are frozen, since queues only read them.
 */
class SharedValues {
  private readonly lists = new Map<string, readonly unknown[]>();
  private readonly texts = new Map<string, string>();

  list<T>(value: T[]): T[] {
    const key = JSON.stringify(value);
    let kept = this.lists.get(key);
    if (kept === undefined) {
      if (this.lists.size >= MAX_SHARED) this.lists.clear();
      this.lists.set(key, (kept = Object.freeze([...value])));
    }
    return kept as T[];
  }

  text(value: string): string {
    const kept = this.texts.get(value);
    if (kept !== undefined) return kept;
    if (this.texts.size >= MAX_SHARED) this.texts.clear();
    this.texts.set(value, value);
    return value;
  }
}

/**
 * The context of a queue read from a snapshot, with exactly the members a
 * `QueueContext` has. Snapshots written before the idle clock moved off the context
 * carry a `last_active`; it is left behind (a restored queue's idle clock starts afresh).
 */
export function restoredContext(stored: QueueContext): QueueContext {
  return {
    id: stored.id,
    org: stored.org,
    user_id: stored.user_id,
    event_types: stored.event_types,
    narrow: stored.narrow,
    client: stored.client,
    events: stored.events,
    next_id: stored.next_id,
    newest_pruned_id: stored.newest_pruned_id,
    lifespan_ms: stored.lifespan_ms,
    ...storedCapabilities(stored),
    seq: stored.seq,
  };
}
