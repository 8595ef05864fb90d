import t from 'tap';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { listSegments, LogCorruption, readLog } from '../snapshots/log.js';
import { createOrganization } from '../src/bootstrap.js';
import { decodeFrame, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, TIMED_RECORD_HEADER_BYTES } from '../snapshots/codec.js';
import { crc32 } from 'node:zlib';
import { lineLogger, quietLogger } from '../actors/core/logger.js';
import { bodyOf } from '../actors/core/bodies.js';

function open(dir: string, logs: string[] = [], skipCorrupt = false): Store {
  return openStore({
    dataDir: dir,
    fsync: 'always',
    fsyncBatchMs: 100,
    segmentBytes: 64 * 1024 * 1024,
    skipCorrupt,
    log: lineLogger((l) => logs.push(l)),
    onFatal: (e) => {
      throw e;
    },
  });
}

/** A data dir holding an org with one channel and `n` messages, closed cleanly. */
async function populated(n: number): Promise<{ dir: string; lastId: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-log-'));
  const store = open(dir);
  const rt = store.runtime;
  const org = await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org: org.organization_id, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  let lastId = 0;
  for (let i = 0; i < n; i++) {
    const v = (await rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: `message ${i}`, client: 'test', read_by_sender: false })) as { id: number };
    lastId = v.id;
  }
  await store.close();
  return { dir, lastId };
}

function lastSegment(dir: string): string {
  const segs = listSegments(dir);
  return join(dir, segs[segs.length - 1].name);
}

t.test('acknowledged writes survive a restart, replayed through the reducers', async (t) => {
  const { dir, lastId } = await populated(20);
  const store = open(dir);
  t.teardown(() => store.close());
  const rt = store.runtime;
  t.equal(rt.server().orgs.size, 1);
  t.equal(rt.server().maxMessageId, lastId);
  const ch = rt.channel(1, 1)!;
  t.equal(ch.messages.size, 20);
  t.equal(bodyOf(rt.bodies, ch.messages.get(lastId)!).content, 'message 19');
  t.ok(rt.user(1, 1)!.unread.has(lastId), 'flags are rebuilt too');
  // New writes continue after the recovered state, with fresh ids.
  const v = (await rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: 'after restart', client: 'test', read_by_sender: false })) as { id: number };
  t.equal(v.id, lastId + 1);
});

t.test('a torn final record is dropped, logged with its offset, and the original kept', async (t) => {
  const { dir, lastId } = await populated(5);
  const file = lastSegment(dir);
  const size = readFileSync(file).length;
  appendFileSync(file, Buffer.from([0x40, 0, 0, 0, 1, 2, 3]));
  const logs: string[] = [];
  const store = open(dir, logs);
  t.teardown(() => store.close());
  t.equal(store.runtime.server().maxMessageId, lastId);
  t.match(logs.join('\n'), new RegExp(`torn final record at offset ${size}`));
  t.equal(readFileSync(file).length, size, 'the tail is cut off');
  t.ok(readdirSync(dir).some((n) => n.includes('.torn-')), 'the original bytes are kept beside it');
});

t.test('a zeroed last sector is a torn tail, not corruption', async (t) => {
  const { dir } = await populated(30);
  const file = lastSegment(dir);
  const buf = readFileSync(file);
  buf.fill(0, buf.length - 512);
  writeFileSync(file, buf);
  const logs: string[] = [];
  const store = open(dir, logs);
  t.teardown(() => store.close());
  t.ok(store.runtime.server().maxMessageId < 30 + 0 && store.runtime.server().maxMessageId > 0);
  t.match(logs.join('\n'), /torn final record/);
});

t.test('a flipped byte in the middle refuses startup, naming file and offset', async (t) => {
  const { dir } = await populated(10);
  const file = lastSegment(dir);
  const buf = readFileSync(file);
  const target = SEGMENT_HEADER_BYTES + 40;
  buf[target] ^= 0xff;
  writeFileSync(file, buf);
  let refused: unknown;
  try {
    open(dir);
  } catch (err) {
    refused = err;
  }
  t.ok(refused instanceof LogCorruption, 'startup is refused');
  t.match((refused as Error).message, /log-\d+\.plog at offset \d+/);
  t.ok(existsSync(file), 'the log file is left as it was');
  t.same(readFileSync(file), buf);
  // The operator's explicit flag starts the server on the valid prefix.
  const logs: string[] = [];
  const store = open(dir, logs, true);
  t.teardown(() => store.close());
  t.match(logs.join('\n'), /skipping/);
});

t.test('reading up to a seq stops at that record: a corrupt record after it is never read', async (t) => {
  const { dir } = await populated(10);
  const file = lastSegment(dir);
  const buf = readFileSync(file);
  const seqs: Array<{ seq: number; offset: number }> = [];
  let offset = SEGMENT_HEADER_BYTES;
  for (let f = decodeFrame(buf, offset); f.kind === 'record'; f = decodeFrame(buf, offset)) {
    seqs.push({ seq: f.stamped.seq, offset });
    offset = f.next;
  }
  const victim = seqs[seqs.length - 3];
  buf[victim.offset + 20] ^= 0x01;
  writeFileSync(file, buf);
  const lastGood = seqs[seqs.length - 4].seq;
  t.throws(() => readLog(dir, { afterSeq: 0, skipCorrupt: false, log: quietLogger }, () => {}), { constructor: LogCorruption, message: /corrupt log record in .* checksum mismatch/ }, 'without a seq to stop at, the corrupt record refuses');
  const read: number[] = [];
  const r = readLog(dir, { afterSeq: 0, toSeq: lastGood, skipCorrupt: false, log: quietLogger }, (s) => read.push(s.seq));
  t.equal(r.lastSeq, lastGood);
  t.equal(read.at(-1), lastGood, 'every record up to the seq, and none after');
  t.equal(read.length, lastGood);
});

