/**
 * A data directory's message bodies (`bodies/`, snapshots/body_store.ts) as the server
 * uses them: snapshots hold locators and the bodies stay in the store; a restart reads
 * them back; a torn tail there is cut off, corruption in the middle refused unless the
 * operator accepts the loss; a record damaged while serving reads as damaged; and a
 * format 3 snapshot, which held whole messages, moves its bodies into the store.
 * (A persistence test: it reads actor contexts.)
 */
import t from 'tap';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../src/store.js';
import { openTestStore } from './helpers.js';
import { createOrganization } from '../src/bootstrap.js';
import { bodyOf } from '../actors/core/bodies.js';
import { bodiesDir } from '../snapshots/store.js';
import { BodyCorrupt } from '../snapshots/body_store.js';
import { DAMAGED_BODY, DiskBodies } from '../snapshots/disk_bodies.js';
import { loadSnapshot, readSnapshot } from '../snapshots/snapshot.js';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../actors/runtime/runtime.js';
import { stateDigest } from './state.js';

const open = (dir: string, logs: string[] = [], skipCorrupt = false): Store => openTestStore(dir, { logs, skipCorrupt });

const send = async (rt: Runtime, content: string): Promise<number> =>
  ((await rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 't' }, content, client: 'test', read_by_sender: false })) as { id: number }).id;

