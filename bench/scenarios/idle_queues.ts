/**
 * idle-queues: the memory an idle event queue costs. Registers K queues (no polls) on
 * a fresh server and reads the server's resident memory from /proc/<pid>/status before
 * and after; the heap comes from the bench probe preloaded into the server, after a
 * full GC. Target: at most 4 KiB of RSS per queue.
 */
import { registerQueues } from '../api.js';
import { closePool, openPool } from '../client.js';
import { rssKiB } from '../proc.js';
import { newResult, Runs, sized, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { nowMs, sleep } from '../stats.js';
import type { Target } from '../target.js';

const WARM_UP_QUEUES = 500;

/** Reads RSS (KiB, from /proc) and heap (KiB, after GC) of a local server. */
async function memory(target: Target): Promise<{ rss: number; heap: number }> {
  const probe = await target.probe!();
  await sleep(200);
  return { rss: rssKiB(target.pid!), heap: probe.heapUsed / 1024 };
}

export const idleQueues: Scenario = {
  name: 'idle-queues',
  summary: 'register K queues, then server RSS and heap per queue (target <= 4 KiB RSS)',
  remote: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const k = sized(opts, { smoke: 1000, quick: 10000, full: 100000 }, (n) => n);
    const result = newResult('idle-queues', { queues: k, runs: opts.runs });
    if (opts.mode !== 'full' && opts.n === undefined) result.notes.push(`${opts.mode} mode: K=${k} (full: 100000)`);
    result.notes.push('each run on a fresh server; RSS from /proc, heap from the preloaded bench probe after a full GC');
    const runs = new Runs();
    for (let run = 1; run <= opts.runs; run++) {
      const target = await ctx.server();
      const conns = await openPool(target.endpoint, 16);
      try {
        // Warm up the register path (JIT, first allocations) before the "before" reading.
        await registerQueues(conns, [target.owner], WARM_UP_QUEUES);
        const before = await memory(target);
        const start = nowMs();
        await registerQueues(conns, [target.owner], k);
        const rate = k / ((nowMs() - start) / 1000);
        const after = await memory(target);
        const rssPer = (after.rss - before.rss) / k;
        const heapPer = (after.heap - before.heap) / k;
        runs.add('rss', rssPer);
        runs.add('heap', heapPer);
        runs.add('rate', rate);
        runs.add('rssTotal', after.rss / 1024);
        ctx.log(`run ${run}: ${k} queues, RSS +${((after.rss - before.rss) / 1024).toFixed(1)} MiB (${rssPer.toFixed(2)} KiB/queue), heap ${heapPer.toFixed(2)} KiB/queue, ${rate.toFixed(0)} registers/s`);
      } finally {
        closePool(conns);
        await target.stop();
      }
    }
    const rss = runs.figure('rss', `RSS per queue K=${k}`, 'KiB', { target: '<= 4 KiB' });
    rss.pass = rss.value <= 4;
    result.figures.push(
      rss,
      runs.figure('heap', `heap per queue K=${k}`, 'KiB'),
      runs.figure('rssTotal', 'server RSS after', 'MiB'),
      runs.figure('rate', 'POST /register rate', 'reg/s'),
    );
    return result;
  },
};
