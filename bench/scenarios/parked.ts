/**
 * parked: N long-polls parked at once (re-parked whenever one completes, e.g. on a
 * heartbeat), while a probe on another connection times `GET /events dont_block=true`
 * on its own queue every few milliseconds. The probe's latency is the event-loop lag a
 * client sees. Compared with the same probe on the same server before anything was
 * registered. Target: probe p99 <= 50 ms. Large N spreads over several source addresses
 * and is capped by the open-file limits of the client and the server.
 */
import { keepPolling, QueuePoller, registerQueues, type RegisteredQueue } from '../api.js';
import { closePool, openPool, type Connection } from '../client.js';
import { openFileLimit } from '../proc.js';
import { newResult, noteClientCpu, noteDistributions, Runs, sized, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { CpuMeter, nowMs, sleep, summarize, type Summary } from '../stats.js';
import type { Target } from '../target.js';

const PROBE_INTERVAL_MS = 5;
/** The baseline: the same probe on the same server before any queue existed. */
const IDLE = 'same probe, 0 queues';
/** File descriptors kept free for everything that is not a parked poll. */
const FD_MARGIN = 300;

/** Times dont_block polls on one queue for `ms`; each latency is the lag a client saw. */
async function probeLag(poller: QueuePoller, ms: number): Promise<Summary> {
  const samples: number[] = [];
  const end = nowMs() + ms;
  for (let i = 0; i < 1_000_000 && nowMs() < end; i++) {
    const res = await poller.poll(true);
    poller.accept(res);
    samples.push(res.doneAt - res.sentAt);
    await sleep(PROBE_INTERVAL_MS);
  }
  return summarize(samples);
}

/** The largest N the open-file limits allow, with the reason when they cut it. */
function capByFileLimits(n: number, target: Target): { n: number; note?: string } {
  const client = openFileLimit('self');
  const server = target.pid !== undefined ? openFileLimit(target.pid) : Infinity;
  const cap = Math.min(client, server) - FD_MARGIN;
  if (n <= cap) return { n };
  return { n: cap, note: `N capped from ${n} to ${cap} by the open-file limit (client ${client}, server ${server}); raise ulimit -n to go further` };
}

export const parked: Scenario = {
  name: 'parked',
  summary: 'N parked polls; event-loop lag seen by a dont_block probe (target p99 <= 50 ms)',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const wanted = sized(opts, { smoke: 500, quick: 5000, full: 50000 }, (n) => n);
    const durationMs = windowMs(opts, { smoke: 2, quick: 11, full: 30 });
    const target = await ctx.server();
    const { n, note } = capByFileLimits(wanted, target);
    const result = newResult('parked', { n, requested: wanted, durationS: durationMs / 1000, runs: opts.runs, probeIntervalMs: PROBE_INTERVAL_MS });
    if (note) result.notes.push(note);
    if (opts.mode !== 'full' && opts.n === undefined) result.notes.push(`${opts.mode} mode: N=${n} (full: 50000)`);
    if (durationMs < 11000) result.notes.push('window shorter than the 10 s idle sweep: a sweep may fall outside it');
    const runs = new Runs();
    let conns: Connection[] = [];
    const setup = await openPool(target.endpoint, 16);
    let polling = true;
    const loops: Array<Promise<void>> = [];
    try {
      const [probeQueue] = await registerQueues(setup, [target.owner], 1);
      const probe = new QueuePoller(setup[0], probeQueue);
      await probeLag(probe, 500);
      const idle = await probeLag(probe, Math.min(3000, durationMs));
      const empty = await target.probe?.();
      // Memory per parked poll is a slope: readings with the first half of the N queues and
      // polls in place, then with all of them. The first half absorbs what a burst of requests
      // costs once whatever comes after it (V8's young generation touched to its working size,
      // tables grown): about 15 MiB of RSS that, divided by N, read as 1 KiB per poll.
      const half = Math.floor(n / 2);
      const queues: RegisteredQueue[] = await registerQueues(setup, [target.owner], half);
      // Each connection parks its poll as soon as it is open: uWS closes a connection idle for 10 s.
      const park = async (from: RegisteredQueue[]): Promise<Connection[]> =>
        openPool(target.endpoint, from.length, { sources: opts.sources, onOpen: (conn, i) => loops.push(keepPolling(new QueuePoller(conn, from[i]), () => undefined, () => polling)) });
      conns = await park(queues);
      await sleep(Math.max(200, half / 20));
      const firstHalf = await target.probe?.();
      const rest = await registerQueues(setup, [target.owner], n - half);
      queues.push(...rest);
      const unparked = await target.probe?.();
      conns.push(...(await park(rest)));
      // The probe's first connection sat idle while the pool opened, long enough at large N for uWS to close it.
      probe.conn = (await openPool(target.endpoint, 1))[0];
      setup.push(probe.conn);
      await sleep(Math.max(200, (n - half) / 20));
      const held = await target.probe?.();
      const added = n - half;
      if (firstHalf && unparked && held) {
        // What parking costs the server beyond the registered queues: connection, request and waiter state.
        runs.add('heap', (held.heapUsed - unparked.heapUsed) / added / 1024);
        runs.add('rss', (held.rss - unparked.rss) / added / 1024);
        // The whole cost: the queue too.
        runs.add('heapAll', (held.heapUsed - firstHalf.heapUsed) / added / 1024);
        runs.add('rssAll', (held.rss - firstHalf.rss) / added / 1024);
        result.memory = [firstHalf, held].map((r, i) => ({ series: 'parked polls', n: i === 0 ? half : n, heapMiB: r.heapUsed / 2 ** 20, rssMiB: r.rss / 2 ** 20 }));
      }
      ctx.log(`${n} polls parked; idle probe p99 was ${idle.p99.toFixed(2)} ms`);
      const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
      for (const [name, r] of [['no queues', empty], [`${half} queues and polls`, firstHalf], [`${n} queues, ${half} polls`, unparked], [`${n} queues and polls`, held]] as const) {
        if (r) ctx.log(`server memory, ${name}: heap used ${mib(r.heapUsed)} of ${mib(r.heapTotal)} MiB, external ${mib(r.external)} MiB, RSS ${mib(r.rss)} MiB`);
      }
      runs.keep(IDLE, idle);
      await probeLag(probe, 500);
      for (let run = 1; run <= opts.runs; run++) {
        await target.probe?.();
        const cpu = new CpuMeter();
        const lag = await probeLag(probe, durationMs);
        const inside = await target.probe?.();
        runs.clientCpu(cpu.read(), `run ${run}`);
        runs.keep(`Parley, ${n} parked`, lag);
        runs.add('p50', lag.p50);
        runs.add('p99', lag.p99);
        runs.add('max', lag.max);
        runs.add('idle.p50', idle.p50);
        runs.add('idle.p99', idle.p99);
        runs.add('idle.max', idle.max);
        if (inside) {
          runs.add('eld.p99', inside.loop.p99);
          runs.add('eld.max', inside.loop.max);
        }
        ctx.log(`run ${run}: probe p50 ${lag.p50.toFixed(2)} p99 ${lag.p99.toFixed(2)} max ${lag.max.toFixed(1)} ms${inside ? `; in-server loop delay p99 ${inside.loop.p99} max ${inside.loop.max} ms` : ''}`);
      }
    } finally {
      polling = false;
      closePool(conns);
      closePool(setup);
      await Promise.allSettled(loops);
      await target.stop();
    }
    const vs = { baselineName: IDLE };
    const p99 = runs.figure('p99', `lag p99 N=${n}`, 'ms', { ...vs, baselineOf: 'idle.p99', target: '<= 50 ms' });
    p99.pass = p99.value <= 50;
    result.figures.push(runs.figure('p50', `lag p50 N=${n}`, 'ms', { ...vs, baselineOf: 'idle.p50' }), p99, runs.figure('max', `lag max N=${n}`, 'ms', { ...vs, baselineOf: 'idle.max' }));
    if (runs.all('heap').length > 0) {
      result.figures.push(runs.figure('heap', `heap per parked poll N=${n}`, 'KiB'), runs.figure('rss', `RSS per parked poll N=${n}`, 'KiB'));
      result.notes.push('per parked poll: the slope over the second half of the N polls: the server\'s heap (after a full GC) and RSS with every poll parked, less the same with every queue registered and only the first half parked, per poll of the second half');
    }
    if (runs.all('rssAll').length > 0) {
      result.figures.push(runs.figure('heapAll', `heap per parked poll with its queue N=${n}`, 'KiB'), runs.figure('rssAll', `RSS per parked poll with its queue N=${n}`, 'KiB'));
      result.notes.push('with its queue: every queue and poll in place, less the first half of both, per queue and poll of the second half');
    }
    if (runs.all('eld.p99').length > 0) {
      result.figures.push(runs.figure('eld.p99', 'in-server loop delay p99', 'ms'), runs.figure('eld.max', 'in-server loop delay max', 'ms'));
    }
    noteClientCpu(result, runs);
    noteDistributions(result, runs);
    return result;
  },
};
