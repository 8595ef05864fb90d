/**
 * `GET /metrics` over real sockets: the metrics appear and move as requests are made,
 * the bearer token is enforced with 401 and `WWW-Authenticate: Bearer`, and with
 * `--metrics-port` they are served on their own port and not on the chat port. Every
 * test starts a server of its own in this one process, which also checks that
 * servers never share (or clash over) their registries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig, type Config } from '../src/config.js';
import { startServer, type RunningServer } from '../src/server.js';
import { encodeParams } from './helpers.js';
import { quietLogger } from '../actors/core/logger.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Starts a server on free ports with a fresh data directory, stopped at the end of `t`. */
async function server(t: Tap, settings: Partial<Config> = {}): Promise<RunningServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-metrics-'));
  const config: Config = { ...loadConfig([], {}), host: '127.0.0.1', port: 0, boardPort: 0, dataDir, ...settings };
  const running = await startServer(config, { log: quietLogger });
  t.teardown(async () => {
    await running.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return running;
}

/** One sample of a scrape: a metric name, its labels and its value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of the sample with this name whose labels include `labels`; 0 when there is none. */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found?.value ?? 0;
}

/** Scrapes `port` and parses what it serves. */
async function scrape(port: number, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers });
  if (res.status !== 200) throw new Error(`scrape: ${res.status} ${await res.text()}`);
  return parse(await res.text());
}

/** A chat API call as the bootstrapped owner. */
function api(s: RunningServer, method: string, path: string, params?: Record<string, unknown>): Promise<Response> {
  const { email, api_key } = s.bootstrapped!.owner;
  const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${email}:${api_key}`).toString('base64')}` };
  if (params && method !== 'GET') headers['content-type'] = 'application/x-www-form-urlencoded';
  const query = params && method === 'GET' ? `?${encodeParams(params)}` : '';
  return fetch(`http://127.0.0.1:${s.port}${path}${query}`, { method, headers, body: params && method !== 'GET' ? encodeParams(params) : undefined });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Scrapes until `ready` holds of the samples, or gives up after two seconds. */
async function scrapeUntil(port: number, ready: (s: Sample[]) => boolean): Promise<Sample[]> {
  let samples = await scrape(port);
  for (let i = 0; i < 100 && !ready(samples); i++) {
    await sleep(20);
    samples = await scrape(port);
  }
  return samples;
}

const SEND = { api: 'chat', method: 'POST', route: '/api/v1/messages' };

