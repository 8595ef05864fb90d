/**
 * Recovery at the size limits: no file is read whole (a snapshot over 2 GiB loads), a
 * newest snapshot that cannot be loaded, for any reason, falls back to the one before
 * it, and a start on data that would not fit in the heap stops with a message instead
 * of dying of OOM. Big files are sparse: their padding costs no disk and little time.
 */
import t from 'tap';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';
import type { Runtime } from '../actors/runtime/runtime.js';
import { lineLogger } from '../actors/core/logger.js';
import { createOrganization } from '../src/bootstrap.js';
import { openStore, recover, type Store } from '../src/store.js';
import { defaultRuntimeOptions, Runtime as RuntimeClass, volatileSink } from '../actors/runtime/runtime.js';
import { RecoveryTooLarge } from '../snapshots/memory_budget.js';
import { listSnapshots, walkSnapshotFile } from '../snapshots/snapshot.js';
import { encodeChunk, HEADER_BYTES, TRAILER_BYTES, TRAILER_MAGIC, verifySnapshot } from '../snapshots/snapshot_format.js';
import { listSegments, LogCorruption, runSlices, segmentName } from '../snapshots/log.js';
import { SEGMENT_HEADER_BYTES } from '../snapshots/codec.js';
import { stateDigest } from './state.js';
import { startServerProcess } from './server_process.js';

const GiB = 1024 ** 3;
/** Memory that fits anything: the tests here that load big files check the reading, not the budget. */
const roomy = { limitBytes: 1024 * GiB, liveBytes: () => 0 };

function open(dir: string, logs: string[] = [], memory: Parameters<typeof openStore>[0]['memory'] = roomy, skipCorrupt = false): Store {
  return openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 4096, skipCorrupt, log: lineLogger((l) => logs.push(l)), onFatal: (e) => { throw e; }, memory });
}

function send(rt: Runtime, content: string): Promise<{ id: number }> {
  return rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content, client: 't', read_by_sender: false }) as Promise<{ id: number }>;
}

/** A data directory with an organization, a channel, a few users and messages, and one snapshot (plus `more` messages after it). */
async function smallState(more = 0, snapshots = 1): Promise<{ dir: string; digest: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-limits-'));
  const s = open(dir);
  const rt = s.runtime;
  await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  for (let i = 0; i < 5; i++) await rt.execute({ type: 'CREATE_USER', org: 1, actor_id: null, email: `u${i}@example.com`, password_hash: '', full_name: `U${i}`, role: 400 });
  for (let i = 0; i < 20; i++) await send(rt, `message ${i}`);
  await s.snapshot();
  for (let n = 1; n < snapshots; n++) {
    for (let i = 0; i < 10; i++) await send(rt, `between snapshots ${n}.${i}`);
    await s.snapshot();
  }
  for (let i = 0; i < more; i++) await send(rt, `after the snapshot ${i}`);
  const digest = stateDigest(rt);
  await s.close();
  return { dir, digest };
}

/** The chunks of a snapshot file, as its reader decodes them. */
function chunksOf(path: string): Array<Record<string, unknown>> {
  const v = verifySnapshot(readFileSync(path));
  if (typeof v === 'string') throw new Error(v);
  return v.chunks as Array<Record<string, unknown>>;
}

/** A 32×32 matrix over GF(2), as its 32 columns: the image of each bit of a CRC-32 register. */
type Gf2Matrix = Uint32Array;

function times(m: Gf2Matrix, v: number): number {
  let out = 0;
  for (let i = 0; v !== 0; i++, v >>>= 1) if (v & 1) out ^= m[i];
  return out >>> 0;
}

function square(m: Gf2Matrix): Gf2Matrix {
  const out = new Uint32Array(32);
  for (let i = 0; i < 32; i++) out[i] = times(m, m[i]);
  return out;
}

/**
 * The checksum `crc` continued over `n` zero bytes, as `crc32(Buffer.alloc(n), crc)` gives it
 * (checked against it below), without running over gigabytes of zeros: a zero byte is a linear
 * map of CRC-32's register, raised to the `n`th power by squaring (zlib's crc32_combine).
 */
function overZeros(crc: number, n: number): number {
  // One zero bit: the register shifts right, folding in the reflected polynomial when its low bit was set.
  let op: Gf2Matrix = new Uint32Array(32);
  op[0] = 0xedb88320;
  for (let i = 1; i < 32; i++) op[i] = 1 << (i - 1);
  op = square(square(square(op))); // one zero byte: 8 bits
  let reg = ~crc >>> 0;
  for (let left = n; left > 0; left = Math.floor(left / 2), op = square(op)) if (left % 2 === 1) reg = times(op, reg);
  return ~reg >>> 0;
}

