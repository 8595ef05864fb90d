/**
 * Opening a data directory: take its lock, restore the newest snapshot that verifies,
 * replay the log after it through the runtime's reducers, and attach a log writer
 * for new facts. Also schedules snapshots while the server runs.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { decodeHeader, HEADER_BYTES } from './snapshot_format.js';
import { join } from 'node:path';
import type { Stamped } from '../actors/areas/index.js';
import type { Logger } from '../actors/core/logger.js';
import type { FactSink } from '../actors/runtime/runtime.js';
import { fsyncDir, listSegments, LogCorruption, LogWriter, SegmentFile, NO_LOG_OBSERVER, readLogInSlices, runSlices, runSlicesAsync, truncateTorn, type FsyncPolicy, type LogObserver } from './log.js';
import { defaultWriteOptions, DirectorySnapshots, pruneSnapshots, walkStoredSnapshot, writeSnapshot, type Snapshottable, type SnapshotInfo, type SnapshotStore, type SnapshotWriteOptions } from './snapshot.js';
import { checkSegmentHeader, findValidFrame, recordHeaderBytes, segmentVersion, SEGMENT_HEADER_BYTES, TIMED_RECORD_HEADER_BYTES } from './codec.js';
import { mib, oldGenerationLimitBytes, recoveryHeapBudget, recoveryHeapEstimate, RecoveryTooLarge, watchLiveHeap } from './memory_budget.js';
import { BodyStore } from './body_store.js';
import { readOrgRestores, restoreCrossed } from './org_restores.js';
import { DiskBodies } from './disk_bodies.js';
import type { Bodies } from '../actors/core/bodies.js';

/** A stored snapshot's format version, from its header (undefined when unreadable: the walk then says why). */
function snapshotVersion(snapshots: SnapshotStore, name: string): number | undefined {
  const file = snapshots.open(name);
  if (typeof file === 'string') return undefined;
  try {
    if (file.size < HEADER_BYTES) return undefined;
    const h = decodeHeader(file.read(0, HEADER_BYTES));
    return typeof h === 'string' ? undefined : h.version;
  } catch {
    return undefined;
  } finally {
    file.close();
  }
}

/** State that recovery rebuilds: it takes snapshot chunks back and replays facts. */
export interface Recoverable extends Snapshottable {
  /** Applies a fact read back from the log. */
  replay(stamped: Stamped): void;
  /** Stops whatever the state runs (actors, timers). */
  stop(): void;
  /** Empties the state, as it was when made (after a snapshot failed part way through restoring). */
  reset(): void;
  /** Every body locator the state holds now (the body store's live set). */
  bodyLocators(): Iterable<number>;
  /** Points the state at its bodies' new places after a compaction: `from` ascending, `to` beside it. */
  moveBodies(from: Float64Array, to: Float64Array, count: number): Generator<void>;
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
  /** The heap recovery must fit in; by default this process's V8 limit and its live heap. */
  memory?: RecoveryMemory;
  /** Bound of the message body cache, in bytes (`BodyStore`'s default when absent). */
  bodyCacheBytes?: number;
  /**
   * Where snapshots are kept: the seam of the snapshot storage (as the log writer, a
   * `FactSink`, is the log's). By default files of the data directory.
   */
  snapshots?: SnapshotStore;
}

/** The store's snapshots: those the options name, or the data directory's files. */
function snapshotsOf(opts: StoreOptions): SnapshotStore {
  return opts.snapshots ?? new DirectorySnapshots(opts.dataDir);
}

/** What a data directory reports of its work: the log's, and each snapshot written. */
export interface StoreObserver extends LogObserver {
  snapshotWritten(info: SnapshotInfo): void;
}

/** An observer that records nothing. */
export const NO_STORE_OBSERVER: StoreObserver = { ...NO_LOG_OBSERVER, snapshotWritten() {} };

/** What a body store compaction did. */
export interface BodyCompaction {
  /** Bodies copied (those messages hold). */
  copied: number;
  bytesBefore: number;
  bytesAfter: number;
  /** The snapshot that points at the new segments. */
  snapshot: SnapshotInfo;
  /** Old segments deleted now (no kept snapshot needed them), and those kept until older snapshots are pruned. */
  deleted: string[];
  pending: string[];
}

