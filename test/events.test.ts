/**
 * The event queue through `GET /events` and `DELETE /events`, in process, with the
 * clock injected: long-polls park and complete, acknowledged events are pruned,
 * heartbeats and idle collection follow the clock, and delivery waits for durability.
 */
import t from 'tap';
import type { FactSink } from '../actors/runtime/runtime.js';
import { capturedLines } from './log_guard.js';
import { settle, startPoll, type ApiResult, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';
import { register as registerState, verifyState } from './client_model.js';

/** Watches a promise without awaiting it, so a test can assert it is still pending. */
function track<T>(p: Promise<T>): { done: boolean; value: T | undefined } {
  const state = { done: false, value: undefined as T | undefined };
  void p.then((v) => {
    state.done = true;
    state.value = v;
  });
  return state;
}

/** An organization with Bob and Carol, all three subscribed to `general`. */
const GENERAL = { users: { bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'bob', 'carol'] } } as const;

async function register(f: ChatFixture, who: Credentials, params: Record<string, unknown> = { event_types: ['message'] }): Promise<string> {
  const reg = await f.call(who, 'POST', '/api/v1/register', params);
  if (reg.status !== 200) throw new Error(`register failed: ${reg.body}`);
  return reg.json.queue_id;
}

function send(f: ChatFixture, who: Credentials, content: string, extra: Record<string, unknown> = {}): Promise<ApiResult> {
  return f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'lunch', content, ...extra });
}

/** A non-blocking fetch. */
function fetchNow(f: ChatFixture, who: Credentials, queueId: string, lastEventId: number): Promise<ApiResult> {
  return f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: lastEventId, dont_block: true });
}

function ids(r: ApiResult): number[] {
  return r.json.events.map((e: { id: number }) => e.id);
}

t.test('dont_block on an empty queue answers at once with no events', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const got = await fetchNow(f, bob, queueId, -1);
  t.equal(got.status, 200);
  t.equal(got.json.result, 'success');
  t.same(got.json.events, []);
  t.equal(got.json.queue_id, queueId);
  t.equal(f.runtime.queues.parkedCount, 0, 'a non-blocking request never parks');
});

t.test('a parked poll waits, then completes when an event arrives; ids start at 0 and increase', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const watched = track(poll.result);
  await settle();
  t.equal(watched.done, false, 'nothing to return, so the poll parks');
  t.equal(f.runtime.queues.parkedCount, 1);
  const sent = await send(f, f.owner, 'first');
  t.equal(sent.status, 200, sent.body);
  const got = await poll.result;
  t.equal(got.status, 200);
  t.equal(got.json.queue_id, queueId);
  t.same(ids(got), [0]);
  t.equal(got.json.events[0].type, 'message');
  t.equal(got.json.events[0].message.id, sent.json.id);
  t.equal(f.runtime.queues.parkedCount, 0);

  await send(f, f.owner, 'second');
  await send(f, f.owner, 'third');
  await settle();
  const more = await fetchNow(f, bob, queueId, 0);
  t.same(ids(more), [1, 2], 'ids keep increasing across polls');
  t.same(more.json.events.map((e: any) => e.message.content), ['<p>second</p>', '<p>third</p>']);
});

t.test('acknowledged events are pruned; unacknowledged ones are sent again', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  for (const c of ['a', 'b', 'c', 'd']) await send(f, f.owner, c);
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, -1)), [0, 1, 2, 3]);
  t.same(ids(await fetchNow(f, bob, queueId, -1)), [0, 1, 2, 3], 'nothing acknowledged yet, everything again');
  t.same(ids(await fetchNow(f, bob, queueId, 1)), [2, 3]);
  t.same(ids(await fetchNow(f, bob, queueId, 1)), [2, 3], 'the same acknowledgement again is harmless');
  const blocking = await f.call(bob, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: 1 });
  t.same(ids(blocking), [2, 3], 'a blocking GET with events waiting answers at once');
  t.same(ids(await fetchNow(f, bob, queueId, 3)), []);

  await send(f, f.owner, 'e');
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, 3)), [4]);
});

t.test('acknowledging a pruned or unknown event id is a 400', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  for (const c of ['a', 'b', 'c']) await send(f, f.owner, c);
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, 1)), [2]);

  const pruned = await fetchNow(f, bob, queueId, 0);
  t.equal(pruned.status, 400);
  t.equal(pruned.json.result, 'error');
  t.equal(pruned.json.code, 'BAD_REQUEST');
  t.equal(pruned.json.msg, 'An event newer than 0 has already been pruned!');

  const minusOne = await fetchNow(f, bob, queueId, -1);
  t.equal(minusOne.status, 400);
  t.equal(minusOne.json.msg, 'An event newer than -1 has already been pruned!');

  const future = await fetchNow(f, bob, queueId, 7);
  t.equal(future.status, 400);
  t.equal(future.json.code, 'BAD_REQUEST');
  t.equal(future.json.msg, 'Event 7 was not in this queue');

  t.same(ids(await fetchNow(f, bob, queueId, 1)), [2], 'the queue still works after the errors');
});

