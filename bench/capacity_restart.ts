/**
 * The `capacity` scenario's restart: a server started again on the data directory the
 * scenario filled, timed from its spawn to serving. The listeners come up before
 * recovery (`/healthz` answers while `/readyz` says starting), so meanwhile `/healthz` is
 * polled every 20 ms: whether the event loop answered through the recovery (each poll
 * within 1 s, a liveness probe's usual timeout), and its worst latency. Once it serves:
 * its newest message must be the last one sent, then its heap (after a full GC) and RSS,
 * and cold reads on a history nothing has read since the start. The server is killed afterwards (no final snapshot: its directory goes).
 */
import type { ChildProcess } from 'node:child_process';
import { call, type Credentials } from './api.js';
import { coldReads } from './capacity_readings.js';
import { onLines } from './children.js';
import { Connection } from './client.js';
import type { CapacityRestart } from './scenario.js';
import { nowMs, sleep } from './stats.js';
import { probeOnce, spawnParley, type LocalOptions, type ProbeReading } from './target.js';

const LISTENING = /listening on http:\/\/[^:]+:(\d+)/;
const SERVING = /is serving the chat API on http:\/\/[^:]+:(\d+)\//;
const HEALTHZ_EVERY_MS = 20;
/** A liveness probe's usual timeout (Kubernetes' default): a poll answered later counts as not answered. */
const HEALTHZ_LIVE_MS = 1000;
/** How long one poll may wait, so that the worst latency is measured rather than cut off. */
const HEALTHZ_TIMEOUT_MS = 120_000;
const MiB = 2 ** 20;

/** What the restart needs from the run before it. */
export interface RestartPlan {
  dataDir: string;
  server: LocalOptions;
  owner: Credentials;
  /** The id of the last message sent, which the restarted server must have. */
  newestId: number;
  /** Message ids for the cold reads (every `perId`-th message sent). */
  ids: readonly number[];
  perId: number;
  coldReads: number;
  random: () => number;
  timeoutMs: number;
  log(message: string): void;
}

/** Polls `/healthz` (once at least) until `done()`: how many polls, how many answered 200 within 1 s, the slowest (ms). */
async function pollHealthz(port: number, done: () => boolean): Promise<CapacityRestart['healthz']> {
  const seen = { polls: 0, answered: 0, worstMs: 0 };
  do {
    const started = nowMs();
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(HEALTHZ_TIMEOUT_MS) });
      await res.arrayBuffer();
      if (res.status === 200 && nowMs() - started <= HEALTHZ_LIVE_MS) seen.answered++;
    } catch {
      // Counted as a poll not answered, at its time.
    }
    seen.polls++;
    seen.worstMs = Math.max(seen.worstMs, nowMs() - started);
    await sleep(HEALTHZ_EVERY_MS);
  } while (!done());
  return seen;
}

/** Starts a server on `plan.dataDir`, times it, reads it, kills it. */
export async function restartAndTime(plan: RestartPlan): Promise<CapacityRestart> {
  const began = nowMs();
  const child: ChildProcess = spawnParley(plan.dataDir, plan.server);
  const probes: Array<(r: ProbeReading) => void> = [];
  const tail: string[] = [];
  let listening: { port: number; at: number } | undefined;
  let serving: { port: number; at: number } | undefined;
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exit ${code ?? signal}`));
  onLines(child.stdout, () => undefined);
  onLines(child.stderr, (line) => {
    if (line.startsWith('parley-bench-probe ')) return probes.shift()?.(JSON.parse(line.slice('parley-bench-probe '.length)) as ProbeReading);
    tail.push(line);
    if (tail.length > 20) tail.shift();
    const l = LISTENING.exec(line);
    if (l && !listening) listening = { port: Number(l[1]), at: nowMs() };
    const s = SERVING.exec(line);
    if (s) serving = { port: Number(s[1]), at: nowMs() };
  });
  const deadline = began + plan.timeoutMs;
  const result: CapacityRestart = { healthz: { polls: 0, answered: 0, worstMs: 0 } };
  try {
    while (!listening && !serving && !exited && nowMs() < deadline) await sleep(5);
    const polling = listening ? pollHealthz(listening.port, () => serving !== undefined || exited !== undefined || nowMs() > deadline) : undefined;
    while (!serving && !exited && nowMs() < deadline) await sleep(5);
    if (polling) result.healthz = await polling;
    if (listening) result.listeningSeconds = (listening.at - began) / 1000;
    if (!serving) {
      result.failed = `${exited ? `the server stopped (${exited})` : `not serving within ${plan.timeoutMs / 1000} s`}: ${tail.slice(-5).join(' | ')}`;
      return result;
    }
    result.startSeconds = (serving.at - began) / 1000;
    plan.log(`restart: serving after ${result.startSeconds.toFixed(1)} s (${result.healthz.answered}/${result.healthz.polls} /healthz answered, worst ${result.healthz.worstMs.toFixed(0)} ms)`);
    const conn = await Connection.open({ host: '127.0.0.1', port: serving.port, hostHeader: `127.0.0.1:${serving.port}` });
    try {
      const newest = await call(conn, plan.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0 });
      const newestId = newest.messages.at(-1)?.id as number | undefined;
      if (newestId !== plan.newestId) throw new Error(`the restarted server's newest message is ${newestId}, not the last one sent (${plan.newestId})`);
      result.coldRead = await coldReads(conn, plan.owner, plan.ids, plan.perId, plan.coldReads, plan.random);
    } finally {
      conn.close();
    }
    const reading = await probeOnce(child, probes, 300_000);
    result.heapMiB = reading.heapUsed / MiB;
    result.rssMiB = reading.rss / MiB;
    return result;
  } catch (err) {
    result.failed = (err as Error).message;
    return result;
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
}
