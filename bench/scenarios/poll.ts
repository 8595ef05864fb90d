/**
 * poll: the cost of one `GET /events?dont_block=true` on an empty queue (the request
 * every idle client repeats), in requests per second, against a raw uWS hello-world
 * measured with the same client in the same run. Target: at least 0.5x the baseline.
 */
import { apiRequest, basicAuth, registerQueues } from '../api.js';
import { startBaseline } from '../baselines.js';
import { closePool, encodeRequest, openPool, type Connection, type Endpoint } from '../client.js';
import { closedLoop } from '../load.js';
import { ProcessCpuMeter } from '../proc.js';
import { newResult, noteClientCpu, noteDistributions, Runs, sized, skipBaseline, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { findWrk, runWrk } from '../wrk.js';

/** How each server is named in the report's charts. */
const SERIES = { parley: 'Parley', baseline: 'uWS hello-world' } as const;

export const poll: Scenario = {
  name: 'poll',
  summary: 'GET /events dont_block=true on an empty queue: requests/s vs raw uWS hello-world',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const connections = sized(opts, { smoke: 16, quick: 64, full: 128 }, (n) => n);
    const durationMs = windowMs(opts, { smoke: 1, quick: 3, full: 10 });
    const warmupMs = opts.mode === 'smoke' ? 300 : 1000;
    const wrk = findWrk();
    const result = newResult('poll', { connections, durationS: durationMs / 1000, runs: opts.runs, client: wrk ? 'wrk' : 'bench client (no pipelining)' });
    if (wrk) result.notes.push('measured with wrk: its latency distribution has p50/p75/p90/p99/max, and no requests per second of the window (no throughput chart)');
    else skipBaseline(result, 'wrk (load generator)', 'wrk is not installed (npm run bench:setup installs it): measured with the bench client, one request in flight per connection');
    const runs = new Runs();
    const target = await ctx.server();
    const baseline = await startBaseline();
    let conns: Connection[] = [];
    try {
      const setup = await openPool(target.endpoint, Math.min(connections, 8));
      const queues = await registerQueues(setup, [target.owner], connections);
      closePool(setup);
      const parleyRequest = (i: number): string => apiRequest(conns[i], queues[i].user, 'GET', '/api/v1/events', { queue_id: queues[i].queueId, last_event_id: -1, dont_block: true });
      const helloRequest = (i: number): string => encodeRequest(conns[i].endpoint, 'GET', '/hello', {});
      const measure = async (endpoint: Endpoint, request: (i: number) => string, ms: number, key: keyof typeof SERIES | null, pid?: number): Promise<void> => {
        conns = await openPool(endpoint, connections);
        const server = pid !== undefined ? new ProcessCpuMeter(pid) : null;
        const r = await closedLoop(conns, request, { durationMs: ms });
        const serverCpu = server?.read() ?? NaN;
        closePool(conns);
        if (r.errors > 0) throw new Error(`${r.errors} of ${r.requests} requests failed; first: ${r.firstError}`);
        if (key === null) return;
        runs.keep(SERIES[key], r.latency, r.perSecond);
        runs.add(`${key}.rps`, r.rps);
        runs.add(`${key}.p99`, r.latency.p99);
        runs.add(`${key}.serverCpu`, serverCpu * 100);
        runs.add(`${key}.perCore`, r.rps / serverCpu);
        runs.clientCpu(r.clientCpu, key === 'parley' ? 'Parley' : 'uWS hello-world');
        ctx.log(`${key}: ${r.rps.toFixed(0)} req/s, p99 ${r.latency.p99.toFixed(2)} ms, client CPU ${(r.clientCpu * 100).toFixed(0)}%`);
      };
      const measureWrk = async (endpoint: Endpoint, path: string, headers: Record<string, string>, key: keyof typeof SERIES): Promise<void> => {
        const r = await runWrk(wrk!, `http://${endpoint.hostHeader}${path}`, headers, connections, durationMs / 1000);
        runs.keep(SERIES[key], r.percentiles);
        runs.add(`${key}.rps`, r.rps);
        runs.add(`${key}.p99`, r.p99Ms);
      };
      await measure(target.endpoint, parleyRequest, warmupMs, null);
      await measure(baseline.endpoint, helloRequest, warmupMs, null);
      for (let run = 0; run < opts.runs; run++) {
        if (wrk) {
          const q = queues[0];
          await measureWrk(target.endpoint, `/api/v1/events?queue_id=${q.queueId}&last_event_id=-1&dont_block=true`, { Authorization: basicAuth(q.user) }, 'parley');
          await measureWrk(baseline.endpoint, '/hello', {}, 'baseline');
        } else {
          await measure(target.endpoint, parleyRequest, durationMs, 'parley', target.pid);
          await measure(baseline.endpoint, helloRequest, durationMs, 'baseline', baseline.pid);
        }
      }
    } finally {
      closePool(conns);
      await baseline.stop();
      await target.stop();
    }
    const rps = runs.figure('parley.rps', 'requests/s', 'req/s', { baselineOf: 'baseline.rps', baselineName: 'uWS hello-world', target: '>= 0.5x baseline' });
    rps.pass = rps.ratio! >= 0.5;
    result.figures.push(rps, runs.figure('parley.p99', 'latency p99', 'ms', { baselineOf: 'baseline.p99', baselineName: 'uWS hello-world' }));
    if (!wrk && target.pid !== undefined) {
      // Requests per second of server CPU: fair even when the client, not the server, set the pace.
      result.figures.push(
        runs.figure('parley.serverCpu', 'server CPU', '%', { baselineOf: 'baseline.serverCpu', baselineName: SERIES.baseline }),
        runs.figure('parley.perCore', 'requests per server CPU-second', 'req', { baselineOf: 'baseline.perCore', baselineName: 'uWS hello-world' }),
      );
    }
    noteClientCpu(result, runs);
    noteDistributions(result, runs);
    if (result.clientBound && result.clientCpuWhere === 'uWS hello-world') result.notes.push('the client was near 100% of a core: the baseline req/s is a lower bound, so the ratio flatters Parley');
    return result;
  },
};
