import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { Readable } from 'node:stream';
import { UploadStore } from '../src/uploads/store.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { listSegments } from '../snapshots/log.js';
import { listSnapshots } from '../snapshots/snapshot.js';
import { createOrganization } from '../src/bootstrap.js';
import { stateDigest } from './state.js';
import { startServerProcess } from './server_process.js';
import { appendFileSync } from 'node:fs';
import { decodeFrame, encodeRecord, SEGMENT_HEADER_BYTES } from '../snapshots/codec.js';
import { LogCorruption } from '../snapshots/log.js';
import { lineLogger, quietLogger } from '../actors/core/logger.js';
import { built } from './built.js';
import { root } from './paths.js';

function parley(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [built('src/cli.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 120000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function open(dir: string, toSeq?: number): Store {
  return openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 8192, skipCorrupt: false, toSeq, log: quietLogger, onFatal: (e) => { throw e; } });
}

/** A closed data directory with messages, and the state digest after each write. */
async function populate(): Promise<{ dir: string; states: Map<number, string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-op-'));
  const s = open(dir);
  await createOrganization(s.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await s.runtime.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const states = new Map<number, string>();
  for (let i = 0; i < 60; i++) {
    await s.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: `m${i}`, client: 't', read_by_sender: false });
    if (i === 20) await s.snapshot();
    states.set(s.runtime.lastSeq, stateDigest(s.runtime));
  }
  await s.close();
  return { dir, states };
}

t.test('snapshot, snapshots, verify and inspect on a stopped server', async (t) => {
  const { dir } = await populate();
  const snap = parley(['snapshot', '--data-dir', dir]);
  t.equal(snap.status, 0, snap.stderr);
  const out = JSON.parse(snap.stdout);
  t.ok(existsSync(out.snapshot));
  const list = parley(['snapshots', '--data-dir', dir]);
  t.equal(list.status, 0, list.stderr);
  t.match(list.stdout, /snap-\d+\.psnap .* yes/);
  t.match(list.stderr, /verifying: 100%/, 'plain progress lines when not on a terminal');
  const verify = parley(['verify', '--data-dir', dir]);
  t.equal(verify.status, 0, verify.stdout);
  t.match(verify.stdout, /all snapshots, log segments, message bodies and uploaded files verify/);
  const inspect = parley(['inspect', '--data-dir', dir]);
  t.equal(inspect.status, 0, inspect.stderr);
  const counts = JSON.parse(inspect.stdout);
  t.same(counts.organizations.map((o: any) => [o.users, o.channels, o.messages, o.queues]), [[1, 1, 60, 0]]);
  // A flipped byte in a snapshot is reported, and verify fails.
  const newest = listSnapshots(dir)[0];
  const buf = readFileSync(newest.path);
  buf[buf.length - 40] ^= 0xff;
  writeFileSync(newest.path, buf);
  const bad = parley(['verify', '--data-dir', dir]);
  t.equal(bad.status, 1);
  t.match(bad.stdout, new RegExp(`CORRUPT  ${newest.name}`));
});

t.test('restore rebuilds the state at a chosen seq into a fresh directory, leaving the source alone', async (t) => {
  const { dir, states } = await populate();
  const snap = listSnapshots(dir)[0];
  const target = [...states.keys()].filter((seq) => seq > snap.startSeq + 5)[10];
  const to = join(mkdtempSync(join(tmpdir(), 'parley-restore-')), 'restored');
  const before = listSegments(dir).map((s) => readFileSync(join(dir, s.name)).length);
  const r = parley(['restore', '--data-dir', dir, '--from', snap.name, '--to', to, '--to-seq', String(target)]);
  t.equal(r.status, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).seq, target);
  t.same(listSegments(dir).map((s) => readFileSync(join(dir, s.name)).length), before, 'the source log is untouched');
  const restored = open(to);
  t.teardown(() => restored.close());
  t.equal(stateDigest(restored.runtime), states.get(target));
  // The restored directory keeps working: new facts follow the restored seq.
  await restored.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content: 'after restore', client: 't', read_by_sender: false });
  t.equal(restored.runtime.lastSeq, target + 1);
  const refused = parley(['restore', '--data-dir', dir, '--from', snap.name, '--to', to]);
  t.equal(refused.status, 2);
  t.match(refused.stderr, /not empty/);
});

