/**
 * The append log: segments of framed facts in the data directory, written with group
 * commit. Every record appended during one event-loop turn shares one `write` and,
 * under `PARLEY_FSYNC=always`, one `fdatasync`; a write's reply is released only once
 * its record is durable under the policy. While one flush is in flight, new records
 * gather for the next, so the disk is never idle while work waits.
 */
import { closeSync, fdatasync, fstatSync, fsyncSync, openSync, readdirSync, readSync, write as fsWrite, writeSync, statSync, ftruncateSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stamped } from '../actors/areas/index.js';
import type { Logger } from '../actors/core/logger.js';
import type { FactSink } from '../actors/runtime/runtime.js';
import { bufferBytes, checkSegmentHeader, decodeFrame, encodeRecord, findValidFrame, LOG_FORMAT_VERSION, recordHeaderBytes, segmentHeader, segmentVersion, SEGMENT_HEADER_BYTES, type SegmentBytes } from './codec.js';

/** When appended records count as durable. */
export type FsyncPolicy = 'always' | 'batch' | 'none';

export interface LogOptions {
  fsync: FsyncPolicy;
  /** Interval of background fsyncs under `batch`. */
  batchMs: number;
  /** A segment rolls over once it reaches this size. */
  segmentBytes: number;
  /** Called when the disk fails us; the server must stop. */
  onFatal(error: Error): void;
  /** Told of every group commit (metrics); nothing by default. */
  observer?: LogObserver;
  /** Where segment rotations are told (`log.segment_rotated`). */
  log?: Logger;
}

/**
 * What the log reports of its work, once per group commit, never per record. Times are
 * in seconds. The persistence layer knows no metrics library: the server plugs one in.
 */
export interface LogObserver {
  /**
   * A batch became durable under the policy: `records` in it, `waitSeconds` from its
   * first record's append to now (the longest any of its writes waited for the log),
   * and `writeSeconds` for its `write`.
   */
  committed(records: number, waitSeconds: number, writeSeconds: number): void;
  /** An `fdatasync` took `seconds`: a batch's under `always`, the periodic one under `batch`. */
  synced(seconds: number): void;
}

/** An observer that records nothing. */
export const NO_LOG_OBSERVER: LogObserver = { committed() {}, synced() {} };

const SEGMENT = /^log-(\d{16})\.plog$/;

/** File name of the segment whose first record has `seq`. */
export function segmentName(firstSeq: number): string {
  return `log-${String(firstSeq).padStart(16, '0')}.plog`;
}

/** Log segments in a directory, oldest first, with the seq each starts at. */
export function listSegments(dir: string): Array<{ name: string; firstSeq: number }> {
  return readdirSync(dir)
    .map((name) => ({ name, m: SEGMENT.exec(name) }))
    .filter((x) => x.m !== null)
    .map((x) => ({ name: x.name, firstSeq: Number(x.m![1]) }))
    .sort((a, b) => a.firstSeq - b.firstSeq);
}

/** Bytes read at a time from a segment file. */
const SEGMENT_WINDOW_BYTES = 8 * 1024 * 1024;

/**
 * A segment file read through a window that moves forward as it is read, so that no
 * segment is held whole, whatever its size. Each window is a buffer of its own, so
 * views of an earlier one stay valid.
 */
export class SegmentFile implements SegmentBytes {
  private window = Buffer.alloc(0);
  private windowStart = 0;

  private constructor(
    private readonly fd: number,
    readonly length: number,
    private readonly path: string,
  ) {}

  static open(path: string): SegmentFile {
    const fd = openSync(path, 'r');
    return new SegmentFile(fd, fstatSync(fd).size, path);
  }