/** An organization with a channel, `n` messages, a snapshot, one edit and one more message after it. */
async function populated(n: number): Promise<{ dir: string; expected: Map<number, string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bodies-'));
  const store = open(dir);
  const rt = store.runtime;
  await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const expected = new Map<number, string>();
  for (let i = 0; i < n; i++) expected.set(await send(rt, `body number ${i} **bold**`), `body number ${i} **bold**`);
  await store.snapshot();
  const first = [...expected.keys()][0];
  await rt.execute({ type: 'EDIT_MESSAGE', org: 1, editor_id: 1, message_id: first, content: 'edited after the snapshot', propagate_mode: 'change_one', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  expected.set(first, 'edited after the snapshot');
  expected.set(await send(rt, 'sent after the snapshot'), 'sent after the snapshot');
  await store.close();
  return { dir, expected };
}

/** Each message's content as the runtime reads it now. */
function contents(rt: Runtime, ids: Iterable<number>): Map<number, string> {
  const ch = rt.channel(1, 1)!;
  return new Map([...ids].map((id) => [id, bodyOf(rt.bodies, ch.messages.get(id)!).content]));
}

const bodySegments = (dir: string): string[] => readdirSync(bodiesDir(dir)).filter((f) => f.endsWith('.pbody')).sort();

t.test('a snapshot holds where each body is, not the body; a restart reads every body back', async (t) => {
  const { dir, expected } = await populated(30);
  const [snap] = readdirSync(dir).filter((f) => f.endsWith('.psnap'));
  t.notOk(readFileSync(join(dir, snap)).includes('body number 7'), 'the snapshot does not hold message bodies');
  t.ok(bodySegments(dir).some((f) => readFileSync(join(bodiesDir(dir), f)).includes('body number 7')), 'the body store does');
  const store = open(dir);
  t.teardown(() => store.close());
  t.same(contents(store.runtime, expected.keys()), expected, 'every body, the edit after the snapshot and the message after it included');
  t.equal(store.runtime.bodies.persistent, true);
});

t.test('a torn tail in the body store (a crash mid-write) is cut off at the next start, and nothing acknowledged is lost', async (t) => {
  const { dir, expected } = await populated(10);
  const segs = bodySegments(dir);
  appendFileSync(join(bodiesDir(dir), segs[segs.length - 1]), Buffer.from([0x40, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]));
  const logs: string[] = [];
  const store = open(dir, logs);
  t.teardown(() => store.close());
  t.match(logs.join('\n'), /torn tail/, 'the repair is logged');
  t.same(contents(store.runtime, expected.keys()), expected);
});

t.test('a corrupt body record with valid ones after it refuses the start; --skip-corrupt starts, and the lost bodies read as damaged', async (t) => {
  const { dir, expected } = await populated(10);
  const segs = bodySegments(dir);
  const file = join(bodiesDir(dir), segs[segs.length - 1]);
  const bytes = readFileSync(file);
  bytes[40] ^= 0xff; // inside the first record, after the segment header
  writeFileSync(file, bytes);
  t.throws(() => open(dir), BodyCorrupt, 'the start refuses, naming the file and offset');
  t.throws(() => open(dir), /corrupt body record in .*body-\d+\.pbody at offset \d+/);
  const logs: string[] = [];
  const store = open(dir, logs, true);
  t.teardown(() => store.close());
  t.match(logs.join('\n'), /corrupt record at offset/, 'the loss is logged');
  const read = contents(store.runtime, expected.keys());
  // Bodies the log replays are stored again; those only the snapshot pointed at are gone.
  for (const [id, content] of read) if (content !== expected.get(id)) t.equal(content, DAMAGED_BODY.content, `message ${id} reads as damaged`);
  t.equal(read.get([...expected.keys()].pop()!), 'sent after the snapshot', 'a message the log holds is whole again');
});

t.test('a record damaged on disk while the server runs reads as damaged, logged once, and the server goes on', async (t) => {
  const { dir, expected } = await populated(10);
  const logs: string[] = [];
  const store = open(dir, logs);
  t.teardown(() => store.close());
  const ids = [...expected.keys()];
  const victim = ids[3];
  const ch = store.runtime.channel(1, 1)!;
  const loc = ch.messages.get(victim)!.body;
  const segs = bodySegments(dir);
  const file = join(bodiesDir(dir), segs[0]);
  const bytes = readFileSync(file);
  const at = bytes.indexOf('body number 3');
  t.ok(at > 0);
  bytes[at] ^= 0xff;
  writeFileSync(file, bytes);
  t.equal(bodyOf(store.runtime.bodies, ch.messages.get(victim)!).content, DAMAGED_BODY.content);
  const page = await store.runtime.bodies.readMany([loc, ch.messages.get(ids[4])!.body]);
  t.equal(page.get(loc)?.content, DAMAGED_BODY.content, 'a batch read too');
  t.equal(page.get(ch.messages.get(ids[4])!.body)?.content, expected.get(ids[4]), 'and the others in the batch are whole');
  t.equal(logs.filter((l) => l.includes('bodies.damaged') || l.includes('damaged body record')).length, 1, 'logged once');
  t.ok((await send(store.runtime, 'still serving')) > 0, 'writes go on');
});

t.test('a format 3 snapshot (whole messages) loads into a body store: the same state, the bodies moved into the store', async (t) => {
  // A runtime without a data directory writes whole messages, as formats 1 to 3 did.
  const memory = new Runtime(defaultRuntimeOptions(volatileSink));
  t.teardown(() => memory.stop());
  await createOrganization(memory, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await memory.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  for (let i = 0; i < 12; i++) await send(memory, `old format ${i}`);
  await memory.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { user_ids: [1] }, content: 'a direct one', client: 'test', read_by_sender: true });
  const dir = mkdtempSync(join(tmpdir(), 'parley-bodies-v3-'));
  const { DirectorySnapshots, writeSnapshot } = await import('../snapshots/snapshot.js');
  const info = await writeSnapshot(new DirectorySnapshots(dir), memory, async () => {});
  const snap = readSnapshot(info.path);
  if (typeof snap === 'string') throw new Error(snap);
  t.ok(readFileSync(info.path).includes('old format 7'), 'whole messages in the chunks');
  const store = open(mkdtempSync(join(tmpdir(), 'parley-bodies-v3-into-')));
  t.teardown(() => store.close());
  loadSnapshot(store.runtime, { ...snap, header: { ...snap.header, version: 3 } });
  t.equal(stateDigest(store.runtime), stateDigest(memory), 'the same state');
  const dm = store.runtime.org(1)!.directMessages.values().next().value!;
  t.equal(bodyOf(store.runtime.bodies, dm).content, 'a direct one');
});

t.test('compaction: a deleted message leaves the disk with --keep 1; every other body reads back after a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bodies-compact-'));
  const openKeeping = (): Store => openTestStore(dir, { keepSnapshots: 1 });
  let store = openKeeping();
  const rt = store.runtime;
  await createOrganization(rt, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const expected = new Map<number, string>();
  for (let i = 0; i < 20; i++) expected.set(await send(rt, `kept body ${i}`), `kept body ${i}`);
  const secret = await send(rt, 'a secret that is deleted');
  const edited = [...expected.keys()][5];
  await rt.execute({ type: 'EDIT_MESSAGE', org: 1, editor_id: 1, message_id: edited, content: 'the new version', propagate_mode: 'change_one', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  expected.set(edited, 'the new version');
  await rt.execute({ type: 'DELETE_MESSAGE', org: 1, actor_id: 1, message_id: secret });
  await store.snapshot();
  const onDisk = (text: string): string[] => {
    const hits: string[] = [];
    const walk = (d: string): void => {
      for (const f of readdirSync(d, { withFileTypes: true })) {
        if (f.isDirectory()) walk(join(d, f.name));
        else if (readFileSync(join(d, f.name)).includes(text)) hits.push(f.name);
      }
    };
    walk(dir);
    return hits;
  };
  t.ok(onDisk('a secret that is deleted').length > 0, 'before: the deleted body is on disk');
  const result = await store.compactBodies();
  t.equal(result.copied, expected.size, 'the bodies messages hold are copied, and no other');
  t.ok(result.bytesAfter < result.bytesBefore);
  t.ok(result.deleted.length > 0, 'the old segments are deleted at once: no older snapshot is kept');
  t.same(result.pending, []);
  // The log's records of the send go with the segments the kept snapshot covers; the newest segment stays.
  await send(rt, 'after the compaction');
  await store.snapshot();
  t.same(onDisk('a secret that is deleted'), [], 'the deleted body is gone from every file');
  t.same(contents(rt, expected.keys()), expected, 'every body reads through the new locators');
  await store.close();
  store = openKeeping();
  t.teardown(() => store.close());
  t.same(contents(store.runtime, expected.keys()), expected, 'and after a restart');
});

t.test('decisions that read many bodies find them in the cache: the runtime reads them first, off the event loop', async (t) => {
  const { dir } = await populated(40);
  const store = open(dir);
  t.teardown(() => store.close());
  const rt = store.runtime;
  const bodies = (rt.bodies as DiskBodies).store;
  // A read on the event loop that goes to the disk: a sync read the cache did not answer.
  let syncMisses = 0;
  const read = bodies.read.bind(bodies);
  bodies.read = (loc: number) => {
    const before = bodies.stats().misses;
    const body = read(loc);
    if (bodies.stats().misses > before) syncMisses++;
    return body;
  };
  const ids = [...rt.channel(1, 1)!.messages.ids];
  const missesAtStart = bodies.stats().misses;
  await rt.execute({ type: 'EDIT_MESSAGE', org: 1, editor_id: 1, message_id: ids[5], topic: 'moved', propagate_mode: 'change_all', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  t.equal(syncMisses, 0, 'moving a topic of 41 cold messages read none of them on the event loop');
  // All but the two the log replayed after the snapshot (the edit, the last send), which are cached.
  t.equal(bodies.stats().misses - missesAtStart, 39, 'the others were read ahead, in the background');
  const result = (await rt.execute({ type: 'DELETE_TOPIC_BATCH', org: 1, actor_id: 1, stream_id: 1, topic: 'moved' })) as { deleted: number };
  t.equal(result.deleted, 41);
  t.equal(syncMisses, 0, 'nor did deleting them (each deletion reads its body for the uploads it links)');
});
