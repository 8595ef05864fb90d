/**
 * The run's HTML report, written next to its JSON record (`<timestamp>.html`): one
 * self-contained page with the machine, the baselines that ran and those skipped,
 * each scenario's figures and notes, and the charts of `charts.ts` as inline SVG (no
 * script, no stylesheet or font to fetch).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { charts, renderSvg, type Chart } from './charts.js';
import { num, status, type BenchRecord } from './report.js';
import type { ScenarioResult } from './scenario.js';

const STYLE = `body{font:14px/1.4 sans-serif;margin:2em auto;max-width:72em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
td.n{text-align:right}.MISS,.FAIL,.skipped{color:#b00;font-weight:bold}.PASS{color:#070}
figure{margin:1em 0}svg{max-width:100%;height:auto}`;

/** Escapes text for HTML. */
function esc(text: unknown): string {
  return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

function row(cells: string[], tag = 'td'): string {
  return `<tr>${cells.map((c) => `<${tag}>${c}</${tag}>`).join('')}</tr>`;
}

function baselinesSection(record: BenchRecord): string {
  const items = (record.baselineStatus ?? []).map((b) =>
    b.why === undefined ? `<li>ran: ${esc(b.name)} (${esc(b.scenario)})</li>` : `<li class="skipped">skipped: ${esc(b.name)} (${esc(b.scenario)}): ${esc(b.why)}</li>`,
  );
  return `<h2>Baselines</h2><ul>${items.join('') || '<li>none in these scenarios</li>'}</ul>`;
}

function figuresTable(r: ScenarioResult): string {
  const rows = r.figures.map((f) => {
    const base = f.baseline === undefined ? '' : `${num(f.baseline, f.unit)}${f.baselineName ? ` (${f.baselineName})` : ''}`;
    const s = status(f);
    return `<tr><td>${esc(f.name)}</td><td class="n">${esc(num(f.value, f.unit))}</td><td>${esc(base)}</td><td class="n">${f.ratio === undefined ? '' : esc(`${num(f.ratio)}x`)}</td><td>${esc(f.target ?? '')}</td><td class="${s}">${s}</td></tr>`;
  });
  if (rows.length === 0) return '';
  return `<table>${row(['figure', 'value', 'baseline', 'ratio', 'target', 'status'], 'th')}${rows.join('')}</table>`;
}

/** A scenario's own tables (e.g. the worst routes of `stall`), a status column coloured as the figures'. */
function extraTables(r: ScenarioResult): string {
  return (r.tables ?? [])
    .map((t) => {
      const cells = (row: string[]): string => `<tr>${row.map((c) => `<td class="${c === 'MISS' || c === 'PASS' ? c : ''}">${esc(c)}</td>`).join('')}</tr>`;
      return `<h3>${esc(t.title)}</h3><table>${row(t.columns.map(esc), 'th')}${t.rows.map(cells).join('')}</table>`;
    })
    .join('');
}

function figure(chart: Chart, svg: string): string {
  return `<figure id="${esc(chart.id)}">${svg}<figcaption>${esc(chart.title)}</figcaption></figure>`;
}

function scenarioSection(r: ScenarioResult, svgs: Map<Chart, string>): string {
  const failed = r.failed ? `<p class="FAIL">FAILED: ${esc(r.failed)}</p>` : '';
  const notes = r.notes.length ? `<ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : '';
  const figs = [...svgs].filter(([c]) => c.scenario === r.scenario).map(([c, svg]) => figure(c, svg));
  return `<h2 id="${esc(r.scenario)}">${esc(r.scenario)}</h2><p>${esc(r.seconds.toFixed(0))} s; parameters: <code>${esc(JSON.stringify(r.params))}</code></p>${failed}${figuresTable(r)}${extraTables(r)}${notes}${figs.join('')}`;
}

/** Renders every chart of `record` to SVG, in page order. */
export async function renderCharts(record: BenchRecord): Promise<Map<Chart, string>> {
  const svgs = new Map<Chart, string>();
  for (const chart of charts(record)) svgs.set(chart, await renderSvg(chart.spec));
  return svgs;
}

/** The whole page for one run's record. */
export async function htmlReport(record: BenchRecord): Promise<string> {
  const svgs = await renderCharts(record);
  const m = record.machine as { cpus?: number; cpuModel?: string; node?: string; os?: string };
  const across = [...svgs].filter(([c]) => c.scenario === null).map(([c, svg]) => figure(c, svg));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Parley bench ${esc(record.startedAt)}</title><style>${STYLE}</style></head><body>
<h1>Parley bench, ${esc(record.mode)} mode</h1>
<p>${esc(record.startedAt)} to ${esc(record.finishedAt)}; ${esc(m.cpus)} CPUs (${esc(m.cpuModel)}), Node ${esc(m.node)}, ${esc(m.os)}; placement: ${esc(record.options.placement ?? '-')}; <code>${esc(record.argv.join(' '))}</code></p>
${baselinesSection(record)}
${record.scenarios.map((r) => scenarioSection(r, svgs)).join('\n')}
${across.length ? `<h2>Memory against N</h2>${across.join('')}` : ''}
</body></html>
`;
}

/** Writes the page next to the JSON record (`x.json` → `x.html`); returns its path. */
export async function writeHtmlReport(record: BenchRecord, jsonPath: string): Promise<string> {
  const path = jsonPath.replace(/\.json$/, '') + '.html';
  writeFileSync(path, await htmlReport(record));
  return path;
}

/** Writes each chart of `record` as `<dir>/<id>.svg` (for docs/performance.md); returns the paths. */
export async function writeChartFiles(record: BenchRecord, dir: string): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (const [chart, svg] of await renderCharts(record)) {
    const path = join(dir, `${chart.id}.svg`);
    writeFileSync(path, svg + '\n');
    paths.push(path);
  }
  return paths;
}
