/**
 * sizing: what the server's memory grows by per user and per message, for the operator
 * guide. On one fresh server it creates users in steps, then sends channel messages in
 * steps (to a channel of SUBSCRIBERS of those users), reading the heap (after a full
 * GC, from the bench probe preloaded into the server) and the RSS after each step. The
 * slope of a least-squares line through the readings is the cost of one more user or
 * message; the readings are the points of the report's memory-against-N chart. The
 * cost of a parked poll is the `parked` scenario's. Local only: it reads the process.
 */
import { call, spread, subscribe, type Credentials } from '../api.js';
import { closePool, openPool, type Connection } from '../client.js';
import { newResult, sized, type MemoryPoint, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { linearFit } from '../stats.js';
import type { Target } from '../target.js';

const SUBSCRIBERS = 10;
const CONNECTIONS = 16;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

/** Steps by mode: how many steps, and how many users or messages each adds. */
const STEPS = {
  smoke: { steps: 4, users: 5, messages: 250 },
  quick: { steps: 5, users: 60, messages: 4000 },
  full: { steps: 8, users: 500, messages: 50000 },
};

/** Heap after a full GC and RSS, in MiB, with `n` of `series` in the server. */
async function reading(target: Target, series: string, n: number): Promise<MemoryPoint> {
  const r = await target.probe!();
  return { series, n, heapMiB: r.heapUsed / 2 ** 20, rssMiB: r.rss / 2 ** 20 };
}

/** Creates members `from`..`from+count-1` (no API key fetched: one password hash each). */
function addUsers(conns: Connection[], owner: Credentials, from: number, count: number): Promise<number[]> {
  const indexes = Array.from({ length: count }, (_, i) => from + i);
  return spread(conns, indexes, async (conn, i) => {
    const created = await call(conn, owner, 'POST', '/api/v1/users', { email: `sizing-${i}@bench.invalid`, password: `pw-sizing-${i}`, full_name: `Sizing ${i}` });
    return created.user_id as number;
  });
}

/** Sends `count` channel messages as `who`, spread over the connections and 10 topics. */
async function addMessages(conns: Connection[], who: Credentials, channel: string, count: number): Promise<void> {
  const indexes = Array.from({ length: count }, (_, i) => i);
  await spread(conns, indexes, (conn, i) => call(conn, who, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: `topic ${i % 10}`, content: CONTENT }));
}

/** Grows `series` step by step with `add(from, count)`, reading memory before and after each step. */
async function grow(target: Target, series: string, steps: number, per: number, add: (from: number, count: number) => Promise<unknown>): Promise<MemoryPoint[]> {
  const points = [await reading(target, series, 0)];
  for (let step = 1; step <= steps; step++) {
    await add((step - 1) * per, per);
    points.push(await reading(target, series, step * per));
  }
  return points;
}

/** KiB per unit of N, from the slope of a line through the points; with its r². */
function perUnit(points: MemoryPoint[], of: 'heapMiB' | 'rssMiB'): { kib: number; r2: number } {
  const fit = linearFit(points.map((p) => p.n), points.map((p) => p[of] * 1024));
  return { kib: fit.slope, r2: fit.r2 };
}

export const sizing: Scenario = {
  name: 'sizing',
  summary: 'users, then messages, added in steps: server heap (after GC) and RSS per user and per message',
  remote: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    // --n sets the number of messages; the users stay at the full-mode steps.
    const plan = sized(opts, STEPS, (n) => ({ ...STEPS.full, messages: Math.ceil(n / STEPS.full.steps) }));
    const fsync = opts.fsync ?? 'none';
    const result = newResult('sizing', { ...plan, subscribers: SUBSCRIBERS, fsync });
    result.notes.push(`one server; ${plan.steps} steps of ${plan.users} users, then ${plan.steps} steps of ${plan.messages} messages to a channel of ${SUBSCRIBERS} members; per unit: the slope of a least-squares line through heap (after a full GC) and RSS at each step`);
    if (opts.mode === 'smoke') result.notes.push('smoke sizes: the slopes are rough, RSS ones especially (RSS grows by whole pages and arenas)');
    const target = await ctx.server({ fsync });
    const conns = await openPool(target.endpoint, CONNECTIONS);
    try {
      // Warm-up: the first users and messages load code and allocate caches that are not per unit.
      const channel = 'sizing';
      const warm = await addUsers(conns, target.owner, 1_000_000, 2);
      await subscribe(conns[0], target.owner, channel, warm);
      await addMessages(conns, target.owner, channel, 100);
      const created: number[] = [];
      const users = await grow(target, 'users', plan.steps, plan.users, async (from, count) => created.push(...(await addUsers(conns, target.owner, from, count))));
      ctx.log(`users: heap ${users[0].heapMiB.toFixed(1)} → ${users[users.length - 1].heapMiB.toFixed(1)} MiB`);
      await subscribe(conns[0], target.owner, channel, created.slice(0, SUBSCRIBERS));
      const messages = await grow(target, 'messages', plan.steps, plan.messages, (_, count) => addMessages(conns, target.owner, channel, count));
      ctx.log(`messages: heap ${messages[0].heapMiB.toFixed(1)} → ${messages[messages.length - 1].heapMiB.toFixed(1)} MiB`);
      result.memory = [...users, ...messages];
      for (const [series, points, unit] of [['users', users, 'user'], ['messages', messages, 'message']] as const) {
        const heap = perUnit(points, 'heapMiB');
        const rss = perUnit(points, 'rssMiB');
        result.figures.push({ name: `heap per ${unit}`, value: heap.kib, unit: 'KiB', runs: [heap.kib] }, { name: `RSS per ${unit}`, value: rss.kib, unit: 'KiB', runs: [rss.kib] });
        result.notes.push(`${series}: line fit r² ${heap.r2.toFixed(3)} (heap), ${rss.r2.toFixed(3)} (RSS)`);
      }
    } finally {
      closePool(conns);
      await target.stop();
    }
    return result;
  },
};