t.test('compact keeps the state and shrinks the log', async (t) => {
  const { dir, states } = await populate();
  const last = Math.max(...states.keys());
  const r = parley(['compact', '--data-dir', dir, '--keep', '1']);
  t.equal(r.status, 0, r.stderr);
  const sizes = JSON.parse(r.stdout);
  t.ok(sizes.bytes_after < sizes.bytes_before, `${sizes.bytes_after} < ${sizes.bytes_before}`);
  t.equal(listSnapshots(dir).length, 1);
  const s = open(dir);
  t.teardown(() => s.close());
  t.equal(stateDigest(s.runtime), states.get(last));
});

t.test('snapshot asks a running server, which writes it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-op-'));
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none' });
  t.teardown(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  const r = parley(['snapshot', '--data-dir', dir]);
  t.equal(r.status, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).server_pid, server.pid);
  const refused = parley(['create-org', '--data-dir', dir, '--name', 'X', '--subdomain', 'x', '--owner-email', 'x@example.com', '--owner-password', 'pw']);
  t.equal(refused.status, 2);
  t.match(refused.stderr, /in use by process/);
});

t.test('verify reports a garbage tail the way the start does: a torn tail, not corruption', async (t) => {
  const { dir, states } = await populate();
  const segs = listSegments(dir);
  const name = segs[segs.length - 1].name;
  const last = join(dir, name);
  const clean = readFileSync(last);
  // The tail from the issue: a header with an impossible length, then more garbage.
  const garbage = Buffer.alloc(37, 0xa7);
  garbage.writeUInt32LE(1457157651, 0);
  appendFileSync(last, garbage);
  const verify = parley(['verify', '--data-dir', dir]);
  t.equal(verify.status, 0, verify.stdout);
  t.notMatch(verify.stdout, /CORRUPT/);
  const note = new RegExp(`ok {7}${name}: \\d+ records; (torn tail \\(torn final record at offset ${clean.length}: impossible record length 1457157651; 37 bytes, no valid record after them\\)); it is dropped at the next start`).exec(verify.stdout);
  t.ok(note, verify.stdout);
  const logs: string[] = [];
  const s = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 8192, skipCorrupt: false, log: lineLogger((l) => logs.push(l)), onFatal: (e) => { throw e; } });
  t.ok(logs.some((l) => l === `log: ${last}: dropping a ${note![1]}`), `the start logs what verify said: ${logs.join(' | ')}`);
  t.equal(stateDigest(s.runtime), states.get(Math.max(...states.keys())), 'nothing acknowledged is lost');
  await s.close();
  t.same(readFileSync(last), clean, 'the start cut the tail off');
  const after = parley(['verify', '--data-dir', dir]);
  t.equal(after.status, 0, after.stdout);
  t.notMatch(after.stdout, /torn tail/);
  // Garbage with a valid record after it is corruption in the middle, for both.
  let offset = SEGMENT_HEADER_BYTES;
  let fact;
  for (let f = decodeFrame(clean, offset); f.kind === 'record'; f = decodeFrame(clean, offset)) {
    fact = f.stamped.fact;
    offset = f.next;
  }
  appendFileSync(last, Buffer.concat([garbage, encodeRecord({ seq: Math.max(...states.keys()) + 1, fact: fact! })]));
  const bad = parley(['verify', '--data-dir', dir]);
  t.equal(bad.status, 1, bad.stdout);
  t.match(bad.stdout, `CORRUPT  ${name} at offset ${clean.length}: impossible record length 1457157651`);
  t.throws(() => open(dir), { constructor: LogCorruption, message: `corrupt log record in ${last} at offset ${clean.length}: impossible record length 1457157651` });
});

