/**
 * correctness: under concurrent load, every event reaches every queue exactly once and
 * in order, and no parked poll sleeps through an event (a lost wake-up).
 *
 * Senders post numbered messages to one channel while pollers with seeded, mixed habits
 * drain queues: some re-poll at once, some dawdle so events pile up unparked, some never
 * block, and some abort their parked poll mid-flight and re-poll on a new connection.
 * Some queues are registered half-way through; each must get exactly the messages newer
 * than its initial state. Short heartbeats (local servers) race with the messages.
 * Any violation fails the scenario and makes the bench exit non-zero.
 */
import { apiRequest, call, createUsers, expectSuccess, QueuePoller, subscribe, type Credentials } from '../api.js';
import { closePool, Connection, openPool } from '../client.js';
import { QueueLedger, SendLog } from '../ledger.js';
import { newResult, noteClientCpu, Runs, sized, type Mode, type Scenario, type ScenarioContext, type ScenarioResult } from '../scenario.js';
import { CpuMeter, nowMs, seededRandom, sleep } from '../stats.js';
import type { Target } from '../target.js';

type Habit = 'eager' | 'lazy' | 'nonblocking' | 'aborting';
const HABITS: Habit[] = ['eager', 'lazy', 'nonblocking', 'aborting'];
const SHORT_HEARTBEAT = { PARLEY_HEARTBEAT_MIN_MS: '300', PARLEY_HEARTBEAT_MAX_MS: '600' };

interface Size {
  users: number;
  queues: number;
  senders: number;
  perSender: number;
}

const SIZES: Record<Mode, Size> = {
  smoke: { users: 3, queues: 16, senders: 3, perSender: 40 },
  quick: { users: 5, queues: 60, senders: 6, perSender: 150 },
  full: { users: 8, queues: 300, senders: 10, perSender: 500 },
};

/** A queue under test: its poller, its ledger, and how it behaves. */
interface Watched {
  poller: QueuePoller;
  ledger: QueueLedger;
  habit: Habit;
}

/** Registers a queue and starts its ledger at the queue's initial state. */
async function watch(conn: Connection, user: Credentials, habit: Habit, report: (v: string) => void): Promise<Watched> {
  const reg = await call(conn, user, 'POST', '/api/v1/register', { event_types: ['message'] });
  const poller = new QueuePoller(await Connection.open(conn.endpoint), { user, queueId: reg.queue_id, lastEventId: reg.last_event_id });
  return { poller, habit, ledger: new QueueLedger(reg.queue_id, reg.max_message_id as number, report) };
}

/** Polls one queue in its habit until `running()` turns false. */
async function drain(w: Watched, rnd: () => number, running: () => boolean): Promise<void> {
  const { poller, ledger, habit } = w;
  for (let i = 0; i < 1_000_000 && running(); i++) {
    if (habit === 'lazy') await sleep(rnd() * 20);
    if (habit === 'nonblocking') await sleep(1 + rnd() * 8);
    poller.queue.lastEventId = ledger.lastEventId;
    const pending = poller.poll(habit === 'nonblocking');
    // Handled below; this keeps an abort's rejection from counting as unhandled meanwhile.
    pending.catch(() => undefined);
    if (habit === 'aborting' && rnd() < 0.4) {
      await sleep(rnd() * 15);
      poller.conn.close();
      if (!running()) return;
      poller.conn = await Connection.open(poller.conn.endpoint);
    }
    try {
      ledger.accept(poller.accept(await pending));
    } catch (err) {
      if (!running()) return;
      if ((err as Error).message === 'connection closed by the client') continue;
      throw err;
    }
  }
}

/** One sender: `count` numbered messages, one at a time, with seeded pauses. */
async function sendAll(conn: Connection, who: Credentials, sender: number, count: number, channel: string, log: SendLog, rnd: () => number, sent: { n: number }): Promise<void> {
  for (let seq = 0; seq < count; seq++) {
    const content = `${SendLog.token(sender, seq)} under load`;
    const res = await conn.send(apiRequest(conn, who, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic: `t${seq % 3}`, content }));
    log.add(expectSuccess(res, 'POST /messages').id as number, sender, seq);
    sent.n++;
    // Every sender pauses half-way, so heartbeats come due and then race new messages.
    if (seq === count >> 1) await sleep(700);
    else if (rnd() < 0.3) await sleep(rnd() * 3);
  }
}

