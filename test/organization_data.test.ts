/**
 * One organization's data: its own sequence in the log (`verify --org`), its history, and
 * `parley restore-org`: one organization back to an earlier seq, in place, on a stopped
 * server, with every other organization left exactly as it was, its event queues too;
 * and recovery never replaying the log across such a restore.
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { listSegments, readLog } from '../snapshots/log.js';
import { decodeFrame, SEGMENT_HEADER_BYTES } from '../snapshots/codec.js';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnSync } from 'node:child_process';
import { built } from './built.js';
import { root } from './paths.js';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { historyCommand, restoreOrgCommand, verifyOrgCommand } from '../src/operator/organization_data.js';
import { inspectCommand, listSnapshotsCommand, restoreCommand, verifyReport } from '../src/operator/data_commands.js';
import { listSnapshots } from '../snapshots/snapshot.js';
import { readOrgRestores } from '../snapshots/org_restores.js';
import { recover } from '../src/store.js';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../actors/runtime/runtime.js';
import { quietLogger } from '../actors/core/logger.js';
import { BodyStore } from '../snapshots/body_store.js';
import { DiskBodies } from '../snapshots/disk_bodies.js';
import { bodiesDir } from '../snapshots/store.js';
import { openTestStore, storeClient } from './helpers.js';
import { orgDigest } from './state.js';

type Call = ReturnType<typeof storeClient>;

async function post(call: Call, topic: string, content: string, to = 'general'): Promise<number> {
  const r = await call('POST', '/api/v1/messages', { type: 'stream', to, topic, content });
  if (r.result !== 'success') throw new Error(JSON.stringify(r));
  return r.id as number;
}

t.test('one organization goes back to an earlier seq; the other, and its queues, stay as they are', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-orgrestore-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = openTestStore(dir);
  const acme = await createOrganization(store.runtime, { name: 'Acme', subdomain: 'acme', ownerEmail: 'o@acme.example', ownerPassword: 'pw', ownerName: 'O' });
  const beta = await createOrganization(store.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'o@beta.example', ownerPassword: 'pw', ownerName: 'B' });
  const a = storeClient(store, acme.owner, 'acme.localhost');
  const b = storeClient(store, beta.owner, 'beta.localhost');
  for (const call of [a, b]) {
    await call('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }, { name: 'design' }] });
  }
  const acmeFirst = await post(a, 'plans 0', 'acme first');
  for (let i = 0; i < 5; i++) {
    await post(a, `plans ${i % 2}`, `acme before ${i}`);
    await post(b, 'news', `beta before ${i}`);
  }
  await store.snapshot();
  // More after the snapshot: the point restored to is reached by replaying the log.
  await post(a, 'plans 0', 'acme **kept**', 'design');
  await post(b, 'news', 'beta between');
  const toSeq = store.runtime.lastSeq;
  const acmeThen = orgDigest(store.runtime, acme.organization_id);
  // The moment to go back to, between two records' times of commit.
  await sleep(20);
  const moment = Date.now();
  await sleep(20);

  // The mistake, in Acme: a channel archived, a message deleted, a topic renamed.
  const design = (await a('GET', '/api/v1/get_stream_id', { stream: 'design' })).stream_id as number;
  t.equal((await a('DELETE', `/api/v1/streams/${design}`)).result, 'success');
  t.equal((await a('DELETE', `/api/v1/messages/${acmeFirst}`)).result, 'success');
  const lateA = await post(a, 'oops', 'acme after');
  // Beta goes on meanwhile, and both have a client with an event queue.
  const lateB = await post(b, 'news', 'beta after');
  const qa = (await a('POST', '/api/v1/register', { event_types: ['message'] })).queue_id as string;
  const qb = (await b('POST', '/api/v1/register', { event_types: ['message'] })).queue_id as string;
  await post(b, 'news', 'beta queued');
  const betaNow = orgDigest(store.runtime, beta.organization_id);
  const acmeNow = orgDigest(store.runtime, acme.organization_id);
  t.not(acmeNow, acmeThen, 'Acme changed since');
  const endSeq = store.runtime.lastSeq;
  await store.close();

  // The operator finds the seq just before the mistake in the organization's history.
  const lines: string[] = [];
  t.equal(historyCommand(dir, acme.organization_id, 4, 0, (l) => lines.push(l)), 13, "Acme's facts in the log");
  const facts = lines.map((l) => JSON.parse(l));
  t.same(facts.map((h) => h.type), ['ChannelUpdated', 'MessageDeleted', 'MessageSent', 'QueueRegistered'], 'the newest four, oldest first');
  t.match(facts[0], { type: 'ChannelUpdated', stream_id: design, old_name: 'design', 'changes.is_archived': true });
  t.match(facts[2], { type: 'MessageSent', 'message.id': lateA, 'message.topic': 'oops', time: /^\d{4}-\d\d-\d\dT/ });
  t.notOk(lines.some((l) => /acme after|api_key|password/.test(l)), 'never message text or secrets');
  t.ok(facts.every((f) => Date.parse(f.at) > moment), 'each with its time of commit, after the moment');
  t.equal(facts[0].seq - 1, toSeq, 'the seq before the channel was archived is the one to restore to');
  t.equal(historyCommand(dir, beta.organization_id, 100, toSeq, () => {}), 3, "Beta's facts after that seq only: a message, a queue, a message");

  // Asked by time: "Acme as it was at that moment".
  const report = await restoreOrgCommand(dir, acme.organization_id, { atMs: moment });
  t.match(report, { organization_id: acme.organization_id, subdomain: 'acme', to_seq: toSeq, queues_dropped: 1, files_missing: [] });
  t.ok(Date.parse(report.to_time!) <= moment && Date.parse(report.to_time!) > moment - 1000, `the last record committed before that moment (${report.to_time})`);
  t.ok(report.seq >= endSeq, 'the restore snapshot covers the whole log');
  t.same([report.before.messages, report.after.messages], [7, 7], "Acme's messages: 6 in general and 1 in design then; 7 now, with one deleted and one sent");
  t.same([report.before.channels, report.after.channels], [2, 2]);
  t.same(readOrgRestores(dir).map((r) => [r.org, r.to_seq, r.seq]), [[acme.organization_id, toSeq, report.seq]], 'the restore is recorded');

  t.same(facts.map((f) => f.oseq), [10, 11, 12, 13], "each with its place in Acme's own sequence");
  const checked: string[] = [];
  t.ok(verifyOrgCommand(dir, acme.organization_id, (l) => checked.push(l)), 'verify --org: Acme verifies');
  t.match(checked.join('\n'), /organization 1 in \d+ chunks[\s\S]*facts of organization 1, its seqs \d+ to 13 .*none missing/);
  const listed: string[] = [];
  const log = console.log;
  console.log = (line: string) => listed.push(line);
  try {
    listSnapshotsCommand(dir);
  } finally {
    console.log = log;
  }
  t.match(listed.join('\n'), /yes \(older than the restore of organization 1 at seq \d+\)/, 'snapshots says which serve only a restore to a seq before it');
  const verified = verifyReport(dir);
  t.ok(verified.ok, 'the directory verifies');
  t.ok(verified.lines.some((l) => l.includes('older than the restore of organization 1')), 'and verify says which snapshots predate the restore');

  store = openTestStore(dir);
  t.equal(store.recovery.snapshot, listSnapshots(dir)[0].name, "the server starts from the restore's snapshot");
  t.equal(orgDigest(store.runtime, acme.organization_id), acmeThen, 'Acme is exactly as it was at that seq');
  t.equal(orgDigest(store.runtime, beta.organization_id), betaNow, 'Beta is exactly as it was');
  t.equal(store.runtime.queues.peek(qa), undefined, "Acme's queue is gone: its client registers again");
  t.ok(store.runtime.queues.peek(qb), "Beta's queue is still there");

  // Through the API: Acme's channel and message are back, and new ids go on after every id given.
  const a2 = storeClient(store, acme.owner, 'acme.localhost');
  const b2 = storeClient(store, beta.owner, 'beta.localhost');
  const polled = await a2('GET', '/api/v1/events', { queue_id: qa, last_event_id: -1, dont_block: true });
  t.equal(polled.code, 'BAD_EVENT_QUEUE_ID');
  t.equal((await a2('GET', '/api/v1/get_stream_id', { stream: 'design' })).stream_id, design);
  const found = await a2('GET', `/api/v1/messages/${acmeFirst}`);
  t.equal(found.result, 'success', 'the deleted message is back');
  t.equal((await a2('GET', `/api/v1/messages/${lateA}`)).code, 'BAD_REQUEST', 'the message sent after that seq is gone');
  const events = await b2('GET', '/api/v1/events', { queue_id: qb, last_event_id: -1, dont_block: true });
  t.same(events.events.map((e: any) => e.message?.content), ['<p>beta queued</p>'], "Beta's client polls on as before");
  const next = await post(a2, 'plans 0', 'acme again');
  t.ok(next > lateB, `a new message's id (${next}) comes after every id given before (${lateB})`);
  const acmeAfter = orgDigest(store.runtime, acme.organization_id);

  // A crash, then recovery: the restore's snapshot plus the log after it.
  await store.writer.drain();
  store.crash();
  store = openTestStore(dir);
  t.equal(orgDigest(store.runtime, acme.organization_id), acmeAfter, 'the restored organization and what came after survive a crash');
  await store.close();

  // Without the restore's snapshot, nothing may replay the log across the restore.
  const older = new Runtime(defaultRuntimeOptions(volatileSink));
  t.throws(() => recover(older, dir, { skipCorrupt: false, log: quietLogger, onlySnapshot: listSnapshots(dir).at(-1)!.name }), /older than the restore of organization/);
  older.stop();
  for (const s of listSnapshots(dir)) if (s.startSeq >= report.seq) rmSync(s.path);
  t.throws(() => openTestStore(dir), /restore of organization/, 'a start that would cross it is refused, with what to do');
  // Before it, history is still there: the directory as it was at an earlier seq.
  // (Writable: replay stores the bodies of the messages it replays.)
  const bodies = BodyStore.open({ dir: bodiesDir(dir) });
  t.teardown(() => bodies.close());
  const history = new Runtime({ ...defaultRuntimeOptions(volatileSink), bodies: new DiskBodies(bodies, quietLogger) });
  recover(history, dir, { skipCorrupt: false, log: quietLogger, toSeq: endSeq - 1 });
  t.equal(orgDigest(history, acme.organization_id), acmeNow, 'a recovery to a seq before the restore still reads the history it undid');
  history.stop();
  // The record is what keeps recovery from crossing a restore: damaged, it stops a start.
  writeFileSync(join(dir, 'org-restores.json'), '[{"seq": 24');
  t.throws(() => openTestStore(dir), /org-restores.json is damaged/);
  t.notOk(verifyReport(dir).ok, 'and verify reports it');
});

t.test('restore-org refuses what it cannot do', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-orgrestore-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = openTestStore(dir);
  const first = await createOrganization(store.runtime, { name: 'First', subdomain: 'first', ownerEmail: 'o@first.example', ownerPassword: 'pw', ownerName: 'O' });
  const before = store.runtime.lastSeq;
  const late = await createOrganization(store.runtime, { name: 'Late', subdomain: 'late', ownerEmail: 'o@late.example', ownerPassword: 'pw', ownerName: 'L' });
  const l = storeClient(store, late.owner, 'late.localhost');
  await l('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
  await post(l, 't', 'hello');
  const end = store.runtime.lastSeq;
  await store.close();
  await t.rejects(restoreOrgCommand(dir, 99, { toSeq: 1 }), /no organization 99/);
  await t.rejects(restoreOrgCommand(dir, late.organization_id, { toSeq: before }), /did not exist yet at seq/);
  await t.rejects(restoreOrgCommand(dir, first.organization_id, { toSeq: end }), /nothing after seq/);
  await t.rejects(restoreOrgCommand(dir, first.organization_id, { atMs: Date.parse('2020-01-01T00:00:00Z') }), /no record was committed at or before 2020-01-01T00:00:00.000Z: the oldest record with a time is seq 1/);
  t.same(readOrgRestores(dir), [], 'nothing was recorded');
  // inspect --org: that organization alone, with each of its channels.
  const printed: string[] = [];
  const log = console.log;
  console.log = (line: string) => printed.push(line);
  try {
    inspectCommand(dir, late.organization_id);
  } finally {
    console.log = log;
  }
  const inspected = JSON.parse(printed.join('\n'));
  t.same(inspected.organizations.map((o: any) => o.organization_id), [late.organization_id], 'inspect --org shows that organization alone');
  t.match(inspected.organizations[0].channel_list, [{ name: 'general', archived: false, messages: 1, topics: 1 }]);
  t.throws(() => inspectCommand(dir, 99), /no organization 99/);
  const again = openTestStore(dir);
  t.equal(again.runtime.lastSeq, end, 'and the directory is as it was');
  await again.close();
});

t.test('a whole restore to a moment: the last record committed at or before it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-orgrestore-'));
  const to = join(mkdtempSync(join(tmpdir(), 'parley-orgrestore-')), 'restored');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = openTestStore(dir);
  const acme = await createOrganization(store.runtime, { name: 'Acme', subdomain: 'acme', ownerEmail: 'o@acme.example', ownerPassword: 'pw', ownerName: 'O' });
  const a = storeClient(store, acme.owner, 'acme.localhost');
  await a('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
  await store.snapshot();
  await post(a, 't', 'before');
  const seq = store.runtime.lastSeq;
  await sleep(20);
  const moment = Date.now();
  await sleep(20);
  await post(a, 't', 'after');
  await store.close();
  const printed: string[] = [];
  const log = console.log;
  console.log = (line: string) => printed.push(line);
  try {
    t.ok(await restoreCommand(dir, listSnapshots(dir)[0].name, to, { atMs: moment }));
  } finally {
    console.log = log;
  }
  const report = JSON.parse(printed.at(-1)!);
  t.equal(report.seq, seq, 'restored to the last record before the moment');
  t.ok(Date.parse(report.time) <= moment, `and says when it was committed (${report.time})`);
  store = openTestStore(to);
  t.teardown(() => store.close());
  const messages = await storeClient(store, acme.owner, 'acme.localhost')('GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0 });
  t.same(messages.messages.map((m: any) => m.content), ['<p>before</p>']);
});

t.test("an organization's own sequence: numbered with no gap, going on across snapshots and restarts; verify --org finds a fact lost", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-orgseq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let store = openTestStore(dir, { keepSnapshots: 1 });
  const one = await createOrganization(store.runtime, { name: 'One', subdomain: 'one', ownerEmail: 'o@one.example', ownerPassword: 'pw', ownerName: 'O' });
  const two = await createOrganization(store.runtime, { name: 'Two', subdomain: 'two', ownerEmail: 'o@two.example', ownerPassword: 'pw', ownerName: 'T' });
  const a = storeClient(store, one.owner, 'one.localhost');
  const b = storeClient(store, two.owner, 'two.localhost');
  for (const call of [a, b]) await call('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
  for (let i = 0; i < 3; i++) {
    await post(a, 't', `one ${i}`);
    await post(b, 't', `two ${i}`);
  }
  const records = (): Array<{ seq: number; org?: number; oseq?: number }> => {
    const out: Array<{ seq: number; org?: number; oseq?: number }> = [];
    readLog(dir, { afterSeq: 0, skipCorrupt: false, log: quietLogger }, (s) => out.push({ seq: s.seq, org: s.org, oseq: s.oseq }));
    return out;
  };
  const ofOne = records().filter((r) => r.org === one.organization_id).map((r) => r.oseq);
  t.same(ofOne, ofOne.map((_, i) => i + 1), 'One numbered 1, 2, 3 ... in its own sequence');
  t.ok(records().filter((r) => r.org === two.organization_id).every((r, i) => r.oseq === i + 1), 'Two too, interleaved in the log');
  const lastOne = store.runtime.orgSeq(one.organization_id);
  t.equal(lastOne, ofOne.length);
  // A snapshot covers it all, the log before it is pruned, and only Two writes after it.
  await store.snapshot();
  await post(b, 't', 'two after');
  await store.snapshot();
  await store.close();
  t.same(records().filter((r) => r.org === one.organization_id), [], "none of One's records is left in the log");
  store = openTestStore(dir, { keepSnapshots: 1 });
  t.equal(store.runtime.orgSeq(one.organization_id), lastOne, "One's sequence comes back from the snapshot");
  await post(storeClient(store, one.owner, 'one.localhost'), 't', 'one after');
  await store.close();
  const after = records().filter((r) => r.org === one.organization_id);
  t.same(after.map((r) => r.oseq), [lastOne + 1], 'and goes on after it, with no gap and no number given twice');
  const lines: string[] = [];
  t.ok(verifyOrgCommand(dir, one.organization_id, (l) => lines.push(l)), lines.join('\n'));

  // A fact of Two lost from the middle of the log (as --skip-corrupt would lose it).
  store = openTestStore(dir, { keepSnapshots: 1 });
  const b2 = storeClient(store, two.owner, 'two.localhost');
  for (let i = 0; i < 3; i++) await post(b2, 't', `two more ${i}`);
  const twoNow = orgDigest(store.runtime, two.organization_id);
  await store.close();

  // One organization recovered alone (what restore-org rebuilds the past with): the same
  // state, and nothing of the others.
  const bodies = BodyStore.open({ dir: bodiesDir(dir) });
  const alone = new Runtime({ ...defaultRuntimeOptions(volatileSink), bodies: new DiskBodies(bodies, quietLogger), onlyOrg: two.organization_id });
  recover(alone, dir, { skipCorrupt: false, log: quietLogger });
  t.equal(orgDigest(alone, two.organization_id), twoNow, 'an organization recovered alone is as it is recovered with the others');
  t.equal(alone.org(one.organization_id), undefined, 'and the others are not there');
  t.equal(alone.queues.size, 0, 'nor any event queue');
  alone.stop();
  bodies.close();

  const segment = join(dir, listSegments(dir).at(-1)!.name);
  const buf = readFileSync(segment);
  const frames: Array<{ from: number; to: number; org?: number }> = [];
  for (let offset = SEGMENT_HEADER_BYTES, f = decodeFrame(buf, offset); f.kind === 'record'; offset = f.next, f = decodeFrame(buf, offset)) frames.push({ from: offset, to: f.next, org: f.stamped.org });
  const victim = frames.filter((f) => f.org === two.organization_id).at(-2)!;
  writeFileSync(segment, Buffer.concat([buf.subarray(0, victim.from), buf.subarray(victim.to)]));
  const report: string[] = [];
  t.notOk(verifyOrgCommand(dir, two.organization_id, (l) => report.push(l)), 'verify --org Two fails');
  t.match(report.join('\n'), /GAP +organization 2: its seqs (\d+) to \1 are missing between log seqs/);
  t.ok(verifyOrgCommand(dir, one.organization_id, () => {}), 'One still verifies');
});

t.test('the CLI: history, restore-org --at, and a point given twice', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-orgcli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = openTestStore(dir);
  const acme = await createOrganization(store.runtime, { name: 'Acme', subdomain: 'acme', ownerEmail: 'o@acme.example', ownerPassword: 'pw', ownerName: 'O' });
  const a = storeClient(store, acme.owner, 'acme.localhost');
  await a('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
  await post(a, 't', 'kept');
  await sleep(20);
  const moment = new Date().toISOString();
  await sleep(20);
  await post(a, 't', 'undone');
  await store.close();
  const parley = (args: string[]) => spawnSync(process.execPath, [built('src/cli.ts'), ...args, '--data-dir', dir], { cwd: root, encoding: 'utf8', timeout: 60000 });

  const history = parley(['history', '--org', String(acme.organization_id), '--limit', '2']);
  t.equal(history.status, 0, history.stderr);
  t.same(history.stdout.trim().split('\n').map((l) => JSON.parse(l).type), ['MessageSent', 'MessageSent'], 'the newest two facts, one JSON line each');
  const both = parley(['restore-org', '--org', String(acme.organization_id), '--to-seq', '3', '--at', moment]);
  t.equal(both.status, 2);
  t.match(both.stderr, /give --to-seq or --at, not both/);
  const restored = parley(['restore-org', '--org', String(acme.organization_id), '--at', moment]);
  t.equal(restored.status, 0, restored.stderr);
  const report = JSON.parse(restored.stdout);
  t.match(report, { organization_id: acme.organization_id, after: { messages: 1 }, before: { messages: 2 } });
  t.ok(Date.parse(report.to_time) <= Date.parse(moment), 'restored to the last record before the moment');
});
