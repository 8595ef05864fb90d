/**
 * send: durable `POST /messages` (fsync always): 50 connections send in a closed loop
 * to a channel of 10 subscribers, each with a queue whose long-poll is re-parked as
 * soon as it completes. Reports messages/s and send latency; every message must reach
 * every subscriber's queue. Baselines, measured in the same run with the same client:
 * - Redis SET with appendfsync always, 50 clients, when redis-server is installed;
 * - the raw uWS durable floor (bench/baseline_server.ts): the same requests and polls,
 *   answered by a server that only group-commits the bodies and hands each poll events
 *   of Parley's size, committing through the threadpool (as Parley does) and then on
 *   the event loop (as Redis does). It tells how much of the gap to Redis any Node and
 *   uWS server pays on this machine, and how much is Parley's own work.
 */
import { apiRequest, createUsers, keepPolling, QueuePoller, registerQueues, subscribe, type Credentials, type RegisteredQueue } from '../api.js';
import { startBaseline } from '../baselines.js';
import { closePool, openPool, type Connection, type Endpoint } from '../client.js';
import { closedLoop } from '../load.js';
import { ProcessCpuMeter } from '../proc.js';
import { startRedis, redisSetLoad } from '../redis.js';
import { newResult, noteClientCpu, noteDistributions, Runs, sized, skipBaseline, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { sleep } from '../stats.js';

const SUBSCRIBERS = 10;
/** How each server is named in the report's charts. */
const SERIES = { parley: 'Parley', floor: 'uWS floor, threadpool commit', floorLoop: 'uWS floor, commit on loop', redis: 'redis SET fsync always' } as const;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

/** A server under the send load: where it is, and its pid when it is local. */
interface SendTarget {
  key: 'parley' | 'floor' | 'floorLoop';
  endpoint: Endpoint;
  pid?: number;
}

/** What the subscribers saw over all runs against one server. */
interface Delivered {
  sent: number;
  /** Average bytes of poll reply (envelope included) per message event delivered. */
  eventBytes: number;
}

/**
 * Drives one server: the subscribers long-poll their queues while `senders` connections
 * send in a closed loop, one warm-up then `runs` measured windows. Throws unless every
 * subscriber received every message.
 */
async function drive(ctx: ScenarioContext, runs: Runs, target: SendTarget, users: Credentials[], queues: RegisteredQueue[], channel: string, senders: number, durationMs: number): Promise<Delivered> {
  let polling = true;
  const loops: Array<Promise<void>> = [];
  const received = queues.map(() => 0);
  let bodyBytes = 0;
  let pollConns: Connection[] = [];
  let sendConns: Connection[] = [];
  let sent = 0;
  try {
    pollConns = await openPool(target.endpoint, queues.length);
    queues.forEach((q, i) => {
      const count = (events: Array<{ type: string }>, res: { body: string }): void => {
        for (const e of events) if (e.type === 'message') received[i]++;
        bodyBytes += Buffer.byteLength(res.body);
      };
      loops.push(keepPolling(new QueuePoller(pollConns[i], q), count, () => polling));
    });
    sendConns = await openPool(target.endpoint, senders);
    const request = (i: number): string => apiRequest(sendConns[i], users[i % users.length], 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: `topic ${i % 5}`, content: CONTENT });
    const label = target.key === 'parley' ? '' : `${target.key} `;
    for (let run = 0; run <= ctx.opts.runs; run++) {
      const cpu = target.pid !== undefined ? new ProcessCpuMeter(target.pid) : null;
      const loopCpu = target.pid !== undefined ? new ProcessCpuMeter(target.pid, true) : null;
      const r = await closedLoop(sendConns, request, { durationMs: run === 0 ? Math.min(1000, durationMs) : durationMs });
      const serverCpu = cpu?.read() ?? NaN;
      const eventLoopCpu = loopCpu?.read() ?? NaN;
      if (r.errors > 0) throw new Error(`${label}${r.errors} of ${r.requests} sends failed; first: ${r.firstError}`);
      sent += r.requests;
      ctx.log(`${label}${run === 0 ? 'warm-up' : `run ${run}`}: ${r.rps.toFixed(0)} msg/s, p99 ${r.latency.p99.toFixed(1)} ms, server CPU ${(serverCpu * 100).toFixed(0)}% (event loop ${(eventLoopCpu * 100).toFixed(0)}%: ${((eventLoopCpu / r.rps) * 1e6).toFixed(1)} us per message), client CPU ${(r.clientCpu * 100).toFixed(0)}%`);
      if (run === 0) continue;
      runs.keep(SERIES[target.key], r.latency, r.perSecond);
      runs.add(`${target.key}.rps`, r.rps);
      runs.add(`${target.key}.p50`, r.latency.p50);
      runs.add(`${target.key}.p99`, r.latency.p99);
      runs.add(`${target.key}.serverCpu`, serverCpu * 100);
      // Per message: the event loop's CPU (the main thread) and the whole process's (threadpool and GC threads too).
      runs.add(`${target.key}.loopUs`, (eventLoopCpu / r.rps) * 1e6);
      runs.add(`${target.key}.cpuUs`, (serverCpu / r.rps) * 1e6);
      runs.clientCpu(r.clientCpu, `${target.key} run ${run}`);
    }
    // Every subscriber must see every message; give the pollers a bounded time to drain.
    for (let i = 0; i < 200 && received.some((c) => c < sent); i++) await sleep(50);
    if (received.some((c) => c !== sent)) throw new Error(`${label}subscribers received ${received.join(',')} messages, expected ${sent} each`);
  } finally {
    polling = false;
    closePool(sendConns);
    closePool(pollConns);
    await Promise.allSettled(loops);
  }
  return { sent, eventBytes: bodyBytes / Math.max(1, sent * queues.length) };
}

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
    let users: Credentials[];
    let queues: RegisteredQueue[];
    let delivered: Delivered;
    const channel = `send-${Date.now().toString(36)}`;
    try {
      const setup = await openPool(target.endpoint, SUBSCRIBERS);
      users = await createUsers(setup, target.owner, SUBSCRIBERS, channel);
      await subscribe(setup[0], target.owner, channel, users.map((u) => u.user_id));
      queues = await registerQueues(setup, users, SUBSCRIBERS);
      closePool(setup);
      delivered = await drive(ctx, runs, { key: 'parley', endpoint: target.endpoint, pid: target.pid }, users, queues, channel, senders, durationMs);
      result.notes.push(`all ${delivered.sent} messages reached all ${SUBSCRIBERS} subscriber queues (${delivered.eventBytes.toFixed(0)} bytes of poll reply per message event)`);
    } finally {
      await target.stop();
    }
    await redisBaseline(ctx, runs, senders, durationMs, result);
    // The floors decompose the cost of a server on this machine; a remote target runs elsewhere.
    if (opts.remote) for (const key of ['floor', 'floorLoop'] as const) skipBaseline(result, SERIES[key], 'the target is remote; the floors describe the machine the bench runs on');
    else for (const commit of ['threadpool', 'loop'] as const) await floorBaseline(ctx, runs, users, queues, channel, senders, durationMs, delivered.eventBytes, commit);
    const floors = runs.all('floor.rps').length > 0;
    const base = runs.all('redis.rps').length > 0;
    const rps = runs.figure('parley.rps', 'messages/s', 'msg/s', base ? { baselineOf: 'redis.rps', baselineName: SERIES.redis, target: '>= 0.5x baseline' } : {});
    if (base) rps.pass = rps.ratio! >= 0.5;
    const p99 = runs.figure('parley.p99', 'send latency p99', 'ms', { ...(base ? { baselineOf: 'redis.p99', baselineName: SERIES.redis } : {}), target: '<= 20 ms' });
    p99.pass = p99.value <= 20;
    result.figures.push(rps);
    if (floors) {
      result.figures.push(
        runs.figure('parley.rps', 'messages/s vs floor', 'msg/s', { baselineOf: 'floor.rps', baselineName: SERIES.floor }),
        runs.figure('parley.rps', 'messages/s vs floor', 'msg/s', { baselineOf: 'floorLoop.rps', baselineName: SERIES.floorLoop }),
      );
    }
    result.figures.push(runs.figure('parley.p50', 'send latency p50', 'ms', base ? { baselineOf: 'redis.p50', baselineName: SERIES.redis } : {}), p99);
    if (target.pid !== undefined) {
      const floor = floors ? { baselineOf: 'floor.serverCpu', baselineName: SERIES.floor } : {};
      result.figures.push(runs.figure('parley.serverCpu', 'server CPU', '%', floor));
      const loop = runs.figure('parley.loopUs', 'event-loop CPU per message', 'us', { ...(floors ? { baselineOf: 'floor.loopUs', baselineName: SERIES.floor } : {}), target: '<= 25 us' });
      loop.pass = loop.value <= 25;
      result.figures.push(loop, runs.figure('parley.cpuUs', 'server CPU per message', 'us', floors ? { baselineOf: 'floor.cpuUs', baselineName: SERIES.floor } : {}));
    }
    noteClientCpu(result, runs);
    noteDistributions(result, runs);
    return result;
  },
};