/** One round: fresh queues, concurrent senders and pollers, then the final checks. */
async function round(ctx: ScenarioContext, target: Target, users: Credentials[], channel: string, size: Size, seed: number, violations: string[]): Promise<{ deliveries: number; rate: number; heartbeats: number }> {
  const rnd = seededRandom(seed);
  const report = (v: string): void => {
    if (violations.length < 1000) violations.push(v);
  };
  const log = new SendLog();
  const setup = await openPool(target.endpoint, 8);
  const watched: Watched[] = [];
  const drains: Array<Promise<void>> = [];
  let running = true;
  const start = (w: Watched): void => {
    watched.push(w);
    drains.push(drain(w, seededRandom(Math.floor(rnd() * 2 ** 31)), () => running));
  };
  try {
    const early = Math.ceil(size.queues * 0.8);
    for (let i = 0; i < early; i++) start(await watch(setup[i % setup.length], users[i % users.length], HABITS[i % HABITS.length], report));
    const senders = await openPool(target.endpoint, size.senders);
    const sent = { n: 0 };
    const t0 = nowMs();
    const sending = Promise.all(senders.map((c, s) => sendAll(c, users[s % users.length], s, size.perSender, channel, log, seededRandom(seed * 1000 + s), sent)));
    // Register the remaining queues half-way through the sends.
    const total = size.senders * size.perSender;
    for (let i = 0; i < 10_000 && sent.n < total / 2; i++) await sleep(2);
    for (let i = early; i < size.queues; i++) start(await watch(setup[i % setup.length], users[i % users.length], HABITS[i % HABITS.length], report));
    await sending;
    const rate = total / ((nowMs() - t0) / 1000);
    closePool(senders);
    // Every queue must catch up while its poller keeps polling; then stop them.
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline && watched.some((w) => w.ledger.missing(log).length > 0)) await sleep(20);
    running = false;
    for (const w of watched) w.poller.conn.close();
    const failed = (await Promise.allSettled(drains)).find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await findLostWakeUps(setup[0], watched, log, report);
    for (const w of watched) w.ledger.verify(log);
    for (const w of watched) await call(setup[0], w.poller.queue.user, 'DELETE', '/api/v1/events', { queue_id: w.poller.queue.queueId });
    const deliveries = watched.reduce((n, w) => n + w.ledger.messages.length, 0);
    const heartbeats = watched.reduce((n, w) => n + w.ledger.heartbeats, 0);
    ctx.log(`round seed ${seed}: ${total} messages, ${watched.length} queues, ${deliveries} deliveries, ${heartbeats} heartbeats, ${violations.length} violations so far`);
    return { deliveries, rate, heartbeats };
  } finally {
    running = false;
    for (const w of watched) w.poller.conn.close();
    closePool(setup);
    await Promise.allSettled(drains);
  }
}

/** A queue still missing messages after the deadline: are they sitting in the queue? */
async function findLostWakeUps(conn: Connection, watched: Watched[], log: SendLog, report: (v: string) => void): Promise<void> {
  for (const w of watched) {
    const missing = w.ledger.missing(log);
    if (missing.length === 0) continue;
    const q = w.poller.queue;
    const json = expectSuccess(await conn.send(apiRequest(conn, q.user, 'GET', '/api/v1/events', { queue_id: q.queueId, last_event_id: w.ledger.lastEventId, dont_block: true })), 'GET /events');
    const waiting = (json.events as Array<{ message?: { id: number } }>).filter((e) => e.message && missing.includes(e.message.id)).length;
    if (waiting > 0) report(`queue ${q.queueId} (${w.habit}): lost wake-up: ${waiting} events sat in the queue for 10 s while its poll stayed parked`);
  }
}

export const correctness: Scenario = {
  name: 'correctness',
  summary: 'under concurrent load, every event delivered exactly once and in order to every queue; no lost wake-ups',
  remote: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const { opts } = ctx;
    const size = sized(opts, SIZES, (n) => ({ ...SIZES.full, queues: n }));
    const result = newResult('correctness', { ...size, rounds: opts.runs, seed: opts.seed, habits: HABITS });
    const runs = new Runs();
    const violations: string[] = [];
    const target = await ctx.server({ env: SHORT_HEARTBEAT });
    try {
      const setup = await openPool(target.endpoint, 8);
      const channel = `correctness-${Date.now().toString(36)}`;
      const users = await createUsers(setup, target.owner, size.users, channel);
      await subscribe(setup[0], target.owner, channel, users.map((u) => u.user_id));
      closePool(setup);
      for (let r = 0; r < opts.runs; r++) {
        const cpu = new CpuMeter();
        const out = await round(ctx, target, users, channel, size, opts.seed * 7919 + r, violations);
        runs.add('deliveries', out.deliveries);
        runs.add('rate', out.rate);
        runs.add('heartbeats', out.heartbeats);
        runs.clientCpu(cpu.read(), `round ${r + 1}`);
      }
    } finally {
      await target.stop();
    }
    const v = { name: 'violations', value: violations.length, unit: '', target: '0', pass: violations.length === 0, better: 'lower' as const };
    result.figures.push(v, runs.figure('deliveries', 'deliveries checked per round', ''), runs.figure('heartbeats', 'heartbeats interleaved per round', ''), runs.figure('rate', 'sends under check', 'msg/s'));
    noteClientCpu(result, runs);
    if (violations.length > 0) {
      result.failed = `${violations.length} violations; first: ${violations.slice(0, 5).join(' | ')}`;
      result.notes.push(...violations.slice(0, 10));
    }
    return result;
  },
};