t.test('the metrics move as requests are made', async (t) => {
  const s = await server(t, { fsync: 'always', boardHost: 'board.example', rateLimitAnonymous: { requests: 1, windowSecs: 60 } });
  t.equal(s.metricsPort, s.port, 'without --metrics-port the metrics are on the chat port');
  const res = await fetch(`http://127.0.0.1:${s.port}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const before = parse(await res.text());
  t.ok(before.some((x) => x.name === 'nodejs_eventloop_lag_seconds'), "the process's default metrics are included");
  t.equal(value(before, 'parley_parked_polls'), 0);

  const channel = s.bootstrapped!.starter.channels[0].name;
  const sent = await api(s, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: 'metrics', content: 'hello' });
  t.equal(sent.status, 200);
  const after = await scrape(s.port);
  t.equal(value(after, 'parley_http_request_duration_seconds_count', SEND) - value(before, 'parley_http_request_duration_seconds_count', SEND), 1, 'the send counts under its route pattern');
  t.ok(value(after, 'parley_log_append_seconds_count') > value(before, 'parley_log_append_seconds_count'), 'the log append histogram counted the send');
  t.ok(value(after, 'parley_log_fdatasync_seconds_count') > value(before, 'parley_log_fdatasync_seconds_count'), 'and its fdatasync');
  t.ok(value(after, 'parley_log_batch_records_sum') > value(before, 'parley_log_batch_records_sum'));
  t.ok(value(after, 'parley_log_last_seq') > value(before, 'parley_log_last_seq'));

  const message = (await (await api(s, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0 })).json()) as { messages: Array<{ id: number }> };
  await api(s, 'GET', `/api/v1/messages/${message.messages[0].id}`);
  const fetched = await scrape(s.port);
  t.equal(value(fetched, 'parley_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/messages/{message_id}' }), 1, 'a path with a parameter counts under its pattern');
  t.notOk(fetched.some((x) => x.labels.route === `/api/v1/messages/${message.messages[0].id}`), 'never under the raw path');

  const { queue_id } = (await (await api(s, 'POST', '/api/v1/register', { event_types: ['message'] })).json()) as { queue_id: string };
  const registered = await scrape(s.port);
  t.equal(value(registered, 'parley_event_queues'), 1);
  const parked = api(s, 'GET', '/api/v1/events', { queue_id, last_event_id: -1 });
  const waiting = await scrapeUntil(s.port, (x) => value(x, 'parley_parked_polls') === 1);
  t.equal(value(waiting, 'parley_parked_polls'), 1, 'the parked poll shows while it waits');
  t.equal(value(waiting, 'parley_event_queues_passivated'), 1, 'its queue is passivated while the poll is parked (it has had no batch: not hot)');
  await api(s, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: 'metrics', content: 'to the queue' });
  t.equal((await parked).status, 200);
  const delivered = await scrapeUntil(s.port, (x) => value(x, 'parley_events_delivered_total') > value(waiting, 'parley_events_delivered_total'));
  t.equal(value(delivered, 'parley_parked_polls'), 0, 'and is gone once answered');
  t.ok(value(delivered, 'parley_events_delivered_total') > value(waiting, 'parley_events_delivered_total'), 'the event was counted as delivered');
  t.ok(value(delivered, 'parley_polls_completed_total') >= 1);
  t.ok(value(delivered, 'parley_fanout_batch_queues_count') >= 1);

  await api(s, 'POST', '/api/v1/users/me/presence', { status: 'active', ping_only: true });
  t.equal(value(await scrape(s.port), 'parley_presence_pings_total'), 1, 'a presence report counts as a ping');

  await fetch(`http://127.0.0.1:${s.port}/api/v1/no-such-thing`);
  t.equal(value(await scrape(s.port), 'parley_http_request_duration_seconds_count', { api: 'chat', route: 'unmatched' }), 1, 'a request no route matches counts as unmatched');

  const settings = `http://127.0.0.1:${s.port}/api/v1/server_settings`;
  t.equal((await fetch(settings)).status, 200);
  t.equal((await fetch(settings)).status, 429, 'the anonymous rate limit of 1 is hit');
  t.equal(value(await scrape(s.port), 'parley_rate_limit_hits_total', { method: 'GET', route: '/api/v1/server_settings' }), 1, 'the rate-limit hit is counted under its route');

  await s.store.snapshot();
  const snapshotted = await scrape(s.port);
  t.equal(value(snapshotted, 'parley_snapshot_duration_seconds_count'), 1, 'a snapshot is timed');
  t.ok(value(snapshotted, 'parley_snapshot_longest_slice_seconds') > 0, 'with its longest slice');
  t.ok(value(snapshotted, 'parley_snapshot_bytes') > 0);

  const board = await fetch(`http://127.0.0.1:${s.port}/metrics`, { headers: { host: 'board.example' } });
  t.equal(board.status, 200, "/metrics on the chat port is the metrics whatever the Host, the board's included");
  t.match(await board.text(), /parley_event_queues 1/);
  const head = await fetch(`http://127.0.0.1:${s.port}/metrics`, { method: 'HEAD' });
  t.equal(head.status, 200);
  const post = await fetch(`http://127.0.0.1:${s.port}/metrics`, { method: 'POST' });
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET, HEAD');
});

t.test('--body-cache-mib bounds the body cache, and the body store reports through the metrics', async (t) => {
  // Rate limits off: the test sends 200 messages as one user.
  const s = await server(t, { bodyCacheMib: 1, rateLimit: { requests: 0, windowSecs: 60 } });
  const before = await scrape(s.port);
  t.equal(value(before, 'parley_body_cache_limit_bytes'), 1024 * 1024, 'the bound the flag set');
  const channel = s.bootstrapped!.starter.channels[0].name;
  // About 3.5 MiB of bodies (9,000 characters of source and as much HTML each): three times what the cache may hold.
  const content = 'a body of some size '.repeat(450);
  const ids: number[] = [];
  for (let i = 0; i < 200; i++) ids.push(((await (await api(s, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: 'cache', content: `${i} ${content}` })).json()) as { id: number }).id);
  // Bodies not yet written are kept beyond the bound (at most a buffer's worth) until the
  // write, at most 10 ms later, which trims the cache again.
  await sleep(50);
  const filled = await scrape(s.port);
  t.ok(value(filled, 'parley_body_store_bytes') > 3 * 1024 * 1024, `the bodies are on disk: ${value(filled, 'parley_body_store_bytes')} bytes`);
  t.ok(value(filled, 'parley_body_store_segments') >= 1);
  const cached = value(filled, 'parley_body_cache_bytes');
  t.ok(cached > 0 && cached <= 1024 * 1024, `the cache holds at most its bound: ${cached} bytes`);
  // The oldest message left the cache: reading it goes to the disk.
  const read = await api(s, 'GET', `/api/v1/messages/${ids[0]}`, { apply_markdown: 'false' });
  const body = (await read.json()) as { message: { content: string } };
  t.equal(read.status, 200, JSON.stringify(body).slice(0, 200));
  t.match(body.message.content, /^0 a body/);
  const after = await scrape(s.port);
  t.ok(value(after, 'parley_body_cache_misses_total') > value(filled, 'parley_body_cache_misses_total'), 'a miss');
  t.ok(value(after, 'parley_body_disk_reads_total') > value(filled, 'parley_body_disk_reads_total'), 'read from the disk');
});

