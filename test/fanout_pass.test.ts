/**
 * The delivery pass resolves a fact's events to queues as it answers parked polls
 * (`actors/runtime/event_routing.ts`, `actors/event_queues/fanout.ts`). These tests hold
 * durability back to change state between a fact and its delivery, and check that the
 * events still reflect the state the fact was applied to, arrive in seq order, and
 * equal what replaying the log gives; and that each parked poll is answered as soon as
 * its own queue is resolved, before the next recipient is looked at.
 */
import t from 'tap';
import type { Stamped } from '../actors/areas/index.js';
import type { Cell, Waiter } from '../actors/event_queues/index.js';
import { defaultRuntimeOptions, Runtime, volatileSink, type FactSink } from '../actors/runtime/runtime.js';
import { queueEvents, settle, startPoll, type ApiResult, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';

/** A sink that keeps every record (for replay) and holds durability back while asked to. */
function recordingSink(): { sink: FactSink; log: Stamped[]; hold(): void; release(): void } {
  let holding = false;
  const held: Array<() => void> = [];
  const log: Stamped[] = [];
  const sink: FactSink = {
    append(records, onDurable) {
      log.push(...records);
      if (holding) held.push(onDurable);
      else queueMicrotask(onDurable);
    },
  };
  return {
    sink,
    log,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const done of held.splice(0)) done();
    },
  };
}

const GENERAL = { users: { bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'bob', 'carol'] } } as const;

async function register(f: ChatFixture, who: Credentials): Promise<string> {
  const reg = await f.call(who, 'POST', '/api/v1/register', { event_types: ['message'] });
  if (reg.status !== 200) throw new Error(`register failed: ${reg.body}`);
  return reg.json.queue_id;
}

function send(f: ChatFixture, content: string): Promise<ApiResult> {
  return f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'lunch', content });
}

/** Lets requests run up to the log (their facts applied and appended), however many turns that takes. */
async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await settle();
}

/** Every queue's events after replaying `log` into a fresh runtime, against the live runtime's. */
function replayed(f: ChatFixture, log: Stamped[]): { live: Record<string, unknown>; replay: Record<string, unknown> } {
  const defaults = defaultRuntimeOptions(volatileSink);
  const fresh = new Runtime({ ...defaults, now: () => f.clock.t, random: () => 0.5 });
  try {
    for (const s of log) fresh.replay(s);
    const events = (rt: Runtime) => Object.fromEntries(rt.queues.exportQueues().map((q) => [q.id, q.events.map((e) => ({ ...e }))]));
    return { live: events(f.runtime), replay: events(fresh) };
  } finally {
    fresh.stop();
  }
}

t.test('a message reaches who was subscribed when it was sent, even if they leave before it is durable', async (t) => {
  const { sink, log, hold, release } = recordingSink();
  const { f, bob, carol } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  const bobQueue = await register(f, bob);
  const bobPoll = startPoll(f, bob, { queue_id: bobQueue, last_event_id: -1 });
  await settle();

  hold();
  const sending = send(f, 'before bob leaves');
  await turns();
  const leaving = f.call(bob, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: ['general'] });
  await turns();
  // Carol's queue is registered after the message was applied: it must not get it.
  const registering = f.call(carol, 'POST', '/api/v1/register', { event_types: ['message'] });
  await turns();
  t.equal(log.filter((s) => s.fact.type === 'QueueRegistered').length, 2, 'the registration reached the log too');
  release();
  const [sent, left, reg] = await Promise.all([sending, leaving, registering]);
  t.equal(sent.status, 200, sent.body);
  t.equal(left.status, 200, left.body);
  t.equal(reg.status, 200, reg.body);

  const got = await bobPoll.result;
  t.same(got.json.events.map((e: any) => e.message.id), [sent.json.id], 'bob was subscribed when the message was sent');
  t.same(await queueEvents(f, carol, reg.json.queue_id), [], 'a queue registered after the message does not get it');

  const later = await send(f, 'after bob left');
  await settle();
  t.same((await queueEvents(f, bob, bobQueue)).map((e) => e.message.id), [sent.json.id], 'bob no longer gets the channel');
  t.same((await queueEvents(f, carol, reg.json.queue_id)).map((e) => e.message.id), [later.json.id], 'carol gets the next one');

  const { live, replay } = replayed(f, log);
  t.same(replay, live, 'replaying the log gives every queue the same events, ids included');
});

