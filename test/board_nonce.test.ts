/**
 * Write-challenge nonces: single use, short-lived, stored only as a hash, and consumed
 * in the same log record as the message, so that neither a restart, a crash nor a
 * snapshot can bring a used nonce back. Also: board state survives snapshots (in
 * slices) and restarts like any other Parley state.
 */
import t from 'tap';
import { cpSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nonceHash } from '../actors/kinds/board.js';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../actors/runtime/runtime.js';
import { loadSnapshot, readSnapshot, DirectorySnapshots, writeSnapshot } from '../snapshots/snapshot.js';
import { openStore, type Store } from '../src/store.js';
import { boardFixture, boardOn, challenge, publishUrl, type BoardFixture } from './board_helpers.js';
import { quietLogger } from '../actors/core/logger.js';

const publish = (f: BoardFixture, nonce: string, message = 'hello') => f.call('GET', publishUrl(nonce, { message, confirm: 'publish' }));

function open(dir: string, clock: { t: number }): Store {
  return openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 100, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; }, runtime: { now: () => clock.t } });
}

/** The board's whole state, for comparing before and after. */
function boardState(rt: Runtime): string {
  const b = rt.board();
  return JSON.stringify({ messages: b.messages, guestbook: b.guestbook, switches: b.switches, nonces: [...b.nonces] });
}

t.test('a nonce is single use: a replay is rejected', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('compat', true);
  const nonce = await challenge(f);
  t.equal((await publish(f, nonce)).status, 201);
  const replay = await publish(f, nonce, 'again');
  t.equal(replay.status, 403);
  t.equal(replay.json.code, 'challenge_invalid');
  t.equal(f.runtime.board().messages.length, 1);
  // Two challenges are two nonces, each good once.
  const [a, b] = [await challenge(f), await challenge(f)];
  t.not(a, b);
  t.equal((await publish(f, b)).status, 201);
  t.equal((await publish(f, a)).status, 201);
  t.equal((await publish(f, a)).status, 403);
  // A nonce that differs in one character is not the nonce.
  const c = await challenge(f);
  const flipped = c.slice(0, -1) + (c.endsWith('A') ? 'B' : 'A');
  t.equal((await publish(f, flipped)).status, 403);
  t.equal((await publish(f, c)).status, 201);
});

t.test('a nonce expires after the configured time', async (t) => {
  const f = boardFixture({ settings: { nonceTtlSecs: 30 } });
  t.teardown(f.stop);
  await f.setSwitch('compat', true);
  const early = await challenge(f);
  const late = await challenge(f);
  f.clock.t += 29_000;
  t.equal((await publish(f, early)).status, 201, 'valid one second before expiry');
  f.clock.t += 1_000;
  const expired = await publish(f, late);
  t.equal(expired.status, 403, 'rejected at expiry');
  t.equal(expired.json.code, 'challenge_invalid');
  f.clock.t += 3600_000;
  t.equal((await publish(f, late)).status, 403, 'and long after');
  // Expired nonces are pruned as new ones are issued.
  await challenge(f);
  t.equal(f.runtime.board().nonces.size, 1);
});

t.test('turning compat off stops outstanding nonces from publishing', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('compat', true);
  const nonce = await challenge(f);
  await f.setSwitch('compat', false);
  t.equal((await publish(f, nonce)).status, 404);
  await f.setSwitch('compat', true);
  t.equal((await publish(f, nonce)).status, 201);
});

t.test('only the SHA-256 of a nonce is logged, in the same record as the message', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-nonce-'));
  const clock = { t: 1_800_000_000_000 };
  const store = open(dir, clock);
  const f = boardOn(store.runtime, clock);
  await f.setSwitch('compat', true);
  const nonce = await challenge(f);
  t.equal((await publish(f, nonce, 'paired')).status, 201);
  await store.close();
  const log = readdirSync(dir).filter((n) => n.endsWith('.plog')).map((n) => readFileSync(join(dir, n))).reduce((a, b) => Buffer.concat([a, b]));
  t.equal(log.indexOf(nonce), -1, 'the nonce itself is never written');
  const hash = nonceHash(nonce);
  t.ok(log.indexOf(hash) >= 0, 'its hash is');
  // The record that carries the message also carries the hash: they cannot be separated.
  const message = log.indexOf('paired');
  t.ok(message > 0 && log.lastIndexOf(hash) > message - 200 && log.lastIndexOf(hash) < message + 200);
});

