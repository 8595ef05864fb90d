/**
 * durability: the log and snapshots, measured in this process on a temporary data
 * directory (no HTTP). Reports:
 * - append throughput under each fsync policy, with 50 writers that each wait for
 *   their record to be durable before appending the next (closed loop, group commit);
 * - replay rate (facts per second) when starting from the log alone;
 * - time to start with M messages from a snapshot;
 * - the worst event-loop stall while a snapshot of M messages is taken (fuzzy,
 *   sliced), with the longest encoding slice;
 * - replay of a log holding one subscription request of C channels among ~12,000
 *   other facts, with U users each holding a queue: its time, its rate, and how many
 *   events that one request put in each queue.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { FsyncPolicy } from '../../snapshots/log.js';
import { openStore, type Store } from '../../src/store.js';
import { createOrganization } from '../../src/bootstrap.js';
import { newResult, Runs, sized, windowMs, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { nowMs } from '../stats.js';
import { quietLogger } from '../../actors/core/logger.js';

const WRITERS = 50;

function open(dir: string, fsync: FsyncPolicy): Store {
  return openStore({ dataDir: dir, fsync, fsyncBatchMs: 100, segmentBytes: 64 << 20, skipCorrupt: false, keepSnapshots: 3, log: quietLogger, onFatal: (e) => { throw e; } });
}

function send(rt: Runtime, i: number): Promise<unknown> {
  return rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: `topic ${i % 50}` }, content: `message ${i}: the quick brown fox jumps over the lazy dog`, client: 'bench', read_by_sender: true });
}

async function seeded(fsync: FsyncPolicy): Promise<{ dir: string; store: Store }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-dur-'));
  const store = open(dir, fsync);
  await createOrganization(store.runtime, { name: 'Bench', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await store.runtime.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'bench' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  return { dir, store };
}

/** Measures the longest gap between 1 ms timer ticks, less the tick itself: the worst stall. */
function stallMeter(): { stop(): number } {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(worst, performance.now() - last - 1);
    },
  };
}

/** Closed-loop appends for `ms`: returns durable writes per second. */
async function appendRate(fsync: FsyncPolicy, ms: number): Promise<number> {
  const { dir, store } = await seeded(fsync);
  let done = 0;
  let i = 0;
  const end = nowMs() + ms;
  const writer = async (): Promise<void> => {
    while (nowMs() < end) {
      await send(store.runtime, i++);
      done++;
    }
  };
  const start = nowMs();
  await Promise.all(Array.from({ length: WRITERS }, writer));
  const rate = done / ((nowMs() - start) / 1000);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return rate;
}

/** Sizes of the bulk-subscription log: channels in the one request, users (one queue each), other facts. */
interface BulkSizes {
  channels: number;
  users: number;
  otherFacts: number;
}

/**
 * Writes a log with one `POST /users/me/subscriptions` of `channels` new channels by the
 * owner, among `otherFacts` other facts (users, their queues, then channel messages),
 * and starts from it. Returns the replay time, the facts replayed, and the most events
 * the bulk request left in one queue.
 */
async function bulkReplay(sizes: BulkSizes): Promise<{ replayMs: number; facts: number; liveMs: number; perQueue: number }> {
  const { dir, store } = await seeded('none');
  const rt = store.runtime;
  for (let i = 2; i <= sizes.users; i++) {
    await rt.execute({ type: 'CREATE_USER', org: 1, actor_id: 1, email: `u${i}@example.com`, password_hash: '', full_name: `User ${i}`, role: 400 });
  }
  for (let i = 1; i <= sizes.users; i++) {
    await rt.queues.register({ org: 1, user_id: i, event_types: ['subscription', 'stream'], narrow: [], client: 'bench', lifespan_secs: 3600, empty_topic_name: false }).durable;
  }
  const start = nowMs();
  await rt.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: Array.from({ length: sizes.channels }, (_, i) => ({ name: `bulk-${i}` })), principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const liveMs = nowMs() - start;
  // org, 'bench' and its subscription, users and queues are other facts too.
  const messages = Math.max(0, sizes.otherFacts - 2 * sizes.users - 1);
  for (let i = 0; i < messages; i += 1000) await Promise.all(Array.from({ length: Math.min(1000, messages - i) }, (_, j) => send(rt, i + j)));
  await store.close();
  const began = nowMs();
  const reopened = open(dir, 'none');
  const replayMs = nowMs() - began;
  const facts = reopened.recovery.replayed;
  // The queues registered only for subscription and stream events: all they hold came from the bulk request.
  const perQueue = Math.max(...reopened.runtime.queues.exportQueues().map((q) => q.next_id));
  await reopened.close();
  rmSync(dir, { recursive: true, force: true });
  return { replayMs, facts, liveMs, perQueue };
}