t.test('on a fresh queue, event 0 is not yet in it', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const got = await fetchNow(f, bob, queueId, 0);
  t.equal(got.status, 400);
  t.equal(got.json.code, 'BAD_REQUEST');
  t.equal(got.json.msg, 'Event 0 was not in this queue');
});

t.test('a second GET finishes the first: one waiter per queue', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const first = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const firstWatched = track(first.result);
  await settle();
  t.equal(firstWatched.done, false);
  const second = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const secondWatched = track(second.result);
  const done = await first.result;
  t.equal(done.status, 200, 'the first completes normally');
  t.same(done.json.events, [], 'with what the queue held: nothing');
  t.equal(done.json.queue_id, queueId);
  await settle();
  t.equal(secondWatched.done, false, 'the second is the one parked now');
  t.equal(f.runtime.queues.parkedCount, 1);

  const sent = await send(f, f.owner, 'hello');
  const got = await second.result;
  t.same(ids(got), [0]);
  t.equal(got.json.events[0].message.id, sent.json.id);
});

t.test('a heartbeat completes a parked poll once its deadline passes', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { heartbeatMinMs: 100, heartbeatMaxMs: 200 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const watched = track(poll.result);
  await settle();

  f.clock.t += 99;
  f.runtime.queues.tick();
  await settle();
  t.equal(watched.done, false, 'no heartbeat before the shortest delay');

  f.clock.t += 102;
  f.runtime.queues.tick();
  const got = await poll.result;
  t.equal(got.status, 200);
  t.same(got.json.events, [{ type: 'heartbeat', id: 0 }]);
  t.equal(got.json.queue_id, queueId);

  t.same(await fetchNow(f, bob, queueId, -1).then((r) => r.json.events), [{ type: 'heartbeat', id: 0 }], 'a heartbeat is a real queued event');
  t.same(await fetchNow(f, bob, queueId, 0).then((r) => r.json.events), [], 'and is pruned like any other');

  const next = startPoll(f, bob, { queue_id: queueId, last_event_id: 0 });
  await settle();
  f.clock.t += 201;
  f.runtime.queues.tick();
  t.same((await next.result).json.events, [{ type: 'heartbeat', id: 1 }], 'the next poll gets the next id');
});

t.test('by default the heartbeat comes 45 to 55 s after the poll parks, within the client timeout', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['message'], fetch_event_types: ['realm'] });
  t.equal(reg.status, 200, reg.body);
  const timeout = reg.json.event_queue_longpoll_timeout_seconds;
  t.equal(timeout, 90);
  t.ok(timeout > 55 + 10, 'the client timeout exceeds the longest heartbeat delay by more than 10 s');

  const poll = startPoll(f, bob, { queue_id: reg.json.queue_id, last_event_id: -1 });
  const watched = track(poll.result);
  await settle();
  for (let i = 0; i < 44; i++) {
    f.clock.t += 1000;
    f.runtime.queues.tick();
  }
  f.clock.t += 999;
  f.runtime.queues.tick();
  await settle();
  t.equal(watched.done, false, 'no heartbeat before 45 s');
  for (let i = 0; i < 10; i++) {
    f.clock.t += 1000;
    f.runtime.queues.tick();
  }
  f.clock.t += 1;
  f.runtime.queues.tick();
  const got = await poll.result;
  t.same(got.json.events, [{ type: 'heartbeat', id: 0 }], 'a heartbeat by 55 s');
});

t.test('a poll that replaced another gets exactly one heartbeat', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { heartbeatMinMs: 100, heartbeatMaxMs: 200 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const first = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  await settle();
  f.clock.t += 20;
  const second = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  t.same((await first.result).json.events, []);
  await settle();
  f.clock.t += 300;
  f.runtime.queues.tick();
  const got = await second.result;
  t.same(got.json.events, [{ type: 'heartbeat', id: 0 }]);
});