/**
 * Writes `chunks` as a snapshot file at `path` with the header and end seq of the
 * snapshot `source`, padding each user chunk with a field of `padBytes` zero bytes
 * that restoring ignores. The zeros are never written: the file is sparse.
 */
function writePadded(path: string, source: Buffer, chunks: Array<Record<string, unknown>>, padBytes: number): number {
  const fd = openSync(path, 'w');
  let at = 0;
  let crc = 0;
  const put = (buf: Buffer): void => {
    writeSync(fd, buf, 0, buf.length, at);
    crc = crc32(buf, crc);
    at += buf.length;
  };
  put(source.subarray(0, HEADER_BYTES));
  for (const chunk of chunks) {
    if (chunk.k !== 'user' || padBytes === 0) {
      put(encodeChunk(chunk));
      continue;
    }
    // The chunk encoded as the format encodes it, its last value a bin 32 of padBytes zeros.
    const head = new Packr({ useRecords: true }).pack({ ...chunk, pad: Buffer.alloc(0) });
    if (head[head.length - 2] !== 0xc4 || head[head.length - 1] !== 0) throw new Error('the padding field is not last');
    const frame = Buffer.alloc(8);
    const prefix = Buffer.concat([head.subarray(0, head.length - 2), Buffer.from([0xc6, 0, 0, 0, 0])]);
    prefix.writeUInt32BE(padBytes, prefix.length - 4);
    frame.writeUInt32LE(prefix.length + padBytes, 0);
    frame.writeUInt32LE(overZeros(crc32(prefix), padBytes), 4);
    put(frame);
    put(prefix);
    crc = overZeros(crc, padBytes);
    at += padBytes;
  }
  const trailer = Buffer.alloc(TRAILER_BYTES);
  TRAILER_MAGIC.copy(trailer, 0);
  trailer.writeBigUInt64LE(source.readBigUInt64LE(source.length - TRAILER_BYTES + 8), 8);
  trailer.writeUInt32LE(chunks.length, 16);
  trailer.writeUInt32LE(crc32(trailer.subarray(0, 20), crc), 20);
  writeSync(fd, trailer, 0, trailer.length, at);
  ftruncateSync(fd, at + TRAILER_BYTES);
  closeSync(fd);
  return at + TRAILER_BYTES;
}

t.test('the padding checksum is the one zlib computes over the zeros', async (t) => {
  for (const [crc, n] of [[0, 0], [0, 1], [0x12345678, 7], [0xffffffff, 1000], [0xdeadbeef, 65537], [crc32(Buffer.from('parley')), 3 * 1024 * 1024 + 5]]) {
    t.equal(overZeros(crc, n), crc32(Buffer.alloc(n), crc), `crc ${crc.toString(16)} over ${n} zeros`);
  }
});

t.test('a snapshot over 2 GiB is read chunk by chunk, and a start loads it', async (t) => {
  const { dir, digest } = await smallState();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [snap] = listSnapshots(dir);
  const chunks = chunksOf(snap.path);
  const users = chunks.filter((c) => c.k === 'user').length;
  t.ok(users >= 5, `${users} user chunks to pad`);
  // Past 2 GiB (the most one read can take) with every chunk under the format's 512 MiB.
  const pad = Math.min(Math.ceil((2.2 * GiB) / users), 500 * 1024 * 1024);
  const source = readFileSync(snap.path);
  const size = writePadded(snap.path, source, chunks, pad);
  t.ok(size > 2 * GiB, `the snapshot is ${(size / GiB).toFixed(2)} GiB`);
  const walked = runSlices(walkSnapshotFile(snap.path));
  t.match(walked, { chunks: chunks.length, endSeq: source.readBigUInt64LE(source.length - TRAILER_BYTES + 8) > 0n ? Number(source.readBigUInt64LE(source.length - TRAILER_BYTES + 8)) : 0 }, 'it verifies end to end');
  const s = open(dir);
  t.equal(s.recovery.snapshot, snap.name, 'the start loads it');
  t.equal(stateDigest(s.runtime), digest, 'with the state it holds');
  await s.close();
});

t.test('a newest snapshot that verifies but cannot be restored falls back to the one before', async (t) => {
  const { dir, digest } = await smallState(5, 2);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [newest, older] = listSnapshots(dir);
  // Sound bytes and checksums, but a chunk no kind restores, after the others: restoring stops part way.
  writePadded(newest.path, readFileSync(newest.path), [...chunksOf(newest.path), { k: 'no-such-kind' }], 0);
  t.match(runSlices(walkSnapshotFile(newest.path)), { chunks: Number }, 'the damaged snapshot still verifies');
  const logs: string[] = [];
  const s = open(dir, logs);
  t.equal(s.recovery.snapshot, older.name, 'the start loads the older snapshot');
  t.equal(stateDigest(s.runtime), digest, 'and replays the log to the same state, with nothing left of the partial load');
  t.match(logs.join('\n'), new RegExp(`snapshot ${newest.name} could not be restored \\(Snapshot chunk of unknown kind 'no-such-kind'\\); falling back`), 'the log says why');
  await s.close();
});

