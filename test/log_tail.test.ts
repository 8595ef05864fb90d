/**
 * Garbage at the end of the log: what a crash can leave on a filesystem that extends a
 * file before its data lands. In the last segment, a bad frame after which no valid
 * frame follows is a torn tail whatever its bytes: recovery drops it (keeping a copy),
 * loses no acknowledged write, and `parley verify` says the same. A bad frame with a
 * valid frame after it is still corruption. Seeded; the seed is printed, rerun with
 * PARLEY_TAIL_SEED (and PARLEY_TAIL_CASES for more or fewer cases).
 */
import t, { type Test } from 'tap';
import { prng } from './prng.js';
import { appendFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { listSegments, LogCorruption } from '../snapshots/log.js';
import { listSnapshots } from '../snapshots/snapshot.js';
import { decodeFrame, encodeRecord, SEGMENT_HEADER_BYTES } from '../snapshots/codec.js';
import { verifyReport } from '../src/operator/data_commands.js';
import { createOrganization } from '../src/bootstrap.js';
import type { Runtime } from '../actors/runtime/runtime.js';
import type { Stamped } from '../actors/areas/index.js';
import { stateDigest } from './state.js';
import { startServerProcess } from './server_process.js';
import { lineLogger } from '../actors/core/logger.js';


const seed = Number(process.env.PARLEY_TAIL_SEED ?? Date.now() % 100000);
const CASES = Number(process.env.PARLEY_TAIL_CASES ?? 300);
const MIDDLE_CASES = Math.max(20, Math.floor(CASES / 5));
/** The trailer of a snapshot (magic, end seq, count, CRC); bytes before it are all checksummed. */
const SNAPSHOT_TRAILER_BYTES = 24;

function open(dir: string, logs: string[] = [], skipCorrupt = false): Store {
  return openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 4096, skipCorrupt, keepSnapshots: 3, log: lineLogger((l) => logs.push(l)), onFatal: (e) => { throw e; } });
}

function send(rt: Runtime, content: string): Promise<{ id: number }> {
  return rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content, client: 't', read_by_sender: false }) as Promise<{ id: number }>;
}

/** Every frame of a segment: offset, length and record. */
function frames(file: string): Array<{ offset: number; next: number; stamped: Stamped }> {
  const buf = readFileSync(file);
  const out: Array<{ offset: number; next: number; stamped: Stamped }> = [];
  let offset = SEGMENT_HEADER_BYTES;
  for (;;) {
    const f = decodeFrame(buf, offset);
    if (f.kind !== 'record') return out;
    out.push({ offset, next: f.next, stamped: f.stamped });
    offset = f.next;
  }
}

function lastSegment(dir: string): string {
  const segs = listSegments(dir);
  return join(dir, segs[segs.length - 1].name);
}

interface Pristine {
  dir: string;
  /** Acknowledged message contents by id, the final message included. */
  acked: Map<number, string>;
  /** The last write: its message id and where its first record starts in the last segment. */
  final: { id: number; offset: number; bytes: Buffer };
  /** State digests with and without the last write. */
  digestAll: string;
  digestBefore: string;
  lastSeq: number;
  newestSnapshot: string;
  olderSnapshot: string;
  /** Records of the log before the final write, for stale copies. */
  records: Buffer[];
}

/** One populated data directory, built once and copied per case: two snapshots, several segments. */
async function buildPristine(): Promise<Pristine> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-tail-src-'));
  const s = open(dir);
  const rt = s.runtime;
  await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const acked = new Map<number, string>();
  for (let i = 0; i < 90; i++) {
    const content = `message ${i} ${'x'.repeat(1 + (i % 30))}`;
    acked.set((await send(rt, content)).id, content);
    if (i === 30 || i === 60) await s.snapshot();
  }
  const digestBefore = stateDigest(rt);
  const seqBefore = rt.lastSeq;
  const finalContent = 'the final write';
  const finalId = (await send(rt, finalContent)).id;
  acked.set(finalId, finalContent);
  const digestAll = stateDigest(rt);
  const lastSeq = rt.lastSeq;
  await s.close();
  const last = frames(lastSegment(dir));
  const first = last.find((f) => f.stamped.seq > seqBefore)!;
  const buf = readFileSync(lastSegment(dir));
  const snaps = listSnapshots(dir);
  const records = listSegments(dir).flatMap((seg) => {
    const b = readFileSync(join(dir, seg.name));
    // The final write's records are left out: in a case that tears it, a copy of them would be a valid record that follows.
    return frames(join(dir, seg.name))
      .filter((f) => f.stamped.seq <= seqBefore)
      .map((f) => b.subarray(f.offset, f.next));
  });
  return {
    dir,
    acked,
    final: { id: finalId, offset: first.offset, bytes: buf.subarray(first.offset, first.next) },
    digestAll,
    digestBefore,
    lastSeq,
    newestSnapshot: snaps[0].name,
    olderSnapshot: snaps[1].name,
    records,
  };
}