  view(from: number, to: number): Buffer {
    const end = Math.min(to, this.length);
    if (end <= from) return Buffer.alloc(0);
    if (from >= this.windowStart && end <= this.windowStart + this.window.length) return this.window.subarray(from - this.windowStart, end - this.windowStart);
    const size = Math.min(this.length - from, Math.max(SEGMENT_WINDOW_BYTES, end - from));
    const window = Buffer.allocUnsafe(size);
    for (let done = 0; done < size; ) {
      const n = readSync(this.fd, window, done, size - done, from + done);
      if (n === 0) throw new Error(`${this.path} ended at ${from + done} bytes while being read (changed while read?)`);
      done += n;
    }
    this.window = window;
    this.windowStart = from;
    return window.subarray(0, end - from);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Flushes a directory's entries (new or renamed files) to disk. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Thrown when the log cannot be trusted; the message names the file and offset. */
export class LogCorruption extends Error {}

export interface ReadOptions {
  /** Replay only records with a seq above this. */
  afterSeq: number;
  /** Stop after this seq (restore to a point). */
  toSeq?: number;
  /** Skip a corrupt record in the middle instead of refusing to start. */
  skipCorrupt: boolean;
  /** Receives recovery notes (torn tails, skipped records). */
  log: Logger;
  /** Records replayed between two pauses (see `readLogInSlices`); unlimited when absent. */
  sliceRecords?: number;
}

/** What reading the log found. */
export interface ReadResult {
  lastSeq: number;
  records: number;
  /** Where the valid prefix of the last segment ends, if its tail was torn. */
  tornAt?: { file: string; offset: number };
  /**
   * Where the last segment's corrupt record was, if the rest of that segment was
   * skipped as asked: new records must not be appended after the skipped bytes.
   */
  skippedAt?: { file: string; offset: number };
}

/** How reading one segment ended. */
export type SegmentEnd =
  /** Every frame read. */
  | { kind: 'end' }
  /** The caller's `onRecord` asked to stop; `next` is where the frame after its record starts. */
  | { kind: 'stopped'; next: number }
  /**
   * The last segment's tail from `offset` on holds no valid frame: a write that never
   * completed, whatever its bytes. Dropped (and kept aside) at the next start.
   */
  | { kind: 'torn'; offset: number; bytes: number; reason: string }
  /**
   * A bad frame with a valid frame after it, or a bad frame in a segment other than
   * the last: corruption. `resume`, for a well-formed record whose seq does not follow,
   * is where reading may go on if the operator asked to skip corrupt records.
   */
  | { kind: 'corrupt'; offset: number; reason: string; header?: true; resume?: number };

/** The result of `readSegment`. */
export interface SegmentRead {
  /** The seq of the last record read in order. */
  lastSeq: number;
  end: SegmentEnd;
}

/**
 * Reads one segment's frames in order, calling `onRecord` for each record whose seq
 * follows `lastSeq` (it returns false to stop). The one place that decides what a bad
 * frame means, shared by recovery (`readLog`) and `parley verify`:
 *   - in the last segment, a bad frame after which no valid frame follows (see
 *     `findValidFrame`) is a torn tail, whatever its bytes;
 *   - a bad frame with a valid frame after it, or a bad frame in any other segment, is
 *     corruption.
 * A bad frame is one that does not decode, or a record whose seq does not follow.
 * `from` resumes after a skipped record; without it the segment header is checked first.
 */
export function readSegment(bytes: Buffer | SegmentBytes, isLast: boolean, lastSeq: number, onRecord: (stamped: Stamped) => boolean, from?: number): SegmentRead {
  const buf = Buffer.isBuffer(bytes) ? bufferBytes(bytes) : bytes;
  const head = buf.view(0, SEGMENT_HEADER_BYTES);
  if (from === undefined) {
    const headerError = checkSegmentHeader(head);
    if (headerError) {
      // A header that never landed: too short, or zeros with nothing valid after them.
      const neverWritten = buf.length < SEGMENT_HEADER_BYTES || (head.every((b) => b === 0) && findValidFrame(buf, SEGMENT_HEADER_BYTES, lastSeq) < 0);
      if (isLast && neverWritten) return { lastSeq, end: { kind: 'torn', offset: 0, bytes: buf.length, reason: 'segment header never completely written' } };
      return { lastSeq, end: { kind: 'corrupt', offset: 0, reason: headerError, header: true } };
    }
  }
  // Resuming (`from`), the header was checked by the call that read up to there.
  const version = segmentVersion(head);
  const headerBytes = recordHeaderBytes(version);
  let offset = from ?? SEGMENT_HEADER_BYTES;
  for (;;) {
    const frame = decodeFrame(buf, offset, version);
    if (frame.kind === 'end') return { lastSeq, end: { kind: 'end' } };
    let reason: string;
    let resume: number | undefined;
    if (frame.kind === 'record') {
      const { seq } = frame.stamped;
      if (seq > lastSeq) {
        lastSeq = seq;
        if (!onRecord(frame.stamped)) return { lastSeq, end: { kind: 'stopped', next: frame.next } };
        offset = frame.next;
        continue;
      }
      reason = `seq ${seq} does not follow ${lastSeq}`;
      resume = frame.next;
    } else reason = frame.reason;
    if (isLast && findValidFrame(buf, offset, lastSeq, headerBytes) < 0) return { lastSeq, end: { kind: 'torn', offset, bytes: buf.length - offset, reason } };
    return { lastSeq, end: { kind: 'corrupt', offset, reason, resume } };
  }
}

/** How a torn tail is described, the same way by recovery and by `parley verify`. */
export function describeTorn(end: { offset: number; bytes: number; reason: string }): string {
  return `torn tail (torn final record at offset ${end.offset}: ${end.reason}; ${end.bytes} bytes, no valid record after them)`;
}

/** Reads every record of the log in order, calling `onRecord` for each one after `afterSeq`. */
export function readLog(dir: string, opts: ReadOptions, onRecord: (s: Stamped) => void): ReadResult {
  return runSlices(readLogInSlices(dir, opts, onRecord));
}

/**
 * `readLog` as a generator that pauses (yields) after every `opts.sliceRecords` records
 * replayed, so that a caller can let the event loop run between slices of a long
 * recovery (`runSlicesAsync`); it returns what `readLog` returns.
 */
export function* readLogInSlices(dir: string, opts: ReadOptions, onRecord: (s: Stamped) => void): Generator<void, ReadResult> {
  const segments = listSegments(dir);
  const slice = opts.sliceRecords ?? Infinity;
  let lastSeq = 0;
  let records = 0;
  let tornAt: ReadResult['tornAt'];
  let skippedAt: ReadResult['skippedAt'];
  let pause = false;
  const before = (seq: number): boolean => opts.toSeq === undefined || seq < opts.toSeq;
  const each = (stamped: Stamped): boolean => {
    if (opts.toSeq !== undefined && stamped.seq > opts.toSeq) return false;
    if (stamped.seq > opts.afterSeq) {
      onRecord(stamped);
      records++;
      if (records % slice === 0 && before(stamped.seq)) pause = true;
    }
    // Stop at toSeq itself: what follows it (a corrupt record, say) is not read.
    return !pause && before(stamped.seq);
  };
  for (let i = 0; i < segments.length; i++) {
    // A segment whose every record the snapshot already reflects is not read at all:
    // damage there (kept so that an older snapshot can still be restored) costs nothing.
    if (i + 1 < segments.length && segments[i + 1].firstSeq - 1 <= opts.afterSeq) continue;
    const file = join(dir, segments[i].name);
    const isLast = i === segments.length - 1;
    const buf = SegmentFile.open(file);
    let from: number | undefined;
    try {
      for (;;) {
        const read = readSegment(buf, isLast, lastSeq, each, from);
        lastSeq = read.lastSeq;
        const { end } = read;
        if (end.kind === 'end') break;
        if (end.kind === 'stopped') {
          if (!pause) return { lastSeq: opts.toSeq!, records };
          pause = false;
          from = end.next;
          yield;
          continue;
        }
        if (end.kind === 'torn') {
          opts.log.warn({ event: 'recovery.torn_tail_found', file, offset: end.offset, bytes: end.bytes, reason: end.reason }, `log: ${file}: dropping a ${describeTorn(end)}`);
          tornAt = { file, offset: end.offset };
          break;
        }
        const where = `${file} at offset ${end.offset}: ${end.reason}`;
        if (end.header) throw new LogCorruption(where);
        if (!opts.skipCorrupt) throw new LogCorruption(`corrupt log record in ${where}`);
        const skipped = { event: 'recovery.corrupt_skipped', file, offset: end.offset, reason: end.reason };
        if (end.resume === undefined) {
          opts.log.warn({ ...skipped, rest_of_segment: true }, `log: skipping the rest of ${file} after a corrupt record (${where}), as asked`);
          if (isLast) skippedAt = { file, offset: end.offset };
          break;
        }
        opts.log.warn(skipped, `log: skipping out-of-order record (${where}), as asked`);
        from = end.resume;
      }
    } finally {
      buf.close();
    }
  }
  return { lastSeq, records, tornAt, skippedAt };
}

/** The time of a segment's first record (undefined: format 1, or no record). */
function firstRecordTime(path: string): number | undefined {
  const file = SegmentFile.open(path);
  try {
    const head = file.view(0, SEGMENT_HEADER_BYTES);
    if (checkSegmentHeader(head) !== null) return undefined;
    const version = segmentVersion(head);
    const frame = decodeFrame(file, SEGMENT_HEADER_BYTES, version);
    return frame.kind === 'record' ? frame.stamped.at : undefined;
  } finally {
    file.close();
  }
}

/** Where the log stood at a moment: the last record committed at or before it. */
export interface SeqAtTime {
  seq: number;
  /** That record's time of commit (ms). */
  at: number;
}

/**
 * The last record committed at or before `atMs` (ms since the epoch): what "the state
 * at 10:42" means. Reads only the segment that holds that moment (each segment's first
 * record says where it starts). Throws when the moment is before the first record that
 * carries a time (records of log format 1 carry none, and segments before the oldest
 * kept are gone).
 */
export function seqAtTime(dir: string, atMs: number, log: Logger): SeqAtTime {
  const segments = listSegments(dir);
  const times = segments.map((s) => firstRecordTime(join(dir, s.name)));
  let from = -1;
  for (let i = 0; i < segments.length; i++) if (times[i] !== undefined && times[i]! <= atMs) from = i;
  if (from < 0) {
    const first = times.findIndex((at) => at !== undefined);
    const when = first < 0 ? 'no record in the log carries its time (written before log format 2)' : `the oldest record with a time is seq ${segments[first].firstSeq}, committed at ${new Date(times[first]!).toISOString()}`;
    throw new Error(`no record was committed at or before ${new Date(atMs).toISOString()}: ${when}`);
  }
  let found: SeqAtTime | undefined;
  // The next segment begins after the moment: the records that matter are in this one.
  const toSeq = from + 1 < segments.length ? segments[from + 1].firstSeq - 1 : undefined;
  const read = readLog(dir, { afterSeq: segments[from].firstSeq - 1, toSeq, skipCorrupt: true, log }, (s) => {
    if (s.at !== undefined && s.at <= atMs) found = { seq: s.seq, at: s.at };
  });
  if (!found) throw new Error(`no record was committed at or before ${new Date(atMs).toISOString()} (the log ends at seq ${read.lastSeq})`);
  return found;
}

/** Runs a sliced generator to its end at once. */
export function runSlices<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Runs a sliced generator to its end, letting the event loop run (a `setImmediate`
 * turn, plus `pauseMs` if given: a test hook) between slices.
 */
export async function runSlicesAsync<T>(steps: Generator<void, T>, pauseMs = 0): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise((resolve) => (pauseMs > 0 ? setTimeout(resolve, pauseMs) : setImmediate(resolve)));
  }
}

