/**
 * Admission control under memory pressure, in process: a server whose pressure the test
 * drives (`MemoryPressure.observe`, the same hysteresis the heap's readings go through)
 * refuses requests that grow state with 503, Retry-After and the API's own error shape,
 * on both APIs, while reads, deletes, logins, `GET`/`DELETE /events`, the health
 * endpoints and the metrics are served; `/readyz` stays 200 and says so, the metric and
 * the log events follow, and writes come back by themselves below the low watermark.
 * The real heap is driven in `memory_process.test.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { LogFields, Logger } from '../actors/core/logger.js';
import { loadConfig, type Config } from '../src/config.js';
import { PRESSURE_MESSAGE } from '../src/http/app.js';
import { growsState } from '../src/http/route.js';
import { MemoryPressure, PRESSURE_RETRY_AFTER_SECS, SETTLE_MIN_INTERVAL_MS } from '../src/memory/pressure.js';
import { boardRoutes } from '../src/routes/board/index.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { startServer, type RunningServer } from '../src/server.js';
import { encodeParams } from './helpers.js';
import { checkedFetch } from './server_process.js';

/** A logger that keeps every line's fields. */
function recordingLogger(lines: LogFields[], bindings: LogFields = {}): Logger {
  const write = (fields: LogFields): void => void lines.push({ ...bindings, ...fields });
  return { fatal: write, error: write, warn: write, info: write, debug: write, child: (more) => recordingLogger(lines, { ...bindings, ...more }), isLevelEnabled: () => true };
}

/** The test's pressure: a limit of 1,000 bytes, readings given by the test. */
const LIMIT = 1000;

interface Fixture {
  server: RunningServer;
  memory: MemoryPressure;
  lines: LogFields[];
  call(method: string, path: string, params?: Record<string, unknown>, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; json: any }>;
  board(method: string, path: string, body?: unknown): Promise<{ status: number; headers: Headers; json: any }>;
}

async function fixture(t: Tap): Promise<Fixture> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-pressure-'));
  const lines: LogFields[] = [];
  const memory = new MemoryPressure(recordingLogger(lines), LIMIT);
  const config: Config = { ...loadConfig(['--rate-limit', '0'], {}), host: '127.0.0.1', port: 0, boardPort: 0, dataDir, fsync: 'none' };
  const server = await startServer(config, { log: recordingLogger([]), memory });
  t.teardown(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { email, api_key } = server.bootstrapped!.owner;
  const auth = `Basic ${Buffer.from(`${email}:${api_key}`).toString('base64')}`;
  const answer = async (res: Response): Promise<{ status: number; headers: Headers; json: any }> => {
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text === '' ? undefined : JSON.parse(text) };
  };
  return {
    server,
    memory,
    lines,
    async call(method, path, params = {}, headers = {}) {
      const query = method === 'GET' || method === 'HEAD' ? `?${encodeParams(params)}` : '';
      const body = query === '' ? encodeParams(params) : undefined;
      const h: Record<string, string> = { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }), ...headers };
      return answer(await checkedFetch(`http://127.0.0.1:${server.port}${path}${query}`, { method, headers: h, body }));
    },
    async board(method, path, body) {
      const init: RequestInit = body === undefined ? { method } : { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
      return answer(await fetch(`http://127.0.0.1:${server.boardPort}${path}`, init));
    },
  };
}

type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

