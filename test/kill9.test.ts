/**
 * The durability promise, tested the hard way: a real server process takes concurrent
 * writes and is SIGKILLed at a random moment; after a restart every acknowledged write
 * is there and the state is consistent. Several seeded rounds; the seed is printed.
 */
import t from 'tap';
import { prng } from './prng.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processApi as api, startServerProcess, type ServerProcess } from './server_process.js';

const seed = Number(process.env.PARLEY_KILL9_SEED ?? Date.now() % 100000);
const ROUNDS = 3;

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test(`kill -9 at random moments never loses an acknowledged write (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_KILL9_SEED=${seed}`);
  const random = prng(seed);
  const dir = mkdtempSync(join(tmpdir(), 'parley-kill9-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', PARLEY_SNAPSHOT_EVERY_RECORDS: '40', PARLEY_SNAPSHOT_GROWTH_PERCENT: '0', PARLEY_SEGMENT_BYTES: '16384' };
  let server: ServerProcess = await startServerProcess(env);
  await waitFor(() => /API key:\s+\S+/.test(server.stdout()), 10000);
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  const auth = 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
  const created = await api(server.base, auth, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'general' }, { name: 'ops' }]) });
  t.equal(created.status, 200);
  const acked = new Map<number, string>();
  const ackedStars = new Set<number>();
  let counter = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let killed = false;
    const writer = async (w: number): Promise<void> => {
      while (!killed) {
        const content = `round ${round} writer ${w} n ${counter++}`;
        const channel = w % 2 === 0 ? 'general' : 'ops';
        try {
          const res = await api(server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: `t${w}`, content });
          if (res.status === 200) {
            acked.set(res.json.id, content);
            if (res.json.id % 5 === 0) {
              const star = await api(server.base, auth, 'POST', '/api/v1/messages/flags', { messages: JSON.stringify([res.json.id]), op: 'add', flag: 'starred' });
              if (star.status === 200) ackedStars.add(res.json.id);
            }
          }
        } catch {
          // The server died mid-request: this write was never acknowledged.
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    await new Promise((r) => setTimeout(r, 150 + Math.floor(random() * 600)));
    server.child.kill('SIGKILL');
    await server.exited;
    killed = true;
    await Promise.all(writers);
    server = await startServerProcess(env);
    for (const [id, content] of acked) {
      const res = await api(server.base, auth, 'GET', `/api/v1/messages/${id}`, { apply_markdown: 'false' });
      if (res.status !== 200 || res.json.message.content !== content) {
        t.fail(`acknowledged message ${id} lost or changed after round ${round}: ${JSON.stringify(res.json)}`);
        return;
      }
      if (ackedStars.has(id) && !res.json.message.flags.includes('starred')) {
        t.fail(`acknowledged star on ${id} lost after round ${round}`);
        return;
      }
    }
    t.pass(`round ${round}: all ${acked.size} acknowledged messages present`);
    // Consistency: history reads back in strictly increasing id order with no duplicates.
    const all = await api(server.base, auth, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: '0', num_after: '5000', apply_markdown: 'false' });
    const ids: number[] = all.json.messages.map((m: any) => m.id);
    t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), 'ids strictly increase');
    t.ok(ids.length >= acked.size, 'nothing acknowledged is missing from history');
    // New writes get fresh ids after recovery.
    const after = await api(server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'x', content: `after round ${round}` });
    t.equal(after.status, 200);
    t.ok(after.json.id > Math.max(0, ...ids), 'ids continue after the recovered maximum');
    acked.set(after.json.id, `after round ${round}`);
  }
  server.child.kill('SIGTERM');
  const exit = await server.exited;
  t.equal(exit.code, 0, 'a graceful shutdown exits 0');
});
