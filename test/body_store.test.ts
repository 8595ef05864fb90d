/**
 * The body store (snapshots/body_store.ts): round trips, reopen, rollover, the cache
 * bound, batch reads, and what it does with torn, corrupt and compacted files.
 */
import t from 'tap';
import * as fs from 'node:fs';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lineLogger } from '../actors/core/logger.js';
import { compiled } from './paths.js';
import { runSlices } from '../snapshots/log.js';
import { BodyCorrupt, BodyStore, bodySegmentName, locatorOffset, locatorSegment, makeLocator, type BodyStoreOptions, type MessageBody } from '../snapshots/body_store.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'parley-bodies-'));

function open(dir: string, more: Partial<BodyStoreOptions> = {}): { store: BodyStore; logs: string[] } {
  const logs: string[] = [];
  return { store: BodyStore.open({ dir, log: lineLogger((l) => logs.push(l)), ...more }), logs };
}

/** A body whose text is recognisably its id's, `size` characters of content. */
function body(id: number, size = 40): MessageBody {
  const content = `message ${id} `.padEnd(size, String.fromCharCode(97 + (id % 26)));
  return { content, rendered: `<p>${content}</p>` };
}

const segmentFiles = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.pbody')).sort();

t.test('locators: segment and offset round trip, below 2^53', async (t) => {
  const loc = makeLocator(65535, 2 ** 37 - 1);
  t.ok(Number.isSafeInteger(loc));
  t.equal(locatorSegment(loc), 65535);
  t.equal(locatorOffset(loc), 2 ** 37 - 1);
  t.equal(locatorSegment(makeLocator(3, 16)), 3);
  t.equal(locatorOffset(makeLocator(3, 16)), 16);
});

t.test('append, flush, read: unicode, large bodies, edit history, and after reopen', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { cacheBytes: 0 });
  const bodies: Array<[number, MessageBody]> = [
    [1, { content: 'héllo 👋 **world** 漢字', rendered: '<p>héllo 👋 <strong>world</strong> 漢字</p>' }],
    [2, { content: 'x'.repeat(5000), rendered: `<p>${'x'.repeat(5000)}</p>` }],
    [3, { content: 'ü'.repeat(70_000), rendered: `<p>${'ü'.repeat(70_000)}</p>` }],
    [4, { content: 'edited', rendered: '<p>edited</p>', edit_history: [{ prev_content: 'first', timestamp: 1700000000, user_id: 9 }, { prev_topic: 'a', topic: 'b', timestamp: 1700000001 }] }],
    [2 ** 40 + 5, { content: '', rendered: '' }],
  ];
  const locs = bodies.map(([id, b]) => store.append(id, b));
  t.equal(new Set(locs).size, locs.length, 'distinct locators');
  t.ok(locs.every((l, i) => i === 0 || l > locs[i - 1]), 'locators grow in one segment');
  bodies.forEach(([, b], i) => t.same(store.read(locs[i]), b, 'served before the flush'));
  store.flush();
  bodies.forEach(([, b], i) => t.same(store.read(locs[i]), b, `read ${i} from disk (no cache)`));
  t.equal(store.stats().misses, bodies.length, 'cache of 0 bytes: every read after the flush went to the file');
  store.close();
  const again = open(dir).store;
  bodies.forEach(([, b], i) => t.same(again.read(locs[i]), b, `read ${i} after reopen`));
  const more = again.append(6, body(6));
  t.ok(more > locs[locs.length - 1], 'appends continue after the existing records');
  again.close();
  t.same(open(dir).store.read(more), body(6));
});

t.test('a scheduled flush writes buffered bodies without being asked, within flushDelayMs', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { flushDelayMs: 20 });
  const loc = store.append(1, body(1));
  await new Promise((r) => setImmediate(r));
  t.equal(statSync(join(dir, segmentFiles(dir)[0])).size, 16, 'not written at the next turn: appends of the next 20 ms share the write');
  t.ok(store.has(loc), 'served from the cache meanwhile');
  t.same(store.read(loc), body(1));
  await new Promise((r) => setTimeout(r, 60));
  t.same(open(dir).store.read(loc), body(1), 'a second store reads what the first never flushed explicitly');
  store.close();
});