t.test('a newest snapshot too large for the memory limit falls back to the one before', async (t) => {
  const { dir, digest } = await smallState(5, 2);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const [newest, older] = listSnapshots(dir);
  writePadded(newest.path, readFileSync(newest.path), chunksOf(newest.path), 200 * 1024 * 1024);
  const logs: string[] = [];
  const s = open(dir, logs, { limitBytes: GiB, liveBytes: () => 0 });
  t.equal(s.recovery.snapshot, older.name, 'the start loads the older snapshot');
  t.equal(stateDigest(s.runtime), digest, 'with every write');
  t.match(logs.join('\n'), new RegExp(`snapshot ${newest.name} and the log after it need about \\d+ MiB of heap, over the 820 MiB recovery may use; falling back`), 'the log says why');
  await s.close();
});

t.test('a start on data over the memory limit stops before it runs out, saying what it needs', async (t) => {
  const { dir } = await smallState(5, 2);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const small = { limitBytes: 16 * 1024 * 1024, liveBytes: () => 0 };
  t.throws(() => open(dir, [], small), { constructor: RecoveryTooLarge, message: /needs about \d+ MiB of heap, more than the 13 MiB recovery may use \(80% of the 16 MiB memory limit\)\. Raise the limit to at least \d+ MiB with --memory-limit-mib, PARLEY_MEMORY_LIMIT_MIB or server\.memory_limit_mib/ }, 'refused before loading anything');

  // The estimate can be wrong: the live heap is watched while the log is replayed.
  const runtime = new RuntimeClass(defaultRuntimeOptions(volatileSink));
  let checks = 0;
  const growing = { limitBytes: GiB, liveBytes: () => (++checks > 2 ? GiB : 0) };
  t.throws(() => recover(runtime, dir, { skipCorrupt: false, log: lineLogger(() => {}), sliceRecords: 2, memory: growing }), { constructor: RecoveryTooLarge, message: /recovery stopped at seq \d+ of about \d+ with 1024 MiB of live heap, past the 820 MiB it may use/ }, 'a replay past the budget stops');
  runtime.stop();
});

t.test('the real server exits with a message on data that cannot fit, and does not start', async (t) => {
  const { dir } = await smallState();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A segment of 8 GiB after the log (sparse): recovery would read it all.
  const segments = listSegments(dir);
  const after = join(dir, segmentName(segments[segments.length - 1].firstSeq + 100000));
  const fd = openSync(after, 'w');
  ftruncateSync(fd, 8 * GiB);
  closeSync(fd);
  const refused = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_MEMORY_LIMIT_MIB: '1024' }).then(
    async (server) => {
      server.child.kill('SIGKILL');
      return 'it started';
    },
    (err: Error) => err.message,
  );
  t.match(refused, /server exited \(1\) before listening/, 'it exits non-zero');
  t.match(refused, /needs about \d+ MiB of heap, more than the \d+ MiB recovery may use/, 'saying what recovery needs and what it may use');
  t.match(refused, /Raise the limit to at least \d+ MiB with --memory-limit-mib/, 'and how to raise the limit');
});

t.test('--skip-corrupt is needed once: the shutdown snapshot covers the damaged segment', async (t) => {
  const { dir } = await smallState(40);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const snapSeq = listSnapshots(dir)[0].startSeq;
  const segments = listSegments(dir);
  // A segment after the snapshot, not the last one: damage there is corruption, never a torn tail.
  const victim = segments.find((seg, i) => i + 1 < segments.length && seg.firstSeq > snapSeq)!;
  t.ok(victim, 'a segment after the snapshot, before the last');
  const path = join(dir, victim.name);
  const buf = readFileSync(path);
  buf[SEGMENT_HEADER_BYTES + 20] ^= 0x10;
  writeFileSync(path, buf);
  t.throws(() => open(dir), { constructor: LogCorruption, message: new RegExp(`corrupt log record in .*${victim.name}`) }, 'a start without the flag refuses');
  const skipped = open(dir, [], roomy, true);
  await skipped.snapshot(); // as SIGTERM's drain does
  await skipped.close();
  const clean = open(dir);
  t.pass('the next start, without the flag, starts');
  await clean.close();
});