/** Old body segments waiting for the snapshots older than `beforeSeq` to be pruned. */
interface ObsoleteBodies {
  beforeSeq: number;
  segments: string[];
}

const OBSOLETE_FILE = 'obsolete.json';

function readObsolete(dataDir: string): ObsoleteBodies[] {
  const path = join(bodiesDir(dataDir), OBSOLETE_FILE);
  if (!existsSync(path)) return [];
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ObsoleteBodies[];
  } catch {
    return [];
  }
}

function writeObsolete(dataDir: string, list: ObsoleteBodies[]): void {
  const path = join(bodiesDir(dataDir), OBSOLETE_FILE);
  if (list.length === 0) {
    rmSync(path, { force: true });
    return;
  }
  writeFileSync(`${path}.tmp`, JSON.stringify(list));
  renameSync(`${path}.tmp`, path);
  fsyncDir(bodiesDir(dataDir));
}

/**
 * Deletes the old body segments that no kept snapshot needs any more: those a compaction
 * left behind once every snapshot older than the one it took is pruned.
 */
export function dropObsoleteBodies(dataDir: string, snapshots: SnapshotStore, bodies: BodyStore, log: Logger): string[] {
  const list = readObsolete(dataDir);
  if (list.length === 0) return [];
  const oldest = Math.min(...snapshots.list().map((s) => s.startSeq));
  const due = list.filter((o) => o.beforeSeq <= oldest);
  if (due.length === 0) return [];
  const names = due.flatMap((o) => o.segments);
  bodies.deleteSegments(names);
  writeObsolete(dataDir, list.filter((o) => o.beforeSeq > oldest));
  log.info({ event: 'bodies.segments_deleted', segments: names.length }, `bodies: deleted ${names.length} segments no kept snapshot needs`);
  return names;
}

/** Makes the empty state over the log's sink and the directory's message bodies. */
export type BuildState<R extends Recoverable> = (sink: FactSink, bodies: Bodies) => R;

/** Where a data directory keeps its message bodies. */
export function bodiesDir(dataDir: string): string {
  return join(dataDir, 'bodies');
}

/** Opens a data directory's body store; damage where a torn tail may be is repaired, or refused as the log's is. */
function openBodies(opts: StoreOptions): BodyStore {
  // A body store that cannot write is a disk failing us, as for the log: the server stops.
  return BodyStore.open({ dir: bodiesDir(opts.dataDir), cacheBytes: opts.bodyCacheBytes, log: opts.log, repair: opts.skipCorrupt ? 'truncate' : 'refuse', onFatal: opts.onFatal });
}

/** A recovered data directory, ready to serve. */
export interface Store<R extends Recoverable = Recoverable> {
  /** The recovered state (the runtime). */
  runtime: R;
  writer: LogWriter;
  /** What recovery found, for logs and tools. */
  recovery: Recovery;
  /** Where its snapshots are kept. */
  snapshots: SnapshotStore;
  /**
   * Takes a snapshot now (one at a time), then prunes old ones. `write` sets how it is
   * sliced (tests make every write land between two chunks).
   */
  snapshot(write?: SnapshotWriteOptions): Promise<SnapshotInfo>;
  /**
   * Compacts the body store: copies the bodies messages hold into new segments, points
   * the messages at them, and takes a snapshot. The old segments, which hold deleted and
   * replaced bodies too, are deleted once no kept snapshot is older than that one.
   */
  compactBodies(): Promise<BodyCompaction>;
  /** Flushes the log and releases the lock. */
  close(): Promise<void>;
  /**
   * Stops as a `kill -9` would, for recovery tests inside one process: the actors stop,
   * the body store's buffered bodies are dropped unwritten, and the lock stays (it names
   * this live process, which the next open in it ignores). Acknowledged writes are
   * durable already; the log writer has nothing unacknowledged once they are awaited.
   */
  crash(): void;
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
  } catch {
    return undefined;
  }
  // A process killed but not yet reaped (a zombie) still answers signal 0: it holds nothing.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') return undefined;
  } catch {
    // No /proc (not Linux), or the process is gone since: signal 0's answer stands.
  }
  return pid;
}