t.test('a body without edit history is framed by hand as msgpackr packs it: old and new records read alike', async (t) => {
  const { packBody, writeBodyFrame, writePlainBodyFrame, plainBodyPayloadBytes } = await import('../snapshots/body_codec.js');
  const strings = ['', 'a', 'é', '💬 emoji', 'x'.repeat(31), 'x'.repeat(32), 'é'.repeat(15), 'é'.repeat(16), 'x'.repeat(255), 'x'.repeat(256), '€'.repeat(85), '€'.repeat(86), 'x'.repeat(65535), 'x'.repeat(65536), 'é'.repeat(40000)];
  let cases = 0;
  for (const content of strings) {
    for (const rendered of ['', '<p>x</p>', 'y'.repeat(300), content]) {
      const cb = Buffer.byteLength(content);
      const rb = Buffer.byteLength(rendered);
      const byMsgpackr = Buffer.alloc(200_000);
      const n = writeBodyFrame(byMsgpackr, 3, 77 + 2 ** 40, packBody({ content, rendered }));
      const byHand = Buffer.alloc(200_000);
      const m = writePlainBodyFrame(byHand, 3, 77 + 2 ** 40, content, cb, rendered, rb);
      if (m !== n || !byHand.equals(byMsgpackr) || plainBodyPayloadBytes(cb, rb) !== n - 16) t.fail(`content of ${content.length} characters, rendered of ${rendered.length}: ${m} bytes by hand, ${n} by msgpackr`);
      cases++;
    }
  }
  t.equal(cases, strings.length * 4, 'the same bytes in every case');
  // Through the store: hand-framed, msgpackr-framed (edit history) and a segment written
  // before hand framing (msgpackr only: the same bytes, as above) read back alike.
  const dir = tmp();
  const { store } = open(dir, { cacheBytes: 0 });
  const plain = { content: 'plain **body** é💬', rendered: '<p>plain <strong>body</strong> é💬</p>' };
  const edited = { ...plain, edit_history: [{ timestamp: 1, prev_content: 'old' }] };
  const a = store.append(1, plain);
  const b = store.append(2, edited);
  store.close();
  const again = open(dir).store;
  t.same(again.read(a), plain);
  t.same(again.read(b), edited);
  again.close();
});

t.test('segments roll over by size; locators stay valid across them and a reopen', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 4096, cacheBytes: 0 });
  const locs: number[] = [];
  for (let id = 1; id <= 300; id++) locs.push(store.append(id, body(id, 100 + (id % 50))));
  store.sync();
  t.ok(segmentFiles(dir).length > 5, `rolled over (${segmentFiles(dir).length} segments)`);
  t.ok(segmentFiles(dir).every((f) => statSync(join(dir, f)).size <= 4096), 'no segment past its size');
  t.equal(new Set(locs.map(locatorSegment)).size, segmentFiles(dir).length);
  locs.forEach((l, i) => t.same(store.read(l), body(i + 1, 100 + ((i + 1) % 50))));
  store.close();
  const again = open(dir).store;
  t.same(again.read(locs[0]), body(1, 101));
  t.same(again.read(locs[299]), body(300, 100));
  t.equal(again.stats().segments, segmentFiles(dir).length);
});

t.test('the cache stays within its bound and reads stay right after eviction', async (t) => {
  const dir = tmp();
  const bound = 64 * 1024;
  const { store } = open(dir, { cacheBytes: bound });
  const locs: number[] = [];
  for (let id = 1; id <= 2000; id++) locs.push(store.append(id, body(id, 200)));
  store.flush();
  t.ok(store.stats().cacheBytes <= bound, `within the bound after the flush (${store.stats().cacheBytes})`);
  t.notOk(store.has(locs[0]), 'the oldest was evicted');
  t.ok(store.has(locs[1999]), 'the newest is cached');
  t.same(store.read(locs[1999]), body(2000, 200), 'the newest, from the cache');
  for (let i = 0; i < 2000; i += 7) t.same(store.read(locs[i]), body(i + 1, 200));
  t.ok(store.stats().cacheBytes <= bound, 'within the bound after reads');
  t.ok(store.stats().misses > 0 && store.stats().hits > 0);
  t.ok(store.has(locs[1995]), 'a body read is cached');
  store.close();
});

