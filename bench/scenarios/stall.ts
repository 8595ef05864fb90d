/**
 * stall: for every route record of both APIs, its worst-case requests (`stall_cases.ts`)
 * against an organization built to make routes expensive (`stall_fixture.ts`), one at a
 * time, each with the longest event-loop stall the server's own `monitorEventLoopDelay`
 * saw while it was served (the bench probe, read before and after). The table lists the
 * ten routes that held the loop longest. Target: no route over 50 ms.
 *
 * A request with no answer within the timeout is counted as a stall of at least that
 * long; the server is then replaced by a fresh one on a copy of the same data, so that
 * one stuck route cannot hide the others.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SETTINGS } from '../../src/config.js';
import { boardRoutes } from '../../src/routes/board/index.js';
import { chatRoutes } from '../../src/routes/chat/index.js';
import type { RouteRecord } from '../../src/http/route.js';
import { call } from '../api.js';
import { forgetTempDir, removeOnExit } from '../children.js';
import { Connection, encodeRequest } from '../client.js';
import { newResult, sized, within, type Mode, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { cpuSeconds } from '../proc.js';
import { BODY_LIMIT_ROUTES, bodyLimitCases, casesFor, fmtBytes, key, type CaseContext, type StallCase } from '../stall_cases.js';
import { buildFixture, FIXTURE_SIZES, type Fixture } from '../stall_fixture.js';
import { nowMs, sleep } from '../stats.js';
import type { Target } from '../target.js';

/** The goal: no request holds the event loop longer. */
export const STALL_TARGET_MS = 50;

/**
 * Bytes one unbounded value may take, by mode (`--n` sets it, up to the body limit). In
 * full mode the requests of `bodyLimitCases` are sent at the body limit itself.
 */
const BUDGET: Record<Mode, number> = { smoke: 16 << 10, quick: 256 << 10, full: 1 << 20 };
/** The scenario stops sending at this deadline, and says which routes it did not reach. */
const DEADLINE_S: Record<Mode, number> = { smoke: 35, quick: 200, full: 420 };
/** Items in an unbounded array: a cap for the machine's sake (100k new channels cost the server ~0.5 GB). */
const MAX_ITEMS: Record<Mode, number> = { smoke: 1000, quick: 20_000, full: 100_000 };
/** How long one request may take before it counts as stuck and the server is replaced. */
const TIMEOUT_MS: Record<Mode, number> = { smoke: 10_000, quick: 10_000, full: 20_000 };
/** After an answer, time for work the request left behind (fan-out, events) to show in the probe. */
const SETTLE_MS = 25;
/** Tries of a read over the target (see `measureCase`). */
const REPEATS = 3;
/** The server's heap ceiling: a route that grows state without bound ends the server, not the machine. */
const SERVER_HEAP_MIB = 2048;

/** The server's request body limit, as it is configured by default (`--max-body-bytes`). */
export function defaultBodyLimit(): number {
  return SETTINGS.find((s) => s.key === 'maxBodyBytes')!.def as number;
}

/** Every route record the scenario measures: the chat API's and the board's. */
export function allRoutes(): RouteRecord[] {
  return [...chatRoutes, ...boardRoutes];
}

/** Routes in the order they run: reads and writes first, deletions after, deactivating oneself last. */
export function runOrder(routes: RouteRecord[]): RouteRecord[] {
  const rank = (r: RouteRecord): number => (key(r) === 'DELETE /api/v1/users/me' ? 3 : r.method === 'DELETE' ? 2 : key(r).includes('deactivate') ? 1 : 0);
  return [...routes].sort((a, b) => rank(a) - rank(b));
}

/** One measured request. */
export interface StallRow {
  route: string;
  shape: string;
  bytes: number;
  /** Longest event-loop stall while it was served, ms; a lower bound when `stuck`. */
  stallMs: number;
  /** Time to the full answer, ms. */
  answerMs: number;
  /** CPU time of the server's main thread over the request and the settling after it, ms (10 ms ticks): a stall far above it was the machine, not the route. */
  cpuMs?: number;
  /** HTTP status, or `stuck` / the connection error. */
  status: string;
  stuck?: boolean;
}

/** The worst row of each route, worst first. */
export function worstPerRoute(rows: StallRow[]): StallRow[] {
  const worst = new Map<string, StallRow>();
  for (const r of rows) if (!worst.has(r.route) || r.stallMs > worst.get(r.route)!.stallMs) worst.set(r.route, r);
  return [...worst.values()].sort((a, b) => b.stallMs - a.stallMs);
}