/**
 * The bytes of log that replay after `startSeq` reads: the segments after the one
 * holding it, and the part of that one past it, found by a binary search over its
 * frames (a few probes, each a short forward scan to the next frame).
 */
function logBytesAfter(dir: string, startSeq: number): number {
  const segments = listSegments(dir);
  let bytes = 0;
  for (let i = 0; i < segments.length; i++) {
    const next = segments[i + 1];
    if (next !== undefined && next.firstSeq - 1 <= startSeq) continue;
    const path = join(dir, segments[i].name);
    bytes += segments[i].firstSeq > startSeq ? statSync(path).size : bytesPastSeq(path, startSeq);
  }
  return bytes;
}

/** About how many bytes of a segment hold records after `seq` (to within a few KB). */
function bytesPastSeq(path: string, seq: number): number {
  const file = SegmentFile.open(path);
  try {
    const head = file.view(0, Math.min(file.length, SEGMENT_HEADER_BYTES));
    const headerBytes = checkSegmentHeader(head) === null ? recordHeaderBytes(segmentVersion(head)) : TIMED_RECORD_HEADER_BYTES;
    // The first record after `seq` starts in [lo, hi].
    let lo = SEGMENT_HEADER_BYTES;
    let hi = file.length;
    while (hi - lo > 4096) {
      const mid = Math.floor((lo + hi) / 2);
      const at = findValidFrame(file, mid, 0, headerBytes);
      if (at < 0) hi = mid;
      else if (Number(file.view(at + 8, at + 16).readBigUInt64LE(0)) <= seq) lo = at + 1;
      else hi = at;
    }
    return file.length - hi;
  } finally {
    file.close();
  }
}

/** What a recovery may do with the heap: the limit it must fit in, and the live heap now. */
export interface RecoveryMemory {
  /** The heap limit, in bytes (by default this process's old generation limit, `--memory-limit-mib`). */
  limitBytes: number;
  /** The live heap as the last major GC left it (0: not known yet). */
  liveBytes(): number;
}

/**
 * Loads the newest snapshot that fits in memory, verifies and restores (or the one
 * named), falling back to older ones, each time with a log event that says why: a
 * snapshot whose recovery would not fit in the heap, one that does not verify (checked
 * end to end before anything is restored), and one that fails while being restored,
 * after which the state is made again, empty. Snapshots are read chunk by chunk, never
 * whole. Returns the state and the seq replay starts after; throws `RecoveryTooLarge`
 * when not even the log alone would fit.
 */