t.test('readMany: every body, by locator, coalesced, with records longer than the speculative read', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { cacheBytes: 0, segmentBytes: 256 * 1024 });
  const want = new Map<number, MessageBody>();
  for (let id = 1; id <= 400; id++) {
    const b = body(id, id % 37 === 0 ? 9000 : id % 101 === 0 ? 70_000 : 60 + (id % 90));
    want.set(store.append(id, b), b);
  }
  store.flush();
  const locs = [...want.keys()].reverse();
  locs.push(locs[3]);
  const got = await store.readMany(locs);
  t.equal(got.size, want.size, 'one entry per distinct locator');
  for (const [loc, b] of want) t.same(got.get(loc), b);
  t.equal(store.stats().misses, want.size, 'each counted once');
  const reads = store.stats().diskReads;
  const long = [...want].filter(([, b]) => b.content.length > 4000).length;
  const bytes = store.stats().bytes;
  t.ok(reads <= Math.ceil(bytes / (64 * 1024)) * 2 + long + 4, `coalesced: ${reads} reads for ${want.size} records of ${bytes} bytes`);
  t.ok(reads < want.size / 4, 'far fewer reads than records');
  // One by one, each record costs a read of its own, and a long one two.
  const single = open(dir, { cacheBytes: 0 }).store;
  for (const loc of want.keys()) single.read(loc);
  t.equal(single.stats().diskReads, want.size + long, 'read: one pread per record, two for one longer than 4 KiB');
  const some = await store.readMany([...want.keys()].filter((_, i) => i % 3 === 0));
  t.equal(some.size, Math.ceil(want.size / 3));
  store.close();
});

t.test('readMany fills the cache and serves cached bodies without reading', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { cacheBytes: 1024 * 1024 });
  const locs = Array.from({ length: 100 }, (_, i) => store.append(i + 1, body(i + 1)));
  store.flush();
  store.close();
  const again = open(dir, { cacheBytes: 1024 * 1024 }).store;
  await again.readMany(locs.slice(0, 50));
  t.ok(locs.slice(0, 50).every((l) => again.has(l)), 'the batch is cached');
  const before = again.stats().misses;
  const got = await again.readMany(locs);
  t.equal(again.stats().misses - before, 50, 'only the uncached half read');
  t.same(got.get(locs[99]), body(100));
});

t.test('a torn tail is cut off at open and logged; earlier records stay', async (t) => {
  for (const damage of ['cut mid-record', 'garbage appended', 'zeros appended'] as const) {
    const dir = tmp();
    const { store } = open(dir);
    const locs = [1, 2, 3].map((id) => store.append(id, body(id, 300)));
    store.close();
    const file = join(dir, bodySegmentName(locatorSegment(locs[0])));
    const size = statSync(file).size;
    if (damage === 'cut mid-record') truncateSync(file, size - 100);
    else if (damage === 'garbage appended') appendFileSync(file, Buffer.from('\x55\x01\x00\x00garbage that is no record at all'));
    else appendFileSync(file, Buffer.alloc(777));
    const { store: again, logs } = open(dir);
    t.ok(logs.some((l) => /torn tail/.test(l) && l.includes(file)), `${damage}: logged with the file`);
    t.same(again.read(locs[0]), body(1, 300), `${damage}: the first record survives`);
    t.same(again.read(locs[1]), body(2, 300), `${damage}: the second record survives`);
    if (damage === 'cut mid-record') {
      t.throws(() => again.read(locs[2]), BodyCorrupt, 'the torn record is gone');
      t.equal(statSync(file).size, locatorOffset(locs[2]), 'truncated at the torn record');
    } else {
      t.same(again.read(locs[2]), body(3, 300));
      t.equal(statSync(file).size, size, 'truncated back to the valid prefix');
    }
    t.ok(readdirSync(dir).some((f) => f.startsWith(`${bodySegmentName(locatorSegment(locs[0]))}.torn-`)), `${damage}: the original kept aside`);
    const next = again.append(4, body(4));
    again.close();
    t.same(open(dir).store.read(next), body(4), `${damage}: appends go on after the repair`);
  }
});