t.test("a message's flags are the recipient's when it was sent, even if they mute the sender before it is durable", async (t) => {
  const { sink, log, hold, release } = recordingSink();
  const { f, bob } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  const bobQueue = await register(f, bob);
  await settle();

  hold();
  const sending = send(f, 'unread for bob');
  await turns();
  const muting = f.call(bob, 'POST', `/api/v1/users/me/muted_users/${f.owner.user_id}`);
  await turns();
  release();
  const [sent, muted] = await Promise.all([sending, muting]);
  t.equal(sent.status, 200, sent.body);
  t.equal(muted.status, 200, muted.body);
  await settle();

  const [event] = await queueEvents(f, bob, bobQueue);
  t.equal(event.message.id, sent.json.id);
  t.same(event.flags, [], 'unread: bob had not muted the sender when it was sent');

  const later = await send(f, 'from a muted sender');
  await settle();
  const events = await queueEvents(f, bob, bobQueue);
  t.same(events.map((e) => [e.message.id, e.flags]), [[sent.json.id, []], [later.json.id, ['read']]], 'a message sent after the mute arrives read');

  const { live, replay } = replayed(f, log);
  t.same(replay, live, 'replaying the log gives every queue the same events');
});

t.test('facts durable in the same turn reach a parked poll in seq order, in one reply', async (t) => {
  const { sink, hold, release } = recordingSink();
  const { f, bob } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  const bobQueue = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: bobQueue, last_event_id: -1 });
  await settle();

  hold();
  const sends: Array<Promise<ApiResult>> = [];
  for (const content of ['one', 'two', 'three']) {
    sends.push(send(f, content));
    await turns(2);
  }
  release();
  const sent = await Promise.all(sends);
  const got = await poll.result;
  t.same(got.json.events.map((e: any) => [e.id, e.message.id]), sent.map((s, i) => [i, s.json.id]), 'one reply, numbered in seq order');
  t.same(f.runtime.queues.peek(bobQueue)!.events.map((e) => e.id), [0, 1, 2], 'the queue holds the same events');
});

t.test('each parked poll is answered as soon as its queue is resolved, before the next recipient is looked at', async (t) => {
  const { sink } = recordingSink();
  const { f, bob, carol } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  const users = [f.owner, bob, carol];
  // The channel's first message also tells clients its first_message_id (two deliveries): not the case under test.
  t.equal((await send(f, 'first')).status, 200);
  const trace: string[] = [];
  for (const who of users) {
    const queueId = await register(f, who);
    const waiter: Waiter = { deliver: (body) => trace.push(`reply ${who.user_id} ${JSON.parse(body).events.length}`) };
    t.equal(f.runtime.queues.poll(queueId, f.org.organization_id, who.user_id, null, false, waiter), null, 'parked');
  }
  // Watch the routing look up each recipient's queues.
  const queues = f.runtime.queues as unknown as { queuesOf(org: number, userId: number): Iterable<Cell> };
  const queuesOf = queues.queuesOf.bind(queues);
  queues.queuesOf = (org, userId) => {
    trace.push(`resolve ${userId}`);
    return queuesOf(org, userId);
  };
  const sent = await send(f, 'to everyone');
  t.equal(sent.status, 200, sent.body);
  await settle();
  const resolved = trace.filter((s) => s.startsWith('resolve')).map((s) => s.split(' ')[1]);
  t.same([...resolved].sort(), users.map((u) => String(u.user_id)).sort(), 'every recipient is resolved once');
  t.same(trace, resolved.flatMap((id) => [`resolve ${id}`, `reply ${id} 1`]), 'each reply is written right after its own queue is resolved');
});
