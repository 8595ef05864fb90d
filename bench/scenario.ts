/**
 * What a scenario is, what it reports, and the bookkeeping every scenario shares:
 * per-run samples reduced to their median, figures with a baseline and a target,
 * and the flag for runs where the load generator itself was the bottleneck.
 */
import { median, percentilesOf, type Percentiles, type Summary } from './stats.js';
import type { LocalOptions, Target } from './target.js';

/** smoke: tiny and fast (CI); quick: every scenario in minutes; full: one scenario at size. */
export type Mode = 'smoke' | 'quick' | 'full';

/** Options from the command line that scenarios read. */
export interface Options {
  mode: Mode;
  /** Overrides the scenario's size (connections, queues, subscribers...). */
  n?: number;
  /** Overrides the measuring window of one run, in seconds. */
  durationS?: number;
  /** Measured runs per figure, after one warm-up; the median is reported. */
  runs: number;
  seed: number;
  /** Overrides the fsync policy of servers the bench starts. */
  fsync?: 'always' | 'batch' | 'none';
  /** Extra node flags for the servers the bench starts (profiling). */
  serverNodeArgs?: string[];
  /** Source addresses for large connection pools (default: 127.0.0.2... on loopback). */
  sources?: string[];
  /** Set when driving an existing deployment instead of starting servers. */
  remote?: { url: string; email: string; apiKey: string };
  /** `capacity`: read the server every this many messages. */
  interval?: number;
  /** `capacity`: stop sending after this many seconds. */
  maxSeconds?: number;
  /** `capacity`: the server's heap limit (`--memory-limit-mib` and `--max-old-space-size`). */
  memoryLimitMib?: number;
}

/** One reported number. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** The same quantity measured on the raw baseline in the same run. */
  baseline?: number;
  baselineName?: string;
  /** value / baseline. */
  ratio?: number;
  /** The goal, in words, e.g. `<= 1.5x baseline`. */
  target?: string;
  /** Whether the goal was met; absent when there is no goal. */
  pass?: boolean;
  /** The per-run values the median was taken from. */
  runs?: number[];
  /** Which way is an improvement, when the unit does not say (see `compare.ts`). */
  better?: 'higher' | 'lower' | 'neither';
}

/** The latency distribution of one measured run against one server, for the report. */
export interface LatencyRecord {
  /** The server or load, e.g. `Parley`, `redis SET fsync always`. */
  series: string;
  run: number;
  /** Milliseconds; a load tool that reports fewer percentiles (wrk) leaves some out. */
  percentiles: Partial<Percentiles>;
}

/** Requests/s in each second of one measured closed-loop window. */
export interface ThroughputRecord {
  series: string;
  run: number;
  perSecond: number[];
}

/** The server's memory at one step of a sizing scenario: `n` users, messages or polls. */
export interface MemoryPoint {
  /** What grows, e.g. `users`, `messages`, `parked polls`. */
  series: string;
  n: number;
  /** After a full GC, MiB. */
  heapMiB: number;
  rssMiB: number;
}

/** A baseline (or load tool) that did not run, and why, so that no figure is silently missing. */
export interface SkippedBaseline {
  name: string;
  why: string;
}

/** A table of its own that a scenario reports besides its figures (e.g. the worst routes). */
export interface ResultTable {
  title: string;
  columns: string[];
  rows: string[][];
  /** Only in the HTML report and the JSON record, not in the printed table (a long list). */
  htmlOnly?: boolean;
}

