/**
 * Opening a data directory: take its lock, restore the newest snapshot that verifies,
 * replay the log after it through the runtime's reducers, and attach a log writer
 * for new facts. Also schedules snapshots while the server runs.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stamped } from '../actors/areas/index.js';
import type { Logger } from '../actors/core/logger.js';
import type { FactSink } from '../actors/runtime/runtime.js';
import { listSegments, LogCorruption, LogWriter, NO_LOG_OBSERVER, readLogInSlices, runSlices, runSlicesAsync, truncateTorn, type FsyncPolicy, type LogObserver } from './log.js';
import { defaultWriteOptions, listSnapshots, loadSnapshot, pruneSnapshots, readSnapshot, writeSnapshot, type Snapshottable, type SnapshotInfo } from './snapshot.js';

/** State that recovery rebuilds: it takes snapshot chunks back and replays facts. */
export interface Recoverable extends Snapshottable {
  /** Applies a fact read back from the log. */
  replay(stamped: Stamped): void;
  /** Stops whatever the state runs (actors, timers). */
  stop(): void;
}

export interface StoreOptions {
  dataDir: string;
  fsync: FsyncPolicy;
  fsyncBatchMs: number;
  segmentBytes: number;
  /** Start even if a record in the middle of the log is corrupt, skipping past it. */
  skipCorrupt: boolean;
  /** Snapshots to keep; older ones (and log they alone cover) are deleted. */
  keepSnapshots?: number;
  /** Replay only up to this seq (for restore tooling). */
  toSeq?: number;
  log: Logger;
  onFatal(error: Error): void;
  /** Told of the log's group commits and of every snapshot taken (metrics); nothing by default. */
  observer?: StoreObserver;
}

/** What a data directory reports of its work: the log's, and each snapshot written. */
export interface StoreObserver extends LogObserver {
  snapshotWritten(info: SnapshotInfo): void;
}

/** An observer that records nothing. */
export const NO_STORE_OBSERVER: StoreObserver = { ...NO_LOG_OBSERVER, snapshotWritten() {} };

/** A recovered data directory, ready to serve. */
export interface Store<R extends Recoverable = Recoverable> {
  /** The recovered state (the runtime). */
  runtime: R;
  writer: LogWriter;
  /** What recovery found, for logs and tools. */
  recovery: Recovery;
  /** Takes a snapshot now (one at a time), then prunes old ones. */
  snapshot(): Promise<SnapshotInfo>;
  /** Flushes the log and releases the lock. */
  close(): Promise<void>;
}

const LOCK = 'parley.pid';

/** Thrown when another live process owns the data directory. */
export class DataDirLocked extends Error {}