/** The table of the worst `n` routes. */
export function stallTable(rows: StallRow[], n = 10): { title: string; columns: string[]; rows: string[][] } {
  const worst = worstPerRoute(rows).slice(0, n);
  return {
    title: `worst ${worst.length} routes by event-loop stall (target <= ${STALL_TARGET_MS} ms)`,
    columns: ['route', 'request', 'stall', 'loop CPU', 'answer', 'status', ''],
    rows: worst.map((r) => [r.route, r.shape, `${r.stuck ? '>= ' : ''}${Math.round(r.stallMs)} ms`, r.cpuMs === undefined ? '-' : `${Math.round(r.cpuMs)} ms`, `${Math.round(r.answerMs)} ms`, r.status, r.stallMs > STALL_TARGET_MS ? 'MISS' : 'PASS']),
  };
}

/** Objects for path parameters, made through the API as the owner; what fails is left to the route's own refusal. */
async function makeObjects(conn: Connection, fx: Fixture, nowS: number, log: (m: string) => void): Promise<Record<string, string | number>> {
  const ids: Record<string, string | number> = {};
  const owner = fx.owner;
  const tryCall = async (what: string, method: string, path: string, params: Record<string, unknown>, pick: (json: any) => void): Promise<void> => {
    try {
      pick(await call(conn, owner, method, path, params));
    } catch (err) {
      log(`setup: ${what}: ${(err as Error).message.slice(0, 160)}`);
    }
  };
  await tryCall('queue', 'POST', '/api/v1/register', { event_types: ['message'] }, (j) => (ids.queue_id = j.queue_id));
  await tryCall('draft', 'POST', '/api/v1/drafts', { drafts: [{ type: 'stream', to: [fx.bigChannel.id], topic: 't', content: 'draft' }] }, (j) => (ids.draft_id = j.ids[0]));
  await tryCall('scheduled message', 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: fx.bigChannel.id, topic: 't', content: 'later', scheduled_delivery_timestamp: nowS + 86_400 }, (j) => (ids.scheduled_message_id = j.scheduled_message_id));
  await tryCall('reminder', 'POST', '/api/v1/reminders', { message_id: fx.messageIds[0], scheduled_delivery_timestamp: nowS + 86_400 }, (j) => (ids.reminder_id = j.reminder_id));
  await tryCall('snippet', 'POST', '/api/v1/saved_snippets', { title: 'snippet', content: 'snippet' }, (j) => (ids.saved_snippet_id = j.saved_snippet_id));
  await tryCall('user group', 'POST', '/api/v1/user_groups/create', { name: 'stall group', description: '', members: fx.userIds.slice(0, 1000) }, (j) => (ids.user_group_id = j.group_id));
  await tryCall('channel folder', 'POST', '/api/v1/channel_folders/create', { name: 'stall folder', description: '' }, (j) => (ids.channel_folder_id = j.channel_folder_id));
  await tryCall('profile field', 'POST', '/api/v1/realm/profile_fields', { name: 'stall field', field_type: 1 }, (j) => (ids.field_id = j.id));
  await tryCall('playground', 'POST', '/api/v1/realm/playgrounds', { name: 'stall playground', pygments_language: 'Python', url_template: 'https://play.example/?c={code}' }, (j) => (ids.playground_id = j.id));
  await tryCall('bot', 'POST', '/api/v1/bots', { full_name: 'Stall Bot', short_name: 'stall' }, (j) => (ids.bot_id = j.user_id));
  await tryCall('navigation view', 'POST', '/api/v1/navigation_views', { fragment: 'narrow/is/stall', is_pinned: true, name: 'stall' }, () => (ids.fragment = 'narrow/is/stall'));
  await tryCall('invite', 'POST', '/api/v1/invites', { invitee_emails: 'invitee@stall.invalid', stream_ids: [] }, () => (ids.invite_id = 1));
  await tryCall('realm domain', 'POST', '/api/v1/realm/domains', { domain: 'stall.example', allow_subdomains: false }, () => (ids.domain = 'stall.example'));
  ids.filter_id = fx.linkifierIds[0];
  return ids;
}

/** A local server on a copy of the fixture, with the objects the routes name. */
interface Live {
  target: Target;
  ids: Record<string, string | number>;
}

