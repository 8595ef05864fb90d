/**
 * What the logs of a real server may never hold: API keys, passwords, nonces,
 * Authorization headers, message content. The server runs at `--log-level debug` (every
 * request logged) with its stderr captured; the test signs up, logs in, fails to log
 * in, sends and reads messages and knocks on the board with known secrets, then greps
 * everything the process wrote to stderr. It also checks that the request lines are
 * there, with route, organization and user.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processApi, startServerProcess } from './server_process.js';

const basic = (email: string, key: string): string => 'Basic ' + Buffer.from(`${email}:${key}`).toString('base64');

t.test('the logs of a debug-level run hold no credential and no message content', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-log-secrets-'));
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none', PARLEY_RATE_LIMIT: '0', PARLEY_LOG_LEVEL: 'debug' });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const end = Date.now() + 10000;
  while (!/API key:\s+\S+/.test(server.stdout()) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  const ownerKey = /API key:\s+(\S+)/.exec(server.stdout())![1];
  const owner = basic('owner@localhost', ownerKey);
  const password = 'correct-horse-battery-staple-7731';
  const content = 'the-quartz-walrus-whispers-4412';
  const topic = 'topic-of-the-ochre-heron-9020';
  const nonce = 'nonce-of-the-violet-lynx-5517';

  const created = await processApi(server.base, owner, 'POST', '/api/v1/users', { email: 'iris@example.com', password, full_name: 'Iris' });
  t.equal(created.status, 200, 'a user with a known password');
  const login = await processApi(server.base, '', 'POST', '/api/v1/fetch_api_key', { username: 'iris@example.com', password });
  t.equal(login.status, 200, 'logs in with it');
  const irisKey: string = login.json.api_key;
  const wrong = await processApi(server.base, '', 'POST', '/api/v1/fetch_api_key', { username: 'iris@example.com', password: `${password}-wrong` });
  t.equal(wrong.status, 401, 'a wrong password is refused');
  const iris = basic('iris@example.com', irisKey);
  const bad = await processApi(server.base, basic('iris@example.com', `${irisKey}x`), 'GET', '/api/v1/users/me');
  t.equal(bad.status, 401, 'a wrong API key is refused');
  const reg = await processApi(server.base, iris, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']) });
  const sent = await processApi(server.base, owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic, content });
  t.equal(sent.status, 200, 'a message with known content');
  await processApi(server.base, iris, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(['owner@localhost']), content: `${content}-direct` });
  const events = await processApi(server.base, iris, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: '-1' });
  t.equal(events.status, 200);
  await processApi(server.base, owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: '5', num_after: '0', narrow: JSON.stringify([{ operator: 'search', operand: content }]) });
  const board = `http://127.0.0.1:${/"event":"server.serving","api":"board","port":(\d+)/.exec(server.stderr())![1]}`;
  await fetch(`${board}/compat/v1/publish/${nonce}?message=${content}&confirm=publish`, { signal: AbortSignal.timeout(10000) });
  await fetch(`${board}/api/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ body: content, nonce }), signal: AbortSignal.timeout(10000) });
  await processApi(server.base, owner, 'GET', `/api/v1/no-such-route/${ownerKey}`);

  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
  const log = server.stderr();
  const secrets = { ownerKey, irisKey, password, content, topic, nonce, owner, iris, 'owner key in base64': Buffer.from(ownerKey).toString('base64') };
  for (const [what, secret] of Object.entries(secrets)) t.notOk(log.includes(secret), `the log does not hold ${what}`);

  const lines = log.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(lines.length, log.split('\n').filter((l) => l.trim() !== '').length, 'every line is JSON');
  const requests = lines.filter((l) => l.event === 'http.request');
  const send = requests.find((l) => l.route === '/api/v1/messages' && l.method === 'POST' && l.api === 'chat');
  t.match(send, { level: 'debug', org: Number, user: Number, status: 200, req_id: String }, 'a send is logged with its route, organization and user');
  t.match(requests.find((l) => l.route === '/api/v1/users/me'), { level: 'info', status: 401 }, 'a refused request is logged at info');
  t.match(requests.find((l) => l.route === '/compat/v1/publish/{nonce}'), { api: 'board', status: 404 }, 'a board request is logged by its route, not its path');
  t.match(requests.find((l) => l.route === null), { status: 404 }, 'a request with no route is logged without its path');
});