/** A store with 3 records, whose middle record gets one flipped byte in its payload. */
function corruptMiddle(): { dir: string; file: string; locs: number[] } {
  const dir = tmp();
  const { store } = open(dir);
  const locs = [1, 2, 3].map((id) => store.append(id, body(id, 300)));
  store.close();
  const file = join(dir, bodySegmentName(locatorSegment(locs[1])));
  const bytes = readFileSync(file);
  bytes[locatorOffset(locs[1]) + 40] ^= 0xff;
  writeFileSync(file, bytes);
  return { dir, file, locs };
}

t.test('a damaged record with valid ones after it: open refuses, naming file and offset', async (t) => {
  const { dir, file, locs } = corruptMiddle();
  const err = t.throws(() => BodyStore.open({ dir })) as BodyCorrupt;
  t.type(err, BodyCorrupt);
  t.ok(err.message.includes(file), 'names the file');
  t.ok(err.message.includes(`offset ${locatorOffset(locs[1])}`), 'names the offset');
  t.equal(err.offset, locatorOffset(locs[1]));
  t.equal(err.file, file);
  t.equal(statSync(file).size, locatorOffset(locs[2]) + (statSync(file).size - locatorOffset(locs[2])), 'nothing cut');
  t.notOk(readdirSync(dir).some((f) => f.includes('.corrupt-')), 'nothing set aside');
});

t.test("repair: 'truncate' cuts the segment at the damaged record and logs it", async (t) => {
  const { dir, file, locs } = corruptMiddle();
  const { store, logs } = open(dir, { repair: 'truncate' });
  t.ok(logs.some((l) => /corrupt record at offset/.test(l)), 'logged');
  t.same(store.read(locs[0]), body(1, 300));
  t.throws(() => store.read(locs[1]), BodyCorrupt);
  t.throws(() => store.read(locs[2]), BodyCorrupt, 'what followed was cut too');
  t.equal(statSync(file).size, locatorOffset(locs[1]));
  t.ok(readdirSync(dir).some((f) => f.includes('.corrupt-')), 'the original kept aside');
});

t.test('reading a damaged record throws BodyCorrupt with file and offset; readMany too', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { cacheBytes: 0, segmentBytes: 2048 });
  const locs = Array.from({ length: 40 }, (_, i) => store.append(i + 1, body(i + 1, 200)));
  store.close();
  // Damage a record of the first (not last) segment: open does not scan it; read finds it.
  const victim = locs[2];
  const file = join(dir, bodySegmentName(locatorSegment(victim)));
  const bytes = readFileSync(file);
  bytes[locatorOffset(victim) + 30] ^= 0x01;
  writeFileSync(file, bytes);
  const again = open(dir, { cacheBytes: 0 }).store;
  const err = t.throws(() => again.read(victim)) as BodyCorrupt;
  t.type(err, BodyCorrupt);
  t.match(err.message, new RegExp(`${file.replace(/[.]/g, '\\.')} at offset ${locatorOffset(victim)}: checksum mismatch`));
  t.same(again.read(locs[1]), body(2, 200), 'its neighbours read');
  await t.rejects(again.readMany(locs), BodyCorrupt, 'a batch with it rejects');
  const skipped: number[] = [];
  const got = await again.readMany(locs, { onCorrupt: (loc) => skipped.push(loc) });
  t.same(skipped, [victim], 'onCorrupt told of it');
  t.equal(got.size, locs.length - 1, 'the rest read');
  t.throws(() => again.read(makeLocator(999, 16)), BodyCorrupt, 'a locator of no segment');
  t.throws(() => again.read(locs[0] + 1_000_000), BodyCorrupt, 'a locator past the end');
  t.throws(() => again.read(locs[0] + 1), BodyCorrupt, 'a locator inside a record');
});

