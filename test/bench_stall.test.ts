/**
 * The `stall` bench scenario without a server: every route record of both APIs gets its
 * worst-case requests (so a new route cannot escape the scenario), within the budget, and
 * the worst-ten table renders in the printed table and in the HTML report. Nothing here
 * is timed: the stalls themselves are measured by the bench only.
 */
import t from 'tap';
import { htmlReport } from '../bench/html.js';
import type { BenchRecord } from '../bench/report.js';
import { table } from '../bench/report.js';
import { newResult } from '../bench/scenario.js';
import { allRoutes, runOrder, stallTable, worstPerRoute, type StallRow } from '../bench/scenarios/stall.js';
import { BODY_LIMIT_ROUTES, bodyLimitCases, casesFor, key, label, MARKDOWN, type CaseContext } from '../bench/stall_cases.js';
import type { Fixture } from '../bench/stall_fixture.js';
import { boardRoutes } from '../src/routes/board/index.js';
import { chatRoutes } from '../src/routes/chat/index.js';

const who = (n: number) => ({ user_id: n, email: `u${n}@stall.invalid`, api_key: 'k'.repeat(32) });
const fx: Fixture = {
  sizes: { users: 3, channels: 2, messages: 3, topics: 2, linkifiers: 2, alertWords: 2 },
  owner: who(1),
  member: who(2),
  sacrificial: who(3),
  userIds: [2, 3, 4],
  bigChannel: { id: 1, name: 'stall-big' },
  history: { id: 2, name: 'stall-history' },
  channelIds: [1, 2],
  messageIds: [10, 11, 12],
  topics: ['topic 0', 'topic 1'],
  linkifierIds: [1, 2],
  ownMessageId: 12,
};
const BUDGET = 4096;
const ctx: CaseContext = { fx, ids: { queue_id: 'q', draft_id: 1 }, budget: BUDGET, maxItems: 100, nowS: 1_800_000_000 };

t.test('every route record of both APIs has worst-case requests', async (t) => {
  const routes = allRoutes();
  t.equal(routes.length, chatRoutes.length + boardRoutes.length, 'the scenario takes the routes from both API lists');
  t.same(new Set(runOrder(routes).map(key)), new Set(routes.map(key)), 'the run order keeps every route');
  t.equal(runOrder(routes).at(-1) && key(runOrder(routes).at(-1)!), 'DELETE /api/v1/users/me', 'deactivating oneself runs last');
  const missing: string[] = [];
  for (const route of routes) {
    const cases = casesFor(route, ctx);
    if (cases.length === 0) missing.push(key(route));
    for (const c of cases) {
      t.equal(c.route, label(route), `${c.route}: ${c.shape}: named after its route`);
      t.ok(c.path.startsWith(route.path.split('{')[0]), `${c.route}: ${c.shape}: its path`);
      // A narrow at its documented limits (100 terms of 1000 characters) and a board body at its ceiling are their own sizes.
      const bound = 5 * BUDGET + (route.body?.maxBytes ?? 0) + ('narrow' in route.params ? 110_000 : 0);
      t.ok(c.bytes <= bound, `${c.route}: ${c.shape}: ${c.bytes} bytes, within the budget`);
    }
  }
  t.same(missing, [], 'no route without a request');
  t.equal(new Set(routes.map(label)).size, routes.length, 'every route has a name of its own in the table');
});

