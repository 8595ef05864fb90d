/**
 * The body store: message bodies (Markdown source, rendered HTML, edit history) kept
 * on disk in segment files behind a bounded cache, so that the V8 heap holds only each
 * message's metadata and a numeric locator of its current body version.
 *
 * Versions are immutable: an edit appends a new record and the caller keeps the new
 * locator; old versions stay until a compaction finds them no longer live, so an older
 * kept snapshot (and a point-in-time restore) can still read the bodies it references.
 *
 * Writes are buffered and reach the file with one `writeSync` at most every
 * `flushDelayMs` (`flush`; a body is in the cache until then, and its message's log
 * record holds it, so replay stores it again after a crash); `sync` makes them
 * durable, and the server calls it (`syncAsync`) before it writes a snapshot, so a
 * durable snapshot only ever references durable bodies. Hence a torn tail, which can
 * only hold records written after the last sync, is cut off at open.
 *
 * Segments: `body-<16-digit number>.pbody`, numbers only grow. Only the last segment
 * of kind `append` and any `compact` segment numbered above it can have been written
 * since the last sync (a rollover and the end of a compaction sync what they leave
 * behind), so only those are scanned at open; the others are checked by `verify`.
 */
import { existsSync, closeSync, fdatasync, fdatasyncSync, fstatSync, mkdirSync, openSync, read as fsRead, readdirSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../actors/core/logger.js';
import {
  bodySegmentHeader,
  checkBodySegmentHeader,
  checkFrame,
  decodeBodyPayload,
  frameId,
  MAX_BODY_PAYLOAD_BYTES,
  nextValidFrame,
  packBody,
  plainBodyPayloadBytes,
  RECORD_HEADER_BYTES,
  scanFrame,
  SEGMENT_HEADER_BYTES,
  writeBodyFrame,
  writePlainBodyFrame,
  type MessageBody,
  type SegmentKind,
} from './body_codec.js';
import { fsyncDir, SegmentFile, truncateTorn } from './log.js';

export type { MessageBody } from './body_codec.js';

export interface BodyStoreOptions {
  /** The store's directory (e.g. `<dataDir>/bodies`), created if missing. */
  dir: string;
  /** A segment rolls over before a record would take it past this size (default 256 MiB, at most 128 GiB). */
  segmentBytes?: number;
  /** Bound of the decoded-body cache, by approximate bytes (default 64 MiB). */
  cacheBytes?: number;
  /** Where torn-tail repairs, rollovers and compactions are told. */
  log?: Logger;
  /**
   * Corruption in the middle of a segment scanned at open (a bad record followed by a
   * valid one) refuses the open; with 'truncate' the segment is cut at the bad record
   * instead (the original kept beside it) and the loss is logged.
   */
  repair?: 'refuse' | 'truncate';
  /**
   * Only read: nothing is repaired, created or written (an operator tool reading a
   * directory a server may hold; a torn tail there is beyond every locator it reads).
   * `append` throws.
   */
  readOnly?: boolean;
  /** Work `compact` and `verify` do between two yields (default 4 ms). */
  sliceMs?: number;
  /** Longest an appended record waits in the buffer before a scheduled flush writes it (default FLUSH_DELAY_MS). */
  flushDelayMs?: number;
  /** Told when a scheduled flush fails (the disk failed us; the server must stop). Logged by default. */
  onFatal?: (error: Error) => void;
}

/** A record that fails its CRC or framing, or a locator that names no record. The message names the file and offset. */
export class BodyCorrupt extends Error {
  constructor(message: string, readonly file?: string, readonly offset?: number) {
    super(message);
    this.name = 'BodyCorrupt';
  }
}

/** Where nothing is logged; snapshots/ takes only types from actors/, so not actors' quietLogger. */
const SILENT: Logger = { fatal() {}, error() {}, warn() {}, info() {}, debug() {}, child: () => SILENT, isLevelEnabled: () => false };

/** A locator is `segment * 2^37 + offset`: at most 2^16 segments of at most 128 GiB, below 2^53. */
const SEGMENT_SPAN = 2 ** 37;
/** The highest segment number a locator can name. */
export const MAX_SEGMENT_NUMBER = 2 ** 16 - 1;

/** The locator of the record at `offset` of segment `segment`. */
export function makeLocator(segment: number, offset: number): number {
  return segment * SEGMENT_SPAN + offset;
}
/** The segment number a locator names. */
export function locatorSegment(loc: number): number {
  return Math.floor(loc / SEGMENT_SPAN);
}
/** The byte offset in its segment a locator names. */
export function locatorOffset(loc: number): number {
  return loc % SEGMENT_SPAN;
}

const SEGMENT_NAME = /^body-(\d{16})\.pbody$/;
/** File name of body segment `n`. */
export function bodySegmentName(n: number): string {
  return `body-${String(n).padStart(16, '0')}.pbody`;
}

/** Bytes of the first read of a record; a second read only for a longer record. */
const SPECULATIVE_READ_BYTES = 4096;
/** The most one coalesced read of `readMany` covers. */
const COALESCED_READ_BYTES = 64 * 1024;
/** Async reads of `readMany` in flight at once. */
const READS_IN_FLIGHT = 4;
/**
 * How long appended records may wait in the buffer before a scheduled flush writes them
 * (`BodyStoreOptions.flushDelayMs`). Their durability does not depend on it: a
 * message's body is in its log record, which replay stores again (and `sync` writes
 * everything before a snapshot is put in place). A flush per event-loop turn, as
 * before, was a `writeSync` (1.5 to 2 us of CPU here, whatever its size up to a few KB)
 * for the few records a turn holds under load; at 12,000 msg/s this is one per about
 * 120 (bench/README.md, the send path won back).
 */
export const FLUSH_DELAY_MS = 10;
/** Buffered bytes that trigger a flush from `append` itself (a long synchronous burst). */
const FLUSH_AT_BYTES = 4 * 1024 * 1024;
/** Per cached body: Map entry, entry object, body object, string headers. */
const ENTRY_OVERHEAD = 160;

interface Segment {
  no: number;
  name: string;
  kind: SegmentKind;
  /** Bytes in the file (written, not only buffered). */
  size: number;
}
interface Cached {
  body: MessageBody;
  bytes: number;
}

/** Approximate heap bytes of a decoded body: 2 bytes per string character plus overhead. */
function bodyBytes(body: MessageBody, payloadBytes: number): number {
  return 2 * (body.content.length + body.rendered.length) + (body.edit_history ? 2 * payloadBytes : 0) + ENTRY_OVERHEAD;
}

function writeAll(fd: number, buf: Buffer, length: number, position: number): void {
  for (let done = 0; done < length; ) done += writeSync(fd, buf, done, length - done, position + done);
}

function readAll(fd: number, buf: Buffer, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

function readAsync(fd: number, buf: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let done = 0;
    const step = (): void =>
      fsRead(fd, buf, done, length - done, position + done, (err, n) => {
        if (err) return reject(err);
        done += n;
        if (n === 0 || done >= length) resolve(done);
        else step();
      });
    step();
  });
}

