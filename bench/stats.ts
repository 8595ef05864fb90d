/**
 * Timing and summary statistics for the bench: a monotonic clock in milliseconds
 * (from `process.hrtime`), percentiles, medians, and a meter of this process's CPU.
 */

/** Milliseconds on the monotonic clock, with sub-millisecond precision. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The percentiles the bench keeps of every latency distribution, low to high. */
export const PERCENTILES = ['p50', 'p75', 'p90', 'p95', 'p99', 'p999', 'max'] as const;

/** A percentile's name, as in `PERCENTILES` (`p999` is the 99.9th, `max` the 100th). */
export type PercentileName = (typeof PERCENTILES)[number];

/** The shape of a latency distribution, in milliseconds. */
export type Percentiles = Record<PercentileName, number>;

/** Latency summary of one sample set, in milliseconds. */
export interface Summary extends Percentiles {
  n: number;
  min: number;
  mean: number;
}

/** The `p`-th percentile (0..100) of an ascending array, nearest-rank. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Count, min, mean and the `PERCENTILES` of a set of samples. */
export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples as ArrayLike<number>).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i];
  return {
    n: sorted.length,
    min: sorted.length ? sorted[0] : NaN,
    p50: percentile(sorted, 50),
    p75: percentile(sorted, 75),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
}

/** Just the `PERCENTILES` of a summary, as the result JSON keeps them. */
export function percentilesOf(s: Summary): Percentiles {
  return Object.fromEntries(PERCENTILES.map((p) => [p, s[p]])) as Percentiles;
}

/**
 * Completions per second over a measured window: `count` each completion at its
 * monotonic time, then `rates` gives requests/s in each second since `start`, for the
 * throughput-over-time chart. A last partial second is scaled to a rate, or left out
 * when shorter than 0.2 s (too short to say anything).
 */
export class Timeline {
  private readonly counts: number[] = [];

  constructor(private readonly start: number) {}

  count(atMs: number): void {
    const second = Math.max(0, Math.floor((atMs - this.start) / 1000));
    while (this.counts.length <= second) this.counts.push(0);
    this.counts[second]++;
  }

  rates(endMs: number): number[] {
    const last = this.counts.length - 1;
    const lastLength = Math.min(1, (endMs - this.start) / 1000 - last);
    const rates = this.counts.map((c, i) => (i === last ? c / lastLength : c));
    return lastLength < 0.2 ? rates.slice(0, last) : rates;
  }
}

/** Least-squares line through points; `slope` is the cost of one more unit of x. */
export function linearFit(xs: number[], ys: number[]): { slope: number; intercept: number; r2: number } {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
    syy += (ys[i] - my) ** 2;
  }
  const slope = sxx > 0 ? sxy / sxx : NaN;
  return { slope, intercept: my - slope * mx, r2: sxx > 0 && syy > 0 ? (sxy * sxy) / (sxx * syy) : NaN };
}

/** The median of some numbers (NaN entries ignored). */
export function median(values: number[]): number {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/**
 * Measures how busy this process (the load generator) was over a window, as a
 * fraction of one core. Near 1.0 the client, not the server, set the pace.
 */
export class CpuMeter {
  private cpu = process.cpuUsage();
  private wall = nowMs();

  /** Fraction of one core used since construction (or the last `reset`). */
  read(): number {
    const used = process.cpuUsage(this.cpu);
    const wallMs = nowMs() - this.wall;
    return wallMs > 0 ? (used.user + used.system) / 1000 / wallMs : 0;
  }

  reset(): void {
    this.cpu = process.cpuUsage();
    this.wall = nowMs();
  }
}

/** A small seeded PRNG (mulberry32), so that load patterns repeat run to run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