t.test('the heartbeat schedule does not keep entries for completed polls', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  let last = -1;
  let poll = startPoll(f, bob, { queue_id: queueId, last_event_id: last });
  for (let i = 0; i < 40; i++) {
    await settle();
    await send(f, f.owner, `m${i}`);
    const got = await poll.result;
    last = got.json.events[got.json.events.length - 1].id;
    poll = startPoll(f, bob, { queue_id: queueId, last_event_id: last });
    f.clock.t += 2000;
    f.runtime.queues.tick();
  }
  await settle();
  f.clock.t += 60_000;
  f.runtime.queues.tick();
  t.same((await poll.result).json.events.map((e: { type: string }) => e.type), ['heartbeat']);
  t.equal(f.runtime.queues.parkedCount, 0);
  // No public API shows the schedule, so this looks inside: with no poll parked and every
  // deadline past, nothing should be left scheduled. Each entry left behind is never
  // visited again, so a client that long-polls forever would grow it without bound.
  const wheel = (f.runtime.queues as unknown as { parkedPolls?: { wheel?: Map<number, string[]> } }).parkedPolls?.wheel;
  t.ok(wheel instanceof Map, 'EventQueues keeps its heartbeat schedule in `wheel`');
  const left = wheel ? [...wheel.values()].reduce((n, bucket) => n + bucket.length, 0) : -1;
  t.equal(left, 0, 'no stale heartbeat entries');
});

t.test('an aborted poll is unparked; a later event waits for the next GET', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { heartbeatMinMs: 100, heartbeatMaxMs: 200 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const watched = track(poll.result);
  await settle();
  t.equal(f.runtime.queues.parkedCount, 1);
  poll.abort.abort();
  t.equal(f.runtime.queues.parkedCount, 0, 'the waiter is gone');
  t.match(capturedLines().filter((l) => l.event === 'events.poll_finished').at(-1), { status: null, user: bob.user_id }, "a poll whose client went away: logged with no status");

  f.clock.t += 500;
  f.runtime.queues.tick();
  await settle();
  t.equal(watched.done, false, 'nothing is written to a client that left');

  const sent = await send(f, f.owner, 'while you were away');
  await settle();
  t.equal(watched.done, false);
  const got = await fetchNow(f, bob, queueId, -1);
  t.same(ids(got), [0], 'no heartbeat was queued for the departed poll');
  t.equal(got.json.events[0].message.id, sent.json.id, 'the event was kept');
});

t.test('an idle queue is collected; later requests get BAD_EVENT_QUEUE_ID', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { defaultLifespanMs: 5000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  f.clock.t += 4000;
  f.runtime.queues.tick();
  t.ok(f.runtime.queues.peek(queueId), 'alive within its lifespan');
  t.same((await fetchNow(f, bob, queueId, -1)).json.events, [], 'a request renews its life');
  f.clock.t += 4000;
  f.runtime.queues.tick();
  t.ok(f.runtime.queues.peek(queueId), 'still alive: the last request was 4 s ago');
  f.clock.t += 1500;
  f.runtime.queues.tick();
  await settle();
  t.equal(f.runtime.queues.peek(queueId), undefined, 'collected after 5.5 s idle');

  const got = await fetchNow(f, bob, queueId, -1);
  t.equal(got.status, 400);
  t.equal(got.json.result, 'error');
  t.equal(got.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(got.json.queue_id, queueId);
  const blocking = await f.call(bob, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1 });
  t.equal(blocking.status, 400);
  t.equal(blocking.json.code, 'BAD_EVENT_QUEUE_ID');
});

t.test('sweepIdle collects only the queues past their lifespan', async (t) => {
  const { f, bob, carol } = await world({ ...GENERAL, queues: { defaultLifespanMs: 5000 } });
  t.teardown(f.stop);
  const old = await register(f, bob);
  f.clock.t += 3000;
  const young = await register(f, carol);
  f.clock.t += 2001;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 1);
  await settle();
  t.equal(f.runtime.queues.peek(old), undefined);
  t.ok(f.runtime.queues.peek(young));
});

t.test('queue_lifespan_secs extends the life of a queue', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { defaultLifespanMs: 5000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob, { event_types: ['message'], queue_lifespan_secs: 60 });
  f.clock.t += 30_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0);
  t.equal((await fetchNow(f, bob, queueId, -1)).status, 200);
  f.clock.t += 59_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0);
  f.clock.t += 2_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 1);
  await settle();
  t.equal((await fetchNow(f, bob, queueId, -1)).json.code, 'BAD_EVENT_QUEUE_ID');
});

t.test('queue_lifespan_secs is capped at 7 days', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { defaultLifespanMs: 5000 } });
  t.teardown(f.stop);
  const week = 7 * 24 * 3600;
  const queueId = await register(f, bob, { event_types: ['message'], queue_lifespan_secs: 30 * 24 * 3600 });
  f.clock.t += (week - 1) * 1000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0, 'alive just under 7 days');
  f.clock.t += 2000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 1, 'gone just over 7 days, although 30 were asked for');
  await settle();
  t.equal(f.runtime.queues.peek(queueId), undefined);
});

