/**
 * Taking, listing, pruning and loading snapshots, over a `SnapshotStore`
 * (`snapshot_store.ts`: a directory here).
 *
 * A snapshot is fuzzy: actors are encoded one by one (large ones in slices) across
 * event-loop turns, so request handling never stalls for long. Each actor's chunk
 * records the seq it reflects, and replay after a restore skips, per actor, the facts
 * it already holds. A snapshot is committed (made durable and visible whole) only once
 * the log is durable through every fact it reflects.
 */
import { crc32 } from 'node:zlib';
import { basename, dirname, join } from 'node:path';
import { rm } from 'node:fs/promises';
import type { Logger } from '../actors/core/logger.js';
import { listSegments } from './log.js';
import { encodeChunk, encodeHeader, encodeTrailer, verifySnapshot, walkSnapshot, type SnapshotSummary, type VerifiedSnapshot } from './snapshot_format.js';
import { DirectorySnapshots, openSnapshotFile, snapshotName, type SnapshotEntry, type SnapshotReader, type SnapshotStore } from './snapshot_store.js';

export { DirectorySnapshots, snapshotName, type SnapshotEntry, type SnapshotStore } from './snapshot_store.js';

/**
 * What a snapshot is taken of: state that hands out its chunks (each actor kind
 * encodes its own) and takes them back. This module only frames, checksums, writes,
 * lists and prunes; it knows no actor's fields.
 */
export interface Snapshottable {
  /** Every fact up to this seq is applied everywhere and delivered. */
  readonly deliveredSeq: number;
  /** The newest seq applied. */
  readonly lastSeq: number;
  /** The state's chunks, lazily: each thunk makes one chunk when called. */
  persisted(sliceSize: number): Iterable<() => { k: string }>;
  /** Takes back one chunk, written in snapshot format `version`. */
  restoreChunk(chunk: { k: string }, version: number): void;
  /** Every fact up to `seq` is reflected; new facts continue after it. */
  restoredThrough(seq: number): void;
}

/** The snapshot files of a directory, newest first. */
export function listSnapshots(dir: string): SnapshotEntry[] {
  return new DirectorySnapshots(dir).list();
}

/** Tunables of snapshot writing. */
export interface SnapshotWriteOptions {
  /** Messages (or queues) per chunk of a large actor. */
  sliceSize: number;
  /** Yield to the event loop once encoding has run this long. */
  maxSliceMs: number;
  now(): number;
}

export const defaultWriteOptions: SnapshotWriteOptions = { sliceSize: 2000, maxSliceMs: 4, now: () => Date.now() };

/** What a finished snapshot covers. */
export interface SnapshotInfo {
  path: string;
  startSeq: number;
  endSeq: number;
  bytes: number;
  chunks: number;
  /** The longest stretch spent encoding without yielding, in ms. */
  longestSliceMs: number;
  /** From start to the file in place, in ms. */
  durationMs: number;
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Writes a snapshot of `state` into `store`. `drain` must resolve once the log is
 * durable through everything appended so far.
 */
export async function writeSnapshot(store: SnapshotStore, state: Snapshottable, drain: () => Promise<void>, opts: SnapshotWriteOptions = defaultWriteOptions): Promise<SnapshotInfo> {
  // Every fact up to deliveredSeq is applied to every actor and delivered to every queue.
  const started = performance.now();
  const startSeq = state.deliveredSeq;
  const createdAt = opts.now();
  const upload = await store.create(snapshotName(startSeq));
  let crc = 0;
  let bytes = 0;
  let chunks = 0;
  let longestSliceMs = 0;
  // Encoded chunks wait here and are written off the event loop between slices: a
  // synchronous write can block for tens of ms once the kernel throttles dirty pages.
  let pending: Buffer[] = [];
  const add = (buf: Buffer): void => {
    pending.push(buf);
    crc = crc32(buf, crc);
    bytes += buf.length;
  };
  const flushPending = async (): Promise<void> => {
    const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending);
    pending = [];
    await upload.write(buf);
  };
  try {
    add(encodeHeader({ startSeq, createdAt }));
    let sliceStart = performance.now();
    for (const make of state.persisted(opts.sliceSize)) {
      add(encodeChunk(make()));
      chunks++;
      const elapsed = performance.now() - sliceStart;
      if (elapsed >= opts.maxSliceMs) {
        longestSliceMs = Math.max(longestSliceMs, elapsed);
        await flushPending();
        await yieldToLoop();
        sliceStart = performance.now();
      }
    }
    longestSliceMs = Math.max(longestSliceMs, performance.now() - sliceStart);
    const endSeq = state.lastSeq;
    // Never let a snapshot reflect a fact that the log could still lose.
    await drain();
    add(encodeTrailer(endSeq, chunks, crc));
    await flushPending();
    const path = await upload.commit();
    return { path, startSeq, endSeq, bytes, chunks, longestSliceMs, durationMs: performance.now() - started };
  } catch (err) {
    await upload.abort();
    throw err;
  }
}