/** Message bodies on disk behind a bounded cache. See the module comment. */
export class BodyStore {
  private readonly segments = new Map<number, Segment>();
  private readonly readFds = new Map<number, number>();
  private active!: Segment;
  private activeFd = -1;
  private nextNo = 1;
  private pending = Buffer.allocUnsafe(1024 * 1024);
  private pendingBytes = 0;
  /** Bodies by locator, least recently used first: those read, and those appended (written or not). */
  private readonly cache = new Map<number, Cached>();
  private cacheUsed = 0;
  /** Bytes of the cached bodies whose records are still buffered: never evicted, not counted against the bound. */
  private unwrittenBytes = 0;
  /**
   * The eviction hand: a live iterator over the cache, oldest entry first. A fresh
   * iterator per eviction would step again over the tombstones of every entry deleted
   * before it (V8 keeps them until the table is rebuilt): quadratic.
   */
  private evictFrom: MapIterator<[number, Cached]> | undefined;
  private hits = 0;
  private misses = 0;
  private diskReads = 0;
  /** Write fds of segments written since the last sync (the active one included). */
  private readonly unsynced = new Set<number>();
  private dirDirty = false;
  private scheduled = false;
  private failed: Error | undefined;
  private closed = false;
  private compacting = false;
  /** Async reads and fdatasyncs in flight; fds are closed only once none is, so none hits a reused fd. */
  private inFlight = 0;
  /** Write fds not closed yet (the active segment's, compaction outputs'). */
  private readonly openWriteFds = new Set<number>();
  private deferredCloses: number[] = [];
  private readonly scratch = Buffer.allocUnsafe(SPECULATIVE_READ_BYTES);
  private readonly segmentBytes: number;
  private readonly sliceMs: number;
  private readonly flushDelayMs: number;
  private readonly cacheLimit: number;
  private readonly log: Logger;

  private constructor(private readonly opts: BodyStoreOptions) {
    this.segmentBytes = Math.min(opts.segmentBytes ?? 256 * 1024 * 1024, SEGMENT_SPAN);
    this.cacheLimit = opts.cacheBytes ?? 64 * 1024 * 1024;
    this.log = opts.log ?? SILENT;
    this.sliceMs = opts.sliceMs ?? 4;
    this.flushDelayMs = opts.flushDelayMs ?? FLUSH_DELAY_MS;
  }

  /**
   * Opens (or creates) the store in `opts.dir`. A torn tail of a segment that may have
   * been written since the last sync is cut off (the original kept beside it) and
   * logged; a bad record followed by a valid one there throws BodyCorrupt naming the
   * file and offset, unless `opts.repair` is 'truncate'. A bad segment header throws.
   */
  static open(opts: BodyStoreOptions): BodyStore {
    const store = new BodyStore(opts);
    store.recover();
    return store;
  }

