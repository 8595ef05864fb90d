/**
 * `parley board ...` against a stopped data directory (offline) and a running server
 * (online, taking effect without a restart), switches persisting across restarts, and
 * a nonce that stays consumed after the server is SIGKILLed.
 */
import t from 'tap';
import { request } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store.js';
import { startServerProcess, type ServerProcess } from './server_process.js';
import { quietLogger } from '../actors/core/logger.js';
import { runParley, type ProcessRun } from './built.js';

/** `parley ARGS`, its stdout parsed as JSON when it is; without blocking (the file's tests run side by side). */
async function parley(args: string[]): Promise<ProcessRun & { json: any }> {
  const r = await runParley(args);
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { ...r, json };
}

/** Starts a server on the data directory; resolves with it and its board's base URL. */
async function serve(dir: string): Promise<{ server: ServerProcess; board: string }> {
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always' });
  const m = /serving the message board on (http:\/\/[\d.]+:\d+)/.exec(server.stderr());
  if (!m) throw new Error(`no board address in:\n${server.stderr()}`);
  return { server, board: m[1] };
}

async function stop(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  server.child.kill(signal);
  await server.exited;
}

/**
 * One request on a connection of its own (`agent: false`). A kept-alive connection can be
 * closed under the next request: uWS closes idle connections after 10 s, and running the
 * CLI on a loaded machine can take that long between two requests.
 */
function get(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Headers; json(): any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), json: () => JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

// The three tests share nothing (each its own data directory and server): they run side by side.
t.jobs = 3;

const sign = (board: string) => get(`${board}/api/v1/guestbook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hello"}' });

t.test('offline: switches are facts in the stopped directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-board-cli-'));
  const missing = await parley(['board', 'status', '--data-dir', join(dir, 'nope')]);
  t.equal(missing.status, 2);
  t.match(missing.stderr, /no data directory/);
  const on = await parley(['board', 'guestbook', 'on', '--data-dir', dir]);
  t.equal(on.status, 0, on.stderr);
  t.same(on.json, { guestbook: 'on', compat: 'off', changed: true, offline: true });
  t.same((await parley(['board', 'status', '--data-dir', dir])).json, { guestbook: 'on', compat: 'off', offline: true });
  t.same((await parley(['board', 'compat', 'on', '--data-dir', dir])).json, { guestbook: 'on', compat: 'on', changed: true, offline: true });
  t.equal((await parley(['board', 'compat', 'on', '--data-dir', dir])).json.changed, false, 'turning on what is on changes nothing');
  t.same((await parley(['board', 'guestbook', 'off', '--data-dir', dir])).json, { guestbook: 'off', compat: 'on', changed: true, offline: true });
  const store = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });
  t.same(store.runtime.board().switches, { guestbook: false, compat: true });
  await store.close();
  const bads = [['board', 'guestbook', 'maybe'], ['board', 'everything', 'on'], ['board'], ['board', 'compat', 'on', '--force']];
  const [help, ...refused] = await Promise.all([parley(['help']), ...bads.map((bad) => parley([...bad, '--data-dir', dir]))]);
  for (const [i, bad] of bads.entries()) {
    const r = refused[i];
    t.equal(r.status, 2, bad.join(' '));
    t.match(r.stderr, /usage|unknown option/i, 'commander prints "Usage:"');
  }
  t.match(help.stdout, /parley board guestbook on\|off/);
});

t.test('online: the running server switches at once, and the switches survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-board-cli-'));
  let { server, board } = await serve(dir);
  t.teardown(() => stop(server));
  t.equal((await sign(board)).status, 404, 'guestbook publication is off by default');
  t.equal((await get(`${board}/compat/v1/write-challenge`)).status, 404, 'compatibility is off by default');
  const on = await parley(['board', 'guestbook', 'on', '--data-dir', dir]);
  t.equal(on.status, 0, on.stderr);
  t.same(on.json, { guestbook: 'on', compat: 'off', changed: true, server_pid: server.pid });
  t.equal((await sign(board)).status, 201, 'no restart needed');
  t.same((await parley(['board', 'status', '--data-dir', dir])).json, { guestbook: 'on', compat: 'off', server_pid: server.pid });
  t.equal((await parley(['board', 'compat', 'on', '--data-dir', dir])).status, 0);
  t.equal((await get(`${board}/compat/v1/write-challenge`)).status, 200);
  t.equal((await parley(['board', 'guestbook', 'off', '--data-dir', dir])).status, 0);
  t.equal((await sign(board)).status, 404);
  await stop(server);
  t.same((await parley(['board', 'status', '--data-dir', dir])).json, { guestbook: 'off', compat: 'on', offline: true });
  ({ server, board } = await serve(dir));
  t.equal((await sign(board)).status, 404, 'guestbook still off after a restart');
  t.equal((await get(`${board}/compat/v1/write-challenge`)).status, 200, 'compat still on after a restart');
  const entries = (await (await get(`${board}/guestbook.json`)).json()) as { items: unknown[] };
  t.equal(entries.items.length, 1, 'the entry made before the restart is there');
});

t.test('a nonce used before a SIGKILL is still used after the restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-board-kill-'));
  t.equal((await parley(['board', 'compat', 'on', '--data-dir', dir])).status, 0);
  let { server, board } = await serve(dir);
  t.teardown(() => stop(server));
  const challenge = async (): Promise<string> => ((await (await get(`${board}/compat/v1/write-challenge`)).json()) as { challenge: string }).challenge;
  const publish = (nonce: string) => get(`${board}/compat/v1/publish/${nonce}?message=hi&confirm=publish`);
  const used = await challenge();
  const unused = await challenge();
  t.equal((await publish(used)).status, 201);
  await stop(server, 'SIGKILL');
  ({ server, board } = await serve(dir));
  const replay = await publish(used);
  t.equal(replay.status, 403, 'the replay after the crash is rejected');
  t.equal(replay.headers.get('cache-control'), 'no-store');
  t.equal((await publish(unused)).status, 201, 'a nonce issued before the crash can still be used once');
  const messages = (await (await get(`${board}/messages.json`)).json()) as { items: unknown[] };
  t.equal(messages.items.length, 2);
});
