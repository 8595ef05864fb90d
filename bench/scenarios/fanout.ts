/**
 * fanout: one channel message to N parked `GET /events`, all delivered. Latency runs
 * from just before the `POST /messages` is written to the moment each poll's response
 * is fully read; p50/p99/max over the N deliveries. The baseline is a raw uWS server
 * holding N responses and completing them all from one setImmediate, corked. Both
 * servers get the same bytes: the baseline's polls are the very `GET /api/v1/events`
 * requests Parley's were (query, Authorization header), and its replies have the size
 * of Parley's. Targets: N=5000 max <= 1.5x baseline; N=15000 max <= 300 ms.
 */
import { apiRequest, createUsers, expectSuccess, QueuePoller, registerQueues, subscribe, type Credentials, type RegisteredQueue } from '../api.js';
import { baselineParked, startBaseline } from '../baselines.js';
import { closePool, openPool, type Connection, type HttpResponse } from '../client.js';
import { newResult, noteClientCpu, noteDistributions, Runs, within, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { CpuMeter, nowMs, sleep, summarize } from '../stats.js';

/** Heartbeats far beyond any round, so that no poll completes on its own. */
const NO_HEARTBEAT = { PARLEY_HEARTBEAT_MIN_MS: '3600000', PARLEY_HEARTBEAT_MAX_MS: '3600000' };

function sizes(ctx: ScenarioContext): number[] {
  if (ctx.opts.n !== undefined) return [ctx.opts.n];
  return { smoke: [200], quick: [1000, 5000], full: [5000, 15000] }[ctx.opts.mode];
}

/** Longest a round may wait for every delivery. */
function deadline(n: number): number {
  return 30000 + n * 2;
}

/** The server's count of parked polls (`parley_parked_polls` in `GET /metrics`), or undefined where its metrics cannot be read. */
async function parkedPolls(conn: Connection): Promise<number | undefined> {
  const res = await conn.request('GET', '/metrics');
  const m = res.status === 200 ? /^parley_parked_polls (\d+)$/m.exec(res.body) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * Waits until every poll written so far has reached the server and parked, as the
 * baseline's round waits for its own count: a round measures one message to N parked
 * polls, not a server still reading the previous round's polls. A server whose metrics
 * cannot be read (a remote one behind a token, or on its own port) gets a pause instead.
 */
async function settle(conn: Connection, who: Credentials, n: number): Promise<void> {
  await conn.send(apiRequest(conn, who, 'GET', '/api/v1/users/me'));
  const until = Date.now() + deadline(n);
  for (;;) {
    const parked = await parkedPolls(conn);
    if (parked === undefined) return sleep(Math.max(50, n / 50));
    if (parked >= n) return;
    if (Date.now() > until) throw new Error(`only ${parked} of ${n} polls parked on the server`);
    await sleep(5);
  }
}

interface RoundSample {
  latencies: number[];
  ackMs: number;
  bytes: number;
  clientCpu: number;
}

function record(runs: Runs, key: string, s: RoundSample, where: string): void {
  const sum = summarize(s.latencies);
  runs.keep(where, sum);
  runs.add(`${key}.min`, sum.min);
  runs.add(`${key}.p50`, sum.p50);
  runs.add(`${key}.p99`, sum.p99);
  runs.add(`${key}.max`, sum.max);
  runs.add(`${key}.ack`, s.ackMs);
  runs.add(`${key}.bytes`, s.bytes);
  runs.clientCpu(s.clientCpu, where);
}

/** One round on Parley: park every poller, send one message, check and time each delivery. */
async function parleyRound(pollers: QueuePoller[], control: Connection, owner: Credentials, channel: string, round: number): Promise<RoundSample> {
  const parked = pollers.map((p) => p.poll());
  await settle(control, owner, pollers.length);
  const cpu = new CpuMeter();
  const t0 = nowMs();
  const sent = control.send(apiRequest(control, owner, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: 'fanout', content: `round ${round}` }));
  sent.catch(() => undefined); // awaited below, unless the deliveries fail first
  const responses = await within(Promise.all(parked), deadline(pollers.length), `${pollers.length} deliveries`);
  const clientCpu = cpu.read();
  const ack = await sent;
  const messageId = expectSuccess(ack, 'POST /messages').id as number;
  let bytes = 0;
  responses.forEach((res, i) => {
    const events = pollers[i].accept(res);
    if (events.length !== 1 || events[0].type !== 'message' || events[0].message?.id !== messageId) {
      throw new Error(`queue ${pollers[i].queue.queueId} got ${JSON.stringify(events).slice(0, 300)} instead of message ${messageId}`);
    }
    bytes += Buffer.byteLength(res.body);
  });
  return { latencies: responses.map((r) => r.doneAt - t0), ackMs: ack.doneAt - t0, bytes: bytes / responses.length, clientCpu };
}

/** One round on the raw uWS baseline, delivering bodies of `bytes` bytes. */
async function baselineRound(pollers: QueuePoller[], control: Connection, bytes: number): Promise<RoundSample> {
  const parked: Array<Promise<HttpResponse>> = pollers.map((p) => p.poll());
  const conns = pollers.map((p) => p.conn);
  const until = Date.now() + deadline(conns.length);
  while ((await baselineParked(control)) < conns.length) {
    if (Date.now() > until) throw new Error('the baseline never held every poll');
    await sleep(10);
  }
  const cpu = new CpuMeter();
  const t0 = nowMs();
  const ack = control.request('GET', `/trigger?bytes=${Math.round(bytes)}`);
  ack.catch(() => undefined); // awaited below, unless the deliveries fail first
  const responses = await within(Promise.all(parked), deadline(conns.length), `${conns.length} baseline deliveries`);
  const clientCpu = cpu.read();
  return { latencies: responses.map((r) => r.doneAt - t0), ackMs: (await ack).doneAt - t0, bytes, clientCpu };
}

/** Measures Parley; returns its median reply size and the queues its polls used. */
async function measureParley(ctx: ScenarioContext, runs: Runs, n: number, key: string): Promise<{ bytes: number; queues: RegisteredQueue[] }> {
  const target = await ctx.server({ env: NO_HEARTBEAT });
  let conns: Connection[] = [];
  const setup = await openPool(target.endpoint, 16);
  try {
    const tag = `fanout-${n}-${Date.now().toString(36)}`;
    const users = await createUsers(setup, target.owner, Math.min(16, Math.ceil(n / 1000) + 1), tag);
    await subscribe(setup[0], target.owner, tag, users.map((u) => u.user_id));
    const queues = await registerQueues(setup, users, n);
    conns = await openPool(target.endpoint, n, { sources: ctx.opts.sources });
    const pollers = queues.map((q, i) => new QueuePoller(conns[i], q));
    ctx.log(`N=${n}: ${users.length} users, ${n} queues, ${n} connections ready`);
    for (let round = 0; round <= ctx.opts.runs; round++) {
      const s = await parleyRound(pollers, setup[0], target.owner, tag, round);
      if (round > 0) record(runs, key, s, `Parley N=${n}`);
      ctx.log(`N=${n} parley ${round === 0 ? 'warm-up' : `run ${round}`}: max ${summarize(s.latencies).max.toFixed(1)} ms, client CPU ${(s.clientCpu * 100).toFixed(0)}%`);
    }
    return { bytes: runs.median(`${key}.bytes`), queues };
  } finally {
    closePool(conns);
    closePool(setup);
    await target.stop();
  }
}

async function measureBaseline(ctx: ScenarioContext, runs: Runs, n: number, key: string, bytes: number, queues: RegisteredQueue[]): Promise<void> {
  const baseline = await startBaseline();
  let conns: Connection[] = [];
  const control = await openPool(baseline.endpoint, 1);
  try {
    conns = await openPool(baseline.endpoint, n, { sources: ctx.opts.sources });
    const pollers = queues.map((q, i) => new QueuePoller(conns[i], q));
    for (let round = 0; round <= ctx.opts.runs; round++) {
      const s = await baselineRound(pollers, control[0], bytes);
      if (round > 0) record(runs, key, s, `uWS N=${n}`);
      ctx.log(`N=${n} uWS ${round === 0 ? 'warm-up' : `run ${round}`}: max ${summarize(s.latencies).max.toFixed(1)} ms, client CPU ${(s.clientCpu * 100).toFixed(0)}%`);
    }
  } finally {
    closePool(conns);
    closePool(control);
    await baseline.stop();
  }
}

export const fanout: Scenario = {
  name: 'fanout',
  summary: 'one channel message to N parked GET /events: send-to-delivery p50/p99/max vs raw uWS long-poll',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const ns = sizes(ctx);
    const result = newResult('fanout', { n: ns, runs: ctx.opts.runs, fsync: ctx.opts.remote ? 'remote' : ctx.opts.fsync ?? 'always' });
    if (ctx.opts.mode !== 'full' && ctx.opts.n === undefined) result.notes.push(`${ctx.opts.mode} mode: N=${ns.join(',')} (full: 5000,15000)`);
    result.notes.push('deliveries wait for the message to be durable (fsync policy above); "send ack" is the POST /messages response time');
    const runs = new Runs();
    for (const n of ns) {
      const { bytes, queues } = await measureParley(ctx, runs, n, `p${n}`);
      await measureBaseline(ctx, runs, n, `b${n}`, bytes, queues);
      const vs = { baselineName: 'uWS long-poll' };
      const max = runs.figure(`p${n}.max`, `delivery max N=${n}`, 'ms', { ...vs, baselineOf: `b${n}.max` });
      if (n >= 15000) {
        max.target = '<= 300 ms';
        max.pass = max.value <= 300;
      } else if (n >= 5000) {
        max.target = '<= 1.5x baseline';
        max.pass = max.ratio! <= 1.5;
      }
      result.figures.push(
        runs.figure(`p${n}.min`, `first delivery N=${n}`, 'ms', { ...vs, baselineOf: `b${n}.min` }),
        runs.figure(`p${n}.p50`, `delivery p50 N=${n}`, 'ms', { ...vs, baselineOf: `b${n}.p50` }),
        runs.figure(`p${n}.p99`, `delivery p99 N=${n}`, 'ms', { ...vs, baselineOf: `b${n}.p99` }),
        max,
        runs.figure(`p${n}.ack`, `send ack N=${n}`, 'ms'),
      );
    }
    noteClientCpu(result, runs);
    noteDistributions(result, runs);
    return result;
  },
};