  private recover(): void {
    const { dir } = this.opts;
    if (!this.opts.readOnly) mkdirSync(dir, { recursive: true });
    else if (!existsSync(dir)) return;
    const found = readdirSync(dir)
      .map((name) => ({ name, m: SEGMENT_NAME.exec(name) }))
      .filter((x) => x.m !== null)
      .map((x) => ({ name: x.name, no: Number(x.m![1]) }))
      .sort((a, b) => a.no - b.no);
    const highest = found.length > 0 ? found[found.length - 1].no : 0;
    for (const { name, no } of found) {
      const path = join(dir, name);
      const fd = openSync(path, 'r');
      const head = Buffer.alloc(SEGMENT_HEADER_BYTES);
      const size = fstatSync(fd).size;
      const got = readAll(fd, head, SEGMENT_HEADER_BYTES, 0);
      closeSync(fd);
      const kind = checkBodySegmentHeader(head.subarray(0, got));
      if (typeof kind === 'string') {
        this.segments.set(no, { no, name, kind, size });
        continue;
      }
      // The newest segment's header never landed: nothing in it was ever synced.
      if (this.opts.readOnly && no === highest) continue;
      if (no === highest && (got < SEGMENT_HEADER_BYTES || head.every((b) => b === 0))) {
        const kept = `${path}.torn-${Date.now()}`;
        renameSync(path, kept);
        this.log.warn({ event: 'bodies.torn_segment_set_aside', file: path, bytes: size, kept }, `bodies: ${path} has no complete header (${size} bytes); set aside as ${kept}`);
        continue;
      }
      throw new BodyCorrupt(`${path} at offset 0: ${kind.error}`, path, 0);
    }
    this.nextNo = Math.max(highest, ...this.segments.keys()) + 1;
    let lastAppend = -1;
    for (const s of this.segments.values()) if (s.kind === 'append') lastAppend = Math.max(lastAppend, s.no);
    if (this.opts.readOnly) return;
    for (const s of this.segments.values()) if (s.no >= lastAppend) this.repairTail(s);
    if (lastAppend < 0) this.startSegment();
    else {
      this.active = this.segments.get(lastAppend)!;
      this.activeFd = openSync(join(dir, this.active.name), 'r+');
      this.openWriteFds.add(this.activeFd);
    }
  }

  /** Scans a segment that may hold unsynced writes; cuts a torn tail, refuses corruption. */
  private repairTail(s: Segment): void {
    const file = join(this.opts.dir, s.name);
    const src = SegmentFile.open(file);
    let cut: { offset: number; kind: 'torn' | 'corrupt' } | undefined;
    try {
      for (let offset = SEGMENT_HEADER_BYTES; ; ) {
        const step = scanFrame(src, offset);
        if (step.kind === 'end') break;
        if (step.kind === 'record') {
          offset = step.next;
          continue;
        }
        const torn = nextValidFrame(src, offset) < 0;
        const fields = { file, offset, bytes: src.length - offset, reason: step.reason };
        if (torn) {
          this.log.warn({ event: 'bodies.torn_tail_found', ...fields }, `bodies: ${file}: dropping a torn tail at offset ${offset} (${step.reason}; ${src.length - offset} bytes, no valid record after them)`);
          cut = { offset, kind: 'torn' };
        } else if (this.opts.repair === 'truncate') {
          this.log.error({ event: 'bodies.corrupt_truncated', ...fields }, `bodies: ${file}: corrupt record at offset ${offset} (${step.reason}); truncating there as asked, losing the records after it`);
          cut = { offset, kind: 'corrupt' };
        } else {
          throw new BodyCorrupt(`corrupt body record in ${file} at offset ${offset}: ${step.reason} (valid records follow it; open with repair 'truncate' to cut the segment there)`, file, offset);
        }
        break;
      }
    } finally {
      src.close();
    }
    if (cut) {
      truncateTorn({ file, offset: cut.offset }, this.log, cut.kind);
      s.size = cut.offset;
    }
  }

  /** Closes the active segment (synced, as the tail-repair rule at open requires) and starts the next. */
  private startSegment(): void {
    if (this.activeFd >= 0) {
      this.flush();
      fdatasyncSync(this.activeFd);
      this.closeWriteFd(this.activeFd);
      this.log.info({ event: 'bodies.segment_rotated', segment: this.active.name, bytes: this.active.size }, `bodies: ${this.active.name} closed at ${this.active.size} bytes`);
    }
    const created = this.createSegment('append');
    this.active = created.segment;
    this.activeFd = created.fd;
  }

  private createSegment(kind: SegmentKind): { segment: Segment; fd: number } {
    const no = this.nextNo++;
    if (no > MAX_SEGMENT_NUMBER) throw new RangeError(`body store: segment number ${no} is beyond what a locator can name (${MAX_SEGMENT_NUMBER})`);
    const name = bodySegmentName(no);
    const fd = openSync(join(this.opts.dir, name), 'wx+');
    this.openWriteFds.add(fd);
    writeAll(fd, bodySegmentHeader(kind), SEGMENT_HEADER_BYTES, 0);
    const segment: Segment = { no, name, kind, size: SEGMENT_HEADER_BYTES };
    this.segments.set(no, segment);
    this.unsynced.add(fd);
    this.dirDirty = true;
    return { segment, fd };
  }