/** Everything a scenario reports. */
export interface ScenarioResult {
  scenario: string;
  params: Record<string, unknown>;
  figures: Figure[];
  notes: string[];
  /** True when some measured run had the client process near 100% of a core. */
  clientBound: boolean;
  /** The highest client CPU seen in a measured run, as a fraction of one core (if measured). */
  clientCpu?: number;
  /** Which measurement that highest client CPU belongs to, e.g. `uWS N=1000`. */
  clientCpuWhere?: string;
  /** Average CPU cores used by other processes on the machine meanwhile. */
  foreignCpu?: number;
  /** Set when the scenario errored or found a correctness violation. */
  failed?: string;
  seconds: number;
  /** Per measured run and server: the latency distribution (the report charts it). */
  latency?: LatencyRecord[];
  /** Per measured closed-loop run and server: throughput over time. */
  throughput?: ThroughputRecord[];
  /** Memory against N, for the sizing chart. */
  memory?: MemoryPoint[];
  /** Baselines that this scenario has but did not run this time. */
  skippedBaselines?: SkippedBaseline[];
  /** Tables besides the figures, printed under the figures' table and shown in the HTML report. */
  tables?: ResultTable[];
  /** The `capacity` scenario's readings (its chart is drawn from them). */
  capacity?: CapacityRecord;
}

/** One reading of the `capacity` scenario, taken with the sends paused. */
export interface CapacitySample {
  /** Messages accepted so far. */
  messages: number;
  /** Seconds since the first send. */
  seconds: number;
  /** The newest fact's seq (`parley_log_last_seq`). */
  seq: number;
  /** After a full GC (the bench probe). */
  heapMiB: number;
  /**
   * Array buffers outside the V8 heap, after the same GC: the message tables' columns
   * (`actors/shared/message_table.ts`) and the body cache. Absent in older records.
   */
  arrayBuffersMiB?: number;
  rssMiB: number;
  /** Messages/s over the interval that ended here. */
  sendRate: number;
  /** `GET /messages` 100 messages before an old anchor: ms. */
  coldRead: { p50: number; p99: number; max: number; reads: number };
  /** The data directory: everything, the log segments, the newest snapshot. */
  diskMiB: number;
  logMiB: number;
  snapshotMiB: number;
  /** The newest snapshot's start seq, or -1 when there is none. */
  snapshotSeq: number;
}

/** What the `capacity` scenario saw: its readings, why it stopped, and the restart. */
export interface CapacityRecord {
  samples: CapacitySample[];
  /** Why sending stopped: `count reached`, `time limit`, `refused: 503 ...`, `server died ...`, `disk limit`. */
  stoppedBy: string;
  /** The largest data directory seen, MiB (a snapshot being written beside the previous one). */
  diskPeakMiB: number;
  /** The stop (SIGTERM, final snapshot) and the start again on the same data. */
  restart?: CapacityRestart;
}

/** The start of a server on the capacity scenario's data directory. */
export interface CapacityRestart {
  /** SIGTERM to exit (drain, final snapshot), seconds; absent when the server had died. */
  stopSeconds?: number;
  /** Spawn to the `ready` log line, seconds; absent when it did not start. */
  startSeconds?: number;
  /** Spawn to the listener answering (`/healthz` comes before recovery), seconds. */
  listeningSeconds?: number;
  /** `/healthz` polled every 20 ms from the listener's start to ready: polls, those answered within 1 s, the slowest answer. */
  healthz: { polls: number; answered: number; worstMs: number };
  /** Once serving (its newest message checked to be the last one sent): heap after a full GC, RSS, cold reads. */
  heapMiB?: number;
  rssMiB?: number;
  coldRead?: { p50: number; p99: number; max: number; reads: number };
  failed?: string;
}

/** What a scenario gets from the runner. */
export interface ScenarioContext {
  opts: Options;
  /** A server to test: a fresh local one (with these settings), or the remote target. */
  server(local?: LocalOptions): Promise<Target>;
  log(message: string): void;
}

