/**
 * wrk, when it is installed: a C load generator that can push a server harder than
 * the bench's Node client. Detected on PATH; never installed by the bench.
 */
import { onLines, spawnTracked, stopChild } from './children.js';
import { which } from './proc.js';
import type { Percentiles } from './stats.js';

/** What one wrk run measured. */
export interface WrkResult {
  rps: number;
  p99Ms: number;
  /** The percentiles wrk prints with `--latency` (50, 75, 90, 99) and the max, in ms. */
  percentiles: Partial<Percentiles>;
}

/** The wrk binary on PATH, or null. */
export function findWrk(): string | null {
  return which('wrk');
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000 };

/** Runs wrk against `url` for `durationS` seconds with `connections` connections. */
export async function runWrk(wrk: string, url: string, headers: Record<string, string>, connections: number, durationS: number): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${Math.max(1, Math.round(durationS))}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const child = spawnTracked(wrk, args);
  const lines: string[] = [];
  onLines(child.stdout, (line) => lines.push(line));
  onLines(child.stderr, (line) => lines.push(line));
  const timer = setTimeout(() => void stopChild(child, 1000), (durationS + 15) * 1000);
  // 'close', not 'exit': wrk's summary is its last output, and 'exit' can come before it has been read.
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearTimeout(timer);
  const text = lines.join('\n');
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
  if (code !== 0 || !rps) throw new Error(`wrk failed (exit ${code}):\n${text}`);
  const percentiles = wrkPercentiles(text);
  return { rps: Number(rps[1]), p99Ms: percentiles.p99 ?? NaN, percentiles };
}

/** The latency distribution in wrk's `--latency` output, in ms. */
export function wrkPercentiles(text: string): Partial<Percentiles> {
  const ms = (value: string, unit: string): number => Number(value) * UNIT_MS[unit];
  const out: Partial<Percentiles> = {};
  for (const m of text.matchAll(/^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$/gm)) out[`p${m[1]}` as keyof Percentiles] = ms(m[2], m[3]);
  const max = /^\s+Latency\s+\S+?(?:us|ms|s)\s+\S+?(?:us|ms|s)\s+([\d.]+)(us|ms|s)/m.exec(text);
  if (max) out.max = ms(max[1], max[2]);
  return out;
}
