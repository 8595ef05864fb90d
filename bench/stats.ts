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

/** Latency summary of one sample set, in milliseconds. */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** The `p`-th percentile (0..100) of an ascending array, nearest-rank. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** p50, p99, max and mean of a set of samples. */
export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples as ArrayLike<number>).sort();
  let sum = 0;
  for (let i = 0; i < sorted.length; i++) sum += sorted[i];
  return {
    n: sorted.length,
    min: sorted.length ? sorted[0] : NaN,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
  };
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