t.test('queue_lifespan_secs=0 means the default lifespan, as in Zulip', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { defaultLifespanMs: 60_000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob, { event_types: ['message'], queue_lifespan_secs: 0 });
  f.clock.t += 30_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0, 'not collected after 30 s of a 60 s default');
  t.ok(f.runtime.queues.peek(queueId));
  f.clock.t += 31_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 1);
});

t.test('a queue unused for a while, but within its lifespan, keeps its events and ids', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  await send(f, f.owner, 'one');
  await send(f, f.owner, 'two');
  await settle();
  f.clock.t += 120_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0, 'two minutes of a ten-minute lifespan');
  f.runtime.queues.tick();
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, -1)), [0, 1]);
  f.clock.t += 120_000;
  f.runtime.queues.sweepIdle(f.clock.t);
  await send(f, f.owner, 'three');
  await settle();
  const got = await fetchNow(f, bob, queueId, 0);
  t.same(ids(got), [1, 2], 'numbering continues');
  t.same(got.json.events.map((e: any) => e.message.content), ['<p>two</p>', '<p>three</p>']);
});

t.test('a queue with a parked poll is never collected', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { defaultLifespanMs: 5000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  await settle();
  f.clock.t += 60_000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0);
  t.ok(f.runtime.queues.peek(queueId));
  const sent = await send(f, f.owner, 'still there?');
  const got = await poll.result;
  t.equal(got.status, 200);
  t.equal(got.json.events[0].message.id, sent.json.id);
  f.clock.t += 4000;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 0, 'its idle time starts when the poll completed');
  f.clock.t += 1500;
  t.equal(f.runtime.queues.sweepIdle(f.clock.t), 1);
});

t.test('unknown queues and queues of other users get BAD_EVENT_QUEUE_ID', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const unknown = await fetchNow(f, bob, 'no-such-queue', -1);
  t.equal(unknown.status, 400);
  t.equal(unknown.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(unknown.json.queue_id, 'no-such-queue');

  const stolen = await fetchNow(f, carol, queueId, -1);
  t.equal(stolen.status, 400);
  t.equal(stolen.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(stolen.json.queue_id, queueId);

  const stolenDelete = await f.call(carol, 'DELETE', '/api/v1/events', { queue_id: queueId });
  t.equal(stolenDelete.status, 400);
  t.equal(stolenDelete.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal((await fetchNow(f, bob, queueId, -1)).status, 200, 'the owner still has the queue');
});

t.test('DELETE /events deletes a queue', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  await settle();
  const del = await f.call(bob, 'DELETE', '/api/v1/events', { queue_id: queueId });
  t.equal(del.status, 200, del.body);
  t.equal(del.json.result, 'success');
  const ended = await poll.result;
  // As Zulip's ClientDescriptor.cleanup: the waiting poll is finished first, with what the queue held.
  t.equal(ended.status, 200, 'a poll parked on a deleted queue gets what its queue held');
  t.same([ended.json.result, ended.json.events, ended.json.queue_id], ['success', [], queueId]);
  t.match(capturedLines().filter((l) => l.event === 'events.poll_finished').at(-1), { route: '/api/v1/events', status: 200, user: bob.user_id }, 'and its end is logged');
  const got = await fetchNow(f, bob, queueId, -1);
  t.equal(got.status, 400);
  t.equal(got.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(got.json.queue_id, queueId);

  const again = await f.call(bob, 'DELETE', '/api/v1/events', { queue_id: queueId });
  t.equal(again.status, 400);
  t.equal(again.json.code, 'BAD_EVENT_QUEUE_ID');
  const unknown = await f.call(bob, 'DELETE', '/api/v1/events', { queue_id: 'never-was' });
  t.equal(unknown.status, 400);
  t.equal(unknown.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(unknown.json.queue_id, 'never-was');
});

t.test('GET /events without queue_id registers a queue only with dont_block', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const got = await f.call(bob, 'GET', '/api/v1/events', { dont_block: true, event_types: ['message'] });
  t.equal(got.status, 200, got.body);
  t.same(got.json.events, []);
  t.type(got.json.queue_id, 'string');
  t.ok(got.json.queue_id.length > 0);
  const queueId: string = got.json.queue_id;
  t.ok(f.runtime.queues.peek(queueId), 'a real queue');
  t.same(f.runtime.queues.peek(queueId)!.event_types, ['message'], 'with the register parameters given');

  const sent = await send(f, f.owner, 'to the new queue');
  await settle();
  const next = await fetchNow(f, bob, queueId, -1);
  t.same(ids(next), [0]);
  t.equal(next.json.events[0].message.id, sent.json.id);

  const other = await f.call(bob, 'GET', '/api/v1/events', { dont_block: true });
  t.not(other.json.queue_id, queueId, 'each such request registers its own queue');

  const blocking = await f.call(bob, 'GET', '/api/v1/events', {});
  t.equal(blocking.status, 400);
  t.equal(blocking.json.code, 'REQUEST_VARIABLE_MISSING');
  t.equal(blocking.json.msg, "Missing 'queue_id' argument");
});

t.test('a queue over its event cap is collected instead of growing', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { maxEvents: 5 } });
  t.teardown(f.stop);
  const full = await register(f, bob);
  const polled = await register(f, bob);
  for (let i = 0; i < 5; i++) await send(f, f.owner, `m${i}`);
  await settle();
  t.same(ids(await fetchNow(f, bob, full, -1)), [0, 1, 2, 3, 4], 'five events fit');
  t.same(ids(await fetchNow(f, bob, polled, 4)), [], 'this one keeps up');
  await send(f, f.owner, 'm5');
  await settle();
  t.equal(f.runtime.queues.peek(full), undefined, 'the sixth unfetched event overflows the queue');
  const got = await fetchNow(f, bob, full, -1);
  t.equal(got.status, 400);
  t.equal(got.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(got.json.queue_id, full);

  t.same(ids(await fetchNow(f, bob, polled, 4)), [5], 'a queue that is being read is unaffected');
  for (let i = 0; i < 20; i++) await send(f, f.owner, `burst${i}`);
  await settle();
  t.equal(f.runtime.queues.peek(polled), undefined);
  t.equal((await fetchNow(f, bob, polled, 5)).json.code, 'BAD_EVENT_QUEUE_ID');
});

