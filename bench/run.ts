/**
 * `npm run bench`: runs the scenarios, prints a table, writes bench/results/<time>.json
 * and its HTML report (`--compare` and `--report` work on existing records instead).
 * Exits non-zero when a scenario errors or finds a correctness violation (a missed
 * performance target is reported, not fatal). Every scenario runs under a time budget,
 * and every child process it started is killed when the bench exits.
 */
import { parseArgs, usage, type Cli } from './args.js';
import { readFileSync } from 'node:fs';
import { killAllChildren, pinServersTo } from './children.js';
import { pinSelf, planPlacement } from './cpus.js';
import { ForeignCpuMeter } from './proc.js';
import { compareFiles } from './compare.js';
import { writeChartFiles, writeHtmlReport } from './html.js';
import { benchRecord, table, writeResults, type BenchRecord } from './report.js';
import { newResult, within, type Mode, type Scenario, type ScenarioContext, type ScenarioResult } from './scenario.js';
import { scenarios, selectScenarios } from './scenarios/index.js';
import { nowMs } from './stats.js';
import { remoteTarget, startParley, type Target } from './target.js';

/** Longest one scenario may take, by mode, before it is failed. */
const BUDGET_S: Record<Mode, number> = { smoke: 45, quick: 240, full: 1800 };

/** CPU used by unrelated processes, in cores, above which a scenario's figures are flagged. */
const BUSY_CORES = 0.2;

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function contextFor(cli: Cli, scenario: Scenario): ScenarioContext {
  return {
    opts: cli,
    log: (m) => log(`${scenario.name}: ${m}`),
    server(local = {}): Promise<Target> {
      if (cli.remote) return remoteTarget(cli.remote.url, cli.remote.email, cli.remote.apiKey);
      return startParley({ ...local, fsync: cli.fsync ?? local.fsync, nodeArgs: [...(local.nodeArgs ?? []), ...(cli.serverNodeArgs ?? [])] });
    },
  };
}

/** How long `scenario` may take, in seconds. */
function budgetS(cli: Cli, scenario: Scenario): number {
  return scenario.budgetS?.(cli) ?? BUDGET_S[cli.mode];
}

/** Smoke sizes are too small for performance targets to mean anything; correctness still counts. */
function judgeNothing(result: ScenarioResult): void {
  let cleared = false;
  for (const f of result.figures) {
    if (f.pass === undefined || result.scenario === 'correctness') continue;
    delete f.pass;
    cleared = true;
  }
  if (cleared) result.notes.push('smoke sizes: performance targets shown, not judged');
}

async function runOne(cli: Cli, scenario: Scenario): Promise<ScenarioResult> {
  const started = nowMs();
  const foreign = new ForeignCpuMeter();
  let result: ScenarioResult;
  try {
    result = await within(scenario.run(contextFor(cli, scenario)), budgetS(cli, scenario) * 1000, `scenario ${scenario.name}`);
  } catch (err) {
    result = newResult(scenario.name, {});
    result.failed = (err as Error).stack ?? String(err);
    log(`${scenario.name}: FAILED: ${result.failed}`);
  }
  if (cli.mode === 'smoke') judgeNothing(result);
  result.seconds = (nowMs() - started) / 1000;
  result.foreignCpu = foreign.read();
  if (result.foreignCpu >= BUSY_CORES) result.notes.push(`MACHINE BUSY: other processes used ${result.foreignCpu.toFixed(2)} cores on average meanwhile; figures are unreliable`);
  return result;
}

/** Pins the load and the servers apart when asked and possible; describes what was done. */
function placeProcesses(cli: Cli): string {
  if (cli.pin === 'no') return 'not pinned (--no-pin): the servers and the load share every core';
  if (cli.remote) return 'not pinned: the target runs elsewhere';
  const plan = planPlacement(cli.pin === 'yes');
  if (typeof plan === 'string') return plan;
  const failed = pinSelf(plan.load);
  if (failed) return `not pinned (${failed})`;
  pinServersTo(plan.servers);
  return `load (this process, wrk) on CPU ${plan.load}, servers on CPU ${plan.servers} (taskset)`;
}

