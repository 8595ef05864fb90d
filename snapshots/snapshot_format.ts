/**
 * The snapshot file format. A snapshot is a header, a sequence of framed msgpack
 * chunks (one actor, or one slice of a large actor, each), and a trailer:
 *
 *   header:  "PRLYSNAP" | u32 format version | u32 reserved | u64 start seq | u64 created ms
 *   chunk:   u32 payload length | u32 crc32(payload) | msgpack payload
 *   trailer: "PRLYEND\0" | u64 end seq | u32 chunk count | u32 crc32 of everything before
 *            it, the trailer's own magic, end seq and count included (format 3 on; formats
 *            1 and 2 stopped before the trailer, leaving its end seq unchecked)
 *
 * Chunks are self-contained msgpack (record definitions inline, no shared structures),
 * and nothing is decoded before its CRC verifies.
 */
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';

/** Bumped whenever the snapshot encoding changes incompatibly. */
export const SNAPSHOT_FORMAT_VERSION = 4;
/**
 * Versions this build reads. Version 1 stored a user's flag sets as arrays of ids;
 * version 2 stores them as bytes (`IdSet.toBytes`), a memory copy instead of one
 * msgpack integer per id; version 3 extends the final checksum over the trailer's
 * end seq and chunk count; in version 4 a message may be held as stored, its body's
 * locator in place of the body, which stays in the data directory's body store
 * (`snapshots/body_store.ts`). The chunks' contents are each actor kind's own
 * (`actors/kinds/`), which reads every version listed here.
 */
export const READABLE_SNAPSHOT_VERSIONS: readonly number[] = [1, 2, 3, 4];
/** Bytes of the trailer covered by the final checksum (format 3 on): all but the checksum. */
const TRAILER_CHECKED_BYTES = 20;
export const SNAPSHOT_MAGIC = Buffer.from('PRLYSNAP', 'latin1');
export const TRAILER_MAGIC = Buffer.from('PRLYEND\u0000', 'latin1');
export const HEADER_BYTES = 32;
export const TRAILER_BYTES = 24;
const MAX_CHUNK_BYTES = 512 * 1024 * 1024;

const packr = new Packr({ useRecords: true });

export interface SnapshotHeader {
  version: number;
  /** Every fact up to this seq is reflected by every actor in the snapshot. */
  startSeq: number;
  createdAt: number;
}

export function encodeHeader(h: Omit<SnapshotHeader, 'version'>): Buffer {
  const buf = Buffer.alloc(HEADER_BYTES);
  SNAPSHOT_MAGIC.copy(buf, 0);
  buf.writeUInt32LE(SNAPSHOT_FORMAT_VERSION, 8);
  buf.writeBigUInt64LE(BigInt(h.startSeq), 16);
  buf.writeBigUInt64LE(BigInt(h.createdAt), 24);
  return buf;
}

export function decodeHeader(buf: Buffer): SnapshotHeader | string {
  if (buf.length < HEADER_BYTES) return 'file shorter than a snapshot header';
  if (!buf.subarray(0, 8).equals(SNAPSHOT_MAGIC)) return 'not a Parley snapshot (bad magic)';
  const version = buf.readUInt32LE(8);
  if (!READABLE_SNAPSHOT_VERSIONS.includes(version)) return `unsupported snapshot format version ${version}`;
  return { version, startSeq: Number(buf.readBigUInt64LE(16)), createdAt: Number(buf.readBigUInt64LE(24)) };
}