/** The raw uWS durable floor, sent the same requests and polls as Parley. */
async function floorBaseline(ctx: ScenarioContext, runs: Runs, users: Credentials[], queues: RegisteredQueue[], channel: string, senders: number, durationMs: number, eventBytes: number, commit: 'threadpool' | 'loop'): Promise<void> {
  const floor = await startBaseline();
  try {
    const [control] = await openPool(floor.endpoint, 1);
    await control.request('GET', `/floor?event_bytes=${Math.round(eventBytes)}&commit=${commit}`);
    control.close();
    const fresh = queues.map((q) => ({ ...q, lastEventId: -1 }));
    await drive(ctx, runs, { key: commit === 'loop' ? 'floorLoop' : 'floor', endpoint: floor.endpoint, pid: floor.pid }, users, fresh, channel, senders, durationMs);
  } finally {
    await floor.stop();
  }
}

async function redisBaseline(ctx: ScenarioContext, runs: Runs, clients: number, durationMs: number, result: ScenarioResult): Promise<void> {
  const redis = await startRedis();
  if (!redis) {
    skipBaseline(result, SERIES.redis, 'redis-server is not installed (npm run bench:setup installs it)');
    return;
  }
  try {
    await redisSetLoad(redis.port, clients, Math.min(1000, durationMs), CONTENT);
    for (let run = 1; run <= ctx.opts.runs; run++) {
      const r = await redisSetLoad(redis.port, clients, durationMs, CONTENT);
      if (r.errors > 0) throw new Error(`redis: ${r.errors} SETs failed; first: ${r.firstError}`);
      runs.keep(SERIES.redis, r.latency, r.perSecond);
      runs.add('redis.rps', r.rps);
      runs.add('redis.p50', r.latency.p50);
      runs.add('redis.p99', r.latency.p99);
      ctx.log(`redis run ${run}: ${r.rps.toFixed(0)} SET/s, p99 ${r.latency.p99.toFixed(1)} ms`);
    }
  } finally {
    await redis.stop();
  }
}