t.test('verify reports every damaged record, with the message it held, and the rest', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 4096 });
  const locs = Array.from({ length: 60 }, (_, i) => store.append(i + 1, body(i + 1, 150)));
  store.flush();
  let clean = runSlices(store.verify());
  t.same(clean.damaged, []);
  t.equal(clean.records, 60);
  t.equal(clean.bytes, store.stats().bytes);
  for (const i of [5, 30]) {
    const file = join(dir, bodySegmentName(locatorSegment(locs[i])));
    const bytes = readFileSync(file);
    bytes[locatorOffset(locs[i]) + 50] ^= 0x40;
    writeFileSync(file, bytes);
  }
  const report = runSlices(store.verify());
  t.equal(report.records, 58, 'every other record checked');
  t.same(
    report.damaged.map((d) => ({ file: d.file, offset: d.offset, id: d.id })),
    [5, 30].map((i) => ({ file: join(dir, bodySegmentName(locatorSegment(locs[i]))), offset: locatorOffset(locs[i]), id: i + 1 })),
  );
  t.match(report.damaged[0].reason, /checksum/);
  clean = runSlices(store.verify());
  t.equal(clean.segments, segmentFiles(dir).length);
});

t.test('compact keeps only live records, remaps them, and leaves obsolete segments until deleted', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 8192, cacheBytes: 0, sliceMs: 0 });
  const current = new Map<number, number>();
  const firstVersion = new Map<number, number>();
  for (let id = 1; id <= 200; id++) {
    const loc = store.append(id, body(id, 120));
    current.set(id, loc);
    firstVersion.set(id, loc);
  }
  for (let id = 1; id <= 200; id += 2) current.set(id, store.append(id, { ...body(id, 90), edit_history: [{ prev_content: body(id, 120).content }] }));
  for (let id = 1; id <= 200; id += 5) current.delete(id);
  store.sync();
  const oldSegments = segmentFiles(dir);
  const before = new Map(current);
  const moved = new Map<number, number>();
  const steps = store.compact(
    () => current.values(),
    (oldLoc, newLoc) => {
      t.notOk(moved.has(oldLoc), 'each moved once');
      moved.set(oldLoc, newLoc);
    },
  );
  // An append while the compaction runs lands in a segment of its own.
  t.notOk(steps.next().done, 'the compaction yields');
  t.notOk(steps.next().done, 'the compaction yields again');
  t.ok(moved.size > 0 && moved.size < current.size, 'partway through');
  const during = store.append(999, body(999));
  const result = runSlices(steps);
  t.equal(result.copied, current.size, 'copied every live record');
  t.equal(moved.size, current.size);
  t.same([...moved.keys()].sort((a, b) => a - b), [...before.values()].sort((a, b) => a - b), 'told of every live record');
  const newLocs = [...moved.values()];
  t.ok(newLocs.every((l, i) => i === 0 || l > newLocs[i - 1]), 'new positions in ascending old order');
  t.same(result.damaged, []);
  t.ok(result.bytesAfter < result.bytesBefore, `smaller (${result.bytesBefore} -> ${result.bytesAfter})`);
  t.same(result.obsolete, oldSegments, 'every old segment is obsolete');
  t.ok(oldSegments.every((f) => segmentFiles(dir).includes(f)), 'not deleted yet');
  for (const [id, loc] of before) {
    const want = id % 2 === 1 ? { ...body(id, 90), edit_history: [{ prev_content: body(id, 120).content }] } : body(id, 120);
    t.same(store.read(loc), want, `old locator of ${id} still readable`);
    t.same(store.read(moved.get(loc)!), want, `new locator of ${id}`);
  }
  t.same(store.read(firstVersion.get(1)!), body(1, 120), 'a dead version still readable before deletion');
  store.deleteSegments(result.obsolete);
  t.ok(oldSegments.every((f) => !segmentFiles(dir).includes(f)), 'deleted');
  t.throws(() => store.read(firstVersion.get(2)!), BodyCorrupt, 'old locators gone');
  await t.rejects(store.readMany([firstVersion.get(2)!, moved.get(before.get(2)!)!]), BodyCorrupt, 'readMany of a deleted segment');
  t.same(store.read(during), body(999), 'the append made during compaction');
  store.close();
  const again = open(dir, { cacheBytes: 0 }).store;
  for (const [id, loc] of before) t.equal(again.read(moved.get(loc)!).content, id % 2 === 1 ? body(id, 90).content : body(id, 120).content);
  t.same(again.read(during), body(999));
  const afterAppend = again.append(1000, body(1000));
  t.ok(locatorSegment(afterAppend) > Math.max(...newLocs.map(locatorSegment)), 'appends continue above the compacted segments');
  const verified = runSlices(again.verify());
  t.same(verified.damaged, []);
  t.equal(verified.records, current.size + 2, 'the live records and the two appended');
});