t.test('--metrics-token: a bearer token is required', async (t) => {
  const s = await server(t, { metricsToken: 'scrape-secret' });
  const url = `http://127.0.0.1:${s.port}/metrics`;
  const none = await fetch(url);
  t.equal(none.status, 401, 'no token');
  t.match(none.headers.get('www-authenticate'), /^Bearer realm="metrics"$/);
  const wrong = await fetch(url, { headers: { authorization: 'Bearer not-it' } });
  t.equal(wrong.status, 401, 'the wrong token');
  t.match(wrong.headers.get('www-authenticate'), /^Bearer .*error="invalid_token"/);
  const basic = await fetch(url, { headers: { authorization: `Basic ${Buffer.from('a:scrape-secret').toString('base64')}` } });
  t.equal(basic.status, 401, 'another scheme');
  const right = await fetch(url, { headers: { authorization: 'Bearer scrape-secret' } });
  t.equal(right.status, 200, 'the right token');
  t.match(await right.text(), /parley_event_queues/);
});

t.test('--metrics-port: the metrics have a port of their own, and leave the chat port', async (t) => {
  const s = await server(t, { metricsPort: 0, metricsToken: 'scrape-secret' });
  t.not(s.metricsPort, s.port);
  const auth = { authorization: 'Bearer scrape-secret' };
  t.ok(value(await scrape(s.metricsPort, auth), 'parley_event_queues') === 0, 'served on the metrics port');
  t.equal((await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).status, 401, 'still behind the token');
  t.equal((await fetch(`http://127.0.0.1:${s.metricsPort}/api/v1/server_settings`)).status, 404, 'the metrics port serves nothing else');
  const chat = await fetch(`http://127.0.0.1:${s.port}/metrics`, { headers: auth });
  t.equal(chat.status, 404, 'the chat port has no /metrics');
  t.match(await chat.json(), { result: 'error' }, "it is the chat API's own 404");
});

t.test('the configuration', async (t) => {
  t.equal(loadConfig([], {}).metricsPort, null, 'on the chat port by default');
  t.equal(loadConfig(['--metrics-port', '9993'], {}).metricsPort, 9993);
  t.equal(loadConfig([], { PARLEY_METRICS_PORT: '0' }).metricsPort, 0);
  t.equal(loadConfig([], { PARLEY_METRICS_PORT: '' }).metricsPort, null);
  t.equal(loadConfig([], {}).metricsToken, '');
  t.equal(loadConfig([], { PARLEY_METRICS_TOKEN: 'x' }).metricsToken, 'x');
  t.throws(() => loadConfig(['--metrics-port', 'abc'], {}), /--metrics-port/);
});