async function metric(f: Fixture, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${f.server.metricsPort}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in the scrape`);
  return Number(m[1]);
}

t.test('routes that grow state are declared so; reads, deletes, logins and the event queue are not', async (t) => {
  const grows = (api: 'chat' | 'board', method: string, path: string): boolean => {
    const r = [...chatRoutes, ...boardRoutes].find((x) => x.api === api && x.method === method && x.path === path);
    if (!r) throw new Error(`no route ${method} ${path}`);
    return growsState(r);
  };
  for (const [method, path] of [
    ['POST', '/api/v1/messages'],
    ['POST', '/api/v1/register'],
    ['POST', '/api/v1/user_uploads'],
    ['POST', '/api/v1/tus'],
    ['PATCH', '/api/v1/tus/{upload_id}'],
    ['POST', '/api/v1/channels/create'],
    ['POST', '/api/v1/users/me/subscriptions'],
    ['POST', '/api/v1/users'],
    ['POST', '/api/v1/scheduled_messages'],
    ['POST', '/api/v1/messages/{message_id}/reactions'],
    ['PATCH', '/api/v1/messages/{message_id}'],
    ['PUT', '/api/v1/bot_storage'],
  ]) t.ok(grows('chat', method, path), `chat ${method} ${path} grows state`);
  for (const [method, path] of [
    ['GET', '/api/v1/messages'],
    ['GET', '/api/v1/events'],
    ['DELETE', '/api/v1/events'],
    ['DELETE', '/api/v1/messages/{message_id}'],
    ['POST', '/api/v1/streams/{stream_id}/delete_topic'],
    ['POST', '/api/v1/fetch_api_key'],
    ['POST', '/api/v1/typing'],
    ['POST', '/api/v1/users/me/presence'],
    ['POST', '/api/v1/messages/render'],
    ['HEAD', '/api/v1/tus/{upload_id}'],
    ['DELETE', '/api/v1/tus/{upload_id}'],
  ]) t.notOk(grows('chat', method, path), `chat ${method} ${path} does not`);
  for (const [method, path] of [['POST', '/api/v1/messages'], ['POST', '/api/v1/guestbook'], ['GET', '/compat/v1/write-challenge'], ['GET', '/compat/v1/publish/{nonce}']]) t.ok(grows('board', method, path), `board ${method} ${path} grows state`);
  for (const [method, path] of [['GET', '/messages.json'], ['GET', '/messages/{id}.md']]) t.notOk(grows('board', method, path), `board ${method} ${path} does not`);
});

t.test('the watermarks: pressure starts on a reading after a major GC at 75% (under V8\'s 80%), ends below 60%', async (t) => {
  const lines: LogFields[] = [];
  const m = new MemoryPressure(recordingLogger(lines), LIMIT);
  m.observe(990, false);
  t.notOk(m.active, 'a reading between major GCs (garbage included) does not start it');
  m.observe(749, true);
  t.notOk(m.active, 'under the high watermark');
  m.observe(750, true);
  t.ok(m.active, 'at the high watermark, after a major GC');
  m.observe(600, true);
  m.observe(700, false);
  t.ok(m.active, 'between the watermarks it holds');
  m.observe(599, false);
  t.notOk(m.active, 'any reading under the low watermark ends it');
  t.same(lines.map((l) => l.event), ['memory.pressure_started', 'memory.pressure_ended']);
  t.match(lines[0], { percent: 75, high_percent: 75, low_percent: 60 });
});

t.test('under pressure, garbage alone never holds it: the timer asks for a major GC, at most every 5 s and 5% of the time', async (t) => {
  let asked = 0;
  const m = new MemoryPressure(recordingLogger([]), LIMIT, () => void asked++);
  m.sample(700, 0);
  t.equal(asked, 0, 'no GC is asked for without pressure');
  m.observeMajor(800, 10, 1000);
  t.ok(m.active);
  m.sample(700, 1000 + SETTLE_MIN_INTERVAL_MS - 1);
  t.equal(asked, 0, 'not sooner than 5 s after the last major GC');
  m.sample(700, 1000 + SETTLE_MIN_INTERVAL_MS);
  t.equal(asked, 1, 'then once: the reading, garbage included, is between the watermarks');
  m.sample(700, 1000 + SETTLE_MIN_INTERVAL_MS + 1000);
  t.equal(asked, 1, 'a request counts as the last GC until its own reading comes');
  m.observeMajor(700, 400, 7000);
  m.sample(700, 7000 + SETTLE_MIN_INTERVAL_MS);
  t.equal(asked, 1, 'a GC of 400 ms is asked for again only after 8 s (5% of the time)');
  m.sample(700, 7000 + 8000);
  t.equal(asked, 2);
  t.equal(m.gcRequests, 2, 'counted for the metric');
  m.observeMajor(550, 400, 16000);
  t.notOk(m.active, "the GC's reading, under the low watermark, ends the pressure");
  m.sample(700, 60000);
  t.equal(asked, 2, 'and no more GCs are asked for');
});

t.test('under pressure: writes get 503 with Retry-After in each API\'s shape; reads, deletes and the event queue are served; writes come back by themselves', async (t) => {
  const f = await fixture(t);
  const sent = await f.call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'before', content: 'one' });
  t.equal(sent.status, 200, 'a send before the pressure');
  const queue = await f.call('POST', '/api/v1/register', { event_types: JSON.stringify(['message']) });
  t.equal(queue.status, 200);
  t.same((await f.call('GET', '/readyz')).json, { status: 'ready', memory_pressure: false });
  t.equal(await metric(f, 'parley_memory_pressure'), 0);

  f.memory.observe(900, true);
  t.ok(f.memory.active);
  t.match(f.lines.find((l) => l.event === 'memory.pressure_started'), { percent: 90 }, 'logged on entering');

  const refused = (what: string, r: { status: number; headers: Headers; json: any }): void => {
    t.equal(r.status, 503, `${what}: 503`);
    t.same(r.json, { result: 'error', msg: PRESSURE_MESSAGE, code: 'SERVER_NOT_READY' }, `${what}: Zulip's error shape`);
    t.equal(r.headers.get('retry-after'), String(PRESSURE_RETRY_AFTER_SECS), `${what}: Retry-After`);
  };
  refused('send', await f.call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'during', content: 'two' }));
  refused('register', await f.call('POST', '/api/v1/register', {}));
  refused('create a channel', await f.call('POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'new' }]) }));
  refused('edit', await f.call('PATCH', `/api/v1/messages/${sent.json.id}`, { content: 'edited' }));
  refused('upload', await f.call('POST', '/api/v1/user_uploads', {}, { 'content-type': 'multipart/form-data; boundary=x' }));
  const tus = await f.call('POST', '/api/v1/tus', {}, { 'tus-resumable': '1.0.0', 'upload-length': '10' });
  refused('tus create', tus);
  t.equal(tus.headers.get('tus-resumable'), '1.0.0', 'a tus refusal still says its version');

  t.equal((await f.call('GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0 })).status, 200, 'history is read');
  t.equal((await f.call('GET', `/api/v1/messages/${sent.json.id}`)).status, 200, 'a message is read');
  t.equal((await f.call('GET', '/api/v1/users/me')).status, 200);
  const events = await f.call('GET', '/api/v1/events', { queue_id: queue.json.queue_id, last_event_id: -1, dont_block: true });
  t.equal(events.status, 200, 'GET /events is served');
  t.equal((await f.call('POST', '/api/v1/typing', { type: 'channel', op: 'start', stream_id: 1, topic: 'x' })).status < 500, true, 'typing is not refused');
  const { email } = f.server.bootstrapped!.owner;
  t.equal((await f.call('POST', '/api/v1/fetch_api_key', { username: email, password: f.server.bootstrapped!.password })).status, 200, 'a login is served');
  t.equal((await f.call('DELETE', `/api/v1/messages/${sent.json.id}`)).status, 200, 'a delete is served');
  t.equal((await f.call('DELETE', '/api/v1/events', { queue_id: queue.json.queue_id })).status, 200, 'DELETE /events is served');
  t.same((await f.call('GET', '/healthz')).json, { status: 'ok' });
  const ready = await f.call('GET', '/readyz');
  t.same([ready.status, ready.json], [200, { status: 'ready', memory_pressure: true }], '/readyz stays 200 and reports the pressure');
  t.equal(await metric(f, 'parley_memory_pressure'), 1, 'parley_memory_pressure is 1');
  t.equal(await metric(f, 'parley_memory_refused_total'), 6, 'the refusals are counted');

  const boardWrite = await f.board('POST', '/api/v1/messages', { author: 'a', body: 'hello' });
  t.equal(boardWrite.status, 503, 'a board write: 503');
  t.match(boardWrite.json, { type: 'urn:parley:board:error:unavailable', status: 503, code: 'unavailable', detail: PRESSURE_MESSAGE }, "in the board's problem shape");
  t.equal(boardWrite.headers.get('retry-after'), String(PRESSURE_RETRY_AFTER_SECS));
  t.equal((await f.board('GET', '/messages.json')).status, 200, 'board reads are served');

  f.memory.observe(650, false);
  t.equal((await f.call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'during', content: 'three' })).status, 503, 'between the watermarks, still refused');
  f.memory.observe(550, false);
  t.match(f.lines.find((l) => l.event === 'memory.pressure_ended'), { percent: 55, refused: 8 }, 'logged on leaving');
  const after = await f.call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'after', content: 'four' });
  t.equal(after.status, 200, 'below the low watermark, writes are served again');
  t.equal((await f.call('POST', '/api/v1/register', {})).status, 200, 'and registers');
  t.same((await f.call('GET', '/readyz')).json, { status: 'ready', memory_pressure: false });
  t.equal(await metric(f, 'parley_memory_pressure'), 0);
});