function* restoreNewestSnapshot(
  state: Recoverable,
  dir: string,
  snapshots: SnapshotStore,
  log: Logger,
  memory: RecoveryMemory,
  toSeq?: number,
  only?: string,
): Generator<void, { name: string | null; startSeq: number }> {
  const budget = recoveryHeapBudget(memory.limitBytes);
  let smallestNeed: { bytes: number; what: string } | undefined;
  /** The heap recovery from this point needs, if over the budget (noted as the smallest such need); else 0. */
  const overBudget = (snapshotBytes: number, startSeq: number, what: string, version?: number): number => {
    const need = recoveryHeapEstimate(snapshotBytes, logBytesAfter(dir, startSeq), version);
    if (need <= budget) return 0;
    if (smallestNeed === undefined || need < smallestNeed.bytes) smallestNeed = { bytes: need, what };
    return need;
  };
  const restores = readOrgRestores(dir);
  for (const snap of snapshots.list()) {
    if (only !== undefined && snap.name !== only) continue;
    if (toSeq !== undefined && snap.startSeq > toSeq) continue;
    const crossed = restoreCrossed(restores, snap.startSeq, toSeq);
    if (crossed && only !== undefined) {
      throw new Error(`snapshot ${snap.name} is older than the restore of organization ${crossed.org} at seq ${crossed.seq}: the log after it holds what that restore undid, so it restores only to a seq before ${crossed.seq} (--to-seq)`);
    }
    if (crossed) {
      log.info(
        { event: 'recovery.snapshot_before_restore', snapshot: snap.name, restore_seq: crossed.seq, org: crossed.org },
        `store: snapshot ${snap.name} is older than the restore of organization ${crossed.org} at seq ${crossed.seq}; not used past it`,
      );
      continue;
    }
    const need = overBudget(snap.size, snap.startSeq, `snapshot ${snap.name} (${mib(snap.size)} MiB) and the log after it`, snapshotVersion(snapshots, snap.name));
    if (need > 0) {
      log.error(
        { event: 'recovery.snapshot_too_large', snapshot: snap.name, bytes: snap.size, needed_mib: mib(need), budget_mib: mib(budget), limit_mib: mib(memory.limitBytes) },
        `store: snapshot ${snap.name} and the log after it need about ${mib(need)} MiB of heap, over the ${mib(budget)} MiB recovery may use; falling back to an older one`,
      );
      continue;
    }
    let failure: { event: string; reason: string };
    try {
      const checked = yield* walkStoredSnapshot(snapshots, snap.name);
      if (typeof checked === 'string') {
        log.error({ event: 'recovery.snapshot_invalid', snapshot: snap.name, reason: checked }, `store: snapshot ${snap.name} does not verify (${checked}); falling back to an older one`);
        continue;
      }
      if (toSeq !== undefined && checked.endSeq > toSeq) {
        log.info({ event: 'recovery.snapshot_skipped', snapshot: snap.name, end_seq: checked.endSeq, to_seq: toSeq }, `store: snapshot ${snap.name} reflects facts past seq ${toSeq}; trying an older one`);
        continue;
      }
      const restoring = walkStoredSnapshot(snapshots, snap.name, (chunk) => state.restoreChunk(chunk as { k: string }, checked.header.version));
      const restored = yield* watched(restoring, () => {
        const live = memory.liveBytes();
        if (live > budget) throw RecoveryTooLarge.reached(live, memory.limitBytes, 0, checked.endSeq);
      });
      if (typeof restored !== 'string') {
        state.restoredThrough(restored.endSeq);
        log.info({ event: 'recovery.snapshot_loaded', snapshot: snap.name, start_seq: restored.header.startSeq, seq: restored.endSeq }, `store: loaded snapshot ${snap.name} (seq ${restored.header.startSeq}..${restored.endSeq})`);
        return { name: snap.name, startSeq: restored.header.startSeq };
      }
      failure = { event: 'recovery.snapshot_unloadable', reason: restored };
    } catch (err) {
      failure = { event: err instanceof RecoveryTooLarge ? 'recovery.snapshot_too_large' : 'recovery.snapshot_unloadable', reason: (err as Error).message };
    }
    // Part of it may be in the state: start again from nothing.
    state.reset();
    log.error({ event: failure.event, snapshot: snap.name, reason: failure.reason }, `store: snapshot ${snap.name} could not be restored (${failure.reason}); falling back to an older one`);
  }
  const crossed = only === undefined ? restoreCrossed(restores, 0, toSeq) : undefined;
  if (crossed) {
    throw new LogCorruption(
      `no snapshot from after the restore of organization ${crossed.org} at seq ${crossed.seq} verifies, and the log before it holds what that restore undid: restore from a backup, or make the restore again (parley restore-org)`,
    );
  }
  if (only === undefined ? overBudget(0, 0, 'the whole log, replayed with no snapshot,') > 0 : smallestNeed !== undefined) {
    throw RecoveryTooLarge.estimated(smallestNeed!.bytes, memory.limitBytes, smallestNeed!.what);
  }
  return { name: null, startSeq: 0 };
}

/** Runs a sliced generator, calling `check` at each of its pauses (which may throw to stop it). */
function* watched<T>(steps: Generator<void, T>, check: () => void): Generator<void, T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    check();
    yield;
  }
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
  /** The heap recovery must fit in; by default this process's V8 limit and its live heap. */
  memory?: RecoveryMemory;
  /** Where the snapshots are: by default the data directory's files. */
  snapshots?: SnapshotStore;
}

/**
 * Rebuilds state from a data directory into `state`: the newest snapshot that
 * verifies (or `onlySnapshot`), then the log after it, up to `toSeq`. Reads only.
 */
export function recover(state: Recoverable, dir: string, opts: RecoverOptions): Recovery {
  return runSlices(recoverInSlices(state, dir, { sliceRecords: DEFAULT_SLICE_RECORDS, ...opts }));
}

