/**
 * What the `capacity` scenario reads from a server between its intervals of sends: the
 * data directory's disk use, a metric from `/metrics`, and cold reads (`GET /messages`
 * 100 messages before an anchor in the oldest part of the history, each anchor a
 * different one, so that no read is served from what an earlier read touched).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { apiRequest, expectSuccess, type Credentials } from './api.js';
import type { Connection } from './client.js';
import { nowMs, percentile } from './stats.js';

const MiB = 2 ** 20;

/** The data directory's size in MiB: everything, the log segments (`.plog`), the newest snapshot (`.psnap`). */
export interface DiskUse {
  diskMiB: number;
  logMiB: number;
  snapshotMiB: number;
  /** The newest snapshot's start seq (in its name), or -1 when there is none. */
  snapshotSeq: number;
}

/** Sums the files under `dir` (a snapshot being written and removed meanwhile is skipped). */
export function diskUse(dir: string): DiskUse {
  let total = 0;
  let log = 0;
  let snapshot = { bytes: 0, seq: -1 };
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    let size: number;
    try {
      size = statSync(join(entry.parentPath, entry.name)).size;
    } catch {
      continue;
    }
    total += size;
    if (entry.name.endsWith('.plog')) log += size;
    const snap = /(\d+)\.psnap$/.exec(entry.name);
    if (snap && Number(snap[1]) > snapshot.seq) snapshot = { bytes: size, seq: Number(snap[1]) };
  }
  return { diskMiB: total / MiB, logMiB: log / MiB, snapshotMiB: snapshot.bytes / MiB, snapshotSeq: snapshot.seq };
}

/** One gauge or counter without labels from a `/metrics` scrape, or NaN. */
export async function metric(conn: Connection, name: string): Promise<number> {
  const res = await conn.send(apiRequest(conn, null, 'GET', '/metrics'));
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(res.body);
  return m ? Number(m[1]) : NaN;
}

/** Cold-read latencies in ms: p50, p99, max over `reads`. */
export interface ColdRead {
  p50: number;
  p99: number;
  max: number;
  reads: number;
}

/**
 * `reads` times `GET /messages` with num_before=100 before an anchor picked by `random`
 * among `ids` (the id of every `perId`-th message sent, in order) within the oldest tenth
 * of them, and with at least 100 messages before it; each read must return 100 or more
 * messages (those before the anchor, and the anchor).
 */
export async function coldReads(conn: Connection, who: Credentials, ids: readonly number[], perId: number, reads: number, random: () => number): Promise<ColdRead> {
  const skip = Math.ceil(100 / perId);
  if (ids.length <= skip) throw new Error(`cold reads need more than ${skip * perId} messages sent`);
  const upTo = Math.max(skip + 1, Math.ceil(ids.length / 10));
  const ms: number[] = [];
  for (let i = 0; i < reads; i++) {
    const anchor = ids[skip + Math.floor(random() * (upTo - skip))];
    const started = nowMs();
    const res = await conn.send(apiRequest(conn, who, 'GET', '/api/v1/messages', { anchor, num_before: 100, num_after: 0 }));
    ms.push(nowMs() - started);
    const got = expectSuccess(res, `GET /messages anchor=${anchor}`).messages.length as number;
    if (got < 100) throw new Error(`GET /messages anchor=${anchor} num_before=100: ${got} messages, expected 100 or more`);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1], reads };
}