/** Frames one chunk. */
export function encodeChunk(value: unknown): Buffer {
  const payload = packr.pack(value);
  const out = Buffer.allocUnsafe(8 + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  payload.copy(out, 8);
  return out;
}

export function encodeTrailer(endSeq: number, chunks: number, runningCrc: number): Buffer {
  const buf = Buffer.alloc(TRAILER_BYTES);
  TRAILER_MAGIC.copy(buf, 0);
  buf.writeBigUInt64LE(BigInt(endSeq), 8);
  buf.writeUInt32LE(chunks, 16);
  buf.writeUInt32LE(crc32(buf.subarray(0, TRAILER_CHECKED_BYTES), runningCrc), 20);
  return buf;
}

/**
 * A snapshot's bytes, read by position: a file read as needed (`fileSource` in
 * snapshot.ts), so that no snapshot is ever held whole and no size limit applies, or a
 * buffer already in memory.
 */
export interface ByteSource {
  readonly size: number;
  /**
   * `length` bytes at `position`. Into `scratch` when it is given and large enough (the
   * bytes are then only valid until the next read); otherwise into a buffer of their own.
   */
  read(position: number, length: number, scratch?: Buffer): Buffer;
}

/** A buffer as a ByteSource. */
export function bufferSource(buf: Buffer): ByteSource {
  return { size: buf.length, read: (position, length) => buf.subarray(position, position + length) };
}

/** What a snapshot that verified end to end covers. */
export interface SnapshotSummary {
  header: SnapshotHeader;
  endSeq: number;
  /** How many chunks it holds. */
  chunks: number;
}

/** A snapshot read and verified end to end, its chunks decoded. */
export interface VerifiedSnapshot extends Omit<SnapshotSummary, 'chunks'> {
  chunks: unknown[];
}

/** A walk pauses (yields) after reading about this many bytes, so a caller can let the event loop run. */
const WALK_SLICE_BYTES = 16 * 1024 * 1024;

/**
 * Walks a snapshot chunk by chunk, checking each chunk's checksum and, at the end, the
 * checksum over everything. With `onChunk`, each chunk is decoded (from bytes of its
 * own: decoded binary values may be views of them) and handed over as it is read, so
 * a caller that must not act on a snapshot that fails its checks walks it twice: once
 * without `onChunk`, then with it. Returns the summary, or why the snapshot does not
 * verify. Yields every few MB read.
 */
export function* walkSnapshot(src: ByteSource, onChunk?: (chunk: unknown) => void): Generator<void, SnapshotSummary | string> {
  const header = decodeHeader(src.read(0, Math.min(HEADER_BYTES, src.size)));
  if (typeof header === 'string') return header;
  if (src.size < HEADER_BYTES + TRAILER_BYTES) return 'file too short for a trailer (incomplete snapshot)';
  const trailerAt = src.size - TRAILER_BYTES;
  const trailer = Buffer.from(src.read(trailerAt, TRAILER_BYTES));
  if (!trailer.subarray(0, 8).equals(TRAILER_MAGIC)) return 'missing trailer (incomplete snapshot)';
  const endSeq = Number(trailer.readBigUInt64LE(8));
  const count = trailer.readUInt32LE(16);
  const expectedCrc = trailer.readUInt32LE(20);
  let crc = crc32(src.read(0, HEADER_BYTES));
  let scratch = Buffer.allocUnsafe(1024 * 1024);
  let offset = HEADER_BYTES;
  let n = 0;
  let sinceYield = 0;
  let chunkError: string | undefined;
  while (offset < trailerAt) {
    if (trailerAt - offset < 8) return `truncated chunk header at offset ${offset}`;
    const frame = Buffer.from(src.read(offset, 8));
    const length = frame.readUInt32LE(0);
    const end = offset + 8 + length;
    if (length > MAX_CHUNK_BYTES || end > trailerAt) return `impossible chunk length at offset ${offset}`;
    if (!onChunk && length > scratch.length) scratch = Buffer.allocUnsafe(length);
    const payload = src.read(offset + 8, length, onChunk ? undefined : scratch);
    crc = crc32(payload, crc32(frame, crc));
    if (chunkError === undefined && crc32(payload) !== frame.readUInt32LE(4)) chunkError = `chunk checksum mismatch at offset ${offset}`;
    if (onChunk && chunkError === undefined) {
      let chunk: unknown;
      try {
        chunk = packr.unpack(payload);
      } catch (err) {
        return `undecodable chunk at offset ${offset}: ${(err as Error).message}`;
      }
      onChunk(chunk);
    }
    n++;
    offset = end;
    sinceYield += 8 + length;
    if (sinceYield >= WALK_SLICE_BYTES) {
      sinceYield = 0;
      yield;
    }
  }
  if (header.version >= 3) crc = crc32(trailer.subarray(0, TRAILER_CHECKED_BYTES), crc);
  // The whole-file checksum speaks first, as it did when it was checked before any chunk.
  if (crc !== expectedCrc) return header.version >= 3 ? 'checksum mismatch over the snapshot body and trailer' : 'checksum mismatch over the snapshot body';
  if (chunkError !== undefined) return chunkError;
  if (n !== count) return `trailer counts ${count} chunks but the file holds ${n}`;
  return { header, endSeq, chunks: n };
}

/** Runs a walk to its end at once. */
function walkAtOnce<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * Verifies a snapshot and decodes its chunks into memory: for snapshots small enough
 * to hold whole (tests, tools on one chunk). Recovery walks files instead.
 */
export function verifySnapshot(buf: Buffer | ByteSource, decode = true): VerifiedSnapshot | string {
  const src = Buffer.isBuffer(buf) ? bufferSource(buf) : buf;
  const checked = walkAtOnce(walkSnapshot(src));
  if (typeof checked === 'string' || !decode) return typeof checked === 'string' ? checked : { ...checked, chunks: [] };
  const chunks: unknown[] = [];
  const read = walkAtOnce(walkSnapshot(src, (chunk) => chunks.push(chunk)));
  return typeof read === 'string' ? read : { ...read, chunks };
}
