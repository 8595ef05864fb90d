/**
 * The server's lifecycle seen from outside, on a real process: `/healthz` and
 * `/readyz` while the log is replayed (503 until recovery is done, then 200), and a
 * SIGTERM that drains: the parked poll is answered, a request in flight completes, a
 * new request gets 503 with Retry-After in its API's shape, the process exits 0, and a
 * restart finds every acknowledged write. No timing is asserted: a test hook
 * (`PARLEY_TEST_HOOK_REPLAY_PAUSE_MS`) pauses after each slice of replay so that
 * recovery lasts long enough to be seen.
 */
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { request, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedFetch, LISTENING, parkedPolls, processApi, startServerProcess, type ServerProcess } from './server_process.js';

const BOUNDARY = 'parley-lifecycle-boundary';

async function waitFor(cond: () => boolean, what: string, ms = 20000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The owner's Basic credentials, from the credentials the first start prints. */
async function ownerAuth(server: ServerProcess): Promise<string> {
  await waitFor(() => /API key:\s+\S+/.test(server.stdout()), 'the owner credentials');
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  return 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
}

async function get(url: string): Promise<{ status: number; retryAfter: string | null; json: any }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10000) });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json() };
}

/** Sends `count` messages, `parallel` at a time; returns the ids acknowledged. */
async function sendMany(base: string, auth: string, count: number, parallel: number): Promise<number[]> {
  const ids: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const r = await processApi(base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'replay', content: `message ${i}` });
      if (r.status !== 200) throw new Error(`send ${i}: ${r.status} ${JSON.stringify(r.json)}`);
      ids.push(r.json.id);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return ids;
}

t.test('/readyz is 503 while the log is replayed, then 200; /healthz is 200 throughout', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-readyz-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none', PARLEY_RATE_LIMIT: '0' };
  const first = await startServerProcess(env);
  const auth = await ownerAuth(first);
  // 2,500 facts after the last snapshot: three slices of replay, with the hook's pause after each.
  const ids = await sendMany(first.base, auth, 2500, 20);
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await startServerProcess({ ...env, PARLEY_TEST_HOOK_REPLAY_PAUSE_MS: '400' }, 30000, LISTENING);
  t.teardown(() => void second.child.kill('SIGKILL'));
  const seen: number[] = [];
  const replaySeqs: number[] = [];
  let health = 0;
  for (;;) {
    const ready = await get(`${second.base}/readyz`);
    seen.push(ready.status);
    if (ready.status === 503 && seen.length === 1) {
      t.equal(ready.json.status, 'starting', '/readyz says why');
      t.ok(ready.retryAfter, 'with Retry-After');
      const api = await processApi(second.base, auth, 'GET', '/api/v1/users/me');
      t.equal(api.status, 503, 'the API refuses while starting');
      t.match(api.json, { result: 'error', code: 'SERVER_NOT_READY' }, 'in Zulip\'s error shape');
    }
    if (ready.status === 503) {
      // Replay progress: the metrics answer throughout, not ready, with the seq replayed so far.
      // Replay may end between the two requests; readiness only ever turns on, so a /readyz
      // still 503 after the scrape means the scrape was taken during replay.
      const scrape = await fetch(`${second.base}/metrics`).then((r) => r.text());
      if ((await get(`${second.base}/readyz`)).status === 503) {
        t.match(scrape, /^parley_ready 0$/m, 'parley_ready is 0 while replaying');
        replaySeqs.push(Number(/^parley_log_last_seq (\d+)$/m.exec(scrape)?.[1]));
      }
    }
    health = (await get(`${second.base}/healthz`)).status;
    if (health !== 200) break;
    if (ready.status === 200) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(health, 200, '/healthz answers 200 while starting and once ready');
  t.ok(seen.includes(503), `/readyz was 503 during replay (${seen.length} polls)`);
  t.equal(seen[seen.length - 1], 200, '/readyz turned 200');
  t.ok(replaySeqs.length >= 2 && replaySeqs[replaySeqs.length - 1] > replaySeqs[0], `parley_log_last_seq moved during replay (${replaySeqs.join(', ')})`);
  t.match(await fetch(`${second.base}/metrics`).then((r) => r.text()), /^parley_ready 1$/m, 'parley_ready is 1 once serving');
  const last = await processApi(second.base, auth, 'GET', `/api/v1/messages/${ids[ids.length - 1]}`);
  t.equal(last.status, 200, 'the replayed messages are served');
  t.match(second.stderr(), /"event":"recovery.replayed"/, 'recovery logged as a structured event');
  second.child.kill('SIGTERM');
  t.equal((await second.exited).code, 0);
});

