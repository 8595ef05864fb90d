/**
 * Memory pressure: whether the V8 heap is so full that requests which grow the server's
 * state must be refused (503 with Retry-After) rather than let the process die of OOM.
 *
 * What is measured is the old generation in use (every heap space but the young
 * generation's): what `--max-old-space-size` bounds and what runs out at an OOM. Against
 * its limit, with hysteresis:
 *
 * - pressure starts when a reading taken just after a major GC (mark-compact: no garbage
 *   left, so the reading is the live data) is at or above the high watermark, 85%;
 * - it ends when any reading is below the low watermark, 70%: a reading between major
 *   GCs includes garbage, so it is an upper bound of the live data, good enough to say
 *   that the heap has room again.
 *
 * Readings come from a `PerformanceObserver` of GC entries (major ones only) and from a
 * timer every second, so that pressure also ends on an idle server. Each reading is one
 * `v8.getHeapSpaceStatistics()`, about 0.5 us; nothing is measured per request: the
 * pipeline reads `active`, a field.
 *
 * Between two major GCs the live data can grow past the high watermark unseen; V8 runs a
 * major GC before its old generation reaches the limit, and that GC's reading starts the
 * pressure while 15% of the limit is still free.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import type { Logger } from '../../actors/core/logger.js';
import { oldGenerationLimitBytes, oldGenerationUsedBytes } from '../../snapshots/memory_budget.js';
import { MiB } from './limit.js';

/** Pressure starts at this share of the limit, read after a major GC. */
export const HIGH_WATERMARK = 0.85;
/** ... and ends below this share. */
export const LOW_WATERMARK = 0.7;
/** What a refused client is told to wait, in seconds: memory comes back slowly, if at all, without an operator. */
export const PRESSURE_RETRY_AFTER_SECS = 30;
/** How often the heap is read besides after each major GC. */
const SAMPLE_INTERVAL_MS = 1000;

/** What the request pipeline reads of the pressure, and counts into it. */
export interface PressureSource {
  /** Whether requests that grow state are refused now. */
  readonly active: boolean;
  /** Requests refused because of it, since the start. */
  refused: number;
}

/** Never under pressure: the pipeline's default, for apps built without a server. */
export const NO_PRESSURE: PressureSource = { active: false, refused: 0 };

/** The pressure of one server's heap; see the top of this module. */
export class MemoryPressure implements PressureSource {
  active = false;
  refused = 0;
  /** The newest reading, in bytes: the live data after a major GC, an upper bound of it otherwise. */
  usedBytes = 0;
  private stopWatching: (() => void) | undefined;

  /** `limitBytes`: the old generation's ceiling (by default this process's). */
  constructor(private readonly log: Logger, readonly limitBytes = oldGenerationLimitBytes()) {}

  /**
   * Takes one reading of the old generation in use: `exact` after a major GC (the live
   * data), else an upper bound of it. Starts or ends the pressure as the watermarks say.
   */
  observe(usedBytes: number, exact: boolean): void {
    this.usedBytes = usedBytes;
    const share = usedBytes / this.limitBytes;
    if (!this.active && exact && share >= HIGH_WATERMARK) {
      this.active = true;
      this.log.warn(
        { event: 'memory.pressure_started', used_mib: mib(usedBytes), limit_mib: mib(this.limitBytes), percent: percent(share), high_percent: percent(HIGH_WATERMARK), low_percent: percent(LOW_WATERMARK) },
        `memory: the heap holds ${mib(usedBytes)} MiB, ${percent(share)}% of its ${mib(this.limitBytes)} MiB limit; requests that grow state get 503 until it is under ${percent(LOW_WATERMARK)}% (raise --memory-limit-mib, or delete data)`,
      );
    } else if (this.active && share < LOW_WATERMARK) {
      this.active = false;
      this.log.info(
        { event: 'memory.pressure_ended', used_mib: mib(usedBytes), limit_mib: mib(this.limitBytes), percent: percent(share), refused: this.refused },
        `memory: the heap holds ${mib(usedBytes)} MiB, ${percent(share)}% of its limit; requests that grow state are served again`,
      );
    }
  }

  /** Reads this process's heap after every major GC and every second, until `stop`. */
  watch(): void {
    if (this.stopWatching) return;
    const observer = new PerformanceObserver((list) => {
      const major = list.getEntries().some((e) => ((e as PerformanceEntry & { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (major) this.observe(oldGenerationUsedBytes(), true);
    });
    observer.observe({ entryTypes: ['gc'] });
    const timer = setInterval(() => this.observe(oldGenerationUsedBytes(), false), SAMPLE_INTERVAL_MS);
    timer.unref();
    this.observe(oldGenerationUsedBytes(), false);
    this.stopWatching = () => {
      observer.disconnect();
      clearInterval(timer);
    };
  }

  stop(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
  }
}

const mib = (bytes: number): number => Math.round(bytes / MiB);
const percent = (share: number): number => Math.round(share * 100);
