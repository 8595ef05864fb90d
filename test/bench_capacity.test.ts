/**
 * The `capacity` bench scenario at a tiny size against a real server (the built
 * `dist/src/main.js`): 3,000 realistic messages read every 1,000, then the restart on
 * the same data. Checks the record's shape and that its figures are sane (they are not
 * judged: the targets are the bench's business), that the report draws its chart, and
 * that the scenario runs only when named.
 */
import t from 'tap';
import { parseArgs } from '../bench/args.js';
import { htmlReport } from '../bench/html.js';
import { benchRecord, table } from '../bench/report.js';
import type { Options } from '../bench/scenario.js';
import { capacity } from '../bench/scenarios/capacity.js';
import { messagesAtSeq, perMessage } from '../bench/scenarios/capacity_figures.js';
import { selectScenarios } from '../bench/scenarios/index.js';
import { startParley } from '../bench/target.js';
import { built } from './built.js';

t.test('capacity runs only when named, with its own options', async (t) => {
  t.notOk(selectScenarios(null).some((s) => s.name === 'capacity'), 'not in the default (or smoke) run');
  t.same(selectScenarios(['capacity']).map((s) => s.name), ['capacity']);
  const cli = parseArgs(['--scenario', 'capacity', '--n', '2000000', '--interval', '250000', '--max-seconds', '1500', '--memory-limit-mib', '8192']);
  t.match(cli, { mode: 'full', n: 2_000_000, interval: 250_000, maxSeconds: 1500, memoryLimitMib: 8192 });
  t.ok(capacity.budgetS!(cli) > 1500, 'its budget covers --max-seconds and the restart');
  t.throws(() => parseArgs(['--interval', '0']), /--interval must be a positive number/);
});

t.test('the slope and the seq interpolation', async (t) => {
  const at = (messages: number, heapMiB: number, seq: number) => ({ messages, seconds: 0, seq, heapMiB, rssMiB: heapMiB, sendRate: 1, coldRead: { p50: 1, p99: 1, max: 1, reads: 1 }, diskMiB: 0, logMiB: 0, snapshotMiB: 0, snapshotSeq: -1 });
  const samples = [at(0, 100, 10), at(1000, 50, 1010), at(2000, 51, 2010), at(3000, 52, 3010)];
  t.equal(Math.round(perMessage(samples, 1000, (s) => s.heapMiB).bytes), Math.round(2 ** 20 / 1000), 'the warm-up reading is left out');
  t.equal(messagesAtSeq(samples, 1510), 1500);
  t.ok(Number.isNaN(messagesAtSeq(samples, 5)));
});

t.test('a tiny capacity run against a real server: readings, restart, report', async (t) => {
  built('bench/probe.ts');
  const opts: Options = { mode: 'smoke', n: 3000, interval: 1000, maxSeconds: 60, runs: 1, seed: 1 };
  const logs: string[] = [];
  const result = await capacity.run({ opts, server: (local) => startParley(local), log: (m) => logs.push(m) });
  const record = result.capacity!;
  t.equal(result.failed, undefined);
  t.equal(record.stoppedBy, 'count reached', record.stoppedBy);
  t.same(record.samples.map((s) => s.messages), [0, 1000, 2000, 3000], 'a reading before the first send and every interval');
  for (const s of record.samples.slice(1)) {
    t.ok(s.heapMiB > 0 && s.arrayBuffersMiB! > 0 && s.rssMiB > 0 && s.sendRate > 0 && s.seq > 0, `${s.messages}: heap, array buffers, RSS, rate, seq`);
    t.equal(s.coldRead.reads, 50, `${s.messages}: cold reads`);
    t.ok(s.coldRead.p50 > 0 && s.coldRead.p99 >= s.coldRead.p50, `${s.messages}: cold read percentiles`);
    t.ok(s.diskMiB > 0 && s.logMiB > 0, `${s.messages}: disk use`);
  }
  const figure = (name: string): number => result.figures.find((f) => f.name === name)?.value ?? NaN;
  t.equal(figure('messages held'), 3000);
  t.ok(Number.isFinite(figure('V8 heap per message')), `V8 heap per message ${figure('V8 heap per message')} bytes`);
  t.ok(figure('heap and array buffers per message') > 0, `heap and array buffers per message ${figure('heap and array buffers per message')} bytes`);
  t.ok(figure('RSS per message') > 0, `RSS per message ${figure('RSS per message')} bytes`);
  t.ok(figure('snapshot per message') > 0, 'the final snapshot measured');
  t.ok(figure('RSS at 100 M messages (extrapolated)') > 0, 'RSS extrapolated to 100 M');
  t.ok(figure('send rate (median of intervals)') > 0, 'a send rate');
  const restart = record.restart!;
  t.equal(restart.failed, undefined, restart.failed ?? "the restart served");
  t.ok(restart.startSeconds! > 0 && restart.listeningSeconds! <= restart.startSeconds!, 'the start timed, listening first');
  t.ok(restart.healthz.polls >= 1 && restart.healthz.answered === restart.healthz.polls, '/healthz answered during the start');
  t.ok(restart.coldRead!.p99 > 0 && restart.heapMiB! > 0, 'read after the restart');
  t.ok(restart.stopSeconds! >= 0, 'the stop timed');
  t.equal(result.tables?.[0].rows.length, 4, 'a table row per reading');
  t.match(table([result]), /capacity: readings/);
  const html = await htmlReport(benchRecord(new Date(), opts, ['--scenario', 'capacity'], [result]));
  t.match(html, /<figure id="capacity-memory"><svg/, 'the chart of memory against messages');
  t.match(html, /<h3>readings \(sends paused; heap after a full GC\)<\/h3>/);
});
