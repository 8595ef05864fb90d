/**
 * When the server takes a snapshot on its own.
 *
 * - By time: `intervalMs` after the last one, if anything changed since.
 * - By count: once the facts since the last snapshot reach `everyRecords`, and also
 *   `growthPercent` percent of the facts the last snapshot covered. A snapshot encodes
 *   the whole state, so with a fixed count its cost per fact grows with the state (at
 *   800,000 messages, a snapshot every 100,000 facts took a tenth of the server's CPU
 *   and set the send latency's p99); the proportional rule keeps the cost per fact
 *   bounded, as Redis does for its AOF rewrite (`auto-aof-rewrite-percentage`), and
 *   replay after a crash stays within that proportion of the state.
 * - State that is never logged (presence) counts for the time rule only: when it
 *   changed, a snapshot is due `intervalMs` after the last one even if no fact was
 *   logged, because a snapshot is the only thing that keeps it.
 */
export interface SnapshotPolicy {
  /** 0: never by time. */
  intervalMs: number;
  /** 0: never by count. */
  everyRecords: number;
  /** 0: a fixed count only. */
  growthPercent: number;
}

export interface SnapshotClock {
  /** The newest seq now, and the seq the last snapshot (or the start) reflected. */
  seq: number;
  lastSeq: number;
  /** Milliseconds since the last snapshot (or the start). */
  sinceMs: number;
  /** State that is never logged changed since the last snapshot. */
  volatileChanged?: boolean;
}

export function snapshotDue(c: SnapshotClock, p: SnapshotPolicy): boolean {
  const since = c.seq - c.lastSeq;
  if (since <= 0 && !c.volatileChanged) return false;
  if (p.intervalMs > 0 && c.sinceMs >= p.intervalMs) return true;
  if (since <= 0 || p.everyRecords <= 0) return false;
  return since >= Math.max(p.everyRecords, Math.floor((c.lastSeq * p.growthPercent) / 100));
}
