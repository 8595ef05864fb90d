/**
 * A parked poll's queue is passivated: plain data and the poll's handle, its actor
 * started again only to apply a batch. These drive `EventQueues` directly, so that the
 * state between a delivery pass and what it commits (an overflow drop) can be read.
 */
import t from 'tap';
import { Supervisor } from '../actors/core/supervisor.js';
import { EventQueues, type QueueOptions, type SequencedEvent, type Waiter } from '../actors/event_queues/index.js';
import type { QueueFact } from '../actors/shared/queue_facts.js';

interface QueueRig {
  queues: EventQueues;
  clock: { t: number };
  committed: QueueFact[];
}

function queueRig(opts: Partial<QueueOptions> = {}): QueueRig {
  const clock = { t: 1_000_000 };
  const committed: QueueFact[] = [];
  let tokens = 0;
  const queues = new EventQueues(new Supervisor(), {
    now: () => clock.t,
    token: () => `q${++tokens}`,
    random: () => 0.5,
    commit: (facts) => {
      committed.push(...facts);
      return Promise.resolve();
    },
    heartbeatMinMs: 1000,
    heartbeatMaxMs: 2000,
    defaultLifespanMs: 600_000,
    maxLifespanMs: 600_000,
    maxEvents: 100,
    passivateAfterMs: 60_000,
    ...opts,
  });
  return { queues, clock, committed };
}

/** Registers a queue (applying its fact at `seq`) and returns its id. */
function registered(w: QueueRig, seq: number): string {
  w.queues.register({ org: 1, user_id: 7, event_types: null, narrow: [], client: 'test', lifespan_secs: null, empty_topic_name: true });
  const fact = w.committed.pop();
  if (fact?.type !== 'QueueRegistered') throw new Error('no registration committed');
  w.queues.applyRegistered(fact, seq);
  return fact.queue_id;
}

function waiter(): Waiter & { replies: Array<{ body: string; status: number }> } {
  const replies: Array<{ body: string; status: number }> = [];
  return { replies, deliver: (body, status = 200) => void replies.push({ body, status }) };
}

function event(seq: number, n: number): SequencedEvent {
  return { seq, type: 'message', json: `"type":"message","n":${n}` };
}

/** Stages `events` for the queue and runs one delivery pass; resolves with the active actor count right after it. */
function deliver(w: QueueRig, queueId: string, events: SequencedEvent[]): Promise<number> {
  const cell = w.queues.cellsOf([queueId])[0];
  w.queues.deliver({ walk: (visit) => events.forEach((e, i) => visit(cell, e, i === events.length - 1)) });
  return new Promise((resolve) => w.queues.scheduleFlush(() => resolve(w.queues.activeCount)));
}

t.test('parking passivates the queue; a batch wakes it to apply the events', async (t) => {
  const w = queueRig();
  const q = registered(w, 1);
  t.equal(await deliver(w, q, [event(2, 0)]), 1, 'a batch to an unparked queue starts its actor');
  const first = waiter();
  t.equal(w.queues.poll(q, 1, 7, 0, false, first), null, 'acknowledged event 0 and parked');
  t.equal(w.queues.activeCount, 0, 'parked: passivated, though used a moment ago');
  t.same(w.queues.peek(q)!.events, [], 'the acknowledgement pruned the passivated queue');

  w.clock.t += 5000;
  t.equal(await deliver(w, q, [event(3, 1)]), 1, 'the batch woke the actor');
  t.same(first.replies, [{ body: '{"result":"success","msg":"","events":[{"id":1,"type":"message","n":1}],"queue_id":"q1"}', status: 200 }]);
  t.same(w.queues.peek(q)!.events.map((e) => e.id), [1], 'and the actor applied it');
  t.equal(w.queues.peek(q)!.seq, 3);

  t.equal(w.queues.poll(q, 1, 7, 1, false, waiter()), null);
  t.equal(w.queues.activeCount, 0, 'parked again: passivated again');
});