/** `recover` as a generator that pauses every `opts.sliceRecords` facts replayed. */
export function* recoverInSlices(state: Recoverable, dir: string, opts: RecoverOptions): Generator<void, Recovery> {
  const started = Date.now();
  const watch = opts.memory === undefined ? watchLiveHeap() : undefined;
  const memory: RecoveryMemory = opts.memory ?? { limitBytes: oldGenerationLimitBytes(), liveBytes: watch!.liveBytes };
  const budget = recoveryHeapBudget(memory.limitBytes);
  try {
    const snap = yield* restoreNewestSnapshot(state, dir, opts.snapshots ?? new DirectorySnapshots(dir), opts.log, memory, opts.toSeq, opts.onlySnapshot);
    if (opts.onlySnapshot !== undefined && snap.name === null) throw new Error(`snapshot ${opts.onlySnapshot} is missing, does not verify, or reflects facts past seq ${opts.toSeq}`);
    const segments = listSegments(dir);
    if (segments.length > 0 && segments[0].firstSeq > snap.startSeq + 1) {
      throw new LogCorruption(
        `the log starts at seq ${segments[0].firstSeq}, but ${snap.name ? `snapshot ${snap.name} covers only up to seq ${snap.startSeq}` : 'no snapshot verifies'}: records ${snap.startSeq + 1} to ${segments[0].firstSeq - 1} are missing`,
      );
    }
    const read = { afterSeq: snap.startSeq, toSeq: opts.toSeq, skipCorrupt: opts.skipCorrupt, log: opts.log, sliceRecords: opts.sliceRecords };
    // Where the log ends, roughly (the last segment's first seq): for the progress in a refusal.
    const lastFirstSeq = segments.length > 0 ? segments[segments.length - 1].firstSeq : 0;
    const replay = readLogInSlices(dir, read, (s) => {
      state.replay(s);
      opts.onRecord?.(s.seq);
    });
    const result = yield* watched(replay, () => {
      // The estimate was wrong: stop while the heap still has room, never die of OOM.
      const live = memory.liveBytes();
      if (live > budget) throw RecoveryTooLarge.reached(live, memory.limitBytes, state.lastSeq, Math.max(lastFirstSeq, state.lastSeq));
    });
    const lastSeq = Math.max(result.lastSeq, state.lastSeq);
    state.restoredThrough(lastSeq);
    return { snapshot: snap.name, snapshotStartSeq: snap.startSeq, replayed: result.records, lastSeq, ms: Date.now() - started, tornAt: result.tornAt, skippedAt: result.skippedAt };
  } finally {
    watch?.stop();
  }
}

/**
 * Opens (creating if needed) a data directory and recovers its state into what
 * `build` makes: `build` gets the sink that makes facts durable in this directory's
 * log, and returns empty state (the caller decides what state is; see `src/store.ts`).
 */
export function openStore<R extends Recoverable>(opts: StoreOptions, build: BuildState<R>): Store<R> {
  // In slices all the same: the live heap is checked between them.
  return runSlices(openInSlices(opts, build, DEFAULT_SLICE_RECORDS).recovered);
}

/** Facts replayed between two checks of the live heap, when the caller gives no pacing. */
const DEFAULT_SLICE_RECORDS = 1000;

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
export function openStoreInSlices<R extends Recoverable>(opts: StoreOptions, build: BuildState<R>, pacing: Pacing): { runtime: R; recover(): Promise<Store<R>> } {
  const opening = openInSlices(opts, build, pacing.sliceRecords);
  return { runtime: opening.runtime, recover: () => runSlicesAsync(opening.recovered, pacing.pauseMs) };
}

/** The lock and the empty state now; the recovered store at the end of the generator. */
function openInSlices<R extends Recoverable>(opts: StoreOptions, build: BuildState<R>, sliceRecords?: number): { runtime: R; recovered: Generator<void, Store<R>> } {
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
  let bodies: BodyStore;
  try {
    bodies = openBodies(opts);
  } catch (err) {
    rmSync(join(opts.dataDir, LOCK), { force: true });
    throw err;
  }
  let writer: LogWriter | undefined;
  const runtime = build({ append: (records, onDurable) => writer!.append(records, onDurable) }, new DiskBodies(bodies, opts.log));
  function* recovered(): Generator<void, Store<R>> {
    const recovery = yield* recoverInSlices(runtime, opts.dataDir, { skipCorrupt: opts.skipCorrupt, toSeq: opts.toSeq, log: opts.log, sliceRecords, memory: opts.memory, snapshots: snapshotsOf(opts) });
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
    return storeOf(opts, runtime, writer, bodies, recovery, observer);
  }
  return { runtime, recovered: recovered() };
}

