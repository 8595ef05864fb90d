/**
 * The `capacity` scenario's figures and its table of readings, from its record, with the
 * targets of issue 27: heap ≤ 64 bytes and RSS ≤ 128 bytes per message, a snapshot of
 * ≤ 64 bytes per message, 100 M messages under 16 GB of RSS, a start from 20 M messages
 * in ≤ 60 s with `/healthz` answered throughout, and cold reads with p99 ≤ 50 ms.
 */
import { num } from '../report.js';
import type { CapacityRecord, CapacitySample, Figure, ResultTable } from '../scenario.js';
import { linearFit, median } from '../stats.js';

const MiB = 2 ** 20;
const GB = 1e9;
/** Where issue 27 wants one server to go, and what it extrapolates to. */
const TARGET_MESSAGES = 20_000_000;
const EXTRAPOLATED_MESSAGES = 100_000_000;

/** Bytes per message: the slope of a least-squares line through the readings after the first interval (all of them if fewer than two). */
export function perMessage(samples: CapacitySample[], interval: number, of: (s: CapacitySample) => number): { bytes: number; intercept: number; r2: number } {
  const used = samples.filter((s) => s.messages >= interval);
  const points = used.length >= 2 ? used : samples;
  const fit = linearFit(points.map((s) => s.messages), points.map((s) => of(s) * MiB));
  return { bytes: fit.slope, intercept: fit.intercept, r2: fit.r2 };
}

/** Messages sent when the log stood at `seq`, interpolated between the readings (NaN outside them). */
export function messagesAtSeq(samples: CapacitySample[], seq: number): number {
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1], samples[i]];
    if (seq >= a.seq && seq <= b.seq) return b.seq === a.seq ? b.messages : a.messages + ((seq - a.seq) / (b.seq - a.seq)) * (b.messages - a.messages);
  }
  return NaN;
}

/** What the figures need besides the record. */
export interface CapacityRun {
  n: number;
  interval: number;
  sent: number;
  /** The size of the snapshot the stop wrote (covering every message), when the server was alive to stop. */
  finalSnapshotMiB?: number;
}

function judged(name: string, value: number, unit: string, target: string, pass: boolean | undefined, better: Figure['better'] = 'lower'): Figure {
  const f: Figure = { name, value, unit, runs: [value], target, better };
  if (pass !== undefined && !Number.isNaN(value)) f.pass = pass;
  return f;
}

/** Snapshot bytes per message: the stop's final snapshot, or else the newest one at the messages its seq stood for. */
function snapshotPerMessage(record: CapacityRecord, run: CapacityRun): number {
  if (run.finalSnapshotMiB !== undefined && run.sent > 0) return (run.finalSnapshotMiB * MiB) / run.sent;
  const last = record.samples.at(-1);
  if (!last || last.snapshotSeq < 0) return NaN;
  return (last.snapshotMiB * MiB) / messagesAtSeq(record.samples, last.snapshotSeq);
}

/** Every figure of a capacity run. */
export function capacityFigures(record: CapacityRecord, run: CapacityRun): Figure[] {
  const { samples } = record;
  const heap = perMessage(samples, run.interval, (s) => s.heapMiB);
  // Message metadata lives in typed arrays, outside the V8 heap: the target is judged on both.
  const metadata = perMessage(samples, run.interval, (s) => s.heapMiB + (s.arrayBuffersMiB ?? 0));
  const rss = perMessage(samples, run.interval, (s) => s.rssMiB);
  const last = samples.at(-1);
  const rates = samples.slice(1).map((s) => s.sendRate);
  const snapshot = snapshotPerMessage(record, run);
  const rss100m = (rss.intercept + rss.bytes * EXTRAPOLATED_MESSAGES) / GB;
  const restart = record.restart;
  const figures: Figure[] = [
    judged('messages held', run.sent, 'messages', `${num(run.n)} (--n)`, run.sent >= run.n, 'higher'),
    { name: 'V8 heap per message', value: heap.bytes, unit: 'bytes', runs: [heap.bytes] },
    judged('heap and array buffers per message', metadata.bytes, 'bytes', '<= 64 bytes', metadata.bytes <= 64),
    judged('RSS per message', rss.bytes, 'bytes', '<= 128 bytes', rss.bytes <= 128),
    judged('snapshot per message', snapshot, 'bytes', '<= 64 bytes', snapshot <= 64),
    judged('RSS at 100 M messages (extrapolated)', rss100m, 'GB', '< 16 GB', rss100m < 16),
    judged('disk peak per message', (record.diskPeakMiB * MiB) / Math.max(1, run.sent), 'bytes', `<= 30 GB at 20 M: ${num((30 * GB) / TARGET_MESSAGES)} bytes`, (record.diskPeakMiB * MiB * TARGET_MESSAGES) / Math.max(1, run.sent) <= 30 * GB),
    { name: 'send rate (median of intervals)', value: median(rates), unit: 'msg/s', runs: rates },
    judged('cold read p99 (last reading)', last?.coldRead.p99 ?? NaN, 'ms', '<= 50 ms', (last?.coldRead.p99 ?? NaN) <= 50),
  ];
  if (restart) {
    const atTarget = run.sent >= TARGET_MESSAGES;
    figures.push(judged('start from snapshot', restart.startSeconds ?? NaN, 's', '<= 60 s at 20 M messages', atTarget ? (restart.startSeconds ?? Infinity) <= 60 : undefined));
    const answered = restart.healthz.polls > 0 ? (restart.healthz.answered / restart.healthz.polls) * 100 : NaN;
    figures.push(judged('/healthz answered within 1 s during the start', answered, '%', '100%', answered === 100, 'higher'));
    figures.push({ name: '/healthz worst during the start', value: restart.healthz.worstMs, unit: 'ms', runs: [restart.healthz.worstMs] });
    if (restart.coldRead) figures.push(judged('cold read p99 after the restart', restart.coldRead.p99, 'ms', '<= 50 ms', restart.coldRead.p99 <= 50));
    if (restart.heapMiB !== undefined) figures.push({ name: 'heap after the restart', value: restart.heapMiB, unit: 'MiB', runs: [restart.heapMiB] });
    if (restart.stopSeconds !== undefined) figures.push({ name: 'stop (drain and final snapshot)', value: restart.stopSeconds, unit: 's', runs: [restart.stopSeconds] });
  }
  return figures;
}

/** The readings, one row each. */
export function capacityTable(record: CapacityRecord): ResultTable {
  const f = (v: number, digits = 0): string => (Number.isNaN(v) ? '-' : v.toFixed(digits));
  return {
    title: 'readings (sends paused; heap after a full GC)',
    columns: ['messages', 'time s', 'heap MiB', 'array buffers MiB', 'RSS MiB', 'msg/s', 'cold read p50 ms', 'p99 ms', 'disk MiB', 'log MiB', 'snapshot MiB'],
    rows: record.samples.map((s) => [String(s.messages), f(s.seconds), f(s.heapMiB), f(s.arrayBuffersMiB ?? NaN), f(s.rssMiB), f(s.sendRate), f(s.coldRead.p50, 1), f(s.coldRead.p99, 1), f(s.diskMiB), f(s.logMiB), f(s.snapshotMiB)]),
  };
}