t.test('message events carry each recipient\'s own flags', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const ownerQ = await register(f, f.owner);
  const bobQ = await register(f, bob);
  const carolQ = await register(f, carol);
  const sent = await send(f, f.owner, 'hey @**Bob**, lunch?', { read_by_sender: true });
  t.equal(sent.status, 200, sent.body);
  await settle();
  const flags = async (who: Credentials, q: string): Promise<string[]> => {
    const r = await fetchNow(f, who, q, -1);
    t.equal(r.json.events.length, 1);
    t.equal(r.json.events[0].message.id, sent.json.id);
    return [...r.json.events[0].flags].sort();
  };
  t.same(await flags(bob, bobQ), ['mentioned'], 'the mentioned user');
  t.same(await flags(f.owner, ownerQ), ['read'], 'the sender, with read_by_sender');
  t.same(await flags(carol, carolQ), [], 'a bystander');

  const unread = await send(f, f.owner, 'not read by me', { read_by_sender: false });
  await settle();
  const own = await fetchNow(f, f.owner, ownerQ, 0);
  t.equal(own.json.events[0].message.id, unread.json.id);
  t.same(own.json.events[0].flags, [], 'read_by_sender=false leaves it unread');

  const dm = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: [bob.user_id], content: 'psst', read_by_sender: true });
  t.equal(dm.status, 200, dm.body);
  await settle();
  const bobDm = await fetchNow(f, bob, bobQ, 0);
  t.same(ids(bobDm), [1, 2]);
  t.equal(bobDm.json.events[1].message.id, dm.json.id);
  t.same(bobDm.json.events[1].flags, []);
  const ownerDm = await fetchNow(f, f.owner, ownerQ, 1);
  t.equal(ownerDm.json.events[0].message.id, dm.json.id);
  t.same(ownerDm.json.events[0].flags, ['read']);
  const carolAfter = await fetchNow(f, carol, carolQ, 0);
  t.same(carolAfter.json.events.map((e: any) => e.message.id), [unread.json.id], 'a direct message reaches only its participants');
});

/** A log that makes facts durable at once, or holds them (`hold(true)`) until released. */
function holdingSink(): { sink: FactSink; held: Array<() => void>; hold(on: boolean): void } {
  let holding = false;
  const held: Array<() => void> = [];
  const sink: FactSink = {
    append(_records, onDurable) {
      if (holding) held.push(onDurable);
      else queueMicrotask(onDurable);
    },
  };
  return { sink, held, hold: (on) => (holding = on) };
}