  /**
   * Buffers a new body version of message `id` and returns its locator. Synchronous and
   * cheap: no syscall, except a flush once 4 MiB are buffered and a rollover. The body
   * is served from memory until written; neither it nor a body `read` returns may be mutated.
   */
  append(id: number, body: MessageBody): number {
    if (this.opts.readOnly) throw new Error('body store opened read-only');
    if (this.failed) throw this.failed;
    if (this.closed) throw new Error('body store is closed');
    if (!Number.isSafeInteger(id) || id < 0) throw new RangeError(`body store: message id ${id} is not a non-negative safe integer`);
    // A body without edit history (every send's) is framed by hand, straight into the
    // buffer (writePlainBodyFrame); one with edit history is packed by msgpackr.
    const plain = body.edit_history === undefined;
    const contentBytes = plain ? Buffer.byteLength(body.content, 'utf8') : 0;
    const renderedBytes = plain ? Buffer.byteLength(body.rendered, 'utf8') : 0;
    const payload = plain ? undefined : packBody(body);
    const payloadBytes = payload ? payload.length : plainBodyPayloadBytes(contentBytes, renderedBytes);
    const frame = RECORD_HEADER_BYTES + payloadBytes;
    if (payloadBytes > MAX_BODY_PAYLOAD_BYTES) throw new RangeError(`body of message ${id} is ${payloadBytes} bytes encoded, above the limit`);
    const end = this.active.size + this.pendingBytes;
    // Rolling over packs nothing, so `payload` (a view of msgpackr's shared buffer) stays valid.
    if (end + frame > this.segmentBytes && end > SEGMENT_HEADER_BYTES) this.startSegment();
    if (this.pendingBytes + frame > this.pending.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.pending.length * 2, this.pendingBytes + frame));
      this.pending.copy(grown, 0, 0, this.pendingBytes);
      this.pending = grown;
    }
    const loc = makeLocator(this.active.no, this.active.size + this.pendingBytes);
    this.pendingBytes += payload ? writeBodyFrame(this.pending, this.pendingBytes, id, payload) : writePlainBodyFrame(this.pending, this.pendingBytes, id, body.content, contentBytes, body.rendered, renderedBytes);
    // Into the cache at once, where an unwritten body is never evicted (see `trim`).
    const bytes = bodyBytes(body, payloadBytes);
    this.cache.set(loc, { body, bytes });
    this.cacheUsed += bytes;
    this.unwrittenBytes += bytes;
    if (this.pendingBytes >= FLUSH_AT_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setTimeout(this.scheduledFlush, this.flushDelayMs);
    }
    return loc;
  }

  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    if (this.closed || this.failed) return;
    try {
      this.flush();
    } catch (err) {
      const error = err as Error;
      if (this.opts.onFatal) this.opts.onFatal(error);
      else this.log.error({ event: 'bodies.write_failed', error: error.message }, `bodies: writing buffered bodies failed: ${error.message}`);
    }
  };

  /** Writes the buffered records with one `writeSync`; their bodies may then leave the cache. A failure is final. */
  flush(): void {
    if (this.failed) throw this.failed;
    if (this.pendingBytes === 0) return;
    try {
      writeAll(this.activeFd, this.pending, this.pendingBytes, this.active.size);
    } catch (err) {
      this.failed = err as Error;
      throw err;
    }
    this.active.size += this.pendingBytes;
    this.unsynced.add(this.activeFd);
    this.pendingBytes = 0;
    if (this.pending.length > 8 * FLUSH_AT_BYTES) this.pending = Buffer.allocUnsafe(1024 * 1024);
    this.unwrittenBytes = 0;
    this.trim();
  }

  /** Flushes, then fdatasyncs every segment written since the last sync (and the directory if a segment was created). */
  sync(): void {
    this.flush();
    for (const fd of this.unsynced) fdatasyncSync(fd);
    this.unsynced.clear();
    if (this.dirDirty) {
      fsyncDir(this.opts.dir);
      this.dirDirty = false;
    }
  }

  /**
   * `sync` with the fdatasyncs in libuv's thread pool: resolves once every record
   * appended before the call is durable, while the event loop (and appends) go on.
   * For the snapshot, whose sync of the bodies written since the last one (tens of MB
   * at 100,000 messages) held the event loop for 25 to 90 ms here. A failure rejects,
   * and the segments it could not sync stay to be synced (a closed one was synced as
   * it was closed).
   */
  async syncAsync(): Promise<void> {
    this.flush();
    const fds = [...this.unsynced];
    this.unsynced.clear();
    const dirDirty = this.dirDirty;
    this.dirDirty = false;
    // Closes of these fds wait for the fdatasyncs (`closeFd`): never a reused fd.
    this.inFlight++;
    try {
      await Promise.all(fds.map((fd) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())))));
      if (dirDirty) fsyncDir(this.opts.dir);
    } catch (err) {
      for (const fd of fds) if (this.openWriteFds.has(fd)) this.unsynced.add(fd);
      if (dirDirty) this.dirDirty = true;
      throw err;
    } finally {
      if (--this.inFlight === 0) this.closeDeferred();
    }
  }

  private remember(loc: number, entry: Cached): void {
    const old = this.cache.get(loc);
    if (old) {
      this.cache.delete(loc);
      this.cacheUsed -= old.bytes;
    }
    this.cache.set(loc, entry);
    this.cacheUsed += entry.bytes;
    this.trim();
  }

  /** Whether `loc` is a record still in the buffer, not yet written (its body is then only in the cache). */
  private unwritten(loc: number): boolean {
    return locatorSegment(loc) === this.active.no && locatorOffset(loc) >= this.active.size;
  }

  /**
   * Evicts least recently used bodies until the written ones fit the bound. Bodies not
   * yet written stay (moved to the newest end when the hand meets them): they are at
   * most one buffer's worth (FLUSH_AT_BYTES and a record), and the flush that writes
   * them trims again. Ends: while the written bodies exceed the bound, one is cached.
   */
  private trim(): void {
    while (this.cacheUsed - this.unwrittenBytes > this.cacheLimit) {
      let next = this.evictFrom?.next();
      if (!next || next.done) {
        this.evictFrom = this.cache.entries();
        next = this.evictFrom.next();
      }
      const [k, e] = next.value as [number, Cached];
      this.cache.delete(k);
      if (this.unwritten(k)) this.cache.set(k, e);
      else this.cacheUsed -= e.bytes;
    }
  }

  private cached(loc: number): MessageBody | undefined {
    const entry = this.cache.get(loc);
    if (!entry) return undefined;
    this.cache.delete(loc);
    this.cache.set(loc, entry);
    return entry.body;
  }

  /** Whether a locator's body is in memory (for tests and metrics). */
  has(loc: number): boolean {
    return this.cache.has(loc);
  }

  private segmentOf(loc: number): { segment: Segment; offset: number; file: string } {
    const no = locatorSegment(loc);
    const offset = locatorOffset(loc);
    const segment = this.segments.get(no);
    const file = join(this.opts.dir, bodySegmentName(no));
    if (!Number.isSafeInteger(loc) || loc < 0 || !segment) throw new BodyCorrupt(`no body record at locator ${loc}: ${file} does not exist`, file, offset);
    if (offset < SEGMENT_HEADER_BYTES || offset >= segment.size) throw new BodyCorrupt(`no body record at locator ${loc}: offset ${offset} is outside ${file} (${segment.size} bytes)`, file, offset);
    return { segment, offset, file };
  }

  private readFd(segment: Segment): number {
    let fd = this.readFds.get(segment.no);
    if (fd === undefined) {
      if (this.closed) throw new Error('body store is closed');
      const file = join(this.opts.dir, segment.name);
      if (!this.segments.has(segment.no)) throw new BodyCorrupt(`${file} was deleted`, file, 0);
      try {
        fd = openSync(file, 'r');
      } catch (err) {
        throw new BodyCorrupt(`${file} cannot be opened: ${(err as Error).message}`, file, 0);
      }
      this.readFds.set(segment.no, fd);
    }
    return fd;
  }

  /** Decodes a frame at `at` of `buf` that `checkFrame` passed, or throws BodyCorrupt. */
  private decodeAt(buf: Buffer, at: number, size: number, file: string, offset: number): MessageBody {
    const body = decodeBodyPayload(buf.subarray(at + RECORD_HEADER_BYTES, at + size));
    if ('bad' in body) throw new BodyCorrupt(`damaged body record (message ${frameId(buf, at)}) in ${file} at offset ${offset}: ${body.bad}`, file, offset);
    return body;
  }

  private bad(file: string, offset: number, reason: string): BodyCorrupt {
    return new BodyCorrupt(`damaged body record in ${file} at offset ${offset}: ${reason}`, file, offset);
  }

  /** A body by locator: from memory, else one 4 KiB pread (a second only for a longer record), CRC-checked. Throws BodyCorrupt. */
  read(loc: number): MessageBody {
    const hit = this.cached(loc);
    if (hit) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const { segment, offset, file } = this.segmentOf(loc);
    const fd = this.readFd(segment);
    let buf = this.scratch;
    let got = readAll(fd, buf, Math.min(SPECULATIVE_READ_BYTES, segment.size - offset), offset);
    this.diskReads++;
    let checked = checkFrame(buf, 0, got);
    if ('need' in checked && offset + checked.need <= segment.size && checked.need > got) {
      const whole = Buffer.allocUnsafe(checked.need);
      buf.copy(whole, 0, 0, got);
      got += readAll(fd, whole.subarray(got), checked.need - got, offset + got);
      this.diskReads++;
      buf = whole;
      checked = checkFrame(buf, 0, got);
    }
    if ('bad' in checked) throw this.bad(file, offset, checked.bad);
    if ('need' in checked) throw this.bad(file, offset, `record cut short (${checked.need} bytes, ${got} in the file)`);
    const body = this.decodeAt(buf, 0, checked.size, file, offset);
    this.remember(loc, { body, bytes: bodyBytes(body, checked.size - RECORD_HEADER_BYTES) });
    return body;
  }

  /**
   * Bodies of many locators (cold history): cached ones at once, the rest sorted by
   * position and read with async reads of up to 64 KiB that coalesce neighbouring
   * records; they fill the cache. A damaged record rejects with BodyCorrupt, or with
   * `onCorrupt` is told and left out of the result.
   */
  async readMany(locs: Iterable<number>, opts: { onCorrupt?: (loc: number, error: BodyCorrupt) => void } = {}): Promise<Map<number, MessageBody>> {
    const result = new Map<number, MessageBody>();
    const wanted = new Map<number, number[]>();
    let failure: BodyCorrupt | undefined;
    const corrupt = (loc: number, error: BodyCorrupt): void => {
      if (opts.onCorrupt) opts.onCorrupt(loc, error);
      else failure ??= error;
    };
    for (const loc of locs) {
      if (result.has(loc)) continue;
      const hit = this.cached(loc);
      if (hit) {
        this.hits++;
        result.set(loc, hit);
        continue;
      }
      try {
        this.segmentOf(loc);
      } catch (err) {
        corrupt(loc, err as BodyCorrupt);
        continue;
      }
      const no = locatorSegment(loc);
      const list = wanted.get(no);
      if (list) list.push(locatorOffset(loc));
      else wanted.set(no, [locatorOffset(loc)]);
    }
    const runs: Array<{ segment: Segment; start: number; end: number; offsets: number[] }> = [];
    for (const [no, offsets] of [...wanted].sort((a, b) => a[0] - b[0])) {
      const segment = this.segments.get(no)!;
      const sorted = [...new Set(offsets)].sort((a, b) => a - b);
      this.misses += sorted.length;
      let run: (typeof runs)[number] | undefined;
      for (const offset of sorted) {
        const end = Math.min(segment.size, offset + SPECULATIVE_READ_BYTES);
        if (run && offset <= run.end + SPECULATIVE_READ_BYTES && end - run.start <= COALESCED_READ_BYTES) {
          run.end = Math.max(run.end, end);
          run.offsets.push(offset);
        } else {
          run = { segment, start: offset, end, offsets: [offset] };
          runs.push(run);
        }
      }
    }
    this.inFlight++;
    try {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < runs.length) {
          const run = runs[next++];
          const file = join(this.opts.dir, run.segment.name);
          let fd: number;
          try {
            fd = this.readFd(run.segment);
          } catch (err) {
            if (!(err instanceof BodyCorrupt)) throw err;
            for (const offset of run.offsets) corrupt(makeLocator(run.segment.no, offset), err);
            continue;
          }
          const buf = Buffer.allocUnsafe(run.end - run.start);
          this.diskReads++;
          const got = await readAsync(fd, buf, buf.length, run.start);
          for (const offset of run.offsets) {
            const loc = makeLocator(run.segment.no, offset);
            try {
              const at = offset - run.start;
              let checked = checkFrame(buf, at, got - at);
              let frame = buf;
              let frameAt = at;
              if ('need' in checked && offset + checked.need <= run.segment.size) {
                frame = Buffer.allocUnsafe(checked.need);
                this.diskReads++;
                const n = await readAsync(fd, frame, checked.need, offset);
                frameAt = 0;
                checked = checkFrame(frame, 0, n);
              }
              if ('bad' in checked) throw this.bad(file, offset, checked.bad);
              if ('need' in checked) throw this.bad(file, offset, `record cut short (${checked.need} bytes)`);
              const body = this.decodeAt(frame, frameAt, checked.size, file, offset);
              this.remember(loc, { body, bytes: bodyBytes(body, checked.size - RECORD_HEADER_BYTES) });
              result.set(loc, body);
            } catch (err) {
              if (!(err instanceof BodyCorrupt)) throw err;
              corrupt(loc, err);
            }
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, runs.length) }, worker));
    } finally {
      if (--this.inFlight === 0) this.closeDeferred();
    }
    if (failure) throw failure;
    return result;
  }

  private closeFd(fd: number): void {
    if (this.inFlight > 0) this.deferredCloses.push(fd);
    else closeSync(fd);
  }

  /** Closes a segment's write fd (once no fdatasync of `syncAsync` is in flight); it has nothing left to sync. */
  private closeWriteFd(fd: number): void {
    this.openWriteFds.delete(fd);
    this.unsynced.delete(fd);
    this.closeFd(fd);
  }

  private closeDeferred(): void {
    const fds = this.deferredCloses;
    this.deferredCloses = [];
    for (const fd of fds) closeSync(fd);
  }

  /** Segment count, bytes on disk and buffered, cache use (pinned bodies included), hit counts, and reads issued to files. */
  stats(): { segments: number; bytes: number; cacheBytes: number; cacheEntries: number; hits: number; misses: number; diskReads: number } {
    let bytes = this.pendingBytes;
    for (const s of this.segments.values()) bytes += s.size;
    return { segments: this.segments.size, bytes, cacheBytes: this.cacheUsed, cacheEntries: this.cache.size, hits: this.hits, misses: this.misses, diskReads: this.diskReads };
  }

  /**
   * Copies every live record (raw bytes, CRC verified, not decoded) into new `compact`
   * segments, in ascending old position, then tells `onMoved(old, new)` for each once
   * its new bytes are written. Yields every few ms, so a caller can run it in slices
   * (`runSlicesAsync`); `live()` is iterated across slices, so it must tolerate changes
   * (a Map's iterator does). Appends go on meanwhile, into a segment started for them,
   * which is not compacted. Returns the segments now obsolete, NOT deleted: the caller
   * deletes them (`deleteSegments`) once a durable snapshot references only new
   * locators. A segment where a live record is damaged is never obsolete; the damage is
   * returned, and those records keep their old locators.
   */
  *compact(
    live: () => Iterable<number>,
    onMoved: (oldLoc: number, newLoc: number) => void,
  ): Generator<void, { obsolete: string[]; copied: number; bytesBefore: number; bytesAfter: number; damaged: Array<{ file: string; offset: number; reason: string }> }> {
    if (this.failed) throw this.failed;
    if (this.compacting) throw new Error('a body store compaction is already running');
    this.compacting = true;
    const outputs: Array<{ segment: Segment; fd: number }> = [];
    const written: Segment[] = [];
    try {
      if (this.active.size + this.pendingBytes > SEGMENT_HEADER_BYTES) this.startSegment();
      const sources = [...this.segments.values()].filter((s) => s !== this.active).sort((a, b) => a.no - b.no);
      const perSegment = new Map<number, number[]>(sources.map((s) => [s.no, []]));
      const damaged: Array<{ file: string; offset: number; reason: string }> = [];
      let sliceStart = performance.now();
      let seen = 0;
      for (const loc of live()) {
        const list = perSegment.get(locatorSegment(loc));
        if (list) list.push(locatorOffset(loc));
        else if (!this.segments.has(locatorSegment(loc))) damaged.push({ file: bodySegmentName(locatorSegment(loc)), offset: locatorOffset(loc), reason: 'live locator in a segment that does not exist' });
        if ((++seen & 4095) === 0 && performance.now() - sliceStart >= this.sliceMs) {
          yield;
          sliceStart = performance.now();
        }
      }
      const bytesBefore = sources.reduce((n, s) => n + s.size, 0);
      let out: { segment: Segment; fd: number } | undefined;
      let buf = Buffer.allocUnsafe(1024 * 1024);
      let buffered = 0;
      const moves: number[] = [];
      const writeOut = (): void => {
        if (out && buffered > 0) {
          writeAll(out.fd, buf, buffered, out.segment.size);
          out.segment.size += buffered;
          buffered = 0;
        }
        for (let i = 0; i < moves.length; i += 2) onMoved(moves[i], moves[i + 1]);
        moves.length = 0;
      };
      const damagedSegments = new Set<number>();
      let copied = 0;
      for (const s of sources) {
        const offsets = Float64Array.from(perSegment.get(s.no)!).sort();
        perSegment.delete(s.no);
        if (offsets.length === 0) continue;
        const file = join(this.opts.dir, s.name);
        const src = SegmentFile.open(file);
        try {
          let previous = -1;
          for (const offset of offsets) {
            if (offset === previous) continue;
            previous = offset;
            const step = scanFrame(src, offset);
            if (step.kind !== 'record') {
              damaged.push({ file, offset, reason: step.kind === 'end' ? 'offset beyond the end of the segment' : step.reason });
              damagedSegments.add(s.no);
              continue;
            }
            const size = step.next - offset;
            if (!out || (out.segment.size + buffered + size > this.segmentBytes && out.segment.size + buffered > SEGMENT_HEADER_BYTES)) {
              writeOut();
              out = this.createSegment('compact');
              outputs.push(out);
              written.push(out.segment);
            }
            if (buffered + size > buf.length) {
              writeOut();
              if (size > buf.length) buf = Buffer.allocUnsafe(size);
            }
            src.view(offset, step.next).copy(buf, buffered);
            moves.push(makeLocator(s.no, offset), makeLocator(out.segment.no, out.segment.size + buffered));
            buffered += size;
            if ((++copied & 15) === 0 && performance.now() - sliceStart >= this.sliceMs) {
              writeOut();
              yield;
              sliceStart = performance.now();
            }
          }
        } finally {
          src.close();
        }
      }
      writeOut();
      // Synced before appends move above them: from then on only the new append segment may be torn.
      for (const o of outputs.splice(0)) {
        fdatasyncSync(o.fd);
        this.closeWriteFd(o.fd);
      }
      if (written.length > 0) this.startSegment();
      fsyncDir(this.opts.dir);
      this.dirDirty = false;
      const obsolete = sources.filter((s) => !damagedSegments.has(s.no)).map((s) => s.name);
      const bytesAfter = written.reduce((n, s) => n + s.size, 0);
      this.log.info({ event: 'bodies.compacted', copied, bytes_before: bytesBefore, bytes_after: bytesAfter, obsolete: obsolete.length, damaged: damaged.length }, `bodies: compacted ${sources.length} segments (${bytesBefore} bytes) into ${written.length} (${bytesAfter} bytes), ${copied} live records`);
      return { obsolete, copied, bytesBefore, bytesAfter, damaged };
    } finally {
      // Abandoned midway: the partial outputs stay, unsynced and above the append segment, so torn-tolerant at open.
      for (const o of outputs) this.closeWriteFd(o.fd);
      this.compacting = false;
    }
  }

  /** Deletes segments a compaction left obsolete, once no durable snapshot references them. */
  deleteSegments(names: string[]): void {
    if (this.compacting) throw new Error('body store: segments cannot be deleted while a compaction runs');
    for (const name of names) {
      const m = SEGMENT_NAME.exec(name);
      if (!m) throw new Error(`body store: ${name} is not a body segment name`);
      const no = Number(m[1]);
      const segment = this.segments.get(no);
      if (!segment) continue;
      if (segment === this.active) throw new Error(`body store: ${name} is the segment being appended to`);
      const fd = this.readFds.get(no);
      if (fd !== undefined) this.closeFd(fd);
      this.readFds.delete(no);
      unlinkSync(join(this.opts.dir, name));
      this.segments.delete(no);
      for (const loc of this.cache.keys()) {
        if (locatorSegment(loc) !== no) continue;
        this.cacheUsed -= this.cache.get(loc)!.bytes;
        this.cache.delete(loc);
      }
      this.log.info({ event: 'bodies.segment_deleted', segment: name, bytes: segment.size }, `bodies: deleted ${name} (${segment.size} bytes)`);
    }
    if (names.length > 0) fsyncDir(this.opts.dir);
  }

  /**
   * Reads every segment in slices and checks every record (CRC, framing, payload), past
   * damage too: the log's frame scanner finds where valid records resume.
   */
  *verify(): Generator<void, { segments: number; records: number; bytes: number; damaged: Array<{ file: string; offset: number; reason: string; id?: number; torn?: boolean }> }> {
    this.flush();
    const damaged: Array<{ file: string; offset: number; reason: string; id?: number; torn?: boolean }> = [];
    const list = [...this.segments.values()].sort((a, b) => a.no - b.no);
    let records = 0;
    let bytes = 0;
    let sliceStart = performance.now();
    for (const s of list) {
      const file = join(this.opts.dir, s.name);
      let src: SegmentFile;
      try {
        src = SegmentFile.open(file);
      } catch (err) {
        damaged.push({ file, offset: 0, reason: `unreadable (${(err as Error).message})` });
        continue;
      }
      try {
        bytes += src.length;
        const kind = checkBodySegmentHeader(src.view(0, SEGMENT_HEADER_BYTES));
        if (typeof kind !== 'string') {
          damaged.push({ file, offset: 0, reason: kind.error });
          continue;
        }
        for (let offset = SEGMENT_HEADER_BYTES; ; ) {
          const step = scanFrame(src, offset);
          if (step.kind === 'end') break;
          if (step.kind === 'record') {
            const body = decodeBodyPayload(src.view(offset + RECORD_HEADER_BYTES, step.next));
            if ('bad' in body) damaged.push({ file, offset, reason: body.bad, id: step.id });
            else records++;
            offset = step.next;
          } else {
            const found: { file: string; offset: number; reason: string; id?: number; torn?: boolean } = step.id === undefined ? { file, offset, reason: step.reason } : { file, offset, reason: step.reason, id: step.id };
            damaged.push(found);
            offset = nextValidFrame(src, offset + 1);
            // A cut-short end of the newest segment, nothing valid after it: a torn tail, which no locator reaches.
            if (offset < 0 && s === list[list.length - 1]) found.torn = true;
            if (offset < 0) break;
          }
          if ((records & 15) === 0 && performance.now() - sliceStart >= this.sliceMs) {
            yield;
            sliceStart = performance.now();
          }
        }
      } finally {
        src.close();
      }
    }
    return { segments: list.length, records, bytes, damaged };
  }

  /** Flushes, syncs and closes every file. */
  close(): void {
    if (this.closed) return;
    if (!this.failed) this.sync();
    this.closed = true;
    if (this.activeFd >= 0) this.closeWriteFd(this.activeFd);
    this.activeFd = -1;
    for (const fd of this.readFds.values()) this.closeFd(fd);
    this.readFds.clear();
  }

  /**
   * Stops as a `kill -9` would: the buffered bodies are dropped unwritten and nothing is
   * written or synced after (recovery tests that crash a store inside one process; a
   * later flush of this instance would otherwise write into files the next one owns).
   */
  abandon(): void {
    if (this.closed) return;
    this.closed = true;
    this.pendingBytes = 0;
    if (this.activeFd >= 0) this.closeWriteFd(this.activeFd);
    this.activeFd = -1;
    for (const fd of this.readFds.values()) this.closeFd(fd);
    this.readFds.clear();
  }

  /** Names of the segment files, oldest first. */
  segmentNames(): string[] {
    return [...this.segments.values()].sort((a, b) => a.no - b.no).map((s) => s.name);
  }
}
