/**
 * Taking, listing, pruning and loading snapshots.
 *
 * A snapshot is fuzzy: actors are encoded one by one (large ones in slices) across
 * event-loop turns, so request handling never stalls for long. Each actor's chunk
 * records the seq it reflects, and replay after a restore skips, per actor, the facts
 * it already holds. The file is written to a temporary name, fsync'd, and renamed into
 * place (then the directory is fsync'd) only once the log is durable through every
 * fact the snapshot reflects.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import type { Logger } from '../actors/core/logger.js';
import { fsyncDir, listSegments } from './log.js';
import { encodeChunk, encodeHeader, encodeTrailer, verifySnapshot, walkSnapshot, type ByteSource, type SnapshotSummary, type VerifiedSnapshot } from './snapshot_format.js';

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

const SNAPSHOT = /^snap-(\d{16})\.psnap$/;

export function snapshotName(startSeq: number): string {
  return `snap-${String(startSeq).padStart(16, '0')}.psnap`;
}

/** Snapshot files in a directory, newest first. */
export function listSnapshots(dir: string): Array<{ name: string; path: string; startSeq: number; size: number; mtimeMs: number }> {
  return readdirSync(dir)
    .map((name) => ({ name, m: SNAPSHOT.exec(name) }))
    .filter((x) => x.m !== null)
    .map((x) => {
      const path = join(dir, x.name);
      const st = statSync(path);
      return { name: x.name, path, startSeq: Number(x.m![1]), size: st.size, mtimeMs: st.mtimeMs };
    })
    .sort((a, b) => b.startSeq - a.startSeq);
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
 * Writes a snapshot of `state` into `dir`. `drain` must resolve once the log is
 * durable through everything appended so far.
 */
export async function writeSnapshot(dir: string, state: Snapshottable, drain: () => Promise<void>, opts: SnapshotWriteOptions = defaultWriteOptions): Promise<SnapshotInfo> {
  // Every fact up to deliveredSeq is applied to every actor and delivered to every queue.
  const started = performance.now();
  const startSeq = state.deliveredSeq;
  const createdAt = opts.now();
  const final = join(dir, snapshotName(startSeq));
  const temp = `${final}.${process.pid}.tmp`;
  const file = await open(temp, 'w');
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
    for (let off = 0; off < buf.length; ) off += (await file.write(buf, off, buf.length - off)).bytesWritten;
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
    await file.sync();
    await file.close();
    renameSync(temp, final);
    fsyncDir(dir);
    return { path: final, startSeq, endSeq, bytes, chunks, longestSliceMs, durationMs: performance.now() - started };
  } catch (err) {
    await file.close().catch(() => undefined);
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * Keeps the newest `keep` snapshots, and deletes log segments that even the oldest
 * kept snapshot no longer needs. The active (last) segment is never deleted.
 */
export async function pruneSnapshots(dir: string, keep: number, log: Logger): Promise<void> {
  // Unlinking files of hundreds of MB can take a while: off the event loop.
  const snaps = listSnapshots(dir);
  for (const old of snaps.slice(keep)) {
    await rm(old.path);
    log.info({ event: 'snapshot.pruned', snapshot: old.name }, `snapshot: removed old snapshot ${old.name}`);
  }
  const kept = snaps.slice(0, keep);
  if (kept.length === 0) return;
  const oldestCovered = kept[kept.length - 1].startSeq;
  const segments = listSegments(dir);
  for (let i = 0; i + 1 < segments.length; i++) {
    if (segments[i + 1].firstSeq - 1 <= oldestCovered) {
      await rm(join(dir, segments[i].name));
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

/** A snapshot file open for reading by position. */
type SnapshotFile = ByteSource & { close(): void };

/**
 * Opens a snapshot file for reading by position, or says why it cannot be. Never read
 * whole: a snapshot may be larger than a buffer can be (2 GiB for one read) or than the
 * heap can spare.
 */
function openSnapshotFile(path: string): SnapshotFile | string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return `cannot be read: ${(err as Error).message}`;
  }
  const size = fstatSync(fd).size;
  return {
    size,
    read(position, length, scratch) {
      const into = scratch && scratch.length >= length ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
      for (let done = 0; done < length; ) {
        const n = readSync(fd, into, done, length - done, position + done);
        if (n === 0) throw new Error(`${path} ended at ${position + done} bytes while reading ${length} at ${position} (changed while read?)`);
        done += n;
      }
      return into;
    },
    close: () => closeSync(fd),
  };
}

/** Walks a snapshot file (see `walkSnapshot`), closing it at the end. A read that fails (or an `onChunk` that throws) throws. */
export function* walkSnapshotFile(path: string, onChunk?: (chunk: unknown) => void): Generator<void, SnapshotSummary | string> {
  const file = openSnapshotFile(path);
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