/**
 * Cuts a torn tail (or, with `kind` 'corrupt', the part skipped after a corrupt
 * record) off the last segment so appends continue after the valid prefix. The
 * dropped bytes are kept beside it, never destroyed.
 */
export function truncateTorn(torn: { file: string; offset: number }, log: Logger, kind: 'torn' | 'corrupt' = 'torn'): void {
  const size = statSync(torn.file).size;
  const kept = `${torn.file}.${kind}-${Date.now()}`;
  copyFileSync(torn.file, kept);
  const fd = openSync(torn.file, 'r+');
  try {
    ftruncateSync(fd, torn.offset);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  log.warn({ event: kind === 'torn' ? 'recovery.torn_tail_truncated' : 'recovery.corrupt_tail_truncated', file: torn.file, from_bytes: size, to_bytes: torn.offset, kept }, `log: truncated ${torn.file} from ${size} to ${torn.offset} bytes; the original is kept as ${kept}`);
}

/** Appends facts to the log with group commit. Implements the runtime's `FactSink`. */
/** Whether a segment's header names a log format older than the one written now. */
function olderFormat(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(SEGMENT_HEADER_BYTES);
    const n = readSync(fd, head, 0, SEGMENT_HEADER_BYTES, 0);
    return n === SEGMENT_HEADER_BYTES && checkSegmentHeader(head) === null && segmentVersion(head) < LOG_FORMAT_VERSION;
  } finally {
    closeSync(fd);
  }
}

