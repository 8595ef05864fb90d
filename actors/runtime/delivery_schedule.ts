/**
 * When scheduled messages and reminders are due: one min-heap of every pending item
 * of every organization, ordered by delivery time, and one timer armed for the
 * earliest. The heap is derived state, never logged or snapshotted: it is rebuilt
 * from the user actors' records after a restore, and kept up to date from the facts
 * that add or reschedule an item. Entries are not removed when an item is deleted,
 * delivered or rescheduled; an entry is checked against its record when it comes
 * due and dropped if it no longer matches (lazy deletion).
 *
 * The schedule decides nothing itself: for each due item it asks the owner's user
 * actor to deliver it (`DELIVER_SCHEDULED`), which checks again that it is pending
 * and due. Asking twice is harmless.
 */
import type { Logger } from '../core/logger.js';
import type { UserContext } from '../kinds/user.js';
import { pendingTouchedBy } from '../areas/scheduled_messages.js';

/** The longest the timer sleeps before looking again (also bounds the effect of a clock jump). */
const MAX_SLEEP_MS = 3600_000;

/** One pending delivery. */
interface Entry {
  /** Unix seconds. */
  due: number;
  org: number;
  user_id: number;
  id: number;
}

/** What the schedule reads and does, given by the runtime. */
export interface DeliveryScheduleHost {
  /** Milliseconds now, by the injected clock. */
  nowMs(): number;
  user(org: number, userId: number): UserContext | undefined;
  /** Every user actor's context, with its organization. */
  users(): Iterable<{ org: number; user: UserContext }>;
  /** Asks the owner's actor to deliver the item; resolves with the new message id, or null when there was nothing to deliver. */
  deliver(org: number, userId: number, id: number): Promise<{ message_id: number | null }>;
  log: Logger;
}

const before = (a: Entry, b: Entry): boolean => a.due < b.due || (a.due === b.due && (a.org < b.org || (a.org === b.org && (a.user_id < b.user_id || (a.user_id === b.user_id && a.id < b.id)))));

export class DeliverySchedule {
  private heap: Entry[] = [];
  /** The heap must be rebuilt from the user actors before use (at first, and after a restore). */
  private stale = true;
  private started = false;
  private timer: NodeJS.Timeout | null = null;
  /** The due time the timer is armed for. */
  private armedFor = Infinity;

  constructor(private readonly host: DeliveryScheduleHost) {}

  /** Entries in the heap, stale ones included (for tests). */
  get size(): number {
    return this.heap.length;
  }

  /** Looks at a fact just applied: an item added or rescheduled gets an entry. */
  observe(fact: { type: string }): void {
    const key = pendingTouchedBy(fact);
    if (!key || this.stale) return;
    const r = this.host.user(key.org, key.user_id)?.scheduled.get(key.id);
    if (!r || r.failed) return;
    this.push({ due: r.deliver_at, org: key.org, user_id: key.user_id, id: key.id });
    if (r.deliver_at < this.armedFor) this.arm();
  }

  /** State was replaced (a snapshot restored): rebuild before the next use. */
  invalidate(): void {
    this.stale = true;
    this.heap = [];
  }

  /** Arms the timer; from now on due items are delivered without being asked. */
  start(): void {
    this.started = true;
    this.arm();
  }

  stop(): void {
    this.started = false;
    this.disarm();
  }

  /**
   * Delivers every item due by the clock now, each through its owner's actor.
   * Resolves with how many were delivered (failed ones not counted) once all are decided.
   */
  async sweep(): Promise<number> {
    this.rebuild();
    const now = Math.floor(this.host.nowMs() / 1000);
    const due: Entry[] = [];
    const seen = new Set<string>();
    while (this.heap.length > 0 && this.heap[0].due <= now) {
      const e = this.pop();
      const key = `${e.org}/${e.user_id}/${e.id}`;
      if (this.current(e) && !seen.has(key)) {
        seen.add(key);
        due.push(e);
      }
    }
    const results = await Promise.allSettled(due.map((e) => this.host.deliver(e.org, e.user_id, e.id)));
    let delivered = 0;
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        if (r.value.message_id !== null) delivered++;
      } else {
        const { org, user_id, id } = due[i];
        const error = (r.reason as Error)?.message ?? String(r.reason);
        this.host.log.error({ event: 'scheduled.delivery_failed', org, user_id, id, error }, `scheduled delivery ${org}/${user_id}/${id} failed: ${error}`);
      }
    });
    this.arm();
    return delivered;
  }

  /** Whether an entry still describes a pending item. */
  private current(e: Entry): boolean {
    const r = this.host.user(e.org, e.user_id)?.scheduled.get(e.id);
    return r !== undefined && !r.failed && r.deliver_at === e.due;
  }

  private rebuild(): void {
    if (!this.stale) return;
    this.heap = [];
    for (const { org, user } of this.host.users()) {
      for (const r of user.scheduled.values()) if (!r.failed) this.push({ due: r.deliver_at, org, user_id: user.user_id, id: r.id });
    }
    this.stale = false;
  }

  /** Sets the one timer for the earliest pending entry. */
  private arm(): void {
    if (!this.started) return;
    this.rebuild();
    while (this.heap.length > 0 && !this.current(this.heap[0])) this.pop();
    if (this.heap.length === 0) {
      this.disarm();
      return;
    }
    const due = this.heap[0].due;
    if (this.timer !== null && this.armedFor === due) return;
    this.disarm();
    const delay = Math.min(MAX_SLEEP_MS, Math.max(0, due * 1000 - this.host.nowMs()));
    this.armedFor = due;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.armedFor = Infinity;
      void this.sweep();
    }, delay);
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.armedFor = Infinity;
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }

  private pop(): Entry {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}
