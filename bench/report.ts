/**
 * The outputs of every run: a table on stdout, and `bench/results/<timestamp>.json`
 * with the machine, the versions under test, every figure with its per-run values,
 * the baselines measured in the same run and those skipped (`html.ts` renders the
 * same record as a page with charts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { arch, cpus, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { openFileLimit, which } from './proc.js';
import type { Figure, Options, ScenarioResult, SkippedBaseline } from './scenario.js';
import { REPO_ROOT } from './target.js';

function readJson(path: string): any {
  try {
    return JSON.parse(readFileSync(join(REPO_ROOT, path), 'utf8'));
  } catch {
    return {};
  }
}

/** The machine and software a run measured. */
export function environment(): Pick<BenchRecord, 'machine' | 'versions' | 'tools'> {
  const pkg = readJson('package.json');
  const installed = (dir: string): string | undefined => readJson(`node_modules/${dir}/package.json`).version;
  const c = cpus();
  return {
    machine: { cpus: c.length, cpuModel: c[0]?.model, memoryBytes: totalmem(), node: process.version, os: `${type()} ${release()} ${arch()}`, openFileLimit: openFileLimit() },
    versions: {
      parley: pkg.version,
      uWebSockets: { declared: pkg.dependencies?.['uWebSockets.js'], installed: installed('uWebSockets.js') },
      xstate: { declared: pkg.dependencies?.xstate, installed: installed('xstate') },
    },
    tools: { wrk: which('wrk'), redisServer: which('redis-server') },
  };
}

/** A figure's number for people: fewer decimals as it grows, `-` when missing. */
export function num(v: number | undefined, unit = ''): string {
  if (v === undefined || Number.isNaN(v)) return '-';
  if (Number.isInteger(v)) return `${v}${unit ? ' ' + unit : ''}`;
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${v.toFixed(digits)}${unit ? ' ' + unit : ''}`;
}

/** `PASS`, `MISS`, or nothing when the figure has no target. */
export function status(f: Figure): string {
  return f.pass === undefined ? '' : f.pass ? 'PASS' : 'MISS';
}

/** A baseline as the record lists it: which scenario, and what it is. */
export interface BaselineStatus {
  scenario: string;
  name: string;
  /** Set when it did not run. */
  why?: string;
}

/** Every baseline of the run: those that ran (they have figures) and those skipped, with why. */
export function baselineStatus(results: ScenarioResult[]): BaselineStatus[] {
  return results.flatMap((r) => {
    const ran = [...new Set(r.figures.flatMap((f) => (f.baselineName ? [f.baselineName] : [])))];
    const skipped = (r.skippedBaselines ?? []).map((s: SkippedBaseline) => ({ scenario: r.scenario, name: s.name, why: s.why }));
    return [...ran.map((name) => ({ scenario: r.scenario, name })), ...skipped];
  });
}

/** Says in plain lines which baselines ran and which were skipped, and why. */
export function baselineLines(status: BaselineStatus[]): string[] {
  const ran = status.filter((s) => s.why === undefined);
  const skipped = status.filter((s) => s.why !== undefined);
  const lines = [`baselines run: ${ran.length === 0 ? 'none' : ran.map((s) => `${s.name} (${s.scenario})`).join(', ')}`];
  for (const s of skipped) lines.push(`baseline SKIPPED: ${s.name} (${s.scenario}): ${s.why}`);
  return lines;
}

/** Renders results as a fixed-width table, notes under each scenario. */
export function table(results: ScenarioResult[]): string {
  const header = ['scenario', 'figure', 'value', 'baseline', 'ratio', 'target', 'status'];
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const r of results) {
    if (r.failed) rows.push([r.scenario, 'FAILED', '', '', '', '', 'FAIL']);
    for (const f of r.figures) {
      const base = f.baseline === undefined ? '' : `${num(f.baseline, f.unit)}${f.baselineName ? ` (${f.baselineName})` : ''}`;
      rows.push([r.scenario, f.name, num(f.value, f.unit), base, f.ratio === undefined ? '' : `${num(f.ratio)}x`, f.target ?? '', status(f)]);
    }
    const where = r.clientCpuWhere ? ` (${r.clientCpuWhere})` : '';
    const bound = r.clientBound ? '; CLIENT-BOUND: the load generator may have set the pace there' : '';
    const cpu = r.clientCpu === undefined ? [] : [`client CPU max ${(r.clientCpu * 100).toFixed(0)}% of a core${where}${bound}`];
    notes.push(`${r.scenario}: ${[`${r.seconds.toFixed(0)} s`, ...cpu, ...r.notes, ...(r.failed ? [`FAILED: ${r.failed}`] : [])].join('; ')}`);
  }
  const extra = results.flatMap((r) => (r.tables ?? []).filter((t) => !t.htmlOnly).flatMap((t) => ['', `${r.scenario}: ${t.title}`, ...fixedWidth(t.columns, t.rows)]));
  return [...fixedWidth(header, rows), ...extra, '', ...notes, '', ...baselineLines(baselineStatus(results))].join('\n');
}

/** Lines of a fixed-width table: the header, a rule, the rows. */
export function fixedWidth(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (c ?? '').padEnd(widths[i])).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

/** The JSON record of one run, as written to `bench/results/<timestamp>.json`. */
export interface BenchRecord {
  startedAt: string;
  finishedAt: string;
  argv: string[];
  mode: string;
  options: Record<string, unknown>;
  machine: Record<string, unknown>;
  versions: Record<string, unknown>;
  tools: Record<string, unknown>;
  scenarios: ScenarioResult[];
  /** The figures measured against a baseline, flat. */
  baselines: Array<{ scenario: string; figure: string; baseline?: string; value?: number; unit: string }>;
  /** Every baseline, run or skipped (with why). */
  baselineStatus: BaselineStatus[];
}

/** Builds the record of a run. */
export function benchRecord(startedAt: Date, opts: Options, argv: string[], results: ScenarioResult[]): BenchRecord {
  const baselines = results.flatMap((r) =>
    r.figures.filter((f) => f.baseline !== undefined).map((f) => ({ scenario: r.scenario, figure: f.name, baseline: f.baselineName, value: f.baseline, unit: f.unit })),
  );
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    argv,
    mode: opts.mode,
    options: { ...opts, remote: opts.remote ? { url: opts.remote.url, email: opts.remote.email } : undefined },
    ...environment(),
    scenarios: results,
    baselines,
    baselineStatus: baselineStatus(results),
  };
}

/** Writes the JSON record of a run; returns its path. */
export function writeResults(record: BenchRecord): string {
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${record.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(path, JSON.stringify(record, null, 2) + '\n');
  return path;
}