t.test('events reach queues only once their fact is durable', async (t) => {
  const { sink, held, hold } = holdingSink();
  const { f, bob } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const poll = startPoll(f, bob, { queue_id: queueId, last_event_id: -1 });
  const pollWatched = track(poll.result);
  await settle();

  hold(true);
  const sending = send(f, f.owner, 'durable first');
  const sendWatched = track(sending);
  for (let i = 0; i < 5; i++) await settle();
  t.equal(held.length, 1, 'the fact went to the log');
  t.equal(sendWatched.done, false, 'the POST waits for durability');
  t.equal(pollWatched.done, false, 'the parked poll got nothing');
  t.same(f.runtime.queues.peek(queueId)!.events, [], 'nothing is in the queue');

  hold(false);
  for (const release of held.splice(0)) release();
  const sent = await sending;
  t.equal(sent.status, 200, sent.body);
  const got = await poll.result;
  t.same(ids(got), [0]);
  t.equal(got.json.events[0].message.id, sent.json.id);
});

t.test('a message racing a register is in the state or in the queue, exactly once', async (t) => {
  const { sink, held, hold } = holdingSink();
  const { f, bob } = await world({ ...GENERAL, sink });
  t.teardown(f.stop);
  for (const order of ['send first', 'register first'] as const) {
    hold(true);
    let sending: Promise<ApiResult>;
    let registering: Promise<ApiResult>;
    if (order === 'send first') {
      sending = send(f, f.owner, order);
      await settle();
      registering = f.call(bob, 'POST', '/api/v1/register', { event_types: ['message'], fetch_event_types: ['message'] });
    } else {
      registering = f.call(bob, 'POST', '/api/v1/register', { event_types: ['message'], fetch_event_types: ['message'] });
      await settle();
      sending = send(f, f.owner, order);
    }
    await settle();
    hold(false);
    for (const release of held.splice(0)) release();
    const [sent, reg] = await Promise.all([sending, registering]);
    t.equal(sent.status, 200, sent.body);
    t.equal(reg.status, 200, reg.body);
    await settle();
    const inState = reg.json.max_message_id >= sent.json.id;
    const events = await fetchNow(f, bob, reg.json.queue_id, reg.json.last_event_id);
    const inQueue = events.json.events.some((e: any) => e.type === 'message' && e.message.id === sent.json.id);
    t.ok(inState !== inQueue, `${order}: in the state ${inState}, in the queue ${inQueue}`);
  }
});

t.test('convergence: initial state plus the events equals a fresh register', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const types = ['realm_user', 'subscription', 'stream', 'message', 'update_message_flags', 'device'];
  const initial = await registerState(f, bob, types);

  const dee = await f.createUser('dee@example.com', 'Dee');
  t.equal((await f.subscribe(f.owner, 'projects', [f.owner.user_id, bob.user_id])).status, 200);
  t.equal((await f.subscribe(f.owner, 'projects', [dee.user_id])).status, 200);
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'projects', topic: 'plans', content: 'the plan' });
  t.equal(sent.status, 200, sent.body);
  const starred = await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: [sent.json.id], op: 'add', flag: 'starred' });
  t.equal(starred.status, 200, starred.body);
  t.equal((await f.subscribe(f.owner, 'announce', [f.owner.user_id])).status, 200);
  t.equal((await f.subscribe(carol, 'announce')).status, 200);
  const left = await f.call(bob, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: ['general'] });
  t.equal(left.status, 200, left.body);
  const device = (await f.call(bob, 'POST', '/api/v1/register_client_device')).json.device_id;
  await f.call(bob, 'POST', '/api/v1/register_client_device');
  t.equal((await f.call(bob, 'POST', '/api/v1/remove_client_device', { device_id: device })).status, 200);
  await f.call(carol, 'POST', '/api/v1/register_client_device');
  await settle();

  // The users, the three subscription lists (a channel left is in unsubscribed, not never
  // subscribed), max_message_id, starred and unread messages and devices, in one comparison.
  const events = await verifyState(t, f, bob, initial, types, ['realm_users', 'realm_non_active_users', 'subscriptions', 'never_subscribed', 'unsubscribed', 'max_message_id', 'starred_messages', 'unread_msgs', 'devices']);
  t.ok(events.length >= 8, `bob's queue got ${events.length} events`);
  t.equal(Object.keys((await registerState(f, bob, types)).devices).length, 1, 'bob\'s own devices only');
});