export const durability: Scenario = {
  name: 'durability',
  summary: 'log append rate per fsync policy, replay rate, start time and snapshot stall with M messages',
  remote: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const m = sized(opts, { smoke: 2000, quick: 200000, full: 1000000 }, (n) => n);
    const ms = windowMs(opts, { smoke: 0.5, quick: 2, full: 5 });
    const bulk: BulkSizes = sized(opts, {
      smoke: { channels: 500, users: 20, otherFacts: 1200 },
      quick: { channels: 5000, users: 100, otherFacts: 12000 },
      full: { channels: 5000, users: 100, otherFacts: 12000 },
    });
    const result = newResult('durability', { messages: m, writers: WRITERS, appendWindowS: ms / 1000, runs: opts.runs, bulkSubscription: bulk });
    if (opts.mode !== 'full' && opts.n === undefined) result.notes.push(`${opts.mode} mode: M=${m} (full: 1000000)`);
    result.notes.push(`append: ${WRITERS} writers, each waiting for durability before its next message (the whole send path, in process)`);
    const runs = new Runs();
    for (let run = 1; run <= opts.runs; run++) {
      for (const policy of ['always', 'batch', 'none'] as const) {
        const rate = await appendRate(policy, ms);
        runs.add(`append-${policy}`, rate);
        ctx.log(`run ${run}: append ${policy}: ${rate.toFixed(0)} writes/s`);
      }
      const { dir, store } = await seeded('none');
      for (let i = 0; i < m; i += 1000) await Promise.all(Array.from({ length: Math.min(1000, m - i) }, (_, j) => send(store.runtime, i + j)));
      await store.close();
      // Start from the log alone (before any snapshot exists, so no segment has been pruned).
      let start = nowMs();
      const fromLog = open(dir, 'none');
      const replayMs = nowMs() - start;
      runs.add('startLog', replayMs);
      runs.add('replay', fromLog.recovery.replayed / (replayMs / 1000));
      const stall = stallMeter();
      const info = await fromLog.snapshot();
      const worst = stall.stop();
      runs.add('stall', worst);
      runs.add('slice', info.longestSliceMs);
      runs.add('snapBytes', info.bytes);
      await fromLog.close();
      start = nowMs();
      const fromSnapshot = open(dir, 'none');
      runs.add('startSnap', nowMs() - start);
      await fromSnapshot.close();
      rmSync(dir, { recursive: true, force: true });
      ctx.log(`run ${run}: snapshot stall ${worst.toFixed(1)} ms, start ${runs.all('startSnap').at(-1)!.toFixed(0)} ms from snapshot, ${replayMs.toFixed(0)} ms from log`);
      const b = await bulkReplay(bulk);
      runs.add('bulkReplay', b.replayMs);
      runs.add('bulkRate', b.facts / (b.replayMs / 1000));
      runs.add('bulkFacts', b.facts);
      runs.add('bulkLive', b.liveMs);
      runs.add('bulkPerQueue', b.perQueue);
      ctx.log(`run ${run}: bulk subscription log: ${b.facts} facts replayed in ${b.replayMs.toFixed(0)} ms, ${b.perQueue} events per queue from the request`);
    }
    result.notes.push(`bulk subscription: one request subscribing the owner to C=${bulk.channels} new channels, U=${bulk.users} users with a queue each, ~${bulk.otherFacts} other facts`);
    result.figures.push(
      runs.figure('append-always', 'append, fsync always', 'writes/s'),
      runs.figure('append-batch', 'append, fsync batch (100 ms)', 'writes/s'),
      runs.figure('append-none', 'append, fsync none', 'writes/s'),
      runs.figure('replay', 'replay rate (log only)', 'facts/s'),
      runs.figure('startLog', `start with M=${m}, log only`, 'ms'),
      runs.figure('startSnap', `start with M=${m}, from snapshot`, 'ms'),
      runs.figure('stall', `worst loop stall, snapshot of M=${m}`, 'ms'),
      runs.figure('slice', 'longest snapshot encoding slice', 'ms'),
      runs.figure('snapBytes', 'snapshot size', 'bytes'),
      runs.figure('bulkReplay', `replay, bulk subscription of C=${bulk.channels} + ~${bulk.otherFacts} facts`, 'ms'),
      runs.figure('bulkRate', 'replay rate, bulk subscription log', 'facts/s'),
      runs.figure('bulkFacts', 'facts in the bulk subscription log', 'facts'),
      runs.figure('bulkLive', `the bulk subscription request, live (C=${bulk.channels}, U=${bulk.users})`, 'ms'),
      runs.figure('bulkPerQueue', 'events per queue from the bulk request', 'events'),
    );
    return result;
  },
};