/** `--report FILE.json [--charts DIR]`: renders an existing record again. */
async function reportOnly(cli: Cli): Promise<number> {
  const record = JSON.parse(readFileSync(cli.report!, 'utf8')) as BenchRecord;
  process.stdout.write(`report: ${await writeHtmlReport(record, cli.report!)}\n`);
  if (cli.chartsDir) for (const path of await writeChartFiles(record, cli.chartsDir)) process.stdout.write(`chart: ${path}\n`);
  return 0;
}

/** Rejections nobody awaited (e.g. a request still in flight when its scenario failed). */
const stray: string[] = [];

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  let cli: Cli;
  try {
    cli = parseArgs(argv);
  } catch (err) {
    // A usage error: the message, then the options (as the operator CLI does).
    process.stderr.write(`bench: ${(err as Error).message}\n\n${usage()}`);
    return 2;
  }
  if (cli.help) {
    process.stdout.write(usage() + `\nScenarios:\n${scenarios.map((s) => `  ${s.name.padEnd(13)} ${s.summary}${s.onlyByName ? ' (only when named with --scenario)' : ''}`).join('\n')}\n`);
    return 0;
  }
  if (cli.compare) {
    process.stdout.write(compareFiles(cli.compare[0], cli.compare[1], cli.thresholdPct));
    return 0;
  }
  if (cli.report) return reportOnly(cli);
  const unknown = (cli.scenarios ?? []).filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`);
  const selected = selectScenarios(cli.scenarios);
  cli.placement = placeProcesses(cli);
  log(`placement: ${cli.placement}`);
  const startedAt = new Date();
  const results: ScenarioResult[] = [];
  // A hard stop for the whole run, in case a budget check itself cannot fire.
  const watchdog = setTimeout(() => {
    log('the run exceeded its overall time budget; stopping');
    killAllChildren();
    process.exit(3);
  }, (selected.reduce((sum, s) => sum + budgetS(cli, s), 0) + 60) * 1000);
  watchdog.unref();
  for (const scenario of selected) {
    if (cli.remote && !scenario.remote) {
      const skipped = newResult(scenario.name, {});
      skipped.notes.push('skipped: needs a server the bench starts (it reads the server process from /proc)');
      results.push(skipped);
      continue;
    }
    log(`${scenario.name} (${cli.mode}): ${scenario.summary}`);
    results.push(await runOne(cli, scenario));
  }
  const record = benchRecord(startedAt, cli, argv, results);
  const path = writeResults(record);
  process.stdout.write(`\nParley bench, ${cli.mode} mode${cli.remote ? `, target ${cli.remote.url}` : ''} (median of ${cli.runs} run${cli.runs > 1 ? 's' : ''} after a warm-up)\nplacement: ${cli.placement}\n\n`);
  process.stdout.write(table(results) + `\n\nresults: ${path}\n`);
  // Charts render after every scenario, so that loading vega costs no scenario anything.
  const renderStart = nowMs();
  const html = await writeHtmlReport(record, path).catch((err: Error) => {
    process.stdout.write(`report: FAILED: ${err.stack ?? err.message}\n`);
    return null;
  });
  if (html) process.stdout.write(`report: ${html} (rendered in ${((nowMs() - renderStart) / 1000).toFixed(1)} s)\n`);
  if (stray.length > 0) process.stdout.write(`\n${stray.length} unhandled rejection(s); first: ${stray[0]}\n`);
  return results.some((r) => r.failed) || stray.length > 0 || !html ? 1 : 0;
}

process.once('exit', killAllChildren);
process.on('unhandledRejection', (err) => {
  stray.push((err as Error)?.message ?? String(err));
  log(`unhandled rejection: ${(err as Error)?.stack ?? String(err)}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`bench: ${err.message}\n`);
    process.exit(2);
  },
);
