/**
 * Scheduled delivery through `kill -9` of a real server: each round schedules
 * messages due in a second or two and SIGKILLs the server around their due time
 * (seeded), or before it, leaving the time to pass while the server is down. After
 * the restart every scheduled message has been delivered exactly once: none lost,
 * none twice, and none left pending.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prng } from './prng.js';
import { processApi as api, startServerProcess, type ServerProcess } from './server_process.js';

const seed = Number(process.env.PARLEY_KILL9_SEED ?? Date.now() % 100000);
const ROUNDS = 4;
const PER_ROUND = 6;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function waitFor(cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(50);
  }
}

t.test(`scheduled messages are delivered exactly once across kill -9 (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_KILL9_SEED=${seed}`);
  const random = prng(seed);
  const dir = mkdtempSync(join(tmpdir(), 'parley-scheduled-kill9-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', PARLEY_SNAPSHOT_EVERY_RECORDS: '30', PARLEY_SNAPSHOT_GROWTH_PERCENT: '0' };
  let server: ServerProcess = await startServerProcess(env);
  await waitFor(() => /API key:\s+\S+/.test(server.stdout()), 10000);
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  const auth = 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
  t.equal((await api(server.base, auth, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'later' }]) })).status, 200);
  const channel = String((await api(server.base, auth, 'GET', '/api/v1/get_stream_id', { stream: 'later' })).json.stream_id);
  const expected: string[] = [];

  for (let round = 0; round < ROUNDS; round++) {
    const due = Math.floor(Date.now() / 1000) + 2;
    for (let i = 0; i < PER_ROUND; i++) {
      const content = `round ${round} message ${i}`;
      const res = await api(server.base, auth, 'POST', '/api/v1/scheduled_messages', {
        type: 'stream', to: channel, topic: `r${round}`, content, scheduled_delivery_timestamp: String(due + (i % 2)),
      });
      if (res.status !== 200) throw new Error(`schedule failed: ${JSON.stringify(res.json)}`);
      expected.push(content);
    }
    // Even rounds: killed around the due time, while deliveries are being decided and
    // written. Odd rounds: killed before it, so the time passes while the server is down.
    const killAt = round % 2 === 0 ? due * 1000 + Math.floor(random() * 1600) - 300 : Date.now() + Math.floor(random() * 200);
    await sleep(killAt - Date.now());
    server.child.kill('SIGKILL');
    await server.exited;
    if (round % 2 === 1) await sleep(due * 1000 + 2000 - Date.now());
    server = await startServerProcess(env);
    // Everything due is delivered at start, or at its time.
    await waitFor(async () => (await api(server.base, auth, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages.length === 0, 15000);
  }

  const got = await api(server.base, auth, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: '1000', num_after: '0', narrow: JSON.stringify([{ operator: 'channel', operand: 'later' }]) });
  t.equal(got.status, 200);
  const contents: string[] = got.json.messages.map((m: { content: string }) => m.content.replace(/^<p>|<\/p>$/g, ''));
  const counts = new Map<string, number>();
  for (const c of contents) counts.set(c, (counts.get(c) ?? 0) + 1);
  t.same([...counts.values()].filter((n) => n !== 1), [], 'no message delivered twice');
  t.same([...expected].sort(), [...counts.keys()].sort(), 'every scheduled message delivered');
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});
