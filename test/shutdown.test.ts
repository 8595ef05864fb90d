/**
 * Graceful shutdown: on SIGTERM the server stops accepting, completes parked polls,
 * flushes the log, writes a final snapshot and exits 0.
 */
import t from 'tap';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedFetch, parkedPolls, startServerProcess } from './server_process.js';

t.test('SIGTERM completes parked polls, snapshots, and exits 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-shutdown-'));
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always' });
  const end = Date.now() + 10000;
  while (!/API key:\s+\S+/.test(server.stdout()) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  const auth = 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
  const reg = (await (await checkedFetch(`${server.base}/api/v1/register`, { method: "POST", headers: { authorization: auth } })).json()) as { queue_id: string };
  const parked = checkedFetch(`${server.base}/api/v1/events?queue_id=${reg.queue_id}&last_event_id=-1`, { headers: { authorization: auth }, signal: AbortSignal.timeout(15000) });
  await parkedPolls(server.base);
  server.child.kill('SIGTERM');
  const res = await parked;
  t.equal(res.status, 200, 'the parked poll was completed, not dropped');
  t.same(((await res.json()) as { events: unknown[] }).events, []);
  const exit = await server.exited;
  t.equal(exit.code, 0);
  t.ok(readdirSync(dir).some((n) => n.endsWith('.psnap')), 'a final snapshot was written');
  t.notOk(readdirSync(dir).includes('parley.pid'), 'the data directory lock was released');
  t.match(server.stderr(), /final snapshot/);
});
