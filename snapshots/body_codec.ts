/**
 * The codec of the body store (body_store.ts): message bodies as msgpack maps framed
 * like the append log's records, so that the log's frame scanner (`findValidFrame`) and
 * its CRC (zlib's crc32) serve both. Nothing is decoded before its frame's CRC has
 * verified: msgpackr decodes damaged bytes without complaint.
 *
 * Record layout (little endian), the log's with the message id where the log has its seq:
 *   u32 payload length | u32 crc32(id bytes + payload) | u64 message id | payload
 * Segment header: magic `PRLYBODY`, u32 format version, u32 segment kind.
 */
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import { MAX_RECORD_BYTES, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, findValidFrame, type SegmentBytes } from './codec.js';

export { MAX_RECORD_BYTES, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES };

/** One version of a message's body. Entries of `edit_history` are plain objects, stored as given. */
export interface MessageBody {
  content: string;
  rendered: string;
  edit_history?: unknown[];
}

/** Bumped whenever the encoding of bodies changes incompatibly. */
export const BODY_FORMAT_VERSION = 1;
/** First bytes of every body segment. */
export const BODY_MAGIC = Buffer.from('PRLYBODY', 'latin1');

/**
 * What a segment was written by. Appends go to one `append` segment at a time;
 * compaction writes `compact` segments beside it. The kind decides where a torn tail
 * is expected at open (see `BodyStore.open`).
 */
export const SEGMENT_KIND = { append: 0, compact: 1 } as const;
export type SegmentKind = keyof typeof SEGMENT_KIND;

/** A record's payload is at most this; a longer one is refused on append and is corrupt on read. */
export const MAX_BODY_PAYLOAD_BYTES = MAX_RECORD_BYTES;

// Plain msgpack maps, no shared structures: every record decodes on its own, and its
// payload starts a map as `findValidFrame` requires.
const packr = new Packr({ useRecords: false, moreTypes: false, copyBuffers: true });

/** The header written at the start of each segment. */
export function bodySegmentHeader(kind: SegmentKind): Buffer {
  const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
  BODY_MAGIC.copy(header, 0);
  header.writeUInt32LE(BODY_FORMAT_VERSION, 8);
  header.writeUInt32LE(SEGMENT_KIND[kind], 12);
  return header;
}

/** A segment header's kind, or an error message. */
export function checkBodySegmentHeader(buf: Buffer): SegmentKind | { error: string } {
  if (buf.length < SEGMENT_HEADER_BYTES) return { error: 'segment shorter than its header' };
  if (!buf.subarray(0, 8).equals(BODY_MAGIC)) return { error: 'not a Parley body segment (bad magic)' };
  const version = buf.readUInt32LE(8);
  if (version !== BODY_FORMAT_VERSION) return { error: `unsupported body format version ${version}` };
  const kind = buf.readUInt32LE(12);
  if (kind === SEGMENT_KIND.append) return 'append';
  if (kind === SEGMENT_KIND.compact) return 'compact';
  return { error: `unknown segment kind ${kind}` };
}

/**
 * Packs a body's payload. The returned bytes are a view of msgpackr's shared buffer,
 * valid only until the next pack: copy them before packing again.
 */
export function packBody(body: MessageBody): Buffer {
  const plain: MessageBody = { content: body.content, rendered: body.rendered };
  if (body.edit_history !== undefined) plain.edit_history = body.edit_history;
  return packr.pack(plain);
}

/**
 * The payload of a body without edit history (every send's) written by hand: the bytes
 * `packBody` writes for it (a map16 of two entries, `content` then `rendered`, each
 * string with its shortest header), so records read the same whichever wrote them.
 * Each string's UTF-8 is written once, straight into the frame, where msgpackr packed a
 * fresh object into its own buffer and the frame copied it: for bench/ab.ts's body,
 * 0.70 to 0.76 us of CPU per frame against 0.89 to 1.06 (500,000 frames, 3 runs, a
 * busy 2-core machine), on the send path's every message.
 */
const PLAIN_MAP_HEAD = Buffer.from([0xde, 0x00, 0x02, 0xa7, ...Buffer.from('content', 'latin1')]);
const RENDERED_KEY = Buffer.from([0xa8, ...Buffer.from('rendered', 'latin1')]);

/** Bytes of a msgpack string header for `n` bytes of UTF-8. */
function strHeaderBytes(n: number): number {
  return n < 0x20 ? 1 : n < 0x100 ? 2 : n < 0x1_0000 ? 3 : 5;
}

/** The payload size of a plain body whose strings take `contentBytes` and `renderedBytes` of UTF-8. */
export function plainBodyPayloadBytes(contentBytes: number, renderedBytes: number): number {
  return PLAIN_MAP_HEAD.length + strHeaderBytes(contentBytes) + contentBytes + RENDERED_KEY.length + strHeaderBytes(renderedBytes) + renderedBytes;
}

/** Writes a msgpack string of `n` bytes of UTF-8 at `at`; returns the offset after it. */
function writeStr(out: Buffer, at: number, s: string, n: number): number {
  if (n < 0x20) out[at++] = 0xa0 | n;
  else if (n < 0x100) {
    out[at++] = 0xd9;
    out[at++] = n;
  } else if (n < 0x1_0000) {
    out[at++] = 0xda;
    out.writeUInt16BE(n, at);
    at += 2;
  } else {
    out[at++] = 0xdb;
    out.writeUInt32BE(n, at);
    at += 4;
  }
  return at + (n === 0 ? 0 : out.write(s, at, n, 'utf8'));
}

