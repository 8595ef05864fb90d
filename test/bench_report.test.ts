/**
 * The bench's outputs that need no server: `--compare` on two small result files
 * (an improvement, a regression, noise, figures in one file only), the HTML report
 * with its inline SVG charts, and the helpers that feed them (wrk's percentiles, the
 * per-second timeline, the linear fit of the sizing scenario).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { charts } from '../bench/charts.js';
import { compareFiles, compareRecords, direction } from '../bench/compare.js';
import { htmlReport } from '../bench/html.js';
import type { BenchRecord } from '../bench/report.js';
import { linearFit, Timeline } from '../bench/stats.js';
import { wrkPercentiles } from '../bench/wrk.js';
import { built } from './built.js';
import { fixturePath } from './paths.js';

const FIXTURES = fixturePath('bench');
const A = join(FIXTURES, 'a.json');
const B = join(FIXTURES, 'b.json');
const record = (path: string): BenchRecord => JSON.parse(readFileSync(path, 'utf8')) as BenchRecord;

t.test('--compare: a verdict for every figure, by its direction and the noise band', async (t) => {
  const rows = compareRecords(record(A), record(B), 10);
  const verdict = (figure: string): string | undefined => rows.find((r) => r.figure === figure)?.verdict;
  t.equal(verdict('messages/s'), 'REGRESSION', 'a rate 20% lower');
  t.equal(verdict('send latency p99'), 'improved', 'a latency 50% lower');
  t.equal(verdict('server CPU'), 'noise', 'CPU 4% higher is within 10%');
  t.equal(verdict('heap per user'), 'noise');
  t.equal(verdict('retired figure'), 'only in A');
  t.equal(verdict('new figure'), 'only in B');
  t.equal(verdict('  baseline: uWS floor, threadpool commit'), 'baseline', 'baselines are listed, never judged');
  t.equal(rows.find((r) => r.figure === 'messages/s')?.changePct, -20);
  t.equal(compareRecords(record(A), record(B), 25).find((r) => r.figure === 'messages/s')?.verdict, 'noise', 'a wider band');
});

t.test('--compare: the printed table', async (t) => {
  const out = compareFiles(A, B, 10);
  t.match(out, /^1 regression\(s\) and 1 improvement\(s\) beyond the noise threshold of ±10%; 2 figure\(s\) in one file only/m);
  t.match(out, /^send\s+messages\/s\s+1000 msg\/s\s+800 msg\/s\s+-20\.0%\s+REGRESSION <<<$/m);
  t.match(out, /^send\s+send latency p99\s+20 ms\s+10 ms\s+-50\.0%\s+improved$/m);
  t.match(out, /^send\s+retired figure\s+3 ms\s+only in A$/m);
  t.match(out, /^send\s+new figure\s+1 ms\s+only in B$/m);
});

t.test('--compare: says when a tool was installed for one run only', async (t) => {
  const withWrk = { ...record(B), tools: { wrk: '/usr/bin/wrk', redisServer: null } };
  const dir = t.testdir({ 'b.json': JSON.stringify(withWrk) });
  const out = compareFiles(A, join(dir, 'b.json'), 10);
  t.match(out, /^note: wrk was installed for B only/m);
  t.notMatch(out, /redisServer was installed/);
});

t.test('--compare from the command line: exit status 0, no server', async (t) => {
  const run = spawnSync(process.execPath, [built('bench/run.ts'), '--compare', A, B], { encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  t.match(run.stdout, /REGRESSION <<</);
});

t.test('directions: rates higher, latency/memory/CPU lower, counts neither', async (t) => {
  t.equal(direction({ name: 'messages/s', unit: 'msg/s' }), 'higher');
  t.equal(direction({ name: 'requests per server CPU-second', unit: 'req' }), 'higher');
  for (const unit of ['ms', 'KiB', 'MiB', '%']) t.equal(direction({ name: 'x', unit }), 'lower', unit);
  t.equal(direction({ name: 'deliveries checked per round', unit: '' }), 'neither');
  t.equal(direction({ name: 'violations', unit: '', better: 'lower' }), 'lower');
});

t.test('the HTML report: figures, baselines and inline SVG charts, nothing to fetch', async (t) => {
  const rec = record(A);
  t.same(charts(rec).map((c) => c.id), ['send-latency', 'send-throughput', 'memory']);
  const html = await htmlReport(rec);
  t.match(html, /^<!doctype html>/);
  t.equal(html.match(/<svg/g)?.length, 3, 'one inline SVG per chart');
  t.notMatch(html, /<script|<link|src=/, 'self-contained');
  t.match(html, /skipped: redis SET fsync always \(send\): redis-server is not installed/);
  t.match(html, /<td>messages\/s<\/td><td class="n">1000 msg\/s<\/td>/);
});

t.test('wrk --latency output to percentiles in ms', async (t) => {
  const text = `  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   635.91us    0.89ms  12.92ms   92.12%
  Latency Distribution
     50%  412.00us
     75%  610.00us
     90%    1.01ms
     99%    4.20ms
Requests/sec:  98765.43`;
  const ms = Object.fromEntries(Object.entries(wrkPercentiles(text)).map(([p, v]) => [p, Number(v.toFixed(6))]));
  t.same(ms, { p50: 0.412, p75: 0.61, p90: 1.01, p99: 4.2, max: 12.92 });
});

t.test('per-second rates: a short last second scaled, a sliver left out', async (t) => {
  const tl = new Timeline(0);
  for (const at of [100, 200, 900, 1100, 1400]) tl.count(at);
  t.same(tl.rates(1500), [3, 4], 'the last half second had 2 completions: 4/s');
  t.same(tl.rates(1100), [3], 'a last 0.1 s says nothing');
});

t.test('linear fit: the slope is the cost per unit', async (t) => {
  const fit = linearFit([0, 100, 200, 300], [10, 12, 14, 16]);
  t.equal(fit.slope, 0.02);
  t.equal(fit.intercept, 10);
  t.equal(fit.r2, 1);
});