t.test('passivation: an unused queue gives up its actor, keeps its events, and wakes on the next message', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { passivateAfterMs: 60_000, defaultLifespanMs: 600_000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  t.equal((await send(f, f.owner, 'one')).status, 200);
  await settle();
  t.ok(f.runtime.queues.activeCount >= 1, 'the queue actor runs once the queue is used');

  f.clock.t += 61_000;
  f.runtime.queues.sweepIdle(f.clock.t);
  t.equal(f.runtime.queues.activeCount, 0, 'stopped through the supervisor after 60 s unused');
  t.same(f.runtime.queues.peek(queueId)!.events.map((e) => e.id), [0], 'its events stay, as plain data');

  t.equal((await send(f, f.owner, 'two')).status, 200);
  await settle();
  t.ok(f.runtime.queues.activeCount >= 1, 'a new message starts the actor again');
  const res = await fetchNow(f, bob, queueId, -1);
  t.equal(res.status, 200, res.body);
  t.same(res.json.events.map((e: { id: number; message: { content: string } }) => [e.id, e.message.content]), [[0, '<p>one</p>'], [1, '<p>two</p>']], 'nothing lost or renumbered across passivation');
});

t.test('a parked poll keeps its queue passivated (unless hot); a batch wakes it to apply the events', async (t) => {
  const { f, bob } = await world({ ...GENERAL, queues: { passivateAfterMs: 60_000, defaultLifespanMs: 600_000 } });
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  const held = (): number[] => f.runtime.queues.peek(queueId)!.events.map((e) => e.id);
  t.equal((await send(f, f.owner, 'zero')).status, 200);
  await settle();
  t.equal(f.runtime.queues.activeCount, 1, 'the batch started the actor');

  // Acknowledging event 0 and parking: the queue gives up its actor at once, however recently it was used.
  const first = startPoll(f, bob, { queue_id: queueId, last_event_id: 0 });
  await settle();
  t.equal(f.runtime.queues.parkedCount, 1, 'parked');
  t.equal(f.runtime.queues.activeCount, 0, 'a parked queue is passivated');
  t.same(held(), [], 'the acknowledgement was applied to the passivated queue');

  // A second batch a moment after the first would make the queue hot (see idle.ts): a quiet spell first.
  f.clock.t += 5000;
  const sent = send(f, f.owner, 'one');
  const res = await first.result;
  t.equal(res.status, 200, res.body);
  t.same(res.json.events.map((e: { id: number; message: { content: string } }) => [e.id, e.message.content]), [[1, '<p>one</p>']], 'the batch answered the parked poll');
  t.equal((await sent).status, 200);
  await settle();
  t.equal(f.runtime.queues.activeCount, 1, 'the batch woke the actor to apply it');
  t.same(held(), [1], 'and it applied the batch: the event stays until acknowledged');

  // An acknowledgement of an event the queue never had is refused, parked or not, and changes nothing.
  const wrong = await fetchNow(f, bob, queueId, 7);
  t.equal(wrong.status, 400);
  t.equal(wrong.json.msg, 'Event 7 was not in this queue');
  t.same(held(), [1]);

  const second = startPoll(f, bob, { queue_id: queueId, last_event_id: 1 });
  await settle();
  t.equal(f.runtime.queues.activeCount, 0, 'parked again: passivated again');
  t.same(held(), []);
  second.abort.abort();
  await settle();
  t.equal(f.runtime.queues.parkedCount, 0, 'an aborted poll leaves its queue');
  t.equal((await send(f, f.owner, 'two')).status, 200);
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, 1)), [2], 'the queue numbers on across passivation');
});

t.test('a parked poll is answered with exactly what its queue then holds, ids included', async (t) => {
  const { f, bob } = await world(GENERAL);
  t.teardown(f.stop);
  const queueId = await register(f, bob);
  // One event already waiting and acknowledged, so numbering does not start at 0.
  await send(f, f.owner, 'zero');
  await settle();
  t.same(ids(await fetchNow(f, bob, queueId, -1)), [0]);
  const parked = startPoll(f, bob, { queue_id: queueId, last_event_id: 0 });
  await settle();
  // Two messages committed in the same loop turn reach the queue in one flush.
  const sends = ['one', 'two'].map((content) => send(f, f.owner, content));
  const res = await parked.result;
  await Promise.all(sends);
  t.equal(res.status, 200, res.body);
  const got = ids(res);
  t.same(got, got.map((_, i) => i + 1), 'numbered on from the acknowledged event');
  const held = f.runtime.queues.peek(queueId)!.events.map((e) => e.id);
  t.same(held.slice(0, got.length), got, 'the queue holds the very events the reply carried');
  const all = await fetchNow(f, bob, queueId, 0);
  t.same(all.json.events.map((e: { id: number; message: { content: string } }) => [e.id, e.message.content]), [[1, '<p>one</p>'], [2, '<p>two</p>']], 'and a re-poll from the same cursor sees the same events');
});