/**
 * Writes the frame of a body without edit history for message `id` into `out` at `at`,
 * the strings taking `contentBytes` and `renderedBytes` of UTF-8 (`Buffer.byteLength`);
 * `out` must have room for the frame. Returns the frame's size. The same bytes as
 * `writeBodyFrame(out, at, id, packBody(body))`.
 */
export function writePlainBodyFrame(out: Buffer, at: number, id: number, content: string, contentBytes: number, rendered: string, renderedBytes: number): number {
  let p = at + RECORD_HEADER_BYTES;
  p += PLAIN_MAP_HEAD.copy(out, p);
  p = writeStr(out, p, content, contentBytes);
  p += RENDERED_KEY.copy(out, p);
  p = writeStr(out, p, rendered, renderedBytes);
  out.writeUInt32LE(p - at - RECORD_HEADER_BYTES, at);
  out.writeUInt32LE(id % 0x1_0000_0000, at + 8);
  out.writeUInt32LE(Math.floor(id / 0x1_0000_0000), at + 12);
  out.writeUInt32LE(crc32(out.subarray(at + 8, p)), at + 4);
  return p - at;
}

/** Writes the frame of `payload` for message `id` into `out` at `at`; returns the frame's size. */
export function writeBodyFrame(out: Buffer, at: number, id: number, payload: Buffer): number {
  out.writeUInt32LE(payload.length, at);
  out.writeUInt32LE(id % 0x1_0000_0000, at + 8);
  out.writeUInt32LE(Math.floor(id / 0x1_0000_0000), at + 12);
  payload.copy(out, at + RECORD_HEADER_BYTES);
  const end = at + RECORD_HEADER_BYTES + payload.length;
  out.writeUInt32LE(crc32(out.subarray(at + 8, end)), at + 4);
  return end - at;
}

/** The message id a frame header names (meaningful only once its CRC verified). */
export function frameId(buf: Buffer, at: number): number {
  return buf.readUInt32LE(at + 12) * 0x1_0000_0000 + buf.readUInt32LE(at + 8);
}

/**
 * Checks the frame whose bytes start at `at` of `buf`, of which `available` bytes are
 * at hand (the rest of the segment may be longer). Returns the frame's total size, or
 * `need` (more bytes required to check it), or a reason it is bad.
 */
export function checkFrame(buf: Buffer, at: number, available: number): { size: number } | { need: number } | { bad: string } {
  if (available < RECORD_HEADER_BYTES) return { need: RECORD_HEADER_BYTES };
  const length = buf.readUInt32LE(at);
  if (length === 0) return { bad: 'empty record' };
  if (length > MAX_BODY_PAYLOAD_BYTES) return { bad: `impossible record length ${length}` };
  const size = RECORD_HEADER_BYTES + length;
  if (available < size) return { need: size };
  if (crc32(buf.subarray(at + 8, at + size)) !== buf.readUInt32LE(at + 4)) return { bad: 'checksum mismatch' };
  return { size };
}

/** Decodes a verified frame's payload; a reason if it is not a body. */
export function decodeBodyPayload(payload: Buffer): MessageBody | { bad: string } {
  let value: unknown;
  try {
    value = packr.unpack(payload);
  } catch (err) {
    return { bad: `undecodable payload (${(err as Error).message})` };
  }
  const body = value as Partial<MessageBody> | null;
  if (!body || typeof body !== 'object' || typeof body.content !== 'string' || typeof body.rendered !== 'string') return { bad: 'payload is not a message body' };
  if (body.edit_history !== undefined && !Array.isArray(body.edit_history)) return { bad: 'edit_history is not a list' };
  return body as MessageBody;
}

/** What scanning one frame of a segment found. */
export type ScanStep = { kind: 'record'; id: number; next: number } | { kind: 'end' } | { kind: 'bad'; reason: string; id?: number };

/** Scans the frame at `offset` of a segment without decoding its payload (CRC only). */
export function scanFrame(src: SegmentBytes, offset: number): ScanStep {
  if (offset >= src.length) return { kind: 'end' };
  const available = src.length - offset;
  const head = src.view(offset, offset + Math.min(available, RECORD_HEADER_BYTES));
  const first = checkFrame(head, 0, head.length);
  if ('bad' in first) return { kind: 'bad', reason: first.bad };
  if ('need' in first && first.need === RECORD_HEADER_BYTES) return { kind: 'bad', reason: 'incomplete record header' };
  const length = head.readUInt32LE(0);
  if (RECORD_HEADER_BYTES + length > available) return { kind: 'bad', reason: `record of ${length} bytes cut short` };
  const frame = src.view(offset, offset + RECORD_HEADER_BYTES + length);
  const checked = checkFrame(frame, 0, frame.length);
  if ('bad' in checked) return { kind: 'bad', reason: checked.bad, id: frameId(frame, 0) };
  return { kind: 'record', id: frameId(frame, 0), next: offset + RECORD_HEADER_BYTES + length };
}

/** The offset of the next valid frame at or after `from`, or -1 (the log's scanner: ids are never negative). */
export function nextValidFrame(src: SegmentBytes, from: number): number {
  return findValidFrame(src, from, -1, RECORD_HEADER_BYTES);
}