/** Appends `tail` to the last segment; returns the segment and where the tail starts. */
function appendTail(dir: string, tail: Buffer): { file: string; at: number } {
  const file = lastSegment(dir);
  const at = readFileSync(file).length;
  appendFileSync(file, tail);
  return { file, at };
}

t.test('a garbage tail is torn whatever its bytes, when no valid record follows it', async (t) => {
  const impossible = Buffer.alloc(37, 0xa7);
  impossible.writeUInt32LE(1457157651, 0);
  const emptyThenBytes = Buffer.alloc(37, 0x5c);
  emptyThenBytes.writeUInt32LE(0, 0);
  const badCrcThenBytes = Buffer.alloc(60, 0x33);
  badCrcThenBytes.writeUInt32LE(20, 0); // a complete frame of 20 payload bytes whose CRC is wrong, then more bytes
  const tails: Array<[string, Buffer]> = [
    ['an impossible length', impossible],
    ['a zero length followed by non-zero bytes', emptyThenBytes],
    ['a bad checksum followed by non-zero bytes', badCrcThenBytes],
  ];
  for (const [name, tail] of tails) {
    const { dir, lastId } = await populated(8);
    const { file, at } = appendTail(dir, tail);
    const logs: string[] = [];
    const store = open(dir, logs);
    t.equal(store.runtime.server().maxMessageId, lastId, `${name}: every acknowledged message is there`);
    t.match(logs.join('\n'), new RegExp(`torn final record at offset ${at}`), `${name}: logged with its offset`);
    t.equal(readFileSync(file).length, at, `${name}: the tail is cut off`);
    t.ok(readdirSync(dir).some((n) => n.includes('.torn-')), `${name}: the original bytes are kept beside it`);
    await store.close();
  }
});

t.test('a garbage tail in a segment before the last is still corruption', async (t) => {
  const { dir } = await populated(3);
  const first = lastSegment(dir);
  // A later segment makes the first no longer the last.
  const store = open(dir);
  store.writer.roll();
  await store.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: 'next segment', client: 'test', read_by_sender: false });
  await store.close();
  t.equal(listSegments(dir).length, 2);
  appendFileSync(first, Buffer.alloc(37, 0xa7));
  t.throws(() => open(dir), { constructor: LogCorruption, message: new RegExp(`${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at offset \\d+`) });
});

/** A segment rewritten in log format 1: records framed without a time. */
function asFormat1(buf: Buffer): Buffer {
  const header = Buffer.from(buf.subarray(0, SEGMENT_HEADER_BYTES));
  header.writeUInt32LE(1, 8);
  const parts = [header];
  let offset = SEGMENT_HEADER_BYTES;
  for (let f = decodeFrame(buf, offset); f.kind === 'record'; f = decodeFrame(buf, offset)) {
    const payload = buf.subarray(offset + TIMED_RECORD_HEADER_BYTES, f.next);
    const record = Buffer.alloc(RECORD_HEADER_BYTES + payload.length);
    record.writeUInt32LE(payload.length, 0);
    record.writeBigUInt64LE(BigInt(f.stamped.seq), 8);
    payload.copy(record, RECORD_HEADER_BYTES);
    record.writeUInt32LE(crc32(record.subarray(8)), 4);
    parts.push(record);
    offset = f.next;
  }
  return Buffer.concat(parts);
}

t.test('a log of format 1 (no times) is read, and goes on in a new segment of format 2', async (t) => {
  const { dir, lastId } = await populated(3);
  const [only] = listSegments(dir);
  const path = join(dir, only.name);
  const v1 = asFormat1(readFileSync(path));
  writeFileSync(path, v1);
  const started = Date.now();
  const store = open(dir);
  t.equal(store.runtime.channel(1, 1)!.messages.size, 3, 'the format 1 records replay');
  await store.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: 'after the upgrade', client: 'test', read_by_sender: false });
  await store.close();
  t.same(readFileSync(path), v1, 'the format 1 segment is left as it was');
  const segments = listSegments(dir);
  t.equal(segments.length, 2, 'new records went to a new segment');
  t.equal(readFileSync(join(dir, segments[1].name)).readUInt32LE(8), 2, 'of format 2');
  const records: Array<{ seq: number; at?: number }> = [];
  readLog(dir, { afterSeq: 0, skipCorrupt: false, log: quietLogger }, (s) => records.push({ seq: s.seq, at: s.at }));
  t.ok(records.length > 4);
  t.ok(records.slice(0, -1).every((r) => r.at === undefined), 'format 1 records have no time');
  const last = records[records.length - 1];
  t.ok(last.at !== undefined && last.at >= started && last.at <= Date.now(), 'a format 2 record carries its time of commit');
  const again = open(dir);
  t.teardown(() => again.close());
  const ids = [...again.runtime.channel(1, 1)!.messages.ids];
  t.equal(ids.length, 4, 'and both segments replay after a restart');
  t.ok(ids[3] > lastId);
});