/**
 * Keeps the newest `keep` snapshots of `store`, and deletes the segments of the log in
 * `logDir` that even the oldest kept snapshot no longer needs. The active (last)
 * segment is never deleted.
 */
export async function pruneSnapshots(store: SnapshotStore, logDir: string, keep: number, log: Logger): Promise<void> {
  const snaps = store.list();
  for (const old of snaps.slice(keep)) {
    await store.remove(old.name);
    log.info({ event: 'snapshot.pruned', snapshot: old.name }, `snapshot: removed old snapshot ${old.name}`);
  }
  const kept = snaps.slice(0, keep);
  if (kept.length === 0) return;
  const oldestCovered = kept[kept.length - 1].startSeq;
  const segments = listSegments(logDir);
  for (let i = 0; i + 1 < segments.length; i++) {
    if (segments[i + 1].firstSeq - 1 <= oldestCovered) {
      // Unlinking files of hundreds of MB can take a while: off the event loop.
      await rm(join(logDir, segments[i].name));
      log.info({ event: 'log.segment_pruned', segment: segments[i].name, covered_by: kept[kept.length - 1].name }, `snapshot: removed log segment ${segments[i].name}, covered by ${kept[kept.length - 1].name}`);
    }
  }
}

/** Installs a snapshot held in memory into empty state. Returns the seq replay starts after. */
export function loadSnapshot(state: Snapshottable, snap: VerifiedSnapshot): number {
  for (const chunk of snap.chunks) state.restoreChunk(chunk as { k: string }, snap.header.version);
  state.restoredThrough(snap.endSeq);
  return snap.header.startSeq;
}

/** Walks a stored snapshot (see `walkSnapshot`), closing it at the end. A read that fails (or an `onChunk` that throws) throws. */
export function* walkStoredSnapshot(store: SnapshotStore, name: string, onChunk?: (chunk: unknown) => void): Generator<void, SnapshotSummary | string> {
  return yield* walkOpened(store.open(name), onChunk);
}

/** Walks a snapshot file (see `walkSnapshot`), closing it at the end (tools and tests that name a file). */
export function* walkSnapshotFile(path: string, onChunk?: (chunk: unknown) => void): Generator<void, SnapshotSummary | string> {
  return yield* walkStoredSnapshot(new DirectorySnapshots(dirname(path)), basename(path), onChunk);
}

function* walkOpened(file: SnapshotReader | string, onChunk?: (chunk: unknown) => void): Generator<void, SnapshotSummary | string> {
  if (typeof file === 'string') return file;
  try {
    return yield* walkSnapshot(file, onChunk);
  } finally {
    file.close();
  }
}

/**
 * Reads and verifies a snapshot file, with its chunks decoded into memory (`decode`
 * false: only checked). For tools and tests on snapshots that fit in memory; recovery
 * and `parley verify` walk the file instead.
 */
export function readSnapshot(path: string, decode = true): VerifiedSnapshot | string {
  const file = openSnapshotFile(path);
  if (typeof file === 'string') return file;
  try {
    return verifySnapshot(file, decode);
  } finally {
    file.close();
  }
}