t.test('compact leaves a segment with a damaged live record in place and reports it', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 2048, cacheBytes: 0 });
  const locs = Array.from({ length: 30 }, (_, i) => store.append(i + 1, body(i + 1, 150)));
  store.sync();
  const victim = locs[4];
  const file = join(dir, bodySegmentName(locatorSegment(victim)));
  const bytes = readFileSync(file);
  bytes[locatorOffset(victim) + 20] ^= 0x10;
  writeFileSync(file, bytes);
  const moved = new Map<number, number>();
  const result = runSlices(store.compact(() => locs, (a, b) => moved.set(a, b)));
  t.equal(result.copied, 29);
  t.notOk(moved.has(victim));
  t.same(result.damaged.map((d) => [d.file, d.offset]), [[file, locatorOffset(victim)]]);
  t.notOk(result.obsolete.includes(bodySegmentName(locatorSegment(victim))), 'its segment is kept');
  t.equal(result.obsolete.length, new Set(locs.map(locatorSegment)).size - 1);
});

t.test('syncAsync: the fdatasyncs off the event loop, appends and rollovers go on meanwhile, then everything reads back', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 4096 });
  const before = Array.from({ length: 50 }, (_, i) => store.append(i + 1, body(i + 1, 150)));
  const syncing = store.syncAsync();
  t.ok(segmentFiles(dir).length > 1, 'the appends before it are written at once');
  // Appends roll segments over (closing write fds) while the fdatasyncs are in flight.
  const during = Array.from({ length: 50 }, (_, i) => store.append(100 + i, body(100 + i, 150)));
  await syncing;
  const third = store.syncAsync();
  store.close();
  await third;
  const again = open(dir).store;
  before.forEach((loc, i) => t.same(again.read(loc), body(i + 1, 150)));
  during.forEach((loc, i) => t.same(again.read(loc), body(100 + i, 150)));
  again.close();
});

t.test('an interrupted compaction leaves a store that opens, with torn outputs repaired', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 4096, sliceMs: 0 });
  const locs = Array.from({ length: 300 }, (_, i) => store.append(i + 1, body(i + 1, 150)));
  store.sync();
  const before = segmentFiles(dir);
  const moved = new Map<number, number>();
  const steps = store.compact(() => locs, (a, b) => moved.set(a, b));
  t.notOk(steps.next().done);
  t.notOk(steps.next().done);
  steps.return(undefined as never);
  t.ok(moved.size > 0, 'some records were moved');
  store.close();
  const outputs = segmentFiles(dir).filter((f) => !before.includes(f));
  t.ok(outputs.length >= 2, 'an append segment and compaction outputs were started');
  // The newest output loses its last bytes, as in a crash before its sync.
  const newest = join(dir, outputs[outputs.length - 1]);
  t.ok(statSync(newest).size > 100, 'the newest output holds records');
  truncateSync(newest, statSync(newest).size - 10);
  const { store: again, logs } = open(dir);
  t.ok(logs.some((l) => /torn tail/.test(l) && l.includes(newest)), 'the torn output was repaired');
  for (let i = 0; i < locs.length; i += 9) t.same(again.read(locs[i]), body(i + 1, 150), 'old locators read');
  const readable = [...moved].filter(([, b]) => locatorOffset(b) < statSync(join(dir, bodySegmentName(locatorSegment(b)))).size);
  t.ok(readable.length > 0);
  for (const [a, b] of readable) t.same(again.read(b), again.read(a), 'moved records that survived read the same');
  t.same(runSlices(again.verify()).damaged, [], 'nothing damaged after the repair');
  const next = again.append(1, body(1));
  t.ok(locatorSegment(next) < locatorSegment(makeLocator(locatorSegment(moved.get(locs[0])!), 16)), 'appends continue in the last append segment, below the orphaned outputs');
  t.same(again.read(next), body(1));
});

