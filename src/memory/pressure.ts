/**
 * Memory pressure: whether the V8 heap is so full that requests which grow the server's
 * state must be refused (503 with Retry-After) rather than let the process die of OOM.
 *
 * What is measured is the old generation in use (every heap space but the young
 * generation's): what `--max-old-space-size` bounds and what runs out at an OOM. Against
 * its limit, with hysteresis:
 *
 * - pressure starts when a reading taken just after a major GC (mark-compact: no garbage
 *   left, so the reading is the live data) is at or above the high watermark, 75%;
 * - it ends when any reading is below the low watermark, 60%: a reading between major
 *   GCs includes garbage, so it is an upper bound of the live data, good enough to say
 *   that the heap has room again.
 *
 * Why 75%: V8 kills the process at 80%, not at 100%. After each mark-compact it checks
 * whether the old generation holds 80% of its limit or more while the program ran less
 * than 40% of the time (the rest in GC): four such mark-compacts in a row are "Ineffective
 * mark-compacts near heap limit", a fatal OOM (`Heap::CheckIneffectiveMarkCompact`). On a
 * busy machine a heap at 82% met that within a second, with pressure at 85% never reached;
 * the high watermark stays under 80% by a margin for the requests already admitted.
 *
 * Readings come from a `PerformanceObserver` of GC entries (major ones only) and from a
 * timer every second, so that pressure also ends on an idle server.
 *
 * Under pressure, though, a reading between GCs can stay in the band between the
 * watermarks for good: once deletes have made room, V8 has no reason to run a major GC
 * (its old generation no longer grows towards its limit), and the garbage they left keeps
 * the reading up. So while the pressure lasts, the timer asks V8 for a major GC, whose
 * reading is exact: at most every 5 s, and at most 5% of the time by the last major GC's
 * duration (a 4 GiB heap's takes about a second). The GC runs from a task of its own
 * (`execution: 'async'`), not inside the timer. Each reading is one
 * `v8.getHeapSpaceStatistics()`, about 0.5 us; nothing is measured per request: the
 * pipeline reads `active`, a field.
 *
 * Between two major GCs the live data can grow past the high watermark unseen; near the
 * limit V8 runs major GCs often (each time its headroom fills), and the first reading over
 * 75% starts the pressure, before V8's own line as long as less than 5% of the limit was
 * kept between two of them.
 */
import { constants, performance, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../../actors/core/logger.js';
import { oldGenerationLimitBytes, oldGenerationUsedBytes } from '../../snapshots/memory_budget.js';
import { MiB } from './limit.js';

/** Pressure starts at this share of the limit, read after a major GC. */
export const HIGH_WATERMARK = 0.75;
/** ... and ends below this share. */
export const LOW_WATERMARK = 0.6;
/** What a refused client is told to wait, in seconds: memory comes back slowly, if at all, without an operator. */
export const PRESSURE_RETRY_AFTER_SECS = 30;
/** How often the heap is read besides after each major GC. */
const SAMPLE_INTERVAL_MS = 1000;
/** Under pressure, a major GC is asked for no sooner than this after the last one ... */
export const SETTLE_MIN_INTERVAL_MS = 5000;
/** ... and no more than this share of the time, by the last one's duration. */
export const SETTLE_MAX_GC_SHARE = 0.05;

/** Asks V8 for a major GC, run from a task of its own; see the top of this module. */
export type MajorGc = () => void;

let exposedGc: ((options: { type: 'major'; execution: 'async' }) => Promise<void>) | undefined;

/**
 * V8's own `gc`, without starting Node with `--expose-gc`: the flag, set at run time,
 * gives the function to the contexts made after it.
 */
export const requestMajorGc: MajorGc = () => {
  if (!exposedGc) {
    setFlagsFromString('--expose-gc');
    exposedGc = runInNewContext('gc') as typeof exposedGc;
  }
  void exposedGc!({ type: 'major', execution: 'async' });
};

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
  /** Major GCs asked for under pressure, since the start. */
  gcRequests = 0;
  /** When the last major GC was seen (`performance.now()`), and how long it took, in ms. */
  private lastMajorAt = -Infinity;
  private lastMajorMs = 0;
  private stopWatching: (() => void) | undefined;

  /**
   * `limitBytes`: the old generation's ceiling (by default this process's); `majorGc`:
   * how a major GC is asked for under pressure.
   */
  constructor(
    private readonly log: Logger,
    readonly limitBytes = oldGenerationLimitBytes(),
    private readonly majorGc: MajorGc = requestMajorGc,
  ) {}

  /** One major GC's reading (the live data), taken `atMs` after it took `durationMs`. */
  observeMajor(usedBytes: number, durationMs: number, atMs: number): void {
    this.lastMajorAt = atMs;
    this.lastMajorMs = durationMs;
    this.observe(usedBytes, true);
  }

  /**
   * One timer reading (garbage included), at `atMs`. Under pressure, with no major GC for
   * long enough, asks for one, so that garbage alone never holds the pressure.
   */
  sample(usedBytes: number, atMs: number): void {
    this.observe(usedBytes, false);
    if (!this.active) return;
    const wait = Math.max(SETTLE_MIN_INTERVAL_MS, this.lastMajorMs / SETTLE_MAX_GC_SHARE);
    if (atMs - this.lastMajorAt < wait) return;
    this.lastMajorAt = atMs;
    this.gcRequests++;
    this.majorGc();
  }

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
      const major = list.getEntries().findLast((e) => ((e as PerformanceEntry & { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (major) this.observeMajor(oldGenerationUsedBytes(), major.duration, performance.now());
    });
    observer.observe({ entryTypes: ['gc'] });
    const timer = setInterval(() => this.sample(oldGenerationUsedBytes(), performance.now()), SAMPLE_INTERVAL_MS);
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
