/**
 * The memory limit in real server processes (`npm start`):
 * - a Node whose heap limit is not `--memory-limit-mib` starts again under it: the
 *   served heap's limit is the setting; a `kill -9` of the pid the test holds leaves no
 *   server behind, holding the data directory; SIGTERM still drains; a Node already
 *   under the limit serves itself;
 * - at a 128 MiB limit, drafts fill the heap (a message's body is on disk) until writes
 *   are refused with 503 and Retry-After, sends included, while reads, `GET /events`,
 *   `/readyz` and the metrics are served and the process stays alive; deleting the drafts
 *   brings the writes back.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { PRESSURE_MESSAGE } from '../src/http/app.js';
import { PRESSURE_RETRY_AFTER_SECS } from '../src/memory/pressure.js';
import { checkedFetch, processApi, startServerProcess, type ServerProcess } from './server_process.js';

const MiB = 1024 * 1024;

/** The owner's Basic credentials, from what the first start printed. */
async function ownerAuth(server: ServerProcess): Promise<string> {
  for (let i = 0; i < 500 && !/API key:\s+\S+/.test(server.stdout()); i++) await new Promise((r) => setTimeout(r, 20));
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  return 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
}

/** One sample of the server's `GET /metrics`. */
async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(10000) })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in the scrape`);
  return Number(m[1]);
}

/** Whether the server's stderr shows `re`, waiting up to 10 s for its log to be written out (pino writes asynchronously). */
async function logged(server: ServerProcess, re: RegExp): Promise<boolean> {
  for (let i = 0; i < 500 && !re.test(server.stderr()); i++) await new Promise((r) => setTimeout(r, 20));
  return re.test(server.stderr());
}

/** The pid holding a data directory (its lock file). */
const lockPid = (dir: string): number => Number(readFileSync(join(dir, 'parley.pid'), 'utf8').trim());

/** Whether a process has exited (gone, or a zombie waiting for init to reap it). */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

t.test('npm start serves under --memory-limit-mib: it starts Node again with the limit, and never outlives a kill -9', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-memlimit-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none', PARLEY_MEMORY_LIMIT_MIB: '160' };
  const first = await startServerProcess(env);
  t.teardown(() => void first.child.kill('SIGKILL'));
  t.equal(await metric(first.base, 'parley_memory_limit_bytes'), 160 * MiB, "the served heap's limit is the setting");
  const served = lockPid(dir);
  t.not(served, first.child.pid, 'a child serves: this Node had another heap limit');
  t.equal(first.pid, served, 'the log names the serving process');
  t.ok(readFileSync(`/proc/${served}/cmdline`, 'utf8').split('\0').includes('--max-old-space-size=160'), 'started with --max-old-space-size');
  t.ok(await logged(first, /"event":"memory\.limit","limit_mib":160/), 'the limit is logged');

  first.child.kill('SIGKILL');
  t.equal((await first.exited).signal, 'SIGKILL');
  t.ok(exited(served), 'the child died with the parent');

  const second = await startServerProcess(env);
  t.teardown(() => void second.child.kill('SIGKILL'));
  t.equal((await processApi(second.base, await ownerAuth(first), 'GET', '/api/v1/users/me')).status, 200, 'a new start takes the data directory');
  second.child.kill('SIGTERM');
  t.same(await second.exited, { code: 0, signal: null }, 'SIGTERM reaches the child, which drains and exits 0, and so does the parent');
  t.match(second.stderr(), /"event":"shutdown\.complete"/);

  const third = await startServerProcess(env, 30000, undefined, ['--max-old-space-size=160']);
  t.teardown(() => void third.child.kill('SIGKILL'));
  t.equal(lockPid(dir), third.child.pid, 'a Node already under the limit serves itself');
  t.equal(await metric(third.base, 'parley_memory_limit_bytes'), 160 * MiB);
  third.child.kill('SIGTERM');
  t.equal((await third.exited).code, 0);
});

t.test('at a 128 MiB limit: sends are refused with 503 before the heap runs out, reads and events go on, and a delete brings writes back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-pressure-'));
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none', PARLEY_RATE_LIMIT: '0', PARLEY_MEMORY_LIMIT_MIB: '128' });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const auth = await ownerAuth(server);
  const queue = await processApi(server.base, auth, 'POST', '/api/v1/register', { event_types: JSON.stringify(['realm_user']) });
  t.equal(queue.status, 200);
  t.equal(await metric(server.base, 'parley_memory_pressure'), 0);

  // A message's body goes to the body store on disk, so messages no longer fill a heap
  // quickly: drafts do, whose content stays in the heap. 100 drafts of 10,000 characters a
  // request (about 1 MiB of heap), until one is refused: at most 300 requests, two minutes.
  const content = (i: number): string => `${i} ${'lorem ipsum dolor sit amet '.repeat(370)}`.slice(0, 9990);
  let stored = 0;
  const ids: number[] = [];
  let refusal: { status: number; json: any; retryAfter: string | null } | undefined;
  const deadline = Date.now() + 120_000;
  for (let round = 0; !refusal && round < 300 && Date.now() < deadline; round++) {
    const drafts = Array.from({ length: 100 }, (_, k) => ({ type: 'stream', to: [1], topic: 'fill', content: content(stored + k), timestamp: 1700000000 }));
    const res = await checkedFetch(`${server.base}/api/v1/drafts`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ drafts: JSON.stringify(drafts) }),
      signal: AbortSignal.timeout(10000),
    });
    const a = { status: res.status, json: await res.json(), retryAfter: res.headers.get('retry-after') };
    if (a.status === 200) {
      stored += drafts.length;
      ids.push(...((a.json as { ids: number[] }).ids));
    }
    else if (a.status === 503) refusal = a;
    else t.fail(`a draft request answered ${a.status}: ${JSON.stringify(a.json)}`);
  }
  t.ok(refusal, `a write was refused after ${stored} drafts`);
  t.same(refusal?.json, { result: 'error', msg: PRESSURE_MESSAGE, code: 'SERVER_NOT_READY' }, "in Zulip's error shape");
  t.equal(refusal?.retryAfter, String(PRESSURE_RETRY_AFTER_SECS), 'with Retry-After');
  t.ok(stored > 500, `the heap took ${stored} drafts first`);
  t.ok(await logged(server, /"event":"memory\.pressure_started"/), 'the pressure is logged');
  const send = await processApi(server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'fill', content: 'refused too' });
  t.equal(send.status, 503, 'a send is refused too');

  const ready = await processApi(server.base, auth, 'GET', '/readyz');
  t.same([ready.status, ready.json], [200, { status: 'ready', memory_pressure: true }], '/readyz stays 200 and says so');
  t.equal(await metric(server.base, 'parley_memory_pressure'), 1);
  const read = await processApi(server.base, auth, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: '20', num_after: '0', apply_markdown: 'false' });
  t.equal(read.status, 200, 'history is read');
  t.ok(read.json.messages.length > 0, 'the welcome messages, from the body store');
  const events = await processApi(server.base, auth, 'GET', '/api/v1/events', { queue_id: queue.json.queue_id, last_event_id: '-1', dont_block: 'true' });
  t.equal(events.status, 200, 'GET /events is served');
  t.equal((await processApi(server.base, auth, 'POST', '/api/v1/register', {})).status, 503, 'a register is refused');

  // Deleting the drafts frees the heap; the pressure ends at the next reading under 70%.
  t.equal(ids.length, stored, 'each draft created has its id');
  let deleted = 0;
  for (let i = 0; i < ids.length; i += 16) {
    const answers = await Promise.all(ids.slice(i, i + 16).map((id) => processApi(server.base, auth, 'DELETE', `/api/v1/drafts/${id}`)));
    deleted += answers.filter((a) => a.status === 200).length;
  }
  t.equal(deleted, stored, 'every delete is served');
  for (let i = 0; i < 300 && (await metric(server.base, 'parley_memory_pressure')) === 1; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(await metric(server.base, 'parley_memory_pressure'), 0, 'the pressure ends by itself');
  t.ok(await logged(server, /"event":"memory\.pressure_ended"/), 'its end is logged');
  const again = await processApi(server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'after', content: 'writes are back' });
  t.equal(again.status, 200, 'sends are served again');
  t.equal(server.child.exitCode, null, 'the process never died');
  t.same((await processApi(server.base, auth, 'GET', '/healthz')).json, { status: 'ok' });
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0, 'and it shuts down cleanly');
});
