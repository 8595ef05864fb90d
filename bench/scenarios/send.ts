/**
 * send: durable `POST /messages` (fsync always): 50 connections send in a closed loop
 * to a channel of 10 subscribers, each with a queue whose long-poll is re-parked as
 * soon as it completes. Reports messages/s and send latency; every message must reach
 * every subscriber's queue. Baseline: Redis SET with appendfsync always, 50 clients,
 * when redis-server is installed.
 */
import { apiRequest, createUsers, keepPolling, QueuePoller, registerQueues, subscribe } from '../api.js';
import { closePool, openPool, type Connection } from '../client.js';
import { closedLoop } from '../load.js';
import { ProcessCpuMeter } from '../proc.js';
import { startRedis, redisSetLoad } from '../redis.js';
import { newResult, noteClientCpu, Runs, sized, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { sleep } from '../stats.js';

const SUBSCRIBERS = 10;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

export const send: Scenario = {
  name: 'send',
  summary: 'durable POST /messages (fsync always), 50 senders, 10 subscribers polling: msgs/s and p99',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const senders = sized(opts, { smoke: 50, quick: 50, full: 50 }, (n) => n);
    const durationMs = windowMs(opts, { smoke: 1.5, quick: 5, full: 20 });
    const result = newResult('send', { senders, subscribers: SUBSCRIBERS, durationS: durationMs / 1000, runs: opts.runs, fsync: opts.remote ? 'remote' : opts.fsync ?? 'always' });
    const runs = new Runs();
    const target = await ctx.server({ fsync: 'always' });
    let pollConns: Connection[] = [];
    let sendConns: Connection[] = [];
    let polling = true;
    let received: number[] = [];
    const loops: Array<Promise<void>> = [];
    try {
      const setup = await openPool(target.endpoint, SUBSCRIBERS);
      const tag = `send-${Date.now().toString(36)}`;
      const users = await createUsers(setup, target.owner, SUBSCRIBERS, tag);
      await subscribe(setup[0], target.owner, tag, users.map((u) => u.user_id));
      const queues = await registerQueues(setup, users, SUBSCRIBERS);
      closePool(setup);
      pollConns = await openPool(target.endpoint, SUBSCRIBERS);
      received = queues.map(() => 0);
      queues.forEach((q, i) => {
        const poller = new QueuePoller(pollConns[i], q);
        const count = (events: Array<{ type: string }>): void => {
          for (const e of events) if (e.type === 'message') received[i]++;
        };
        loops.push(keepPolling(poller, count, () => polling));
      });
      sendConns = await openPool(target.endpoint, senders);
      const request = (i: number): string => apiRequest(sendConns[i], users[i % users.length], 'POST', '/api/v1/messages', { type: 'stream', to: tag, topic: `topic ${i % 5}`, content: CONTENT });
      let sent = 0;
      for (let run = 0; run <= opts.runs; run++) {
        const cpu = target.pid !== undefined ? new ProcessCpuMeter(target.pid) : null;
        const r = await closedLoop(sendConns, request, { durationMs: run === 0 ? Math.min(1000, durationMs) : durationMs });
        const serverCpu = cpu?.read() ?? NaN;
        if (r.errors > 0) throw new Error(`${r.errors} of ${r.requests} sends failed; first: ${r.firstError}`);
        sent += r.requests;
        ctx.log(`${run === 0 ? 'warm-up' : `run ${run}`}: ${r.rps.toFixed(0)} msg/s, p99 ${r.latency.p99.toFixed(1)} ms, server CPU ${(serverCpu * 100).toFixed(0)}%, client CPU ${(r.clientCpu * 100).toFixed(0)}%`);
        if (run === 0) continue;
        runs.add('parley.rps', r.rps);
        runs.add('parley.p50', r.latency.p50);
        runs.add('parley.p99', r.latency.p99);
        runs.add('parley.serverCpu', serverCpu * 100);
        runs.clientCpu(r.clientCpu, `run ${run}`);
      }
      // Every subscriber must see every message; give the pollers a bounded time to drain.
      for (let i = 0; i < 200 && received.some((c) => c < sent); i++) await sleep(50);
      const short = received.filter((c) => c !== sent);
      if (short.length > 0) throw new Error(`subscribers received ${received.join(',')} messages, expected ${sent} each`);
      result.notes.push(`all ${sent} messages reached all ${SUBSCRIBERS} subscriber queues`);
    } finally {
      polling = false;
      closePool(sendConns);
      closePool(pollConns);
      await Promise.allSettled(loops);
      await target.stop();
    }
    await redisBaseline(ctx, runs, senders, durationMs, result);
    const base = runs.all('redis.rps').length > 0;
    result.figures.push(
      runs.figure('parley.rps', 'messages/s', 'msg/s', base ? { baselineOf: 'redis.rps', baselineName: 'redis SET fsync always' } : {}),
      runs.figure('parley.p50', 'send latency p50', 'ms', base ? { baselineOf: 'redis.p50', baselineName: 'redis' } : {}),
      runs.figure('parley.p99', 'send latency p99', 'ms', base ? { baselineOf: 'redis.p99', baselineName: 'redis' } : {}),
    );
    if (target.pid !== undefined) result.figures.push(runs.figure('parley.serverCpu', 'server CPU', '%'));
    noteClientCpu(result, runs);
    return result;
  },
};

async function redisBaseline(ctx: ScenarioContext, runs: Runs, clients: number, durationMs: number, result: ScenarioResult): Promise<void> {
  const redis = await startRedis();
  if (!redis) {
    result.notes.push('baseline: redis-server not installed');
    return;
  }
  try {
    await redisSetLoad(redis.port, clients, Math.min(1000, durationMs), CONTENT);
    for (let run = 1; run <= ctx.opts.runs; run++) {
      const r = await redisSetLoad(redis.port, clients, durationMs, CONTENT);
      if (r.errors > 0) throw new Error(`redis: ${r.errors} SETs failed; first: ${r.firstError}`);
      runs.add('redis.rps', r.rps);
      runs.add('redis.p50', r.latency.p50);
      runs.add('redis.p99', r.latency.p99);
      ctx.log(`redis run ${run}: ${r.rps.toFixed(0)} SET/s, p99 ${r.latency.p99.toFixed(1)} ms`);
    }
  } finally {
    await redis.stop();
  }
}
