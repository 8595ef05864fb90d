import t from 'tap';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { listSnapshots, loadSnapshot, snapshotName, type SnapshotEntry, type SnapshotStore } from '../snapshots/snapshot.js';
import { bufferSource, verifySnapshot } from '../snapshots/snapshot_format.js';
import { IdSet } from '../actors/shared/id_set.js';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../actors/runtime/runtime.js';
import { createOrganization } from '../src/bootstrap.js';
import { stateDigest } from './state.js';
import { lineLogger } from '../actors/core/logger.js';
import { BodyStore } from '../snapshots/body_store.js';
import { DiskBodies } from '../snapshots/disk_bodies.js';
import { bodiesDir } from '../snapshots/store.js';
import { quietLogger } from '../actors/core/logger.js';

function open(dir: string, logs: string[] = [], extra: { toSeq?: number } = {}): Store {
  return openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 100, segmentBytes: 4096, skipCorrupt: false, keepSnapshots: 3, log: lineLogger((l) => logs.push(l)), onFatal: (e) => { throw e; }, ...extra });
}

async function seed(rt: Runtime): Promise<void> {
  await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'CREATE_USER', org: 1, actor_id: 1, email: 'b@example.com', password_hash: '', full_name: 'B', role: 400 });
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }, { name: 'random' }], principals: [1, 2], invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
}

function send(rt: Runtime, i: number): Promise<unknown> {
  if (i % 3 === 2) return rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { user_ids: [2] }, content: `dm ${i}`, client: 't', read_by_sender: true });
  return rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1 + (i % 2), to: { stream_id: 1 + (i % 2), topic: `topic ${i % 4}` }, content: `message ${i}`, client: 't', read_by_sender: false });
}

/** A fresh data directory whose store holds the seeded organization and `messages` sent messages. */
async function seeded(messages: number): Promise<{ dir: string; a: Store }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-snap-'));
  const a = open(dir);
  await seed(a.runtime);
  for (let i = 0; i < messages; i++) await send(a.runtime, i);
  return { dir, a };
}

/** User 2 stars messages 3 and 4. */
function star(rt: Runtime): Promise<unknown> {
  return rt.execute({ type: 'UPDATE_FLAGS', user_id: 2, org: 1, op: 'add', flag: 'starred', messages: [3, 4] });
}

t.test('a snapshot plus the log after it restores exactly the state before', async (t) => {
  const { dir, a } = await seeded(50);
  await star(a.runtime);
  const info = await a.snapshot();
  t.ok(info.chunks > 0);
  // Writes after the snapshot live only in the log.
  for (let i = 50; i < 80; i++) await send(a.runtime, i);
  const before = stateDigest(a.runtime);
  await a.close();
  const logs: string[] = [];
  const b = open(dir, logs);
  t.teardown(() => b.close());
  t.equal(b.recovery.snapshot, listSnapshots(dir)[0].name);
  t.ok(b.recovery.replayed > 0, 'the log after the snapshot was replayed');
  t.equal(stateDigest(b.runtime), before);
});

t.test('a snapshot taken while writes continue (fuzzy) still restores exactly', async (t) => {
  const { dir, a } = await seeded(300);
  const writes: Promise<unknown>[] = [];
  const snap = a.snapshot();
  for (let i = 300; i < 400; i++) writes.push(send(a.runtime, i));
  await Promise.all([snap, ...writes]);
  const before = stateDigest(a.runtime);
  a.crash();
  // Simulate a crash: no clean close, the next process opens the same files.
  const b = open(dir);
  t.teardown(() => b.close());
  t.equal(stateDigest(b.runtime), before);
});

