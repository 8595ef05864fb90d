/**
 * wrk, when it is installed: a C load generator that can push a server harder than
 * the bench's Node client. Detected on PATH; never installed by the bench.
 */
import { onLines, spawnTracked, stopChild } from './children.js';
import { which } from './proc.js';

/** What one wrk run measured. */
export interface WrkResult {
  rps: number;
  p99Ms: number;
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
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  const text = lines.join('\n');
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(text);
  if (code !== 0 || !rps) throw new Error(`wrk failed (exit ${code}):\n${text}`);
  return { rps: Number(rps[1]), p99Ms: p99 ? Number(p99[1]) * UNIT_MS[p99[2]] : NaN };
}