t.test('a hot queue (batches less than a second apart) keeps its actor awake while parked, until the sweep finds it quiet', async (t) => {
  const w = queueRig();
  const q = registered(w, 1);
  await deliver(w, q, [event(2, 0)]);
  t.equal(w.queues.poll(q, 1, 7, 0, false, waiter()), null);
  t.equal(w.queues.activeCount, 0, 'one batch does not make a queue hot: passivated when its poll parks');
  w.clock.t += 100;
  t.equal(await deliver(w, q, [event(3, 1)]), 1, 'a second batch 100 ms later wakes it');
  t.equal(w.queues.poll(q, 1, 7, 1, false, waiter()), null);
  t.equal(w.queues.activeCount, 1, 'hot: its parked poll leaves the actor awake');
  w.clock.t += 100;
  const parked = waiter();
  await deliver(w, q, [event(4, 2)]);
  t.equal(w.queues.poll(q, 1, 7, 2, false, parked), null);
  t.equal(w.queues.activeCount, 1, 'still hot');
  w.clock.t += 500;
  w.queues.sweepIdle(w.clock.t);
  t.equal(w.queues.activeCount, 1, 'quiet for 500 ms: still awake');
  w.clock.t += 600;
  w.queues.sweepIdle(w.clock.t);
  t.equal(w.queues.activeCount, 0, 'quiet for over a second: the sweep passivates it');
  t.equal(w.queues.parkedCount, 1, 'with its poll still parked');
  w.clock.t += 5000;
  t.equal(await deliver(w, q, [event(5, 3)]), 1, 'a batch after a quiet spell wakes it');
  t.same(parked.replies.map((r) => JSON.parse(r.body).events.map((e: { id: number }) => e.id)), [[3]], 'and answers the poll');
  t.equal(w.queues.poll(q, 1, 7, 3, false, waiter()), null);
  t.equal(w.queues.activeCount, 0, 'not hot after a quiet spell: passivated when its poll parks');
});

t.test('a batch that answers no parked poll leaves its queue passivated', async (t) => {
  const w = queueRig({ maxEvents: 1 });
  const q = registered(w, 5);
  const parked = waiter();
  t.equal(w.queues.poll(q, 1, 7, -1, false, parked), null);

  t.equal(await deliver(w, q, [event(4, 0)]), 0, 'a fact the queue already reflects: nothing to answer, and the actor stopped again');
  t.same(parked.replies, [], 'still parked');
  t.equal(w.queues.parkedCount, 1);

  w.clock.t += 5000;
  t.equal(await deliver(w, q, [event(6, 1), event(7, 2)]), 0, 'two events over the cap of one: not answered, and passivated again');
  t.same(parked.replies, [], 'the overflow drop answers it, not the batch');
  t.same(w.committed.at(-1), { type: 'QueuesDropped', queue_ids: [q], reason: 'more than 1 events were not fetched' });
});

t.test('an acknowledgement is checked and applied without starting the actor', async (t) => {
  const w = queueRig();
  const q = registered(w, 1);
  await deliver(w, q, [event(2, 0), event(3, 1)]);
  w.queues.stop();
  t.equal(w.queues.activeCount, 0);
  t.throws(() => w.queues.poll(q, 1, 7, 5, true, waiter()), { message: 'Event 5 was not in this queue' });
  t.equal(w.queues.poll(q, 1, 7, 0, true, waiter()), '{"result":"success","msg":"","events":[{"id":1,"type":"message","n":1}],"queue_id":"q1"}');
  t.throws(() => w.queues.poll(q, 1, 7, -1, true, waiter()), { message: 'An event newer than -1 has already been pruned!' });
  t.equal(w.queues.activeCount, 0, 'no actor started');
  t.equal(w.queues.peek(q)!.newest_pruned_id, 0);
});

t.test('a passivated parked queue still gets its heartbeat, and its abandoned poll is forgotten', async (t) => {
  const w = queueRig();
  const q = registered(w, 1);
  const parked = waiter();
  t.equal(w.queues.poll(q, 1, 7, null, false, parked), null);
  t.equal(w.queues.activeCount, 0);
  w.clock.t += 2000;
  w.queues.tick();
  t.same(w.committed.at(-1), { type: 'HeartbeatsDue', queue_ids: [q] });
  w.queues.unpark(q, parked);
  t.equal(w.queues.parkedCount, 0);
  t.same(parked.replies, []);
});
