/**
 * heartbeat: the server's CPU while many idle queues, each with a parked poll, get
 * heartbeats. The server runs with short heartbeat settings (every 1-2 s instead of
 * 45-55 s) so that a few seconds show the steady state; each poll is re-parked as soon
 * as its heartbeat arrives. CPU comes from /proc/<pid>/stat (utime + stime). Reported,
 * with no target; the baseline is the same server's CPU before anything was parked.
 */
import { keepPolling, QueuePoller, registerQueues } from '../api.js';
import { closePool, openPool, type Connection } from '../client.js';
import { openFileLimit, ProcessCpuMeter } from '../proc.js';
import { newResult, noteClientCpu, Runs, sized, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { CpuMeter, sleep } from '../stats.js';

const HEARTBEAT = { PARLEY_HEARTBEAT_MIN_MS: '1000', PARLEY_HEARTBEAT_MAX_MS: '2000' };

export const heartbeat: Scenario = {
  name: 'heartbeat',
  summary: 'server CPU while Q idle queues with parked polls heartbeat every 1-2 s',
  remote: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const wanted = sized(opts, { smoke: 500, quick: 10000, full: 10000 }, (n) => n);
    const q = Math.min(wanted, openFileLimit('self') - 300);
    const durationMs = windowMs(opts, { smoke: 2, quick: 5, full: 15 });
    const result = newResult('heartbeat', { queues: q, durationS: durationMs / 1000, runs: opts.runs, heartbeatMs: '1000-2000' });
    if (q < wanted) result.notes.push(`queues capped from ${wanted} to ${q} by the open-file limit`);
    const runs = new Runs();
    const target = await ctx.server({ env: HEARTBEAT });
    const pid = target.pid!;
    let conns: Connection[] = [];
    let polling = true;
    let heartbeats = 0;
    const loops: Array<Promise<void>> = [];
    try {
      const idle = new ProcessCpuMeter(pid);
      await sleep(Math.min(2000, durationMs));
      const idleCpu = idle.read() * 100;
      const setup = await openPool(target.endpoint, 16);
      const queues = await registerQueues(setup, [target.owner], q);
      closePool(setup);
      conns = await openPool(target.endpoint, q, { sources: opts.sources });
      const count = (events: Array<{ type: string }>): void => {
        for (const e of events) if (e.type === 'heartbeat') heartbeats++;
      };
      queues.forEach((queue, i) => loops.push(keepPolling(new QueuePoller(conns[i], queue), count, () => polling)));
      // Warm up: every queue has had at least one heartbeat cycle.
      await sleep(2500);
      if (heartbeats === 0) throw new Error('no heartbeat arrived within 2.5 s');
      for (let run = 1; run <= opts.runs; run++) {
        const server = new ProcessCpuMeter(pid);
        const client = new CpuMeter();
        const before = heartbeats;
        await sleep(durationMs);
        const cpu = server.read() * 100;
        const rate = (heartbeats - before) / (durationMs / 1000);
        runs.add('cpu', cpu);
        runs.add('idle', idleCpu);
        runs.add('rate', rate);
        runs.add('perBeat', ((cpu / 100) * 1e6) / rate);
        runs.clientCpu(client.read(), `run ${run}`);
        ctx.log(`run ${run}: server CPU ${cpu.toFixed(1)}% of a core, ${rate.toFixed(0)} heartbeats/s`);
      }
    } finally {
      polling = false;
      closePool(conns);
      await Promise.allSettled(loops);
      await target.stop();
    }
    result.figures.push(
      runs.figure('cpu', `server CPU Q=${q}`, '%', { baselineOf: 'idle', baselineName: 'same server, nothing parked' }),
      runs.figure('rate', 'heartbeats delivered', '/s', { better: 'neither' }),
      runs.figure('perBeat', 'server CPU per heartbeat', 'us'),
    );
    noteClientCpu(result, runs);
    return result;
  },
};