/** The open store over a recovered runtime and its log writer. */
function storeOf<R extends Recoverable>(opts: StoreOptions, runtime: R, writer: LogWriter, bodies: BodyStore, recovery: Recovery, observer: StoreObserver): Store<R> {
  let snapshotting: Promise<SnapshotInfo> | undefined;
  const snapshots = snapshotsOf(opts);
  return {
    runtime,
    writer,
    recovery,
    snapshots,
    snapshot(write = defaultWriteOptions) {
      // A fresh segment per snapshot lets older segments be deleted once snapshots cover them.
      writer.roll();
      // The bodies the snapshot's messages point at are made durable before it is (off
      // the event loop: sends go on meanwhile).
      const drain = async (): Promise<void> => {
        await writer.drain();
        await bodies.syncAsync();
      };
      snapshotting ??= writeSnapshot(snapshots, runtime, drain, write)
        .then(async (info) => {
          observer.snapshotWritten(info);
          await pruneSnapshots(snapshots, opts.dataDir, opts.keepSnapshots ?? 3, opts.log);
          dropObsoleteBodies(opts.dataDir, snapshots, bodies, opts.log);
          return info;
        })
        .finally(() => {
          snapshotting = undefined;
        });
      return snapshotting;
    },
    async compactBodies() {
      if (snapshotting) await snapshotting.catch(() => undefined);
      let from: Float64Array = new Float64Array(1 << 16);
      let to: Float64Array = new Float64Array(1 << 16);
      let count = 0;
      let ascending = true;
      const result = await runSlicesAsync(
        bodies.compact(
          () => runtime.bodyLocators(),
          (oldLoc, newLoc) => {
            if (count === from.length) {
              const grow = (a: Float64Array): Float64Array => {
                const b = new Float64Array(a.length * 2);
                b.set(a);
                return b;
              };
              from = grow(from);
              to = grow(to);
            }
            if (count > 0 && oldLoc < from[count - 1]) ascending = false;
            from[count] = oldLoc;
            to[count++] = newLoc;
          },
        ),
      );
      if (!ascending) {
        const order = [...Array(count).keys()].sort((a, b) => from[a] - from[b]);
        const f = Float64Array.from(order, (i) => from[i]);
        const t = Float64Array.from(order, (i) => to[i]);
        from = f;
        to = t;
      }
      for (const d of result.damaged) opts.log.error({ event: 'bodies.compaction_damage', file: d.file, offset: d.offset, reason: d.reason }, `bodies: compaction left a damaged body where it was: ${d.file} at offset ${d.offset}: ${d.reason}`);
      await runSlicesAsync(runtime.moveBodies(from, to, count));
      const snapshot = await this.snapshot();
      const pendingNow = readObsolete(opts.dataDir);
      pendingNow.push({ beforeSeq: snapshot.startSeq, segments: result.obsolete });
      writeObsolete(opts.dataDir, pendingNow);
      const deleted = dropObsoleteBodies(opts.dataDir, snapshots, bodies, opts.log);
      opts.log.info(
        { event: 'bodies.compacted', copied: result.copied, bytes_before: result.bytesBefore, bytes_after: result.bytesAfter },
        `bodies: compacted ${result.bytesBefore} bytes into ${result.bytesAfter} (${result.copied} bodies kept)`,
      );
      return { copied: result.copied, bytesBefore: result.bytesBefore, bytesAfter: result.bytesAfter, snapshot, deleted, pending: readObsolete(opts.dataDir).flatMap((o) => o.segments) };
    },
    crash() {
      runtime.stop();
      bodies.abandon();
    },
    async close() {
      if (snapshotting) await snapshotting.catch(() => undefined);
      await writer.close();
      runtime.stop();
      bodies.close();
      rmSync(join(opts.dataDir, LOCK), { force: true });
    },
  };
}