t.test('sync with real fdatasync; a fresh open reads everything', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { segmentBytes: 16 * 1024 });
  const locs = Array.from({ length: 500 }, (_, i) => store.append(i + 1, body(i + 1, 80)));
  t.doesNotThrow(() => store.sync());
  t.doesNotThrow(() => store.sync(), 'a second sync with nothing new');
  const fresh = open(dir, { cacheBytes: 0 }).store;
  locs.forEach((l, i) => t.same(fresh.read(l), body(i + 1, 80)));
  store.close();
});

t.test('bad input is refused without harm', async (t) => {
  const dir = tmp();
  const { store } = open(dir);
  t.throws(() => store.append(-1, body(1)), RangeError);
  t.throws(() => store.append(1.5, body(1)), RangeError);
  const loc = store.append(1, body(1));
  store.close();
  t.throws(() => store.append(2, body(2)), /closed/);
  writeFileSync(join(dir, bodySegmentName(7)), Buffer.from('NOTABODYFILE....plus more'));
  t.throws(() => BodyStore.open({ dir }), BodyCorrupt, 'a file with a bad header');
  const other = tmp();
  writeFileSync(join(other, bodySegmentName(1)), Buffer.from('PRLYBO'));
  const { store: repaired, logs } = open(other);
  t.ok(logs.some((l) => /no complete header/.test(l)), 'a newest segment whose header never landed is set aside');
  t.ok(repaired.append(1, body(1)) > 0);
  t.ok(loc > 0);
});

t.test('append makes no syscall; one writeSync per flush, and one per 4 MiB in a long burst', async (t) => {
  const writes: number[] = [];
  // Compiled, as a URL beside this module: tap resolves a relative name from the caller's
  // source-mapped file, which is test/ and not dist/test/.
  const { BodyStore: Mocked } = await t.mockImport<typeof import('../snapshots/body_store.js')>(compiled ? new URL('../snapshots/body_store.js', import.meta.url).href : '../snapshots/body_store.js', {
    'node:fs': {
      ...fs,
      writeSync: (fd: number, buf: Buffer, offset: number, length: number, position: number) => {
        writes.push(length);
        return fs.writeSync(fd, buf, offset, length, position);
      },
    },
  });
  const dir = tmp();
  const store = Mocked.open({ dir });
  writes.length = 0;
  const locs = Array.from({ length: 1000 }, (_, i) => store.append(i + 1, body(i + 1, 200)));
  t.same(writes, [], 'no write while appending');
  store.flush();
  t.equal(writes.length, 1, 'one write for the 1,000');
  store.flush();
  t.equal(writes.length, 1, 'nothing to write, no write');
  writes.length = 0;
  const big = { content: 'y'.repeat(300_000), rendered: 'z'.repeat(300_000) };
  for (let i = 0; i < 20; i++) store.append(5000 + i, big);
  t.ok(writes.length >= 2 && writes.length <= 3, `a 12 MB burst is written as it grows (${writes.length} writes)`);
  t.ok(writes.every((n) => n >= 4 * 1024 * 1024), 'each write at least 4 MiB');
  store.close();
  t.same(open(dir).store.read(locs[999]), body(1000, 200));
});