function copyOf(p: Pristine): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-tail-'));
  cpSync(p.dir, dir, { recursive: true });
  return dir;
}

function randomBytes(random: () => number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(random() * 256);
  return b;
}

/** 1 to 4,096 bytes of garbage: mostly random, sometimes shaped like what a crash or a reused block leaves. */
function garbage(random: () => number, p: Pristine): { shape: string; bytes: Buffer } {
  const n = 1 + Math.floor(random() * 4096);
  const bytes = randomBytes(random, n);
  const r = random();
  if (r < 0.5 || n < 16) return { shape: 'random', bytes };
  if (r < 0.6) {
    bytes.fill(0, 0, Math.floor(random() * n));
    return { shape: 'zeros then random', bytes };
  }
  if (r < 0.7) {
    bytes.writeUInt32LE(0, 0);
    return { shape: 'zero length then random', bytes };
  }
  if (r < 0.8) {
    bytes.writeUInt32LE(64 * 1024 * 1024 + 1 + Math.floor(random() * 1e9), 0);
    return { shape: 'impossible length', bytes };
  }
  if (r < 0.9) {
    // A plausible header with the next seq and a wrong CRC: the scan must compute and reject it.
    bytes.writeUInt32LE(Math.floor(random() * (n - 16)) + 1, 0);
    bytes.writeBigUInt64LE(BigInt(p.lastSeq + 1), 8);
    return { shape: 'plausible header, bad checksum', bytes };
  }
  // A stale block: an old, valid record whose seq does not follow.
  const stale = p.records[Math.floor(random() * p.records.length)];
  return { shape: 'stale record then random', bytes: Buffer.concat([stale, bytes]).subarray(0, Math.max(n, stale.length)) };
}

/** The verify line of the last segment, and the note it gives for a torn tail. */
function verifyTail(dir: string): { ok: boolean; lines: string[]; lastLine: string; note: string | undefined } {
  const { ok, lines } = verifyReport(dir);
  const name = listSegments(dir).at(-1)!.name;
  const lastLine = lines.find((l) => l.includes(name))!;
  const m = /; (torn tail \(.*\)); it is dropped at the next start$/.exec(lastLine);
  return { ok, lines, lastLine, note: m?.[1] };
}

function checkAcked(t: Test, rt: Runtime, acked: Map<number, string>, label: string): boolean {
  const ch = rt.channel(1, 1);
  if (!ch) return t.fail(`${label}: the channel is missing`);
  for (const [id, content] of acked) {
    if (rt.bodies.read(ch.messages.get(id)?.body ?? -1)?.content !== content) return t.fail(`${label}: acknowledged message ${id} lost or changed`);
  }
  return true;
}

