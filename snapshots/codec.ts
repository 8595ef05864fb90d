/**
 * The one codec of the append log: msgpack payloads framed with their length, a
 * CRC32, a seq and the time of commit. msgpackr decodes damaged bytes without
 * complaint, so nothing is decoded before its frame's CRC has verified.
 *
 * Record layout (little endian), format 2:
 *   u32 payload length | u32 crc32(everything after it) | u64 seq | u64 ms since the epoch |
 *   u32 organization (0: server-wide) | u64 the organization's own seq | payload
 * Format 1 (still read; a segment's header says which) had neither:
 *   u32 payload length | u32 crc32(seq bytes + payload) | u64 seq | payload
 * The body store frames its records as format 1 does, with a message id for the seq.
 */
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import type { Fact, Stamped } from '../actors/areas/index.js';

/**
 * Bumped whenever the encoding of facts changes incompatibly. 2: each record carries its
 * time of commit, and its organization with that organization's own sequence number.
 */
export const LOG_FORMAT_VERSION = 2;
/** The log formats this build reads. */
export const READABLE_LOG_VERSIONS: readonly number[] = [1, 2];
/** First bytes of every log segment. */
export const LOG_MAGIC = Buffer.from('PRLYLOG\u0000', 'latin1');
/** Magic, u32 format version, u32 reserved. */
export const SEGMENT_HEADER_BYTES = 16;
/** A frame's header without a time: log format 1, and the body store's records. */
export const RECORD_HEADER_BYTES = 16;
/** A log record's header in format 2: the frame header, the time of commit, the organization and its seq. */
export const TIMED_RECORD_HEADER_BYTES = 36;

/** The header size of a log record in format `version`. */
export function recordHeaderBytes(version: number): number {
  return version >= 2 ? TIMED_RECORD_HEADER_BYTES : RECORD_HEADER_BYTES;
}
/** A record larger than this is certainly corrupt. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

// Plain msgpack maps, no shared structures: every record decodes on its own. Binary
// values are copied: a record's bytes are a view of a read window, not to be pinned.
const packr = new Packr({ useRecords: false, moreTypes: false, copyBuffers: true });

/**
 * A segment's bytes, read by position: a file read through a window (`SegmentFile` in
 * log.ts), so that no segment is ever held whole, or a buffer already in memory.
 */
export interface SegmentBytes {
  /** The segment's size. */
  readonly length: number;
  /** Bytes `from` to `to` (at most `length`); the view stays valid after later calls. */
  view(from: number, to: number): Buffer;
}

/** A buffer as SegmentBytes. */
export function bufferBytes(buf: Buffer): SegmentBytes {
  return { length: buf.length, view: (from, to) => buf.subarray(from, to) };
}

const asBytes = (src: Buffer | SegmentBytes): SegmentBytes => (Buffer.isBuffer(src) ? bufferBytes(src) : src);

/** The header written at the start of each segment. */
export function segmentHeader(): Buffer {
  const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
  LOG_MAGIC.copy(header, 0);
  header.writeUInt32LE(LOG_FORMAT_VERSION, 8);
  return header;
}

/** Frames one fact as a log record of the current format (a record stamped without a time gets 0). */
export function encodeRecord(stamped: Stamped): Buffer {
  const payload = packr.pack(stamped.fact);
  const record = Buffer.allocUnsafe(TIMED_RECORD_HEADER_BYTES + payload.length);
  record.writeUInt32LE(payload.length, 0);
  record.writeBigUInt64LE(BigInt(stamped.seq), 8);
  record.writeBigUInt64LE(BigInt(Math.max(0, Math.floor(stamped.at ?? 0))), 16);
  record.writeUInt32LE(stamped.org ?? 0, 24);
  record.writeBigUInt64LE(BigInt(stamped.oseq ?? 0), 28);
  payload.copy(record, TIMED_RECORD_HEADER_BYTES);
  record.writeUInt32LE(crc32(record.subarray(8)), 4);
  return record;
}

/**
 * What was found at one offset of a segment. `torn` and `corrupt` only describe the
 * bytes at this offset; whether a bad frame is a torn tail (dropped at start) or
 * corruption (refused) is decided for the whole segment by `readSegment` in log.ts,
 * which looks for a valid frame after it with `findValidFrame`.
 */
export type FrameResult =
  | { kind: 'record'; stamped: Stamped; next: number }
  | { kind: 'end' }
  /** The segment ends inside this frame, or in zeros: a write that never completed. */
  | { kind: 'torn'; reason: string }
  /** A complete frame whose bytes do not verify. */
  | { kind: 'corrupt'; reason: string };

/** Bytes scanned at a time by the checks that look ahead (`allZero`, `findValidFrame`). */
const SCAN_BYTES = 1024 * 1024;

/** True when every byte from `from` to the end is zero (or there are none). Returns at the first other byte. */
function allZero(src: SegmentBytes, from: number): boolean {
  for (let at = from; at < src.length; at += SCAN_BYTES) {
    const part = src.view(at, Math.min(src.length, at + SCAN_BYTES));
    for (let i = 0; i < part.length; i++) if (part[i] !== 0) return false;
  }
  return true;
}