t.test('a corrupt newest snapshot falls back to the one before, and says so', async (t) => {
  const { dir, a } = await seeded(20);
  await a.snapshot();
  for (let i = 20; i < 40; i++) await send(a.runtime, i);
  await a.snapshot();
  for (let i = 40; i < 45; i++) await send(a.runtime, i);
  const before = stateDigest(a.runtime);
  await a.runtime.execute({ type: 'CREATE_USER', org: 1, actor_id: 1, email: 'c@example.com', password_hash: '', full_name: 'C', role: 400 });
  const withC = stateDigest(a.runtime);
  t.not(withC, before);
  a.crash();
  const snaps = listSnapshots(dir);
  t.ok(snaps.length >= 2);
  const newest = snaps[0];
  const buf = readFileSync(newest.path);
  buf[Math.floor(buf.length / 2)] ^= 0x5a;
  writeFileSync(newest.path, buf);
  const logs: string[] = [];
  const b = open(dir, logs);
  t.teardown(() => b.close());
  t.match(logs.join('\n'), new RegExp(`snapshot ${newest.name} does not verify`));
  t.equal(b.recovery.snapshot, snaps[1].name);
  t.equal(stateDigest(b.runtime), withC);
});

t.test('replaying up to a chosen seq gives exactly the state at that point', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-snap-'));
  const a = open(dir);
  await seed(a.runtime);
  const states = new Map<number, string>();
  let snapshotEnd = 0;
  for (let i = 0; i < 30; i++) {
    await send(a.runtime, i);
    if (i === 10) snapshotEnd = (await a.snapshot()).endSeq;
    states.set(a.runtime.lastSeq, stateDigest(a.runtime));
  }
  await a.close();
  // The log before the snapshot was pruned, so points from the snapshot on can be reached.
  const targets = [...states.keys()].filter((seq) => seq >= snapshotEnd);
  t.ok(targets.length > 10);
  for (const target of targets.filter((_, i) => i % 4 === 1)) {
    const b = open(dir, [], { toSeq: target });
    t.equal(stateDigest(b.runtime), states.get(target), `state at seq ${target}`);
    b.crash();
  }
});

t.test('old snapshots and the log segments only they cover are pruned', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-snap-'));
  const a = open(dir);
  t.teardown(() => a.close());
  await seed(a.runtime);
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 40; i++) await send(a.runtime, round * 40 + i);
    await a.snapshot();
  }
  const snaps = listSnapshots(dir);
  t.equal(snaps.length, 3, 'only the newest three snapshots are kept');
  const { listSegments } = await import('../snapshots/log.js');
  const segments = listSegments(dir);
  const oldest = snaps[snaps.length - 1].startSeq;
  for (let i = 0; i + 1 < segments.length; i++) t.ok(segments[i + 1].firstSeq - 1 > oldest || i === segments.length - 1, `segment ${segments[i].name} is still needed`);
  t.ok(segments[0].firstSeq <= oldest + 1, 'the oldest kept snapshot still has the log after it');
});

t.test('a format 1 snapshot, with flag sets as arrays of ids, still loads', async (t) => {
  const { dir, a } = await seeded(30);
  await star(a.runtime);
  const info = await a.snapshot();
  const before = stateDigest(a.runtime);
  await a.close();
  const snap = verifySnapshot(readFileSync(info.path));
  if (typeof snap === 'string') throw new Error(snap);
  // Rewrite the users' flag sets as format 1 stored them.
  const asArray = (v: unknown): unknown => (v instanceof Uint8Array ? [...IdSet.fromBytes(v)] : v);
  let users = 0;
  for (const c of snap.chunks as Array<Record<string, any>>) {
    if (c.k !== 'user') continue;
    users++;
    c.unread = asArray(c.unread);
    for (const f of Object.keys(c.flags)) c.flags[f] = asArray(c.flags[f]);
  }
  t.equal(users, 2);
  // The messages' bodies stay in the directory's body store, which the snapshot points into.
  const bodies = BodyStore.open({ dir: bodiesDir(dir), readOnly: true });
  const rt = new Runtime({ ...defaultRuntimeOptions(volatileSink), bodies: new DiskBodies(bodies, quietLogger) });
  t.teardown(() => {
    rt.stop();
    bodies.close();
  });
  loadSnapshot(rt, { ...snap, header: { ...snap.header, version: 1 } });
  t.equal(stateDigest(rt), before, 'the same state as from the format 2 file');
});