t.test(`a torn or garbage tail never loses an acknowledged write (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_TAIL_SEED=${seed}`);
  const random = prng(seed);
  const p = await buildPristine();
  t.teardown(() => rmSync(p.dir, { recursive: true, force: true }));
  const shapes = new Map<string, number>();
  for (let i = 0; i < CASES; i++) {
    const dir = copyOf(p);
    const file = lastSegment(dir);
    const size = readFileSync(file).length;
    const torn = random() < 0.4;
    const badSnapshot = random() < 0.3;
    let { shape, bytes } = garbage(random, p);
    // Where the valid prefix ends: the segment is cut back to it.
    const keptBytes = torn ? p.final.offset : size;
    if (torn) {
      // The final record cut short, then garbage: its first byte differs from the byte it replaces.
      const cutAt = p.final.offset + 1 + Math.floor(random() * (p.final.bytes.length - 1));
      const original = p.final.bytes[cutAt - p.final.offset];
      if (bytes[0] === original) bytes[0] ^= 0xff;
      truncateSync(file, cutAt);
      shape = `torn final record cut at ${cutAt - p.final.offset} of ${p.final.bytes.length}, then ${shape}`;
    }
    appendFileSync(file, bytes);
    if (badSnapshot) {
      const snap = join(dir, p.newestSnapshot);
      const buf = readFileSync(snap);
      const flips = 1 + Math.floor(random() * 4);
      for (let f = 0; f < flips; f++) buf[Math.floor(random() * (buf.length - SNAPSHOT_TRAILER_BYTES))] ^= 1 + Math.floor(random() * 255);
      writeFileSync(snap, buf);
      shape += ', newest snapshot corrupt';
    }
    shapes.set(shape.replace(/cut at \d+ of \d+/, 'cut'), (shapes.get(shape.replace(/cut at \d+ of \d+/, 'cut')) ?? 0) + 1);
    const label = `case ${i} (${torn ? 'torn' : 'garbage'}: ${shape}, ${bytes.length} bytes; seed ${seed})`;
    const acked = new Map(p.acked);
    if (torn) acked.delete(p.final.id);

    // verify, before the start touches anything, predicts what the start will do.
    const v = verifyTail(dir);
    if (v.note === undefined || v.lines.some((l) => l.startsWith('CORRUPT') && l.includes('.plog'))) {
      t.fail(`${label}: verify does not report a torn tail: ${v.lines.join(' | ')}`);
      return;
    }
    if (v.ok === badSnapshot) {
      t.fail(`${label}: verify says ok=${v.ok}`);
      return;
    }

    const logs: string[] = [];
    let store: Store;
    try {
      store = open(dir, logs);
    } catch (err) {
      t.fail(`${label}: refused to start: ${(err as Error).message}`);
      return;
    }
    const rt = store.runtime;
    const expectSnapshot = badSnapshot ? p.olderSnapshot : p.newestSnapshot;
    const ok =
      (store.recovery.snapshot === expectSnapshot || t.fail(`${label}: recovered from ${store.recovery.snapshot}, expected ${expectSnapshot}`)) &&
      (rt.server().maxMessageId === (torn ? p.final.id - 1 : p.final.id) || t.fail(`${label}: max message id ${rt.server().maxMessageId}`)) &&
      checkAcked(t, rt, acked, label) &&
      (stateDigest(rt) === (torn ? p.digestBefore : p.digestAll) || t.fail(`${label}: the state differs from the acknowledged one`)) &&
      (logs.some((l) => l.endsWith(`dropping a ${v.note}`)) || t.fail(`${label}: the start did not log what verify said (${v.note}): ${logs.join(' | ')}`)) &&
      (readFileSync(file).length === keptBytes || t.fail(`${label}: the segment is ${readFileSync(file).length} bytes, expected ${keptBytes}`)) &&
      (readdirSync(dir).some((n) => n.includes('.torn-')) || t.fail(`${label}: the dropped bytes were not kept`));
    if (!ok) {
      await store.close();
      return;
    }
    // Writes after the start work and survive another restart.
    const after = await send(rt, `after case ${i}`);
    acked.set(after.id, `after case ${i}`);
    await store.close();
    const again = open(dir);
    const ok2 =
      (again.recovery.tornAt === undefined || t.fail(`${label}: a torn tail again after a clean restart`)) &&
      (again.runtime.server().maxMessageId === after.id || t.fail(`${label}: max message id ${again.runtime.server().maxMessageId} after restart`)) &&
      checkAcked(t, again.runtime, acked, `${label}, after restart`);
    await again.close();
    if (!ok2) return;
    rmSync(dir, { recursive: true, force: true });
  }
  t.comment(`shapes: ${JSON.stringify(Object.fromEntries(shapes))}`);
  t.pass(`${CASES} cases recovered every acknowledged write`);
});