/** Reads the frame at `offset` of a segment of log format `version`. */
export function decodeFrame(bytes: Buffer | SegmentBytes, offset: number, version = LOG_FORMAT_VERSION): FrameResult {
  const src = asBytes(bytes);
  const headerBytes = recordHeaderBytes(version);
  if (offset === src.length) return { kind: 'end' };
  if (allZero(src, offset)) return { kind: 'torn', reason: `${src.length - offset} zero bytes at the end` };
  if (src.length - offset < headerBytes) return { kind: 'torn', reason: 'incomplete record header' };
  const header = src.view(offset, offset + headerBytes);
  const length = header.readUInt32LE(0);
  if (length === 0) return { kind: 'corrupt', reason: 'empty record' };
  if (length > MAX_RECORD_BYTES) return { kind: 'corrupt', reason: `impossible record length ${length}` };
  const end = offset + headerBytes + length;
  if (end > src.length) return { kind: 'torn', reason: `record of ${length} bytes cut short` };
  const crc = header.readUInt32LE(4);
  const record = src.view(offset, end);
  if (crc32(record.subarray(8)) !== crc) {
    // A final record, or one followed only by zeros, was being written when the process died.
    return allZero(src, end) ? { kind: 'torn', reason: 'checksum mismatch in the final record' } : { kind: 'corrupt', reason: 'checksum mismatch' };
  }
  const seq = Number(header.readBigUInt64LE(8));
  let fact: Fact;
  try {
    fact = packr.unpack(record.subarray(headerBytes)) as Fact;
  } catch (err) {
    return { kind: 'corrupt', reason: `undecodable payload (${(err as Error).message})` };
  }
  if (!fact || typeof fact !== 'object' || typeof (fact as { type?: unknown }).type !== 'string') {
    return { kind: 'corrupt', reason: 'payload is not a fact' };
  }
  const stamped: Stamped = version >= 2 ? { seq, fact, at: Number(header.readBigUInt64LE(16)), org: header.readUInt32LE(24), oseq: Number(header.readBigUInt64LE(28)) } : { seq, fact };
  return { kind: 'record', stamped, next: end };
}

/** The highest byte of a plausible record length (MAX_RECORD_BYTES is 2^26). */
const MAX_LENGTH_TOP_BYTE = MAX_RECORD_BYTES >>> 24;
/** Seqs are JS numbers, so a stored seq at or above 2^53 was never written by Parley. */
const MAX_SEQ_HIGH_WORD = 0x1fffff;

/** True when a payload's first byte starts a msgpack map, as every encoded fact does. */
function startsMap(byte: number): boolean {
  return (byte >= 0x80 && byte <= 0x8f) || byte === 0xde || byte === 0xdf;
}

/**
 * The offset of the first valid frame at or after `from`, or -1: a position where a
 * record header gives a plausible length that fits in the buffer, a seq above
 * `afterSeq`, and a CRC that verifies. Scans byte by byte, because after a bad frame
 * nothing says where the next frame would start. Off the happy path only (it runs
 * once per bad frame), and cheap: the CRC is computed only where the header passes
 * the checks that every frame Parley writes passes (length, seq below 2^53 and above
 * `afterSeq`, a payload that starts a msgpack map), which random bytes almost never do.
 */
export function findValidFrame(bytes: Buffer | SegmentBytes, from: number, afterSeq: number, headerBytes = TIMED_RECORD_HEADER_BYTES): number {
  const src = asBytes(bytes);
  // The smallest frame is a header and one byte of payload.
  const lastStart = src.length - headerBytes - 1;
  for (let base = Math.max(0, from); base <= lastStart; base += SCAN_BYTES) {
    // Headers starting in [base, base + SCAN_BYTES), with the bytes each header and the
    // first payload byte need.
    const starts = Math.min(SCAN_BYTES, lastStart - base + 1);
    const buf = src.view(base, base + starts + headerBytes + 1);
    for (let i = 0; i < starts; i++) {
      const top = buf[i + 3];
      if (top > MAX_LENGTH_TOP_BYTE) continue;
      const length = buf[i] + buf[i + 1] * 0x100 + buf[i + 2] * 0x10000 + top * 0x1000000;
      const p = base + i;
      if (length === 0 || length > MAX_RECORD_BYTES || length > src.length - p - headerBytes) continue;
      const high = buf.readUInt32LE(i + 12);
      if (high > MAX_SEQ_HIGH_WORD) continue;
      if (high * 0x1_0000_0000 + buf.readUInt32LE(i + 8) <= afterSeq) continue;
      // A time and an organization's seq, where the format has them, are JS numbers too.
      if (headerBytes === TIMED_RECORD_HEADER_BYTES && (buf.readUInt32LE(i + 20) > MAX_SEQ_HIGH_WORD || buf.readUInt32LE(i + 32) > MAX_SEQ_HIGH_WORD)) continue;
      if (!startsMap(buf[i + headerBytes])) continue;
      if (crc32(src.view(p + 8, p + headerBytes + length)) === buf.readUInt32LE(i + 4)) return p;
    }
  }
  return -1;
}

/** Checks a segment's header; returns an error message or null. */
export function checkSegmentHeader(buf: Buffer): string | null {
  if (buf.length < SEGMENT_HEADER_BYTES) return 'segment shorter than its header';
  if (!buf.subarray(0, 8).equals(LOG_MAGIC)) return 'not a Parley log segment (bad magic)';
  const version = buf.readUInt32LE(8);
  if (!READABLE_LOG_VERSIONS.includes(version)) return `unsupported log format version ${version}`;
  return null;
}

/** The log format of a segment whose header checked (`checkSegmentHeader`). */
export function segmentVersion(header: Buffer): number {
  return header.readUInt32LE(8);
}