/** The pid of the live process that holds `dataDir`, if any. */
export function lockHolder(dataDir: string): number | undefined {
  const path = join(dataDir, LOCK);
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Loads the newest snapshot that verifies (or the one named), falling back to older ones. Returns the seq replay starts after. */
function restoreNewestSnapshot(state: Recoverable, dir: string, log: Logger, toSeq?: number, only?: string): { name: string | null; startSeq: number } {
  for (const snap of listSnapshots(dir)) {
    if (only !== undefined && snap.name !== only) continue;
    if (toSeq !== undefined && snap.startSeq > toSeq) continue;
    const verified = readSnapshot(snap.path);
    if (typeof verified === 'string') {
      log.error({ event: 'recovery.snapshot_invalid', snapshot: snap.name, reason: verified }, `store: snapshot ${snap.name} does not verify (${verified}); falling back to an older one`);
      continue;
    }
    if (toSeq !== undefined && verified.endSeq > toSeq) {
      log.info({ event: 'recovery.snapshot_skipped', snapshot: snap.name, end_seq: verified.endSeq, to_seq: toSeq }, `store: snapshot ${snap.name} reflects facts past seq ${toSeq}; trying an older one`);
      continue;
    }
    const startSeq = loadSnapshot(state, verified);
    log.info({ event: 'recovery.snapshot_loaded', snapshot: snap.name, start_seq: startSeq, seq: verified.endSeq }, `store: loaded snapshot ${snap.name} (seq ${startSeq}..${verified.endSeq})`);
    return { name: snap.name, startSeq };
  }
  return { name: null, startSeq: 0 };
}

/** What recovery found. */
export interface Recovery {
  snapshot: string | null;
  snapshotStartSeq: number;
  replayed: number;
  lastSeq: number;
  ms: number;
  tornAt?: { file: string; offset: number };
  /** Where the rest of the last segment was skipped after a corrupt record (`skipCorrupt`). */
  skippedAt?: { file: string; offset: number };
}

/** How to recover (see `recover`). */
export interface RecoverOptions {
  skipCorrupt: boolean;
  toSeq?: number;
  onlySnapshot?: string;
  log: Logger;
  onRecord?: (seq: number) => void;
  /** Facts replayed between two pauses, when recovering in slices. */
  sliceRecords?: number;
}

/**
 * Rebuilds state from a data directory into `state`: the newest snapshot that
 * verifies (or `onlySnapshot`), then the log after it, up to `toSeq`. Reads only.
 */
export function recover(state: Recoverable, dir: string, opts: RecoverOptions): Recovery {
  return runSlices(recoverInSlices(state, dir, opts));
}

/** `recover` as a generator that pauses every `opts.sliceRecords` facts replayed. */
export function* recoverInSlices(state: Recoverable, dir: string, opts: RecoverOptions): Generator<void, Recovery> {
  const started = Date.now();
  const snap = restoreNewestSnapshot(state, dir, opts.log, opts.toSeq, opts.onlySnapshot);
  if (opts.onlySnapshot !== undefined && snap.name === null) throw new Error(`snapshot ${opts.onlySnapshot} is missing, does not verify, or reflects facts past seq ${opts.toSeq}`);
  const segments = listSegments(dir);
  if (segments.length > 0 && segments[0].firstSeq > snap.startSeq + 1) {
    throw new LogCorruption(
      `the log starts at seq ${segments[0].firstSeq}, but ${snap.name ? `snapshot ${snap.name} covers only up to seq ${snap.startSeq}` : 'no snapshot verifies'}: records ${snap.startSeq + 1} to ${segments[0].firstSeq - 1} are missing`,
    );
  }
  const read = { afterSeq: snap.startSeq, toSeq: opts.toSeq, skipCorrupt: opts.skipCorrupt, log: opts.log, sliceRecords: opts.sliceRecords };
  const result = yield* readLogInSlices(dir, read, (s) => {
    state.replay(s);
    opts.onRecord?.(s.seq);
  });
  const lastSeq = Math.max(result.lastSeq, state.lastSeq);
  state.restoredThrough(lastSeq);
  return { snapshot: snap.name, snapshotStartSeq: snap.startSeq, replayed: result.records, lastSeq, ms: Date.now() - started, tornAt: result.tornAt, skippedAt: result.skippedAt };
}

/**
 * Opens (creating if needed) a data directory and recovers its state into what
 * `build` makes: `build` gets the sink that makes facts durable in this directory's
 * log, and returns empty state (the caller decides what state is; see `src/store.ts`).
 */
export function openStore<R extends Recoverable>(opts: StoreOptions, build: (sink: FactSink) => R): Store<R> {
  return runSlices(openInSlices(opts, build).recovered);
}

/** How recovery shares the event loop (`openStoreInSlices`). */
export interface Pacing {
  /** Facts replayed between two turns of the event loop. */
  sliceRecords: number;
  /** A test hook: a delay after each slice, to make a short recovery observable. */
  pauseMs?: number;
}

/**
 * `openStore` for a server that answers while it recovers: the lock is taken and the
 * (still empty) state made at once; `recover` then replays the log in slices with
 * turns of the event loop between them, and resolves with the store.
 */
export function openStoreInSlices<R extends Recoverable>(opts: StoreOptions, build: (sink: FactSink) => R, pacing: Pacing): { runtime: R; recover(): Promise<Store<R>> } {
  const opening = openInSlices(opts, build, pacing.sliceRecords);
  return { runtime: opening.runtime, recover: () => runSlicesAsync(opening.recovered, pacing.pauseMs) };
}

/** The lock and the empty state now; the recovered store at the end of the generator. */
function openInSlices<R extends Recoverable>(opts: StoreOptions, build: (sink: FactSink) => R, sliceRecords?: number): { runtime: R; recovered: Generator<void, Store<R>> } {
  mkdirSync(opts.dataDir, { recursive: true });
  const holder = lockHolder(opts.dataDir);
  if (holder !== undefined) throw new DataDirLocked(`${opts.dataDir} is in use by process ${holder}`);
  writeFileSync(join(opts.dataDir, LOCK), `${process.pid}\n`);
  for (const name of readdirSync(opts.dataDir)) {
    if (name.endsWith('.tmp')) {
      rmSync(join(opts.dataDir, name));
      opts.log.warn({ event: 'store.temp_removed', file: name }, `store: removed leftover temporary file ${name}`);
    }
  }
  let writer: LogWriter | undefined;
  const runtime = build({ append: (records, onDurable) => writer!.append(records, onDurable) });
  function* recovered(): Generator<void, Store<R>> {
    const recovery = yield* recoverInSlices(runtime, opts.dataDir, { skipCorrupt: opts.skipCorrupt, toSeq: opts.toSeq, log: opts.log, sliceRecords });
    if (recovery.tornAt) truncateTorn(recovery.tornAt, opts.log);
    // New records would follow the skipped bytes, where the next start skips them too.
    if (recovery.skippedAt) truncateTorn(recovery.skippedAt, opts.log, 'corrupt');
    if (recovery.snapshot || recovery.replayed > 0) {
      opts.log.info(
        { event: 'recovery.replayed', seq: recovery.lastSeq, snapshot: recovery.snapshot, facts: recovery.replayed, ms: recovery.ms },
        `store: recovered to seq ${recovery.lastSeq} in ${recovery.ms} ms (${recovery.snapshot ? `snapshot ${recovery.snapshot}` : 'no snapshot'}, ${recovery.replayed} facts replayed)`,
      );
    }
    const observer = opts.observer ?? NO_STORE_OBSERVER;
    writer = new LogWriter(opts.dataDir, { fsync: opts.fsync, batchMs: opts.fsyncBatchMs, segmentBytes: opts.segmentBytes, onFatal: opts.onFatal, observer, log: opts.log }, recovery.lastSeq + 1);
    return storeOf(opts, runtime, writer, recovery, observer);
  }
  return { runtime, recovered: recovered() };
}

/** The open store over a recovered runtime and its log writer. */
function storeOf<R extends Recoverable>(opts: StoreOptions, runtime: R, writer: LogWriter, recovery: Recovery, observer: StoreObserver): Store<R> {
  let snapshotting: Promise<SnapshotInfo> | undefined;
  return {
    runtime,
    writer,
    recovery,
    snapshot() {
      // A fresh segment per snapshot lets older segments be deleted once snapshots cover them.
      writer.roll();
      snapshotting ??= writeSnapshot(opts.dataDir, runtime, () => writer.drain(), defaultWriteOptions)
        .then(async (info) => {
          observer.snapshotWritten(info);
          await pruneSnapshots(opts.dataDir, opts.keepSnapshots ?? 3, opts.log);
          return info;
        })
        .finally(() => {
          snapshotting = undefined;
        });
      return snapshotting;
    },
    async close() {
      if (snapshotting) await snapshotting.catch(() => undefined);
      await writer.close();
      runtime.stop();
      rmSync(join(opts.dataDir, LOCK), { force: true });
    },
  };
}