t.test('a fuzzy snapshot while messages are deleted and reacted to still restores exactly', async (t) => {
  const { dir, a } = await seeded(60);
  const rt = a.runtime;
  // Two messages per chunk and a yield after every chunk: every write below lands between
  // chunks. (Through the store, whose drain makes the bodies the chunks point at durable
  // too: a drain of the log alone left some of them in the body store's write buffer.)
  const snap = a.snapshot({ sliceSize: 2, maxSliceMs: 0, now: () => Date.now() });
  const writes: Promise<unknown>[] = [];
  for (let id = 1; id <= 60; id += 5) {
    // The message's channel decides, or the organization for a direct message (REACT finds which).
    writes.push(rt.execute({ type: 'REACT', org: 1, op: 'add', message_id: id, reaction: { emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji', user_id: 2 } }));
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (let id = 3; id <= 60; id += 7) {
    writes.push(rt.execute({ type: 'DELETE_MESSAGE', org: 1, actor_id: 1, message_id: id }));
    writes.push(send(rt, 100 + id));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const info = await snap;
  await Promise.all(writes);
  t.ok(info.chunks > 20, `the snapshot was written in ${info.chunks} chunks, across the writes`);
  const before = stateDigest(rt);
  a.crash();
  const b = open(dir);
  t.teardown(() => b.close());
  t.equal(b.recovery.snapshot, listSnapshots(dir)[0].name, 'recovered from that snapshot');
  t.equal(stateDigest(b.runtime), before);
});

/** Snapshots kept in memory: a second implementation of the seam, as the cluster's object store will be. */
class MemorySnapshots implements SnapshotStore {
  readonly blobs = new Map<string, Buffer>();
  list(): SnapshotEntry[] {
    return [...this.blobs].map(([name, buf]) => ({ name, startSeq: Number(/(\d{16})/.exec(name)![1]), size: buf.length, mtimeMs: 0, path: `memory:${name}` })).sort((a, b) => b.startSeq - a.startSeq);
  }
  async create(name: string) {
    const parts: Buffer[] = [];
    return {
      write: async (buf: Buffer) => void parts.push(Buffer.from(buf)),
      commit: async () => {
        this.blobs.set(name, Buffer.concat(parts));
        return `memory:${name}`;
      },
      abort: async () => {},
    };
  }
  open(name: string) {
    const buf = this.blobs.get(name);
    if (!buf) return 'no such snapshot';
    return { ...bufferSource(buf), close() {} };
  }
  async remove(name: string): Promise<void> {
    this.blobs.delete(name);
  }
}

t.test('snapshots go where the store is told to keep them (the seam the cluster keeps them behind)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-snap-'));
  const snapshots = new MemorySnapshots();
  const options = { dataDir: dir, fsync: 'always' as const, fsyncBatchMs: 100, segmentBytes: 4096, skipCorrupt: false, keepSnapshots: 1, log: quietLogger, onFatal: (e: Error) => { throw e; } };
  const a = openStore({ ...options, snapshots });
  await seed(a.runtime);
  for (let i = 0; i < 40; i++) await send(a.runtime, i);
  const first = await a.snapshot();
  for (let i = 40; i < 60; i++) await send(a.runtime, i);
  const info = await a.snapshot();
  t.equal(info.path, `memory:${snapshotName(info.startSeq)}`, 'written to the store');
  t.same(snapshots.list().map((s) => s.name), [snapshotName(info.startSeq)], 'and pruned there (keep 1)');
  t.not(first.startSeq, info.startSeq);
  t.same(listSnapshots(dir), [], 'no snapshot file in the data directory');
  const before = stateDigest(a.runtime);
  await a.close();
  const b = openStore({ ...options, snapshots });
  t.equal(b.recovery.snapshot, snapshotName(info.startSeq), 'recovery reads the store');
  t.equal(stateDigest(b.runtime), before);
  await b.close();
  t.throws(() => openStore(options), /the log starts at seq/, 'the directory alone lacks what the store holds: its log was pruned by that snapshot');
});