async function startLive(ctx: ScenarioContext, template: string, fx: Fixture, nowS: number): Promise<Live> {
  const target = await ctx.server({
    fsync: 'none',
    noGc: true,
    nodeArgs: [`--max-old-space-size=${SERVER_HEAP_MIB}`],
    prepare: async (dir) => {
      cpSync(template, dir, { recursive: true });
      return { email: fx.owner.email, apiKey: fx.owner.api_key };
    },
    env: {
      PARLEY_SNAPSHOT_INTERVAL_MS: '0', PARLEY_SNAPSHOT_EVERY_RECORDS: '0', PARLEY_SNAPSHOT_GROWTH_PERCENT: '0',
      PARLEY_BOARD_RATE_LIMIT: '0', PARLEY_BOARD_MESSAGE_RATE_LIMIT: '0', PARLEY_RATE_LIMIT_AUTHENTICATE: '0',
      PARLEY_JITSI_SERVER_URL: 'https://jitsi.invalid',
    },
  });
  const conn = await Connection.open(target.endpoint);
  try {
    return { target, ids: await makeObjects(conn, fx, nowS, ctx.log) };
  } finally {
    conn.close();
  }
}

/** Sends one case and reads the server's longest loop stall meanwhile. */
async function measure(live: Live, c: StallCase, timeoutMs: number): Promise<StallRow> {
  const endpoint = c.api === 'board' ? live.target.board! : live.target.endpoint;
  const conn = await Connection.open(endpoint);
  const raw = encodeRequest(endpoint, c.method, c.path, c.headers, c.body);
  await live.target.probe!();
  const pid = live.target.pid!;
  const cpu0 = cpuSeconds(pid, true);
  const start = nowMs();
  let status: string;
  let stuck = false;
  try {
    const res = await within(conn.send(raw), timeoutMs, `${c.route} (${c.shape})`);
    status = String(res.status);
  } catch (err) {
    // A server that refuses a body over its limit may close the connection while it is still being sent (EPIPE): a refusal, not a hang.
    stuck = /no result within/.test((err as Error).message);
    status = stuck ? 'no answer' : `closed: ${(err as Error).message.slice(0, 40)}`;
  } finally {
    conn.close();
  }
  const answerMs = nowMs() - start;
  if (stuck) return { route: c.route, shape: c.shape, bytes: c.bytes, stallMs: answerMs, answerMs, status, stuck };
  await sleep(SETTLE_MS);
  const cpuMs = (cpuSeconds(pid, true) - cpu0) * 1000;
  const reading = await within(live.target.probe!(), timeoutMs, 'the probe').catch(() => null);
  if (!reading) return { route: c.route, shape: c.shape, bytes: c.bytes, stallMs: nowMs() - start, answerMs, status: `${status}, then no probe reading`, stuck: true };
  return { route: c.route, shape: c.shape, bytes: c.bytes, stallMs: reading.loop.max, answerMs, cpuMs, status };
}

/**
 * Measures a case; a read (GET, HEAD) over the target is measured again, up to `REPEATS`
 * times, keeping the least stall: a route's own stall repeats, a moment when another
 * process held the core does not. Writes are measured once, since a second try would
 * often meet a state they changed (a deleted object, a taken name) and cost less.
 */
async function measureCase(live: Live, c: StallCase, timeoutMs: number): Promise<StallRow> {
  let row = await measure(live, c, timeoutMs);
  const read = c.method === 'GET' || c.method === 'HEAD';
  for (let i = 1; read && i < REPEATS && !row.stuck && row.stallMs > STALL_TARGET_MS; i++) {
    const again = await measure(live, c, timeoutMs);
    if (again.stuck) return again;
    if (again.stallMs < row.stallMs) row = again;
  }
  return row;
}