export class LogWriter implements FactSink {
  private fd = -1;
  private size = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private pendingFirstSeq = 0;
  /** When the first pending record was appended (`performance.now()`, ms). */
  private pendingSince = 0;
  private callbacks: Array<() => void> = [];
  private flushing = false;
  private scheduled = false;
  private failed: Error | undefined;
  private batchTimer: NodeJS.Timeout | undefined;
  private dirty = false;
  private idleWaiters: Array<() => void> = [];
  private rollPending = false;
  private readonly observer: LogObserver;

  constructor(private readonly dir: string, private readonly opts: LogOptions, nextSeq: number) {
    this.observer = opts.observer ?? NO_LOG_OBSERVER;
    const segments = listSegments(dir);
    if (segments.length === 0) this.openSegment(nextSeq);
    else {
      const last = join(dir, segments[segments.length - 1].name);
      const size = statSync(last).size;
      // Records of one segment share its format: a log written by an older build goes on in
      // a new segment (an older one holding no record yet is begun again instead).
      if (size > SEGMENT_HEADER_BYTES && olderFormat(last)) this.openSegment(nextSeq);
      else {
        this.fd = openSync(last, 'a');
        this.size = size;
        if (this.size <= SEGMENT_HEADER_BYTES) {
          ftruncateSync(this.fd, 0);
          writeSync(this.fd, segmentHeader());
          this.size = SEGMENT_HEADER_BYTES;
        }
      }
    }
    if (opts.fsync === 'batch') {
      this.batchTimer = setInterval(() => this.backgroundSync(), opts.batchMs);
      this.batchTimer.unref();
    }
  }