/** Starts a multipart upload and writes all but its last bytes; `finish` sends them. */
/** Resolves once an upload's first bytes are in its temporary file: its handler is running. */
async function uploadArrived(dir: string): Promise<void> {
  const tmp = join(dir, 'uploads', 'tmp');
  const end = Date.now() + 15000;
  while (!(existsSync(tmp) && readdirSync(tmp).length > 0)) {
    if (Date.now() > end) throw new Error('no upload arrived in 15 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function holdUpload(base: string, auth: string, data: Buffer): { finish(): void; answer: Promise<{ status: number; json: any }> } {
  const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="held.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const body = Buffer.concat([head, data, tail]);
  let req: ClientRequest;
  const answer = new Promise<{ status: number; json: any }>((resolve, reject) => {
    req = request(`${base}/api/v1/user_uploads`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(body.length) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.write(body.subarray(0, head.length + data.length));
  });
  return { finish: () => req.end(tail), answer };
}

t.test('SIGTERM drains: the parked poll is answered, the request in flight completes, new requests get 503, nothing acknowledged is lost', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-drain-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0' };
  const server = await startServerProcess(env);
  const auth = await ownerAuth(server);
  const sent = await sendMany(server.base, auth, 20, 4);
  const reg = await processApi(server.base, auth, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']) });
  const parked = processApi(server.base, auth, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: String(reg.json.last_event_id) });
  const upload = holdUpload(server.base, auth, Buffer.alloc(64 * 1024, 7));
  // The upload's handler is running once its temporary file exists; and the poll is parked.
  await uploadArrived(dir);
  await parkedPolls(server.base);
  server.child.kill('SIGTERM');

  const poll = await parked;
  t.equal(poll.status, 200, 'the parked poll was answered');
  t.same(poll.json.events, [], 'with no events: the client polls again');
  const refused = await checkedFetch(`${server.base}/api/v1/users/me`, { headers: { authorization: auth }, signal: AbortSignal.timeout(10000) });
  t.equal(refused.status, 503, 'a new request gets 503 while draining');
  t.ok(refused.headers.get('retry-after'), 'with Retry-After');
  t.match(await refused.json(), { result: 'error', code: 'SERVER_NOT_READY' });
  const readiness = await get(`${server.base}/readyz`);
  t.same([readiness.status, readiness.json], [503, { status: 'draining' }], '/readyz says draining');

  upload.finish();
  const uploaded = await upload.answer;
  t.equal(uploaded.status, 200, 'the request in flight completed');
  t.equal((await server.exited).code, 0, 'the process exits 0');
  t.match(server.stderr(), /"event":"shutdown.drained"/);
  t.match(server.stderr(), /"event":"shutdown.snapshot_written"/);

  const again = await startServerProcess(env);
  t.teardown(() => void again.child.kill('SIGKILL'));
  for (const id of sent) {
    const r = await processApi(again.base, auth, 'GET', `/api/v1/messages/${id}`);
    if (r.status !== 200) t.fail(`message ${id} was acknowledged but is gone after the restart`);
  }
  const file = await fetch(`${again.base}${uploaded.json.url}`, { headers: { authorization: auth }, signal: AbortSignal.timeout(10000) });
  t.equal(file.status, 200, 'the upload acknowledged while draining is there after the restart');
  t.equal((await file.arrayBuffer()).byteLength, 64 * 1024);
  again.child.kill('SIGTERM');
  t.equal((await again.exited).code, 0);
});

t.test('a drain that outlasts --shutdown-timeout-ms exits 1, and the restart finds every acknowledged write', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-drain-timeout-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0' };
  const server = await startServerProcess({ ...env, PARLEY_SHUTDOWN_TIMEOUT_MS: '500' });
  const auth = await ownerAuth(server);
  const sent = await sendMany(server.base, auth, 20, 4);
  // An upload that never finishes holds the drain past the bound.
  const upload = holdUpload(server.base, auth, Buffer.alloc(1024, 1));
  upload.answer.catch(() => undefined);
  await uploadArrived(dir);
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 1, 'the process exits non-zero');
  t.match(server.stderr(), /"event":"shutdown.timeout"/, 'and says why');

  const again = await startServerProcess(env);
  t.teardown(() => void again.child.kill('SIGKILL'));
  for (const id of sent) {
    const r = await processApi(again.base, auth, 'GET', `/api/v1/messages/${id}`);
    if (r.status !== 200) t.fail(`message ${id} was acknowledged but is gone after the restart`);
  }
  again.child.kill('SIGTERM');
  t.equal((await again.exited).code, 0);
});