t.test('a used nonce stays used across a crash and restart; an unused one stays usable', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-nonce-'));
  const clock = { t: 1_800_000_000_000 };
  const store = open(dir, clock);
  const f = boardOn(store.runtime, clock);
  await f.setSwitch('compat', true);
  const used = await challenge(f);
  const unused = await challenge(f);
  t.equal((await publish(f, used)).status, 201);
  // A crash image: the files as they are now, with no shutdown, no snapshot and no flush beyond the acknowledgement.
  const crashed = mkdtempSync(join(tmpdir(), 'parley-nonce-crash-'));
  cpSync(dir, crashed, { recursive: true });
  await store.close();
  const after = open(crashed, clock);
  t.teardown(() => after.close());
  const g = boardOn(after.runtime, clock);
  t.equal((await publish(g, used, 'replayed after the crash')).status, 403, 'the used nonce is still consumed');
  t.equal((await publish(g, unused, 'issued before the crash')).status, 201, 'the unused nonce survived');
  t.equal((await publish(g, unused)).status, 403);
  t.same(after.runtime.board().messages.map((m) => m.body), ['hello', 'issued before the crash']);
});

t.test('nonces, messages, guestbook and switches survive snapshots and restarts', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-board-snap-'));
  const clock = { t: 1_800_000_000_000 };
  let store = open(dir, clock);
  let f = boardOn(store.runtime, clock);
  await f.setSwitch('compat', true);
  await f.setSwitch('guestbook', true);
  for (let i = 0; i < 5; i++) await f.call('POST', '/api/v1/messages', { json: { body: `before ${i}`, ...(i > 0 ? { replyTo: 'm1' } : {}) } });
  await f.call('POST', '/api/v1/guestbook', { json: { message: 'signed', agent: 'a', sourceUrl: 'https://example.com' } });
  const consumedAfterSnapshot = await challenge(f);
  const stillValid = await challenge(f);
  await store.snapshot();
  t.equal((await publish(f, consumedAfterSnapshot)).status, 201);
  await f.call('POST', '/api/v1/messages', { json: { body: 'after snapshot' } });
  const expected = boardState(store.runtime);
  await store.close();

  store = open(dir, clock);
  t.equal(store.recovery.snapshot !== null, true, 'recovered from the snapshot plus the log');
  t.equal(boardState(store.runtime), expected);
  f = boardOn(store.runtime, clock);
  t.equal((await publish(f, consumedAfterSnapshot)).status, 403);
  t.equal((await publish(f, stillValid)).status, 201);
  const expected2 = boardState(store.runtime);
  await store.snapshot();
  await store.close();
  store = open(dir, clock);
  t.teardown(() => store.close());
  t.equal(boardState(store.runtime), expected2, 'the same from a snapshot that holds everything');
  t.equal(store.runtime.board().switches.compat, true, 'switches persist across restarts');
});

t.test('large board lists are written in slices and read back in order', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  await f.setSwitch('compat', true);
  for (let i = 0; i < 23; i++) await f.call('POST', '/api/v1/messages', { json: { body: `m${i}` } });
  for (let i = 0; i < 11; i++) await f.call('POST', '/api/v1/guestbook', { json: { message: `g${i}` } });
  await challenge(f);
  const dir = mkdtempSync(join(tmpdir(), 'parley-board-slices-'));
  const info = await writeSnapshot(new DirectorySnapshots(dir), f.runtime, async () => {}, { sliceSize: 4, maxSliceMs: 0, now: () => 0 });
  const snap = readSnapshot(info.path);
  if (typeof snap === 'string') throw new Error(snap);
  const kinds = snap.chunks.map((c: any) => c.k);
  t.equal(kinds.filter((k) => k === 'boardMsgs').length, 6);
  t.equal(kinds.filter((k) => k === 'guestbook').length, 3);
  const restored = new Runtime(defaultRuntimeOptions(volatileSink));
  t.teardown(() => restored.stop());
  loadSnapshot(restored, snap);
  t.equal(boardState(restored), boardState(f.runtime));
});
