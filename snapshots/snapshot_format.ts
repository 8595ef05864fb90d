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
export const SNAPSHOT_FORMAT_VERSION = 3;
/**
 * Versions this build reads. Version 1 stored a user's flag sets as arrays of ids;
 * version 2 stores them as bytes (`IdSet.toBytes`), a memory copy instead of one
 * msgpack integer per id; version 3 extends the final checksum over the trailer's
 * end seq and chunk count. The chunks' contents are each actor kind's own
 * (`actors/kinds/`), which reads every version listed here.
 */
export const READABLE_SNAPSHOT_VERSIONS: readonly number[] = [1, 2, 3];
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

/** A snapshot read and verified end to end. */
export interface VerifiedSnapshot {
  header: SnapshotHeader;
  endSeq: number;
  chunks: unknown[];
}

/** Verifies a whole snapshot file's bytes and decodes its chunks; returns an error message if it does not verify. */
export function verifySnapshot(buf: Buffer, decode = true): VerifiedSnapshot | string {
  const header = decodeHeader(buf);
  if (typeof header === 'string') return header;
  if (buf.length < HEADER_BYTES + TRAILER_BYTES) return 'file too short for a trailer (incomplete snapshot)';
  const trailerAt = buf.length - TRAILER_BYTES;
  if (!buf.subarray(trailerAt, trailerAt + 8).equals(TRAILER_MAGIC)) return 'missing trailer (incomplete snapshot)';
  const endSeq = Number(buf.readBigUInt64LE(trailerAt + 8));
  const count = buf.readUInt32LE(trailerAt + 16);
  const expectedCrc = buf.readUInt32LE(trailerAt + 20);
  const checkedEnd = header.version >= 3 ? trailerAt + TRAILER_CHECKED_BYTES : trailerAt;
  if (crc32(buf.subarray(0, checkedEnd)) !== expectedCrc) return header.version >= 3 ? 'checksum mismatch over the snapshot body and trailer' : 'checksum mismatch over the snapshot body';
  const chunks: unknown[] = [];
  let offset = HEADER_BYTES;
  let n = 0;
  while (offset < trailerAt) {
    if (trailerAt - offset < 8) return `truncated chunk header at offset ${offset}`;
    const length = buf.readUInt32LE(offset);
    const end = offset + 8 + length;
    if (length > MAX_CHUNK_BYTES || end > trailerAt) return `impossible chunk length at offset ${offset}`;
    const payload = buf.subarray(offset + 8, end);
    if (crc32(payload) !== buf.readUInt32LE(offset + 4)) return `chunk checksum mismatch at offset ${offset}`;
    if (decode) {
      try {
        chunks.push(packr.unpack(payload));
      } catch (err) {
        return `undecodable chunk at offset ${offset}: ${(err as Error).message}`;
      }
    }
    n++;
    offset = end;
  }
  if (n !== count) return `trailer counts ${count} chunks but the file holds ${n}`;
  return { header, endSeq, chunks };
}