t.test('verify and compact yield between slices', async (t) => {
  const dir = tmp();
  const { store } = open(dir, { sliceMs: 0, segmentBytes: 64 * 1024 });
  const locs = Array.from({ length: 500 }, (_, i) => store.append(i + 1, body(i + 1, 200)));
  store.sync();
  let yields = 0;
  const verify = store.verify();
  let step = verify.next();
  for (; !step.done; step = verify.next()) yields++;
  t.ok(yields >= 10, `verify yielded ${yields} times`);
  t.equal(step.value.records, 500);
  yields = 0;
  const compact = store.compact(() => locs, () => {});
  let c = compact.next();
  for (; !c.done; c = compact.next()) yields++;
  t.ok(yields >= 10, `compact yielded ${yields} times`);
  t.equal(c.value.copied, 500);
});

t.test('random operations agree with a model: append, edit, delete, read, readMany, reopen, compact', async (t) => {
  for (const seed of [1, 2, 3]) {
    let s = seed;
    const random = (): number => ((s = (s * 16807) % 2147483647) - 1) / 2147483646;
    // Reopens and compactions are rare: each costs a few fdatasyncs.
    const dir = tmp();
    const options = { segmentBytes: 8192, cacheBytes: 16 * 1024, sliceMs: 0 };
    let store = open(dir, options).store;
    const model = new Map<number, { loc: number; body: MessageBody }>();
    let nextId = 1;
    let mismatches = 0;
    const check = (id: number, got: MessageBody | undefined): void => {
      if (JSON.stringify(got) !== JSON.stringify(model.get(id)!.body)) mismatches++;
    };
    const ids = (): number[] => [...model.keys()];
    for (let op = 0; op < 1000; op++) {
      const r = random();
      const existing = ids();
      const pick = (): number => existing[Math.floor(random() * existing.length)];
      if (r < 0.35 || existing.length === 0) {
        const id = nextId++;
        const b = body(id, 20 + Math.floor(random() * (random() < 0.05 ? 9000 : 300)));
        model.set(id, { loc: store.append(id, b), body: b });
      } else if (r < 0.5) {
        const id = pick();
        const b = { ...body(id + 1000, 10 + Math.floor(random() * 200)), edit_history: [{ prev_content: model.get(id)!.body.content, timestamp: op }] };
        model.set(id, { loc: store.append(id, b), body: b });
      } else if (r < 0.55) model.delete(pick());
      else if (r < 0.8) {
        const id = pick();
        check(id, store.read(model.get(id)!.loc));
      } else if (r < 0.88) {
        const chosen = existing.filter(() => random() < 0.2);
        const got = await store.readMany(chosen.map((id) => model.get(id)!.loc));
        for (const id of chosen) check(id, got.get(model.get(id)!.loc));
      } else if (r < 0.96) store.flush();
      else if (r < 0.98) {
        store.close();
        store = open(dir, options).store;
      } else {
        const holder = new Map([...model.values()].map((m) => [m.loc, m]));
        const steps = store.compact(
          () => holder.keys(),
          (oldLoc, newLoc) => {
            const m = holder.get(oldLoc)!;
            // Only a message that still holds the old version moves (an edit during the compaction wins).
            if (m.loc === oldLoc) m.loc = newLoc;
          },
        );
        let step = steps.next();
        // Appends and edits between slices, as the server's event loop would make them.
        for (; !step.done; step = steps.next()) {
          const id = nextId++;
          const b = body(id, 50);
          model.set(id, { loc: store.append(id, b), body: b });
        }
        t.same(step.value.damaged, [], `seed ${seed} op ${op}: nothing damaged`);
        store.sync();
        store.deleteSegments(step.value.obsolete);
      }
    }
    store.close();
    const final = open(dir, { cacheBytes: 0 }).store;
    for (const id of ids()) check(id, final.read(model.get(id)!.loc));
    t.equal(mismatches, 0, `seed ${seed}: every read matched the model (${model.size} messages)`);
    const verified = runSlices(final.verify());
    t.same(verified.damaged, [], `seed ${seed}: verify finds nothing`);
    final.close();
  }
});