t.test('content routes get each costly Markdown pattern; JSON parameters get nested', async (t) => {
  const render = chatRoutes.find((r) => key(r) === 'POST /api/v1/messages/render')!;
  const shapes = casesFor(render, ctx).map((c) => c.shape);
  for (const pattern of Object.keys(MARKDOWN)) t.ok(shapes.some((s) => s.startsWith(pattern)), `render: ${pattern}`);
  const alert = chatRoutes.find((r) => key(r) === 'POST /api/v1/users/me/alert_words')!;
  t.ok(casesFor(alert, ctx).some((c) => c.shape.startsWith('alert_words nested')), 'alert words: nested JSON');
  const limits = casesFor(alert, ctx)[0];
  t.ok(decodeURIComponent(limits.body!).split('","').length >= 100, 'alert words: as many words as the item cap allows');
  const guestbook = boardRoutes.find((r) => key(r) === 'POST /api/v1/guestbook')!;
  t.same(casesFor(guestbook, ctx).map((c) => c.bytes <= guestbook.body!.maxBytes), [true, true, true], 'board bodies stay within their ceiling');
});

t.test('requests at the body limit: a flood of tiny parameters and a nested value, on a route of each decoding', async (t) => {
  const limit = 64 << 10;
  for (const name of BODY_LIMIT_ROUTES) {
    const route = chatRoutes.find((r) => key(r) === name);
    if (!route) {
      t.fail(`${name} is a route record`);
      continue;
    }
    const cases = bodyLimitCases(route, ctx, limit);
    const flood = cases.find((c) => c.shape.includes('tiny parameters'))!;
    t.ok(flood.body!.length > limit - 16 && flood.body!.length <= limit, `${name}: the flood fills the limit`);
    t.ok(flood.body!.split('&').length > limit / 10, `${name}: of tiny parameters`);
  }
  const messages = chatRoutes.find((r) => key(r) === 'GET /api/v1/messages')!;
  const nested = bodyLimitCases(messages, ctx, limit).find((c) => c.shape.startsWith('narrow nested'));
  t.ok(nested && nested.bytes <= limit && nested.bytes > limit - 8192, `GET /messages: narrow nested up to the limit (${nested?.bytes} bytes)`);
});

t.test('the worst-ten table: printed, and in the HTML report', async (t) => {
  const rows: StallRow[] = Array.from({ length: 14 }, (_, i) => ({ route: `GET /r${i}`, shape: 'every value at its limit', bytes: 10, stallMs: i * 10, answerMs: i * 11, status: '200' }));
  rows.push({ route: 'GET /r13', shape: 'a worse shape', bytes: 10, stallMs: 400, answerMs: 400, status: '400' });
  rows.push({ route: 'POST /stuck', shape: 'stuck', bytes: 10, stallMs: 20_000, answerMs: 20_000, status: 'no answer', stuck: true });
  t.equal(worstPerRoute(rows).length, 15, 'one row per route');
  const ten = stallTable(rows);
  t.equal(ten.rows.length, 10);
  t.same(ten.rows[0].slice(0, 3), ['POST /stuck', 'stuck', '>= 20000 ms'], 'a request with no answer is a lower bound');
  t.same(ten.rows[1].slice(0, 3), ['GET /r13', 'a worse shape', '400 ms'], 'a route shows its worst request');
  t.equal(ten.rows.filter((r) => r[6] === 'MISS').length, 10 - ten.rows.filter((r) => Number.parseInt(r[2].replace('>= ', '')) <= 50).length, 'MISS over 50 ms');
  const result = newResult('stall', {});
  result.tables = [ten, { title: 'every route', columns: ['route'], rows: [['GET /hidden']], htmlOnly: true }];
  const printed = table([result]);
  t.match(printed, /stall: worst 10 routes by event-loop stall/);
  t.match(printed, /POST \/stuck\s+stuck\s+>= 20000 ms/);
  t.notMatch(printed, /GET \/hidden/, 'the long list is only in the HTML report');
  const record = { startedAt: 'x', finishedAt: 'y', argv: [], mode: 'smoke', options: {}, machine: {}, versions: {}, tools: {}, scenarios: [result], baselines: [], baselineStatus: [] } as BenchRecord;
  const html = await htmlReport(record);
  t.match(html, /<h3>worst 10 routes by event-loop stall/);
  t.match(html, /<td class="MISS">MISS<\/td>/);
  t.match(html, /GET \/hidden/);
});