export const stall: Scenario = {
  name: 'stall',
  summary: 'every route record\'s worst-case request at its documented limits: the longest event-loop stall each caused (target <= 50 ms)',
  remote: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const mode = opts.mode;
    const bodyLimit = defaultBodyLimit();
    const budget = sized(opts, { smoke: Math.min(bodyLimit, BUDGET.smoke), quick: Math.min(bodyLimit, BUDGET.quick), full: Math.min(bodyLimit, BUDGET.full) }, (n) => Math.min(bodyLimit, n));
    const sizes = FIXTURE_SIZES[mode];
    // The requests whose cost precedes any route's work go to the body limit itself in full mode, to the budget otherwise.
    const limitBytes = mode === 'full' ? bodyLimit : budget;
    const routes = runOrder(allRoutes());
    const result = newResult('stall', { budgetBytes: budget, bodyLimitCaseBytes: limitBytes, bodyLimitBytes: bodyLimit, maxItems: MAX_ITEMS[mode], timeoutMs: TIMEOUT_MS[mode], fixture: sizes, routes: routes.length });
    const template = mkdtempSync(join(tmpdir(), 'parley-bench-stall-'));
    removeOnExit(template);
    let live: Live | undefined;
    const rows: StallRow[] = [];
    const started = nowMs();
    try {
      let t0 = nowMs();
      const fx = await buildFixture(template, sizes);
      ctx.log(`fixture: ${sizes.users} users, ${sizes.channels} channels, ${sizes.messages} messages, ${sizes.linkifiers} linkifiers in ${((nowMs() - t0) / 1000).toFixed(1)} s`);
      const nowS = Math.floor(Date.now() / 1000);
      t0 = nowMs();
      live = await startLive(ctx, template, fx, nowS);
      ctx.log(`server up with its objects in ${((nowMs() - t0) / 1000).toFixed(1)} s; budget ${fmtBytes(budget)} per value`);
      let restarts = 0;
      const deadline = started + DEADLINE_S[mode] * 1000;
      const unreached: string[] = [];
      for (const route of routes) {
        if (nowMs() > deadline) {
          unreached.push(key(route));
          continue;
        }
        const caseCtx: CaseContext = { fx, ids: live.ids, budget, maxItems: MAX_ITEMS[mode], nowS };
        const atLimit = BODY_LIMIT_ROUTES.includes(key(route)) ? bodyLimitCases(route, caseCtx, limitBytes) : [];
        for (const c of [...casesFor(route, caseCtx), ...atLimit]) {
          const row = await measureCase(live, c, atLimit.includes(c) ? 3 * TIMEOUT_MS[mode] : TIMEOUT_MS[mode]);
          rows.push(row);
          if (row.stallMs > STALL_TARGET_MS) ctx.log(`${row.route} (${row.shape}): ${Math.round(row.stallMs)} ms, ${row.status}`);
          if (!row.stuck) continue;
          restarts++;
          // It is still busy with the request: SIGTERM would wait for it.
          process.kill(live.target.pid!, 'SIGKILL');
          await live.target.stop().catch(() => undefined);
          live = undefined;
          live = await startLive(ctx, template, fx, nowS);
        }
      }
      result.figures.push({ name: 'routes not reached before the deadline', value: unreached.length, unit: 'routes', target: '0', pass: unreached.length === 0 });
      if (unreached.length > 0) result.notes.push(`INCOMPLETE: out of time after ${DEADLINE_S[mode]} s; not measured: ${unreached.join(', ')}`);
      result.notes.push(`${rows.length} requests over ${routes.length - unreached.length} routes; ${restarts} server restart(s) after a request got no answer within ${TIMEOUT_MS[mode] / 1000} s`);
    } finally {
      await live?.target.stop().catch(() => undefined);
      rmSync(template, { recursive: true, force: true });
      forgetTempDir(template);
    }
    const perRoute = worstPerRoute(rows);
    const over = perRoute.filter((r) => r.stallMs > STALL_TARGET_MS);
    const worst = perRoute[0];
    result.figures.push(
      { name: 'routes measured', value: perRoute.length, unit: 'routes', better: 'neither' },
      { name: `routes over ${STALL_TARGET_MS} ms`, value: over.length, unit: 'routes', target: '0', pass: over.length === 0 },
      { name: `worst stall (${worst?.route ?? '-'})`.slice(0, 80), value: Math.round(worst?.stallMs ?? 0), unit: 'ms', target: `<= ${STALL_TARGET_MS} ms`, pass: (worst?.stallMs ?? 0) <= STALL_TARGET_MS },
    );
    result.tables = [stallTable(rows), { title: 'every route, its worst request', columns: ['route', 'request', 'bytes', 'stall ms', 'loop CPU ms', 'answer ms', 'status'], rows: perRoute.map((r) => [r.route, r.shape, String(r.bytes), String(Math.round(r.stallMs)), r.cpuMs === undefined ? '-' : String(Math.round(r.cpuMs)), String(Math.round(r.answerMs)), r.status]), htmlOnly: true }];
    result.notes.push(
      `fixture: ${sizes.users} users, ${sizes.channels} channels, ${sizes.messages} messages in ${sizes.topics} topics, ${sizes.linkifiers} linkifiers, ${sizes.alertWords} alert words each for 101 users`,
      `unbounded values: ${fmtBytes(budget)}, arrays at most ${MAX_ITEMS[mode]} items; a body of tiny parameters and a nested JSON value of ${fmtBytes(limitBytes)}${limitBytes === bodyLimit ? ' (the body limit)' : ` (body limit ${fmtBytes(bodyLimit)}: full mode sends that)`} to ${BODY_LIMIT_ROUTES.join(', ')}; stall: the server's monitorEventLoopDelay max while the request was served (reads over the target: the least of ${REPEATS} tries); loop CPU: the server's main thread's CPU time meanwhile (10 ms ticks), a stall well above it was the machine`,
    );
    return result;
  },
};
