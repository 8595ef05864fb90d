/**
 * `npm run bench -- --compare A.json B.json`: the change of every figure between two
 * result records, matched by scenario and figure name (and baseline, where a scenario
 * has two figures of one name), with whether the change is an improvement given the
 * figure's direction. Changes beyond the noise threshold the wrong way are marked
 * REGRESSION. Baselines are listed too: a baseline that moved as much as its figure
 * points at the machine, not at Parley. Needs no server.
 */
import { readFileSync } from 'node:fs';
import { num, type BenchRecord } from './report.js';
import type { Figure } from './scenario.js';

/** Which way a figure improves. */
export type Direction = 'higher' | 'lower' | 'neither';

/** One line of a comparison. */
export interface ComparisonRow {
  scenario: string;
  figure: string;
  unit: string;
  a?: number;
  b?: number;
  /** (b - a) / a in percent; undefined when a figure is in one file only or a is 0. */
  changePct?: number;
  verdict: 'REGRESSION' | 'improved' | 'noise' | 'changed' | 'only in A' | 'only in B' | 'baseline';
}

/** Latency, memory, CPU and sizes are better lower; rates and work per CPU-second higher. */
export function direction(f: Pick<Figure, 'name' | 'unit' | 'better'>): Direction {
  if (f.better) return f.better;
  if (f.unit.endsWith('/s') || /per server CPU-second/.test(f.name)) return 'higher';
  if (['ms', 'us', 's', 'KiB', 'MiB', 'bytes', '%'].includes(f.unit)) return 'lower';
  return 'neither';
}

interface Entry {
  scenario: string;
  label: string;
  unit: string;
  value?: number;
  dir: Direction;
  baseline: boolean;
}

/** Every figure of a record (and each baseline value, labelled as such), keyed for matching. */
function entries(record: BenchRecord): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const r of record.scenarios) {
    const twice = new Set(r.figures.filter((f, i) => r.figures.findIndex((g) => g.name === f.name) !== i).map((f) => f.name));
    for (const f of r.figures) {
      const label = twice.has(f.name) && f.baselineName ? `${f.name} [${f.baselineName}]` : f.name;
      const base = { scenario: r.scenario, unit: f.unit, dir: direction(f) };
      out.set(`${r.scenario}\u0000${label}`, { ...base, label, value: f.value, baseline: false });
      // Listed right under its figure, which it follows in insertion order.
      if (f.baseline !== undefined) out.set(`${r.scenario}\u0000${label}\u0000baseline`, { ...base, label: `  baseline: ${f.baselineName ?? '?'}`, value: f.baseline, baseline: true });
    }
  }
  return out;
}

function verdictOf(e: Entry, changePct: number | undefined, thresholdPct: number): ComparisonRow['verdict'] {
  if (e.baseline) return 'baseline';
  if (changePct === undefined || e.dir === 'neither') return 'changed';
  if (Math.abs(changePct) <= thresholdPct) return 'noise';
  return (changePct > 0) === (e.dir === 'higher') ? 'improved' : 'REGRESSION';
}

/** Compares two records figure by figure; `thresholdPct` is the noise band. */
export function compareRecords(a: BenchRecord, b: BenchRecord, thresholdPct: number): ComparisonRow[] {
  const ea = entries(a);
  const eb = entries(b);
  const keys = [...ea.keys(), ...[...eb.keys()].filter((k) => !ea.has(k))];
  return keys.map((key) => {
    const x = ea.get(key);
    const y = eb.get(key);
    const e = (x ?? y)!;
    const row = { scenario: e.scenario, figure: e.label, unit: e.unit, a: x?.value, b: y?.value };
    if (!x || !y) return { ...row, verdict: x ? 'only in A' : 'only in B' };
    const changePct = Number.isFinite(x.value) && Number.isFinite(y.value) && x.value !== 0 ? ((y.value! - x.value!) / Math.abs(x.value!)) * 100 : undefined;
    return { ...row, changePct, verdict: verdictOf(e, changePct, thresholdPct) };
  });
}

/** The comparison as a fixed-width table, with a count of regressions first. */
export function formatComparison(rows: ComparisonRow[], thresholdPct: number): string {
  const header = ['scenario', 'figure', 'A', 'B', 'change', 'verdict'];
  const cells = rows.map((r) => [
    r.scenario,
    r.figure,
    r.a === undefined ? '' : num(r.a, r.unit),
    r.b === undefined ? '' : num(r.b, r.unit),
    r.changePct === undefined ? '' : `${r.changePct >= 0 ? '+' : ''}${r.changePct.toFixed(1)}%`,
    r.verdict === 'REGRESSION' ? 'REGRESSION <<<' : r.verdict,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]): string => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  const count = (v: ComparisonRow['verdict']): number => rows.filter((r) => r.verdict === v).length;
  const summary = `${count('REGRESSION')} regression(s) and ${count('improved')} improvement(s) beyond the noise threshold of ±${thresholdPct}%; ${count('only in A') + count('only in B')} figure(s) in one file only`;
  const legend = 'improved/REGRESSION: beyond the threshold, given the direction (rates higher is better; latency, memory, CPU lower); noise: within it; changed: a count with no better direction; baseline: compare it with its figure (a baseline that moved as much points at the machine)';
  return [summary, '', line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line), '', legend].join('\n');
}

function readRecord(path: string): BenchRecord {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as BenchRecord;
  } catch (err) {
    throw new Error(`--compare: cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Notes a tool found in one run only (wrk measures poll instead of the bench client; redis-server adds a baseline). */
function toolNotes(a: BenchRecord, b: BenchRecord): string[] {
  const found = (r: BenchRecord, tool: string): boolean => Boolean((r.tools as Record<string, unknown> | undefined)?.[tool]);
  return Object.keys({ ...a.tools, ...b.tools })
    .filter((tool) => found(a, tool) !== found(b, tool))
    .map((tool) => `note: ${tool} was installed for ${found(a, tool) ? 'A' : 'B'} only; figures that depend on it are not like for like`);
}

/** Reads two result files and returns the printed comparison. */
export function compareFiles(pathA: string, pathB: string, thresholdPct: number): string {
  const [a, b] = [readRecord(pathA), readRecord(pathB)];
  const about = (name: string, path: string, r: BenchRecord): string => `${name}: ${path} (${r.startedAt}, ${r.mode} mode, ${(r.machine as { cpus?: number })?.cpus ?? '?'} CPUs)`;
  const modes = a.mode === b.mode ? [] : [`note: the modes differ (${a.mode}, ${b.mode}); figures named with a size (N=...) will not match`];
  return [about('A', pathA, a), about('B', pathB, b), ...modes, ...toolNotes(a, b), '', formatComparison(compareRecords(a, b, thresholdPct), thresholdPct)].join('\n') + '\n';
}
