/**
 * More procedures of the operator guide (docs/operator-guide.md) against real server processes: restore
 * to a seq, compact while running and stopped, the backup script on a stopped
 * server, verify finding a flipped byte in a copied segment, and a record cut short
 * at the end of a copied log.
 */
import t from 'tap';
import { cpSync, existsSync, mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeFrame, SEGMENT_HEADER_BYTES } from '../snapshots/codec.js';
import { listSegments } from '../snapshots/log.js';
import { listSnapshots, readSnapshot } from '../snapshots/snapshot.js';
import type { VerifiedSnapshot } from '../snapshots/snapshot_format.js';
import { backup, history, parley, present, send, serve, snapshotName, stop } from './operator_guide_helpers.js';

t.test('restore to a seq, compact, and the backup of a stopped server', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'parley-guide-pit-'));
  const dir = mkdtempSync(join(tmpdir(), 'parley-guide-pit-out-'));
  let { server, auth } = await serve(data, { PARLEY_SEGMENT_BYTES: '16384' });
  const base = (): string => server.base;
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  // The guide's point-in-time steps: a snapshot to restore from, the seq to stop at (inspect), then more writes.
  const s0 = await parley(['snapshot', '--data-dir', data]);
  t.equal(s0.status, 0, 'snapshot asks the running server');
  const snap0 = JSON.parse(s0.stdout);
  t.equal(snap0.server_pid, server.pid);
  const a = await send(base(), auth, 10, 'phase A');
  const inspected = await parley(['inspect', '--data-dir', data]);
  t.equal(inspected.status, 0, 'inspect reads a running server\'s directory');
  const atA = JSON.parse(inspected.stdout);
  t.ok(atA.seq > snap0.end_seq, `inspect shows the seq now (${atA.seq})`);
  const b = await send(base(), auth, 10, 'phase B');
  const list = await parley(['snapshots', '--data-dir', data]);
  t.match(list.stdout, new RegExp(`${snapshotName(snap0.snapshot)} .* ${snap0.start_seq} +${snap0.end_seq} +\\d+ +yes`), 'snapshots lists it with its seqs');

  const pit = join(dir, 'at-A');
  const r = await parley(['restore', '--data-dir', data, '--from', snapshotName(snap0.snapshot), '--to', pit, '--to-seq', String(atA.seq)]);
  t.equal(r.status, 0, `restore --to-seq from the running server's directory: ${r.stderr}`);
  t.equal(JSON.parse(r.stdout).seq, atA.seq);
  const pitInspect = JSON.parse((await parley(['inspect', '--data-dir', pit])).stdout);
  t.equal(pitInspect.seq, atA.seq, 'the restored directory stops at that seq');
  const early = await parley(['restore', '--data-dir', data, '--from', snapshotName(snap0.snapshot), '--to', join(dir, 'too-early'), '--to-seq', String(snap0.end_seq - 1)]);
  t.equal(early.status, 2, 'a seq before the snapshot\'s end seq is refused');
  t.match(early.stderr, /reflects facts past seq/);
  const pitServer = await serve(pit, {}, auth);
  const pitHistory = await history(pitServer.server.base, auth);
  t.equal(present(pitHistory, a), a.size, 'every phase A message is there');
  t.equal(present(pitHistory, b), 0, 'no phase B message is');
  t.equal(await stop(pitServer.server), 0);

  // compact while the server runs: it asks the server, and the data stays readable.
  const c = await parley(['compact', '--data-dir', data]);
  t.equal(c.status, 0, `compact: ${c.stderr}`);
  const lines = c.stdout.trim().split('\n').map((l) => JSON.parse(l));
  t.match(lines, [{ snapshot: String, server_pid: server.pid }, { bytes_before: Number, bytes_after: Number }], 'the server\'s snapshot, then the sizes');
  t.equal(present(await history(base(), auth), new Map([...a, ...b])), a.size + b.size, 'compact keeps everything readable');
  t.equal(await stop(server), 0, 'a clean stop');
  t.notOk(existsSync(join(data, 'parley.pid')), 'a clean stop removes the lock file');
  const stoppedCompact = await parley(['compact', '--data-dir', data, '--keep', '1']);
  t.equal(stoppedCompact.status, 0, 'compact on a stopped server');
  t.equal(listSnapshots(data).length, 1, '--keep 1 keeps one snapshot');
  ({ server } = await serve(data, { PARLEY_SEGMENT_BYTES: '16384' }, auth));
  t.equal(present(await history(base(), auth), new Map([...a, ...b])), a.size + b.size, 'and a restart after compact finds everything');
  const c2 = await send(base(), auth, 10, 'phase C');
  t.equal(await stop(server), 0);

  // The backup of a stopped server, by the same script.
  const bk = join(dir, 'backup');
  const taken = await backup(data, bk);
  t.equal(taken.status, 0, `the backup script on a stopped server: ${taken.stderr}`);
  const all = new Map([...a, ...b, ...c2]);

  // What follows works on copies of the stopped directory and of its backup, each its own:
  // the four checks run side by side.
  t.jobs = 4;
  const checks: Array<Promise<unknown>> = [];

  checks.push(t.test('verify finds a flipped byte in a copied segment, and restore refuses it', async (t) => {
    const bad = join(dir, 'flipped');
    cpSync(bk, bad, { recursive: true });
    const segs = listSegments(bad);
    const seg = segs[segs.length - 1];
    const path = join(bad, seg.name);
    const buf = readFileSync(path);
    const first = decodeFrame(buf, SEGMENT_HEADER_BYTES);
    t.equal(first.kind, 'record');
    t.equal(decodeFrame(buf, (first as { next: number }).next).kind, 'record', 'a record follows the one flipped');
    buf[SEGMENT_HEADER_BYTES + 20] ^= 0x01;
    writeFileSync(path, buf);
    const verify = await parley(['verify', '--data-dir', bad]);
    t.equal(verify.status, 1, 'verify exits 1');
    t.match(verify.stdout, `CORRUPT  ${seg.name} at offset ${SEGMENT_HEADER_BYTES}: checksum mismatch (after 0 good records)`);
    t.match(verify.stdout, /some files do not verify/);
    const rr = await parley(['restore', '--data-dir', bad, '--from', snapshotName(taken.stdout), '--to', join(dir, 'flipped-restored')]);
    t.equal(rr.status, 2, rr.status === 2 ? 'restore refuses' : rr.stderr);
    t.match(rr.stderr, `corrupt log record in ${path} at offset ${SEGMENT_HEADER_BYTES}`);
  }));

  checks.push(t.test("the stopped server's backup restores everything", async (t) => {
    const restored = join(dir, 'restored');
    const r2 = await parley(['restore', '--data-dir', bk, '--from', snapshotName(taken.stdout), '--to', restored]);
    t.equal(r2.status, 0, `restore of the stopped server's backup: ${r2.stderr}`);
    const s = await serve(restored, {}, auth);
    t.equal(present(await history(s.server.base, auth), all), all.size, 'everything is there');
    t.equal(await stop(s.server), 0);
  }));

  checks.push(t.test('a record cut short at the end of a copied log is dropped, and the rest restored', async (t) => {
    // A plain copy of the stopped directory, restored from the snapshot taken before phase C,
    // with the last record (phase C's last message) cut as a copy racing its write would cut it.
    const torn = join(dir, 'torn');
    cpSync(data, torn, { recursive: true });
    const snap = listSnapshots(torn).at(-1)!;
    t.ok(snap.startSeq < Math.max(...listSnapshots(torn).map((s) => s.startSeq)), 'an older snapshot than the shutdown one');
    const segs = listSegments(torn);
    const last = join(torn, segs[segs.length - 1].name);
    const buf = readFileSync(last);
    let offset = SEGMENT_HEADER_BYTES;
    let lastStart = offset;
    for (let f = decodeFrame(buf, offset); f.kind === 'record'; f = decodeFrame(buf, offset)) {
      lastStart = offset;
      offset = f.next;
    }
    t.equal(offset, buf.length, 'the segment ended on a whole record');
    truncateSync(last, lastStart + 10);
    const verify = await parley(['verify', '--data-dir', torn]);
    t.equal(verify.status, 0, 'a torn tail is no error');
    t.match(verify.stdout, /torn tail \(torn final record at offset \d+: .*\); it is dropped at the next start/);
    const to = join(dir, 'torn-restored');
    const rr = await parley(['restore', '--data-dir', torn, '--from', snap.name, '--to', to]);
    t.equal(rr.status, 0, rr.stderr);
    t.match(rr.stderr, `log: ${last}: dropping a torn tail`);
    const s = await serve(to, {}, auth);
    const got = await history(s.server.base, auth);
    const lastC = Math.max(...c2.keys());
    t.notOk(got.has(lastC), 'the message whose record was cut is not there');
    t.equal(present(got, all), all.size - 1, 'every other message is');
    t.equal(await stop(s.server), 0);
  }));

  checks.push(t.test('a corrupt record after the snapshot: restore --to-seq the last good seq that verify names', async (t) => {
    const bad = join(dir, 'corrupt-middle');
    cpSync(data, bad, { recursive: true });
    const snap = listSnapshots(bad).at(-1)!;
    const segs = listSegments(bad);
    const seg = segs[segs.length - 1];
    const path = join(bad, seg.name);
    const buf = readFileSync(path);
    const starts: number[] = [];
    let offset = SEGMENT_HEADER_BYTES;
    for (let f = decodeFrame(buf, offset); f.kind === 'record'; f = decodeFrame(buf, offset)) {
      starts.push(offset);
      offset = f.next;
    }
    // Phase C's fifth-from-last message: five phase C messages and the records after it are lost.
    const victim = starts[starts.length - 5];
    buf[victim + 20] ^= 0x01;
    writeFileSync(path, buf);
    const verify = await parley(['verify', '--data-dir', bad]);
    t.equal(verify.status, 1);
    const m = new RegExp(`CORRUPT  ${seg.name} at offset ${victim}: checksum mismatch \\(after (\\d+) good records\\)`).exec(verify.stdout);
    t.ok(m, verify.stdout);
    const lastGood = seg.firstSeq + Number(m![1]) - 1;
    t.ok(lastGood >= (readSnapshot(snap.path) as VerifiedSnapshot).endSeq, 'the last good seq is not before the snapshot\'s end seq');
    const to = join(dir, 'corrupt-middle-restored');
    const rr = await parley(['restore', '--data-dir', bad, '--from', snap.name, '--to', to, '--to-seq', String(lastGood)]);
    t.equal(rr.status, 0, rr.stderr);
    t.equal(JSON.parse(rr.stdout).seq, lastGood);
    const s = await serve(to, {}, auth);
    const got = await history(s.server.base, auth);
    const cIds = [...c2.keys()].sort((x, y) => x - y);
    t.equal(present(got, new Map([...a, ...b])), a.size + b.size, 'phases A and B are there');
    t.same(cIds.filter((id) => got.has(id)), cIds.slice(0, cIds.length - 5), 'phase C up to the corrupt record');
    t.equal(await stop(s.server), 0);
  }));
  await Promise.all(checks);
});
