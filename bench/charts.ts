/**
 * The report's charts as vega-lite specs, built from a run's record: the latency
 * distribution of each scenario against its baselines, throughput over time of the
 * closed-loop scenarios, the capacity scenario's memory and disk against messages, and
 * memory against N. `renderSvg` turns a spec into an SVG
 * string server-side (vega's headless View, no browser, no network); vega is imported
 * only then, so that a run pays for it after its scenarios, not before.
 */
import type { TopLevelSpec } from 'vega-lite';
import type { BenchRecord } from './report.js';
import type { ScenarioResult } from './scenario.js';
import { PERCENTILES } from './stats.js';

/** One chart of the report: `id` names its SVG file (`send-latency.svg`). */
export interface Chart {
  id: string;
  title: string;
  /** The scenario it belongs to, or null for charts across scenarios (memory). */
  scenario: string | null;
  spec: TopLevelSpec;
}

const WIDTH = 480;
const HEIGHT = 240;
const LABELS: Record<string, string> = { p50: 'p50', p75: 'p75', p90: 'p90', p95: 'p95', p99: 'p99', p999: 'p99.9', max: 'max' };
/** Plain, readable defaults; SVG text is measured without a font, so keep it simple. */
const CONFIG = { font: 'sans-serif', view: { stroke: '#ddd' }, legend: { orient: 'bottom', columns: 2, labelLimit: 320 } } as const;

/** A position channel of the per-run line charts. */
interface Position {
  field: string;
  type: 'ordinal' | 'quantitative';
  title: string;
  sort?: string[];
  scale?: { type: 'log' };
  axis?: { labelAngle?: number; tickMinStep?: number };
}

/** A line chart with one line per server (colour) and measured run (`series`, `run` in each value). */
function perRunLines(title: string, values: object[], x: Position, y: Position): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width: WIDTH,
    height: HEIGHT,
    config: CONFIG,
    data: { values },
    mark: { type: 'line', point: true },
    encoding: { x, y, color: { field: 'series', type: 'nominal', title: null }, detail: { field: 'run', type: 'nominal' } },
  };
}

/** Latency by percentile, one line per server and run, on a log scale. */
export function latencyChart(r: ScenarioResult): Chart | null {
  const values = (r.latency ?? []).flatMap((rec) =>
    PERCENTILES.flatMap((p, order) => {
      const ms = rec.percentiles[p];
      return typeof ms === 'number' && ms > 0 ? [{ series: rec.series, run: rec.run, percentile: LABELS[p], order, ms }] : [];
    }),
  );
  if (values.length === 0) return null;
  return {
    id: `${r.scenario}-latency`,
    title: `${r.scenario}: latency distribution against its baseline`,
    scenario: r.scenario,
    spec: perRunLines(
      `${r.scenario}: latency by percentile (each line one measured run)`,
      values,
      { field: 'percentile', type: 'ordinal', sort: Object.values(LABELS), title: 'percentile', axis: { labelAngle: 0 } },
      { field: 'ms', type: 'quantitative', scale: { type: 'log' }, title: 'latency (ms, log scale)' },
    ),
  };
}

/** Requests/s in each second of the measured windows, one line per server and run. */
export function throughputChart(r: ScenarioResult): Chart | null {
  const values = (r.throughput ?? []).flatMap((rec) => rec.perSecond.map((rps, second) => ({ series: rec.series, run: rec.run, second: second + 1, rps })));
  if (values.length === 0) return null;
  return {
    id: `${r.scenario}-throughput`,
    title: `${r.scenario}: throughput over time`,
    scenario: r.scenario,
    spec: perRunLines(
      `${r.scenario}: requests/s in each second of a measured window`,
      values,
      { field: 'second', type: 'quantitative', title: 'second of the window', axis: { tickMinStep: 1 } },
      { field: 'rps', type: 'quantitative', title: 'requests/s' },
    ),
  };
}

/** Heap (after GC) and RSS against N: a row each, a column per thing that grows (users, messages, parked polls). */
export function memoryChart(scenarios: ScenarioResult[]): Chart | null {
  const values = scenarios.flatMap((r) =>
    (r.memory ?? []).flatMap((p) => [
      { series: p.series, n: p.n, memory: 'heap after GC', mib: p.heapMiB },
      { series: p.series, n: p.n, memory: 'RSS', mib: p.rssMiB },
    ]),
  );
  if (values.length === 0) return null;
  return {
    id: 'memory',
    title: 'Server memory against N',
    scenario: null,
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: 'server memory against N',
      config: CONFIG,
      data: { values },
      facet: {
        row: { field: 'memory', type: 'nominal', title: null, sort: ['heap after GC', 'RSS'] },
        column: { field: 'series', type: 'nominal', title: null, sort: [...new Set(values.map((v) => v.series))] },
      },
      spec: {
        width: 240,
        height: 140,
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'n', type: 'quantitative', title: 'N' },
          y: { field: 'mib', type: 'quantitative', title: 'MiB', scale: { zero: false } },
          color: { field: 'memory', type: 'nominal', legend: null },
        },
      },
      resolve: { scale: { x: 'independent', y: 'independent' } },
    },
  };
}

/** The capacity scenario's readings: heap after GC, RSS and the data directory's disk use against messages held. */
export function capacityChart(r: ScenarioResult): Chart | null {
  const values = (r.capacity?.samples ?? []).flatMap((s) => [
    { series: 'heap after GC', messages: s.messages, mib: s.heapMiB },
    { series: 'heap and array buffers', messages: s.messages, mib: s.heapMiB + (s.arrayBuffersMiB ?? 0) },
    { series: 'RSS', messages: s.messages, mib: s.rssMiB },
    { series: 'disk (data directory)', messages: s.messages, mib: s.diskMiB },
  ]);
  if (values.length === 0) return null;
  return {
    id: `${r.scenario}-memory`,
    title: `${r.scenario}: memory and disk against messages held`,
    scenario: r.scenario,
    spec: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: `${r.scenario}: heap (after a full GC), RSS and disk against messages`,
      width: WIDTH,
      height: HEIGHT,
      config: CONFIG,
      data: { values },
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'messages', type: 'quantitative', title: 'messages held' },
        y: { field: 'mib', type: 'quantitative', title: 'MiB' },
        color: { field: 'series', type: 'nominal', title: null, sort: ['heap after GC', 'RSS', 'disk (data directory)'] },
      },
    },
  };
}

/** Every chart of a run, in page order: per scenario latency, throughput and capacity, then memory. */
export function charts(record: BenchRecord): Chart[] {
  const perScenario = record.scenarios.flatMap((r) => [latencyChart(r), throughputChart(r), capacityChart(r)]);
  return [...perScenario, memoryChart(record.scenarios)].filter((c): c is Chart => c !== null);
}

/** Renders a vega-lite spec to a standalone SVG document, server-side. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const [vega, vegaLite] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