t.test('convergence with bulk requests: many channels subscribed and unsubscribed at once', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  t.teardown(f.stop);
  const types = ['realm_user', 'subscription', 'stream', 'message', 'update_message_flags'];
  const watchers = [
    { who: bob, initial: await registerState(f, bob, types) },
    { who: carol, initial: await registerState(f, carol, types) },
  ];
  const subs = (who: Credentials, names: string[], extra: Record<string, unknown> = {}) =>
    f.call(who, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: names.map((name) => ({ name })), ...extra });
  const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const ok = (res: ApiResult, what: string) => t.equal(res.status, 200, `${what}: ${res.body}`);

  // Public channels, new and existing, for bob and carol together and for carol alone.
  ok(await subs(f.owner, ['general', ...names('pub', 40)], { principals: [bob.user_id, carol.user_id] }), 'bob and carol to 40 new channels');
  const dee = await f.createUser('dee@example.com', 'Dee');
  ok(await subs(f.owner, [...names('pub', 10), ...names('more', 15)], { principals: [carol.user_id, f.owner.user_id, dee.user_id] }), 'carol, dee and the owner');
  // Private channels: created with bob in them, and created without him then joined.
  ok(await subs(f.owner, names('priv', 12), { principals: [f.owner.user_id, bob.user_id], invite_only: true }), 'private channels with bob');
  ok(await subs(f.owner, names('closed', 8), { principals: [f.owner.user_id], invite_only: true }), 'private channels without bob');
  ok(await subs(f.owner, [...names('closed', 4), ...names('priv', 3)], { principals: [carol.user_id] }), 'carol joins some private ones');
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'pub-3', topic: 't', content: 'hi' });
  ok(sent, 'a message in between');
  // Leaving many at once, some of which one of them was never in.
  const leave = (who: Credentials, list: string[], principals?: number[]) =>
    f.call(who, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: list, ...(principals ? { principals } : {}) });
  // (A former subscriber of a private channel is not told who else leaves it later, so
  // bob leaves private channels carol stays in.)
  ok(await leave(bob, [...names('pub', 25), ...names('priv', 9).slice(3), 'general']), 'bob leaves 32 channels');
  // Users removed by one request are not told of each other (Zulip sends peer_remove to
  // the others only), so the watchers leave on their own and others leave together.
  ok(await leave(f.owner, [...names('pub', 12), ...names('more', 6), ...names('closed', 4)], [dee.user_id, f.owner.user_id]), 'dee and the owner leave some');
  ok(await leave(carol, [...names('more', 9), ...names('priv', 2)]), 'carol leaves some');
  ok(await subs(bob, names('pub', 5)), 'bob rejoins a few');
  await settle();

  for (const { who, initial } of watchers) {
    const events = await verifyState(t, f, who, initial, types, ['subscriptions', 'never_subscribed', 'unsubscribed', 'max_message_id', 'unread_msgs']);
    t.ok(events.length <= 35, `${who.email}: ${events.length} events for 10 requests over ${40 + 15 + 12 + 8} channels`);
  }
});

t.test('queues registered alike share one copy of their event types, narrow and client, and still filter by them', async (t) => {
  const { f, bob, carol } = await world(GENERAL);
  await f.subscribe(f.owner, 'random', [f.owner.user_id, bob.user_id, carol.user_id]);
  const params = { event_types: ['message'], narrow: [['channel', 'general']] };
  const qb = await register(f, bob, params);
  const qc = await register(f, carol, params);
  const qOther = await register(f, carol, { event_types: ['message', 'reaction'], narrow: [['channel', 'general']] });
  const [b, c, o] = [qb, qc, qOther].map((id) => f.runtime.queues.peek(id)!);
  t.equal(b.event_types, c.event_types, 'one event-types list for both');
  t.equal(b.narrow, c.narrow, 'one narrow for both');
  t.equal(b.client, c.client, 'the same client name');
  t.not(o.event_types, b.event_types, 'another list of event types is its own');
  t.ok(Object.isFrozen(b.event_types) && Object.isFrozen(b.narrow), 'shared lists are frozen');
  const inGeneral = await send(f, f.owner, 'in general');
  const inRandom = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'random', topic: 'x', content: 'in random' });
  t.equal(inRandom.status, 200);
  await settle();
  for (const [who, q] of [[bob, qb], [carol, qc]] as const) {
    const got = await fetchNow(f, who, q, -1);
    t.same(got.json.events.map((e: { message: { id: number } }) => e.message.id), [inGeneral.json.id], 'only the message in the narrowed channel');
  }
});
