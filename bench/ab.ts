/**
 * Same-run A/B of the send path: `node dist/bench/ab.js DIR_A DIR_B [...]`, each DIR a
 * built checkout of Parley (its own `dist/`, e.g. `git worktree add /tmp/a <commit> &&
 * (cd /tmp/a && npm ci && npm run build)`). Every build's server is started at once, each
 * with a channel of 10 subscribers long-polling their queues; then the builds take turns:
 * a measuring window of 50 senders in a closed loop against one server while the others
 * idle, round after round. Alternating windows share whatever else the machine is doing,
 * so the medians compare the builds where two separate bench runs, minutes apart, would
 * compare two machines. Reports msg/s, p99 and server CPU per message (server CPU seconds
 * / messages: the figure least moved by contention), in all and of the event loop (the
 * main thread) alone.
 *
 * Options: --rounds N (measured rounds, default 6), --window S (seconds, default 4). A DIR
 * may carry node flags for its server after commas (`.,--max-semi-space-size=32`), to
 * compare one build with itself under different V8 settings.
 */
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { apiRequest, createUsers, keepPolling, QueuePoller, registerQueues, subscribe, type Credentials } from './api.js';
import { closePool, openPool, type Connection } from './client.js';
import { closedLoop } from './load.js';
import { ProcessCpuMeter } from './proc.js';
import { median } from './stats.js';
import type { Target } from './target.js';

const SUBSCRIBERS = 10;
const SENDERS = 50;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

interface Contender {
  dir: string;
  target: Target;
  users: Credentials[];
  polling: boolean;
  pollConns: Connection[];
  loops: Array<Promise<void>>;
  windows: Array<{ rps: number; p99: number; cpuUs: number; loopUs: number }>;
}

function option(argv: string[], name: string, fallback: number): number {
  const i = argv.indexOf(name);
  const v = i < 0 ? fallback : Number(argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

/** Starts one build's server (from its own dist/) and parks its subscribers' polls. */
async function contender(spec: string): Promise<Contender> {
  const [path, ...nodeArgs] = spec.split(',');
  const dir = resolve(path);
  const { startParley } = (await import(pathToFileURL(join(dir, 'dist', 'bench', 'target.js')).href)) as { startParley(opts: { fsync: 'always'; nodeArgs: string[] }): Promise<Target> };
  const target = await startParley({ fsync: 'always', nodeArgs });
  const setup = await openPool(target.endpoint, SUBSCRIBERS);
  const users = await createUsers(setup, target.owner, SUBSCRIBERS, 'ab');
  await subscribe(setup[0], target.owner, 'ab', users.map((u) => u.user_id));
  const queues = await registerQueues(setup, users, SUBSCRIBERS);
  closePool(setup);
  const c: Contender = { dir: spec, target, users, polling: true, pollConns: await openPool(target.endpoint, SUBSCRIBERS), loops: [], windows: [] };
  queues.forEach((q, i) => c.loops.push(keepPolling(new QueuePoller(c.pollConns[i], q), () => {}, () => c.polling)));
  return c;
}

/** One measuring window against one server. The senders connect for it alone (an idle keep-alive connection is closed by uWS). */
async function measure(c: Contender, durationMs: number): Promise<Contender['windows'][number]> {
  const conns = await openPool(c.target.endpoint, SENDERS);
  try {
    const cpu = new ProcessCpuMeter(c.target.pid!);
    const loop = new ProcessCpuMeter(c.target.pid!, true);
    const request = (i: number): string => apiRequest(conns[i], c.users[i % c.users.length], 'POST', '/api/v1/messages', { type: 'stream', to: 'ab', topic: `topic ${i % 5}`, content: CONTENT });
    const r = await closedLoop(conns, request, { durationMs });
    if (r.errors > 0) throw new Error(`${c.dir}: ${r.errors} sends failed; first: ${r.firstError}`);
    const load = cpu.read();
    const loopLoad = loop.read();
    return { rps: r.rps, p99: r.latency.p99, cpuUs: (load / r.rps) * 1e6, loopUs: (loopLoad / r.rps) * 1e6 };
  } finally {
    closePool(conns);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const dirs = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  if (dirs.length < 2) throw new Error('usage: node dist/bench/ab.js DIR_A DIR_B [...] [--rounds N] [--window S]');
  const rounds = option(argv, '--rounds', 6);
  const windowMs = option(argv, '--window', 4) * 1000;
  const all: Contender[] = [];
  try {
    for (const dir of dirs) all.push(await contender(dir));
    for (let round = 0; round <= rounds; round++) {
      for (const c of all) {
        const w = await measure(c, round === 0 ? 1500 : windowMs);
        console.log(`${c.dir} ${round === 0 ? 'warm-up' : `round ${round}`}: ${w.rps.toFixed(0)} msg/s, p99 ${w.p99.toFixed(1)} ms, ${w.cpuUs.toFixed(1)} us of server CPU per message (event loop ${w.loopUs.toFixed(1)})`);
        if (round > 0) c.windows.push(w);
      }
    }
    for (const c of all) {
      const m = (f: (w: Contender['windows'][number]) => number): number => median(c.windows.map(f));
      console.log(`${c.dir}: median ${m((w) => w.rps).toFixed(0)} msg/s, p99 ${m((w) => w.p99).toFixed(1)} ms, ${m((w) => w.cpuUs).toFixed(1)} us/msg (event loop ${m((w) => w.loopUs).toFixed(1)})`);
    }
  } finally {
    for (const c of all) {
      c.polling = false;
      closePool(c.pollConns);
      await c.target.stop();
    }
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