/** Stores a file the way `POST /user_uploads` does and records its attachment; returns its id and digest. */
async function storeUpload(s: Store, dir: string, name: string, bytes: Buffer): Promise<{ id: number; sha256: string }> {
  const store = new UploadStore(dir);
  const received = await store.receive(Readable.from([bytes]), 1 << 20);
  await store.commit(1, received);
  const { attachment } = await s.runtime.execute({ type: 'ADD_ATTACHMENT', org: 1, owner_id: 1, name, size: received.size, content_type: 'text/plain', sha256: received.sha256 });
  return { id: attachment.id, sha256: received.sha256 };
}

t.test('verify checks the files snapshots name; restore copies the files the restored state names, and only those', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-op-files-'));
  const s = open(dir);
  await createOrganization(s.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const a = await storeUpload(s, dir, 'a.txt', Buffer.from('file a'));
  const b = await storeUpload(s, dir, 'b.txt', Buffer.from('file b, deleted after the snapshot'));
  await s.snapshot();
  await s.runtime.execute({ type: 'DELETE_ATTACHMENT', org: 1, actor_id: 1, attachment_id: b.id });
  const c = await storeUpload(s, dir, 'c.txt', Buffer.from('file c, only in the log'));
  await s.close();
  // A stray file no state names.
  writeFileSync(join(dir, 'uploads', '1', 'f'.repeat(64)), 'stray');
  const snap = listSnapshots(dir)[0];

  const verify = parley(['verify', '--data-dir', dir]);
  t.equal(verify.status, 0, verify.stdout);
  t.match(verify.stdout, /2 of 2 uploaded files the snapshots name are present and intact/);

  const to = join(mkdtempSync(join(tmpdir(), 'parley-restore-files-')), 'restored');
  const r = parley(['restore', '--data-dir', dir, '--from', snap.name, '--to', to]);
  t.equal(r.status, 0, r.stderr);
  t.match(JSON.parse(r.stdout), { files_copied: 2, files_failed: 0 });
  const copied = new UploadStore(to).list().map((f) => f.sha256).sort();
  t.same(copied, [a.sha256, c.sha256].sort(), 'the files of the restored state: not the deleted one, not the stray one');
  t.equal(readFileSync(new UploadStore(to).pathOf(1, c.sha256), 'utf8'), 'file c, only in the log');
  const restored = parley(['verify', '--data-dir', to]);
  t.equal(restored.status, 0, restored.stdout);

  // A flipped byte and a missing file: reported, verify fails; restore copies what it can and fails.
  const pathA = new UploadStore(dir).pathOf(1, a.sha256);
  const bytes = readFileSync(pathA);
  bytes[0] ^= 0xff;
  writeFileSync(pathA, bytes);
  rmSync(new UploadStore(dir).pathOf(1, b.sha256));
  const bad = parley(['verify', '--data-dir', dir]);
  t.equal(bad.status, 1, bad.stdout);
  t.match(bad.stdout, new RegExp(`CORRUPT  uploads/1/${a.sha256} \\(attachment ${a.id} "a.txt" of organization 1, named by ${snap.name}\\): SHA-256 [0-9a-f]{64}, expected ${a.sha256}`));
  t.match(bad.stdout, new RegExp(`MISSING  uploads/1/${b.sha256} \\(attachment ${b.id} "b.txt"`));
  t.match(bad.stdout, /some files do not verify/);
  writeFileSync(pathA, 'short');
  t.match(parley(['verify', '--data-dir', dir]).stdout, new RegExp(`CORRUPT  uploads/1/${a.sha256} .*: 5 bytes, expected 6`));
  const to2 = join(mkdtempSync(join(tmpdir(), 'parley-restore-files-')), 'restored');
  const r2 = parley(['restore', '--data-dir', dir, '--from', snap.name, '--to', to2]);
  t.equal(r2.status, 1, r2.stderr);
  t.match(r2.stderr, new RegExp(`restore: CORRUPT uploads/1/${a.sha256} \\(attachment ${a.id} "a.txt"\\): 5 bytes, expected 6; not copied`));
  t.match(JSON.parse(r2.stdout), { files_copied: 1, files_failed: 1 });
  t.same(new UploadStore(to2).list().map((f) => f.sha256), [c.sha256]);
});
