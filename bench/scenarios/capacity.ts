/**
 * capacity (issue 27, "Storage"): how many messages one server holds, and what each
 * costs. One fresh server (fsync `none` unless `--fsync`; one snapshot kept, so that the
 * disk stays bounded) gets realistic channel messages (`realistic.ts`: 40 to 80 words,
 * some Markdown; seeded) 64 in flight until `--n` of them, `--max-seconds`, a refusal
 * (503 under memory pressure) or the server's death. Every `--interval` messages the
 * sends pause for a reading: heap after a full GC (the bench probe), RSS (`/proc`), the
 * send rate over the interval, cold reads (`GET /messages` 100 messages before an anchor
 * in the oldest tenth of the history) and the data directory's disk use. Then the server
 * is stopped (SIGTERM: a final snapshot) and started again on the same data, timed until
 * it serves, with `/healthz` polled meanwhile. Per message: the slopes of heap and RSS
 * (least squares, the first interval left out as warm-up) and the final snapshot's size;
 * RSS extrapolated to 100 M messages. Too long for CI: it runs only when named.
 */
import { rmSync } from 'node:fs';
import { apiRequest, type Credentials } from '../api.js';
import { coldReads, diskUse, metric, type ColdRead } from '../capacity_readings.js';
import { restartAndTime } from '../capacity_restart.js';
import { forgetTempDir } from '../children.js';
import { closePool, openPool, type Connection } from '../client.js';
import { rssKiB } from '../proc.js';
import { realisticMessage } from '../realistic.js';
import { newResult, type CapacityRecord, type CapacitySample, type Mode, type Options, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { median, nowMs, seededRandom } from '../stats.js';
import type { LocalOptions, Target } from '../target.js';
import { capacityFigures, capacityTable, perMessage } from './capacity_figures.js';

const IN_FLIGHT = 64;
const TOPICS = 50;
const CHANNEL = 'general';
const COLD_READS = 50;
/** Message ids kept for the cold reads' anchors, at most (one every n / this messages). */
const IDS_KEPT = 20000;
const DISK_CHECK_MS = 5000;
const PROGRESS_MS = 10000;
const MiB = 2 ** 20;

/** Size, reading interval and sending time by mode; `--n`, `--interval` and `--max-seconds` override them. */
const SIZES: Record<Mode, { n: number; interval: number; maxSeconds: number; restartS: number }> = {
  smoke: { n: 3000, interval: 1000, maxSeconds: 40, restartS: 60 },
  quick: { n: 200_000, interval: 50_000, maxSeconds: 200, restartS: 300 },
  full: { n: 20_000_000, interval: 1_000_000, maxSeconds: 6 * 3600, restartS: 1200 },
};
/** The disk the data directory may take before sending stops (issue 27: about 30 GB at 20 M). */
const MAX_DISK_MIB = 40 * 1024;

/** The run's plan from the options. */
export function capacityPlan(opts: Options): { n: number; interval: number; maxSeconds: number; restartS: number; memoryLimitMib?: number } {
  const size = SIZES[opts.mode];
  return { ...size, n: opts.n ?? size.n, interval: opts.interval ?? size.interval, maxSeconds: opts.maxSeconds ?? size.maxSeconds, memoryLimitMib: opts.memoryLimitMib };
}

/** The server's settings: its heap limit, one snapshot kept, time enough for a final snapshot of a large state. */
function serverOptions(opts: Options, memoryLimitMib: number | undefined, restartS: number): LocalOptions {
  return {
    fsync: opts.fsync ?? 'none',
    nodeArgs: memoryLimitMib ? [`--max-old-space-size=${memoryLimitMib}`] : [],
    env: { PARLEY_KEEP_SNAPSHOTS: '1', PARLEY_SHUTDOWN_TIMEOUT_MS: String(restartS * 1000) },
    keepDataDir: true,
  };
}

/** Messages sent, ids kept for anchors, and why sending stopped. */
interface SendState {
  sent: number;
  issued: number;
  newestId: number;
  ids: number[];
  perId: number;
  stoppedBy?: string;
  diskPeakMiB: number;
}

/** Whether the process `pid` is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends, 64 in flight, until `state.sent` reaches `end` or something stops it. */
async function sendUntil(conns: Connection[], who: Credentials, state: SendState, end: number, deadline: number, random: () => number, pid: number): Promise<void> {
  await Promise.all(
    conns.map(async (conn) => {
      while (state.stoppedBy === undefined && state.issued < end) {
        if (nowMs() > deadline) {
          state.stoppedBy = 'time limit (--max-seconds)';
          return;
        }
        state.issued++;
        const content = realisticMessage(random);
        try {
          const res = await conn.send(apiRequest(conn, who, 'POST', '/api/v1/messages', { type: 'stream', to: CHANNEL, topic: `topic ${Math.floor(random() * TOPICS)}`, content }));
          if (res.status !== 200) {
            state.issued--;
            state.stoppedBy ??= `refused: HTTP ${res.status} ${res.body.slice(0, 160)}`;
            return;
          }
          const id = (JSON.parse(res.body) as { id: number }).id;
          state.sent++;
          state.newestId = Math.max(state.newestId, id);
          if (state.sent % state.perId === 0) state.ids.push(id);
        } catch (err) {
          state.issued--;
          state.stoppedBy ??= alive(pid) ? `connection failed: ${(err as Error).message}` : 'the server died';
          return;
        }
      }
    }),
  );
}

/** One reading, with the sends paused. */
async function sample(target: Target, conn: Connection, state: SendState, began: number, rate: number, random: () => number): Promise<CapacitySample> {
  const probe = await target.probe!(300_000);
  const rssMiB = rssKiB(target.pid!) / 1024;
  const seq = await metric(conn, 'parley_log_last_seq');
  const skip = Math.ceil(100 / state.perId);
  const cold: ColdRead = state.ids.length > skip ? await coldReads(conn, target.owner, state.ids, state.perId, COLD_READS, random) : { p50: NaN, p99: NaN, max: NaN, reads: 0 };
  const disk = diskUse(target.dataDir!);
  state.diskPeakMiB = Math.max(state.diskPeakMiB, disk.diskMiB);
  return { messages: state.sent, seconds: (nowMs() - began) / 1000, seq, heapMiB: probe.heapUsed / MiB, arrayBuffersMiB: probe.arrayBuffers / MiB, rssMiB, sendRate: rate, coldRead: cold, diskMiB: disk.diskMiB, logMiB: disk.logMiB, snapshotMiB: disk.snapshotMiB, snapshotSeq: disk.snapshotSeq };
}

export const capacity: Scenario = {
  name: 'capacity',
  summary: 'realistic messages until --n (default 20 M): heap, RSS, disk, send rate and cold reads every --interval; then a restart from the snapshot, timed',
  remote: false,
  onlyByName: true,
  budgetS: (opts) => {
    const plan = capacityPlan(opts);
    return plan.maxSeconds + 3 * plan.restartS + 120;
  },
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const plan = capacityPlan(opts);
    const local = serverOptions(opts, plan.memoryLimitMib, plan.restartS);
    const result = newResult('capacity', { ...plan, fsync: local.fsync, inFlight: IN_FLIGHT, coldReads: COLD_READS, keepSnapshots: 1, seed: opts.seed });
    const target = await ctx.server(local);
    const conns = await openPool(target.endpoint, IN_FLIGHT);
    const reader = conns[0];
    const random = seededRandom(opts.seed);
    const readRandom = seededRandom(opts.seed + 1);
    const state: SendState = { sent: 0, issued: 0, newestId: 0, ids: [], perId: Math.max(1, Math.floor(plan.n / IDS_KEPT)), diskPeakMiB: 0 };
    const record: CapacityRecord = { samples: [], stoppedBy: 'count reached', diskPeakMiB: 0 };
    const began = nowMs();
    const deadline = began + plan.maxSeconds * 1000;
    let lastProgress = { at: began, sent: 0 };
    const watch = setInterval(() => {
      const disk = diskUse(target.dataDir!);
      state.diskPeakMiB = Math.max(state.diskPeakMiB, disk.diskMiB);
      if (disk.diskMiB > MAX_DISK_MIB) state.stoppedBy ??= `disk limit: the data directory took ${(disk.diskMiB / 1024).toFixed(1)} GiB`;
      if (nowMs() - lastProgress.at >= PROGRESS_MS) {
        ctx.log(`${state.sent} messages, ${((state.sent - lastProgress.sent) / ((nowMs() - lastProgress.at) / 1000)).toFixed(0)}/s, disk ${(disk.diskMiB / 1024).toFixed(2)} GiB`);
        lastProgress = { at: nowMs(), sent: state.sent };
      }
    }, DISK_CHECK_MS);
    try {
      record.samples.push(await sample(target, reader, state, began, NaN, readRandom));
      while (state.stoppedBy === undefined && state.sent < plan.n) {
        const from = { at: nowMs(), sent: state.sent };
        await sendUntil(conns, target.owner, state, Math.min(plan.n, state.sent + plan.interval), deadline, random, target.pid!);
        const rate = (state.sent - from.sent) / ((nowMs() - from.at) / 1000);
        if (!alive(target.pid!)) break;
        const s = await sample(target, reader, state, began, rate, readRandom);
        record.samples.push(s);
        ctx.log(`${s.messages} messages: heap ${s.heapMiB.toFixed(0)} MiB, RSS ${s.rssMiB.toFixed(0)} MiB, ${s.sendRate.toFixed(0)} msg/s, cold read p99 ${s.coldRead.p99.toFixed(1)} ms, disk ${s.diskMiB.toFixed(0)} MiB`);
      }
    } catch (err) {
      // A failed reading: the server and its directory go now, not only when the bench exits.
      await target.stop(1000).catch(() => undefined);
      rmSync(target.dataDir!, { recursive: true, force: true });
      forgetTempDir(target.dataDir!);
      throw err;
    } finally {
      clearInterval(watch);
      closePool(conns);
    }
    record.stoppedBy = state.stoppedBy ?? 'count reached';
    ctx.log(`stopped at ${state.sent} messages: ${record.stoppedBy}`);
    const died = !alive(target.pid!);
    let finalSnapshotMiB: number | undefined;
    let stopSeconds: number | undefined;
    if (!died) {
      const stopping = nowMs();
      await target.stop(plan.restartS * 1000).catch((err: Error) => result.notes.push(`stop: ${err.message.split('\n')[0]}`));
      stopSeconds = (nowMs() - stopping) / 1000;
      finalSnapshotMiB = diskUse(target.dataDir!).snapshotMiB;
    }
    state.diskPeakMiB = Math.max(state.diskPeakMiB, diskUse(target.dataDir!).diskMiB);
    record.diskPeakMiB = state.diskPeakMiB;
    try {
      record.restart = await restartAndTime({ dataDir: target.dataDir!, server: { ...local, nodeArgs: [...(local.nodeArgs ?? []), ...(opts.serverNodeArgs ?? [])] }, owner: target.owner, newestId: state.newestId, ids: state.ids, perId: state.perId, coldReads: COLD_READS, random: readRandom, timeoutMs: plan.restartS * 1000, log: ctx.log });
      record.restart.stopSeconds = stopSeconds;
      if (record.restart.failed) result.notes.push(`restart: ${record.restart.failed}`);
    } finally {
      rmSync(target.dataDir!, { recursive: true, force: true });
      forgetTempDir(target.dataDir!);
    }
    result.capacity = record;
    result.figures.push(...capacityFigures(record, { n: plan.n, interval: plan.interval, sent: state.sent, finalSnapshotMiB }));
    result.tables = [capacityTable(record)];
    result.notes.push(...capacityNotes(record, plan.interval, died));
    return result;
  },
};

