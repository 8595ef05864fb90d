/**
 * presence: `POST /users/me/presence` reports (`status=active&ping_only=true`, what
 * every client sends about once a minute), cycling over N users (10,000 at full
 * size), in requests per second, against Parley's own `poll` request (`GET /events`
 * `dont_block=true` on an empty queue) measured with the same client in the same run.
 * A report must cost no more than a poll: it writes no log record and no fsync.
 * Target: at least 0.8x the poll rate.
 */
import { apiRequest, createUsers, registerQueues, type Credentials } from '../api.js';
import { closePool, openPool, type Connection } from '../client.js';
import { ProcessCpuMeter } from '../proc.js';
import { newResult, noteClientCpu, Runs, sized, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { hrtime } from 'node:process';

const nowMs = (): number => Number(hrtime.bigint()) / 1e6;

/** A closed loop where connection `i` cycles through its own list of requests. */
async function cyclingLoop(conns: Connection[], requests: string[][], durationMs: number, maxRequests: number): Promise<{ rps: number; errors: number; firstError?: string; p99: number }> {
  const latencies: number[] = [];
  let done = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = nowMs();
  const end = start + durationMs;
  await Promise.all(conns.map(async (conn, i) => {
    const mine = requests[i];
    for (let k = 0; nowMs() < end && done < maxRequests; k++) {
      done++;
      const t0 = nowMs();
      const res = await conn.send(mine[k % mine.length]);
      latencies.push(nowMs() - t0);
      if (res.status !== 200) {
        errors++;
        firstError ??= `${res.status} ${res.body.toString().slice(0, 200)}`;
      }
    }
  }));
  const elapsed = (nowMs() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { rps: done / elapsed, errors, firstError, p99: latencies[Math.floor(latencies.length * 0.99)] ?? NaN };
}

export const presence: Scenario = {
  name: 'presence',
  summary: 'POST /users/me/presence ping_only from N users: requests/s vs Parley poll in the same run',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const users = sized(opts, { smoke: 40, quick: 1000, full: 10_000 }, (n) => n);
    const connections = Math.min(64, users);
    const durationMs = windowMs(opts, { smoke: 1, quick: 3, full: 10 });
    const warmupMs = opts.mode === 'smoke' ? 300 : 1000;
    const result = newResult('presence', { users, connections, durationS: durationMs / 1000, runs: opts.runs });
    const runs = new Runs();
    const target = await ctx.server();
    let conns: Connection[] = [];
    try {
      const setup = await openPool(target.endpoint, 8);
      const people: Credentials[] = await createUsers(setup, target.owner, users, 'presence');
      const queues = await registerQueues(setup, [target.owner], connections);
      closePool(setup);
      conns = await openPool(target.endpoint, connections);
      // Connection i reports for users i, i + C, i + 2C, ...: every user reports in turn.
      const pings = conns.map((conn, i) => people.filter((_, u) => u % connections === i).map((u) => apiRequest(conn, u, 'POST', '/api/v1/users/me/presence', { status: 'active', ping_only: true })));
      const polls = conns.map((conn, i) => [apiRequest(conn, queues[i].user, 'GET', '/api/v1/events', { queue_id: queues[i].queueId, last_event_id: -1, dont_block: true })]);
      const measure = async (requests: string[][], ms: number, key: string | null): Promise<void> => {
        const cpu = target.pid !== undefined ? new ProcessCpuMeter(target.pid) : null;
        const r = await cyclingLoop(conns, requests, ms, 20_000_000);
        const serverCpu = cpu?.read() ?? NaN;
        if (r.errors > 0) throw new Error(`${r.errors} requests failed; first: ${r.firstError}`);
        if (key === null) return;
        runs.add(`${key}.rps`, r.rps);
        runs.add(`${key}.p99`, r.p99);
        runs.add(`${key}.perCore`, r.rps / serverCpu);
        ctx.log(`${key}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms`);
      };
      await measure(pings, warmupMs, null);
      await measure(polls, warmupMs, null);
      for (let run = 0; run < opts.runs; run++) {
        await measure(pings, durationMs, 'presence');
        await measure(polls, durationMs, 'poll');
      }
    } finally {
      closePool(conns);
      await target.stop();
    }
    const rps = runs.figure('presence.rps', 'presence reports/s', 'req/s', { baselineOf: 'poll.rps', baselineName: 'Parley poll', target: '>= 0.8x poll' });
    rps.pass = rps.ratio! >= 0.8;
    result.figures.push(rps, runs.figure('presence.p99', 'latency p99', 'ms', { baselineOf: 'poll.p99', baselineName: 'Parley poll' }));
    if (target.pid !== undefined) result.figures.push(runs.figure('presence.perCore', 'reports per server CPU-second', 'req', { baselineOf: 'poll.perCore', baselineName: 'Parley poll' }));
    noteClientCpu(result, runs);
    return result;
  },
};