/** A runnable benchmark. */
export interface Scenario {
  name: string;
  summary: string;
  /** Whether it only needs the API, and so can run against `--target`. */
  remote: boolean;
  /** Runs only when named with `--scenario` (too long for the default and smoke runs). */
  onlyByName?: boolean;
  /** Its own time budget in seconds, instead of its mode's. */
  budgetS?(opts: Options): number;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** Client CPU above this fraction of a core marks a run as client-bound. */
export const CLIENT_BOUND = 0.9;

/** Picks a size by mode, unless `--n` overrides it. */
export function sized<T>(opts: Options, sizes: Record<Mode, T>, fromN?: (n: number) => T): T {
  return opts.n !== undefined && fromN ? fromN(opts.n) : sizes[opts.mode];
}

/** Picks a window length in ms by mode, unless `--duration` overrides it. */
export function windowMs(opts: Options, seconds: Record<Mode, number>): number {
  return Math.round((opts.durationS ?? seconds[opts.mode]) * 1000);
}

/** Collects per-run samples of named quantities and reduces them to medians. */
export class Runs {
  private readonly values = new Map<string, number[]>();
  private cpuMax: number | undefined;
  private cpuWhere: string | undefined;
  /** Distributions and timelines of the measured runs, by series, in run order. */
  readonly latency: LatencyRecord[] = [];
  readonly throughput: ThroughputRecord[] = [];

  add(name: string, value: number): void {
    const list = this.values.get(name);
    if (list) list.push(value);
    else this.values.set(name, [value]);
  }

  /** Records the client's CPU over a measured run of `where` (e.g. `parley`, `uWS N=1000`). */
  clientCpu(fraction: number, where: string): void {
    if (this.cpuMax !== undefined && fraction <= this.cpuMax) return;
    this.cpuMax = fraction;
    this.cpuWhere = where;
  }

  get maxClientCpu(): number | undefined {
    return this.cpuMax;
  }

  get maxClientCpuWhere(): string | undefined {
    return this.cpuWhere;
  }

  /**
   * Keeps the latency distribution of one measured run of `series` (a summary, or the
   * percentiles a load tool printed) and, for a closed loop, its requests/s per second.
   */
  keep(series: string, latency: Summary | Partial<Percentiles>, perSecond?: number[]): void {
    const run = this.latency.filter((r) => r.series === series).length + 1;
    this.latency.push({ series, run, percentiles: 'n' in latency ? percentilesOf(latency as Summary) : latency });
    if (perSecond) this.throughput.push({ series, run, perSecond });
  }

  all(name: string): number[] {
    return this.values.get(name) ?? [];
  }

  median(name: string): number {
    return median(this.all(name));
  }

  /** A figure from the median of `name`, optionally against the median of `baseline`. */
  figure(name: string, label: string, unit: string, extra: Partial<Figure> & { baselineOf?: string } = {}): Figure {
    const { baselineOf, ...rest } = extra;
    const f: Figure = { name: label, value: this.median(name), unit, runs: this.all(name), ...rest };
    if (baselineOf !== undefined) {
      f.baseline = this.median(baselineOf);
      f.ratio = f.value / f.baseline;
    }
    return f;
  }
}

/** Rejects if `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts a result; the scenario fills in figures and notes. */
export function newResult(scenario: string, params: Record<string, unknown>): ScenarioResult {
  return { scenario, params, figures: [], notes: [], clientBound: false, seconds: 0 };
}

/** Copies the distributions and timelines kept in `runs` into `result`. */
export function noteDistributions(result: ScenarioResult, runs: Runs): void {
  if (runs.latency.length > 0) result.latency = [...(result.latency ?? []), ...runs.latency];
  if (runs.throughput.length > 0) result.throughput = [...(result.throughput ?? []), ...runs.throughput];
}

/** Records that `name` did not run in this scenario, and why. */
export function skipBaseline(result: ScenarioResult, name: string, why: string): void {
  (result.skippedBaselines ??= []).push({ name, why });
}

/** Copies the client-CPU findings of `runs` into `result`. */
export function noteClientCpu(result: ScenarioResult, runs: Runs): void {
  if (runs.maxClientCpu === undefined || runs.maxClientCpu <= (result.clientCpu ?? -1)) return;
  result.clientCpu = runs.maxClientCpu;
  result.clientCpuWhere = runs.maxClientCpuWhere;
  result.clientBound = result.clientCpu >= CLIENT_BOUND;
}