t.test(`corruption in the middle still refuses, and --skip-corrupt still starts (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_TAIL_SEED=${seed}`);
  const random = prng(seed + 1);
  const p = await buildPristine();
  t.teardown(() => rmSync(p.dir, { recursive: true, force: true }));
  const segments = listSegments(p.dir);
  let coveredCases = 0;
  for (let i = 0; i < MIDDLE_CASES; i++) {
    const dir = copyOf(p);
    // A record with a valid record after it in its segment, or any record of an earlier segment.
    const segIndex = Math.floor(random() * segments.length);
    const isLast = segIndex === segments.length - 1;
    const file = join(dir, segments[segIndex].name);
    const fs = frames(file);
    const candidates = isLast ? fs.slice(0, -1) : fs;
    const target = candidates[Math.floor(random() * candidates.length)];
    const buf = readFileSync(file);
    const how = Math.floor(random() * 4);
    let damage: string;
    if (how === 0) {
      const at = target.offset + Math.floor(random() * (target.next - target.offset));
      buf[at] ^= 1 << Math.floor(random() * 8);
      damage = `bit flip at ${at}`;
    } else if (how === 1) {
      buf.writeUInt32LE(0xfff00000 + Math.floor(random() * 0xfffff), target.offset);
      damage = 'impossible length';
    } else if (how === 2) {
      buf.writeUInt32LE(0, target.offset);
      damage = 'zero length';
    } else {
      randomBytes(random, 16).copy(buf, target.offset);
      damage = 'random header';
    }
    writeFileSync(file, buf);
    const label = `case ${i} (${damage} in the record at ${target.offset} of ${segments[segIndex].name}${isLast ? ', the last segment' : ''}; seed ${seed})`;
    const where = `${segments[segIndex].name} at offset ${target.offset}`;
    // A segment whose records the newest snapshot all reflects is not read by a start.
    const covered = !isLast && segments[segIndex + 1].firstSeq - 1 <= listSnapshots(dir)[0].startSeq;
    let refused: unknown;
    let digest: string | undefined;
    try {
      const s = open(dir);
      digest = stateDigest(s.runtime);
      await s.close();
    } catch (err) {
      refused = err;
    }
    if (covered) {
      coveredCases++;
      if (refused !== undefined || digest !== p.digestAll) {
        t.fail(`${label}: damage in a segment the newest snapshot covers must not stop the start, nor change the state: ${refused ? (refused as Error).message : 'the state differs'}`);
        return;
      }
      const v = verifyReport(dir);
      if (v.ok || !v.lines.some((l) => l.startsWith(`CORRUPT  ${where}:`))) {
        t.fail(`${label}: verify does not report the corruption in the covered segment: ${v.lines.join(' | ')}`);
        return;
      }
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (!(refused instanceof LogCorruption) || !(refused as Error).message.includes(where)) {
      t.fail(`${label}: expected a refusal naming ${where}, got ${refused ? (refused as Error).message : 'a start'}`);
      return;
    }
    t.same(readFileSync(file), buf, `${label}: the file is left as it was`);
    const v = verifyReport(dir);
    if (v.ok || !v.lines.some((l) => l.startsWith(`CORRUPT  ${segments[segIndex].name} at offset ${target.offset}:`))) {
      t.fail(`${label}: verify does not report the corruption the start refuses: ${v.lines.join(' | ')}`);
      return;
    }
    const logs: string[] = [];
    const s = open(dir, logs, true);
    if (!logs.some((l) => /skipping/.test(l))) t.fail(`${label}: --skip-corrupt did not say what it skipped`);
    const after = await send(s.runtime, 'after skipping');
    await s.close();
    // A write acknowledged after a start with --skip-corrupt survives the next start (no snapshot was taken).
    const again = open(dir, [], true);
    const kept = again.runtime.bodies.read(again.runtime.channel(1, 1)?.messages.get(after.id)?.body ?? -1)?.content === 'after skipping';
    await again.close();
    if (!kept) {
      t.fail(`${label}: a write acknowledged after the --skip-corrupt start is lost at the next start`);
      return;
    }
    if (isLast) {
      // The skipped tail of the last segment was cut off (and kept aside), so the log no longer needs the flag.
      const clean = open(dir);
      await clean.close();
      if (!readdirSync(dir).some((f) => f.startsWith(`${segments[segIndex].name}.corrupt-`))) t.fail(`${label}: the skipped bytes are not kept aside`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  t.ok(coveredCases < MIDDLE_CASES, `${MIDDLE_CASES - coveredCases} corruptions in the middle refused, and started with --skip-corrupt; writes after that start survive the next`);
  t.pass(`${coveredCases} corruptions in segments the newest snapshot covers left the start and the state alone, and verify reported each`);

  // Garbage followed by a valid record with the next seq, at no frame boundary the garbage implies.
  for (let i = 0; i < 10; i++) {
    const dir = copyOf(p);
    const file = lastSegment(dir);
    const at = readFileSync(file).length;
    const fact = frames(file).at(-1)!.stamped.fact;
    appendFileSync(file, Buffer.concat([randomBytes(random, 1 + Math.floor(random() * 200)), encodeRecord({ seq: p.lastSeq + 1, fact })]));
    const name = listSegments(dir).at(-1)!.name;
    t.throws(() => open(dir), { constructor: LogCorruption, message: new RegExp(`${name} at offset ${at}`) }, `garbage then a valid record refuses (case ${i})`);
    const v = verifyReport(dir);
    t.ok(!v.ok && v.lines.some((l) => l.startsWith(`CORRUPT  ${name} at offset ${at}:`)), `verify reports it as corruption (case ${i})`);
    rmSync(dir, { recursive: true, force: true });
  }
});

t.test('a real server killed with -9, then 37 random bytes on its newest segment, starts with every acknowledged write', async (t) => {
  const random = prng(seed + 2);
  const dir = mkdtempSync(join(tmpdir(), 'parley-tail-kill9-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', PARLEY_SEGMENT_BYTES: '16384' };
  let server = await startServerProcess(env);
  const key = await new Promise<string>((resolve, reject) => {
    const end = Date.now() + 10000;
    const poll = (): void => {
      const m = /API key:\s+(\S+)/.exec(server.stdout());
      if (m) resolve(m[1]);
      else if (Date.now() > end) reject(new Error('no API key printed'));
      else setTimeout(poll, 20);
    };
    poll();
  });
  const auth = 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
  const api = async (base: string, method: string, path: string, params: Record<string, string>): Promise<{ status: number; json: any }> => {
    const body = new URLSearchParams(params).toString();
    const res = await fetch(method === 'GET' ? `${base}${path}?${body}` : `${base}${path}`, {
      method,
      headers: { authorization: auth, ...(method === 'GET' ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
      body: method === 'GET' ? undefined : body,
      signal: AbortSignal.timeout(10000),
    });
    return { status: res.status, json: await res.json() };
  };
  t.equal((await api(server.base, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'general' }]) })).status, 200);
  const acked = new Map<number, string>();
  let killed = false;
  let n = 0;
  const writer = async (w: number): Promise<void> => {
    while (!killed) {
      const content = `writer ${w} n ${n++}`;
      try {
        const res = await api(server.base, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: `t${w}`, content });
        if (res.status === 200) acked.set(res.json.id, content);
      } catch {
        // The server died mid-request: never acknowledged.
      }
    }
  };
  const writers = Array.from({ length: 6 }, (_, w) => writer(w));
  // The kill comes 300 to 600 ms after the first acknowledgement, not after the start: on a
  // loaded machine the first write alone can take longer than that.
  for (const end = Date.now() + 20000; acked.size === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 300 + Math.floor(random() * 300)));
  server.child.kill('SIGKILL');
  await server.exited;
  killed = true;
  await Promise.all(writers);
  t.ok(acked.size > 0, `${acked.size} writes acknowledged before the kill`);
  const file = lastSegment(dir);
  const at = readFileSync(file).length;
  appendFileSync(file, randomBytes(random, 37));
  server = await startServerProcess(env);
  t.teardown(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  t.match(server.stderr(), new RegExp(`torn final record at offset ${at}`), 'the start drops the garbage with its offset');
  for (const [id, content] of acked) {
    const res = await api(server.base, 'GET', `/api/v1/messages/${id}`, { apply_markdown: 'false' });
    if (res.status !== 200 || res.json.message.content !== content) {
      t.fail(`acknowledged message ${id} lost or changed: ${JSON.stringify(res.json)}`);
      return;
    }
  }
  t.pass(`all ${acked.size} acknowledged messages present`);
  const after = await api(server.base, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'x', content: 'after the garbage' });
  t.equal(after.status, 200, 'writes work after the start');
});