  append(records: Stamped[], onDurable: () => void): void {
    if (this.failed) throw this.failed;
    if (this.pending.length === 0) {
      this.pendingFirstSeq = records[0].seq;
      this.pendingSince = performance.now();
    }
    for (const r of records) {
      const buf = encodeRecord(r);
      this.pending.push(buf);
      this.pendingBytes += buf.length;
    }
    this.callbacks.push(onDurable);
    if (!this.flushing && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Starts a new segment with the next append, so that older ones can be pruned. */
  roll(): void {
    this.rollPending = this.size > SEGMENT_HEADER_BYTES;
  }

  /** Resolves once everything appended so far is durable. */
  drain(): Promise<void> {
    if (!this.flushing && !this.scheduled && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private openSegment(firstSeq: number): void {
    if (this.fd >= 0) {
      fsyncSync(this.fd);
      closeSync(this.fd);
    }
    const path = join(this.dir, segmentName(firstSeq));
    this.fd = openSync(path, 'a');
    writeSync(this.fd, segmentHeader());
    fsyncSync(this.fd);
    fsyncDir(this.dir);
    this.size = SEGMENT_HEADER_BYTES;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.flushing = true;
    if ((this.rollPending || this.size + this.pendingBytes > this.opts.segmentBytes) && this.size > SEGMENT_HEADER_BYTES) {
      const reason = this.rollPending ? 'snapshot' : 'size';
      this.rollPending = false;
      try {
        this.openSegment(this.pendingFirstSeq);
      } catch (err) {
        this.fail(err as Error);
        return;
      }
      this.opts.log?.info({ event: 'log.segment_rotated', segment: segmentName(this.pendingFirstSeq), first_seq: this.pendingFirstSeq, reason }, `log: new segment ${segmentName(this.pendingFirstSeq)} (${reason})`);
    }
    const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    const callbacks = this.callbacks;
    const records = this.pending.length;
    const since = this.pendingSince;
    this.pending = [];
    this.pendingBytes = 0;
    this.callbacks = [];
    const writeStart = performance.now();
    this.writeAll(buf, 0, () => {
      this.size += buf.length;
      const written = performance.now();
      const done = (): void => {
        this.flushing = false;
        this.observer.committed(records, (performance.now() - since) / 1000, (written - writeStart) / 1000);
        for (const cb of callbacks) cb();
        this.flush();
      };
      if (this.opts.fsync === 'always') this.sync(done);
      else {
        this.dirty = true;
        done();
      }
    });
  }

  private writeAll(buf: Buffer, offset: number, then: () => void): void {
    fsWrite(this.fd, buf, offset, buf.length - offset, null, (err, written) => {
      if (err) return this.fail(err);
      if (offset + written < buf.length) this.writeAll(buf, offset + written, then);
      else then();
    });
  }

  private backgroundSync(): void {
    if (!this.dirty || this.fd < 0) return;
    this.dirty = false;
    this.sync(() => {});
  }

  /** One timed `fdatasync`; a failure is fatal. */
  private sync(then: () => void): void {
    const start = performance.now();
    fdatasync(this.fd, (err) => {
      if (err) return this.fail(err);
      this.observer.synced((performance.now() - start) / 1000);
      then();
    });
  }

  /** A failed write or fsync is never retried: the data's fate is unknown, so the server stops. */
  private fail(error: Error): void {
    this.failed = error;
    this.opts.onFatal(error);
  }

  /** Flushes what is pending, syncs, and closes the segment. */
  async close(): Promise<void> {
    await this.drain();
    if (this.batchTimer) clearInterval(this.batchTimer);
    if (this.fd >= 0) {
      fsyncSync(this.fd);
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}