/** The notes under the table: why it stopped, how good the line fits are, what the figures mean. */
function capacityNotes(record: CapacityRecord, interval: number, died: boolean): string[] {
  const heap = perMessage(record.samples, interval, (s) => s.heapMiB);
  const rss = perMessage(record.samples, interval, (s) => s.rssMiB);
  const rates = record.samples.slice(1).map((s) => s.sendRate);
  return [
    `stopped by: ${record.stoppedBy}${/^(refused|the server died|connection failed)/.test(record.stoppedBy) ? ' (the ceiling of this server under its heap limit)' : ''}${died ? '; no final snapshot: the restart recovered from the last snapshot and the log' : ''}`,
    `per message: least-squares slopes over the readings after the first interval (warm-up); r² ${heap.r2.toFixed(3)} (heap), ${rss.r2.toFixed(3)} (RSS)`,
    `send rate per interval: median ${median(rates).toFixed(0)} msg/s, first ${rates[0]?.toFixed(0) ?? '-'}, last ${rates.at(-1)?.toFixed(0) ?? '-'}; the sends pause for each reading`,
    `cold reads: ${COLD_READS} per reading, each GET /messages num_before=100 before a different anchor in the oldest tenth of the history, with no sends in flight`,
    'one snapshot kept (PARLEY_KEEP_SNAPSHOTS=1) so that the disk stays bounded: with the default 3, snapshots alone take 3x the state',
  ];
}
