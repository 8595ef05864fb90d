/**
 * Bulk subscription requests at the actor level: one request is one fact (or a few,
 * for very large ones), its events are a handful per queue whatever the number of
 * channels, replay does per-request work and rebuilds the very queue contents live
 * delivery produced, and facts written by earlier versions (one `ChannelCreated` +
 * `Subscribed` per channel) still replay. Nothing here is timed: the work is counted.
 */
import t from 'tap';
import type { ChannelRecord } from '../actors/shared/types.js';
import type { ChannelContext } from '../actors/kinds/channel.js';
import type { Command, Fact, Stamped } from '../actors/areas/index.js';
import type { QueueDelivery } from '../actors/event_queues/index.js';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';
import { BULK_FACT_BUDGET_BYTES, defaultSubscriptionProps } from '../actors/areas/subscriptions.js';
import { listSubscriptions, listUnsubscribed } from '../actors/areas/subscription_settings.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { SubscriptionJson, subscriptionView } from '../actors/render/views.js';
import { Role, type RoleNumber } from '../actors/shared/types.js';
import { encodeRecord, MAX_RECORD_BYTES } from '../snapshots/codec.js';
import { stateDigest } from './state.js';
import { MemoryBodies } from '../actors/core/bodies.js';
import { MessageTable } from '../actors/shared/message_table.js';

const ORG = 1;

interface Rig {
  runtime: Runtime;
  records: Stamped[];
  run(command: Command): Promise<any>;
}

function runtimeWith(sink: FactSink): Runtime {
  let counter = 0;
  return new Runtime({
    ...defaultRuntimeOptions(sink),
    now: () => 1_800_000_000_000,
    random: () => 0.5,
    randomBytes: (n) => {
      const b = Buffer.alloc(n, 0xcd);
      b.writeUInt32BE(++counter, 0);
      return b;
    },
  });
}

/** A runtime whose sink keeps a copy of every record, as the log would. */
function rig(): Rig {
  const records: Stamped[] = [];
  const runtime = runtimeWith({
    append(batch, onDurable) {
      records.push(...structuredClone(batch));
      queueMicrotask(onDurable);
    },
  });
  return { runtime, records, run: (target) => runtime.execute(target) };
}

const settle = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

const subscribe = (actor: number, channels: Array<{ name: string; description?: string }>, principals: number[] | null, inviteOnly = false): Command => ({ type: 'SUBSCRIBE', org: ORG, actor_id: actor, channels, principals, invite_only: inviteOnly, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
const unsubscribe = (actor: number, names: string[], principals: number[] | null): Command => ({ type: 'UNSUBSCRIBE', org: ORG, actor_id: actor, names, principals });
const named = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${i}` }));

/** The organization: owner (1), an administrator, members and a guest, each with a queue. */
async function populated(users = 8): Promise<Rig> {
  const r = rig();
  await r.run({ type: 'CREATE_ORG', name: 'Acme', subdomain: 'acme', owner_email: 'owner@acme.test', owner_password_hash: '', owner_name: 'Ada' });
  for (let i = 2; i <= users; i++) {
    const role: RoleNumber = i === 2 ? Role.ADMIN : i === users ? Role.GUEST : Role.MEMBER;
    await r.run({ type: 'CREATE_USER', org: ORG, actor_id: 1, email: `u${i}@acme.test`, password_hash: '', full_name: `User ${i}`, role });
  }
  for (let i = 1; i <= users; i++) await r.runtime.queues.register({ org: ORG, user_id: i, event_types: null, narrow: [], client: 'test', lifespan_secs: null, empty_topic_name: false }).durable;
  return r;
}

/** What every queue holds: ids, types and the exact JSON. */
function queueContents(rt: Runtime): string {
  return JSON.stringify(rt.queues.exportQueues().map((q) => [q.id, q.next_id, q.events]).sort());
}

/** Replays records into a fresh runtime, counting the work per queue and per user. */
function countedReplay(records: Stamped[]): { runtime: Runtime; pushes: number; events: number; userLookups: number } {
  const runtime = runtimeWith({ append: (_r, onDurable) => queueMicrotask(onDurable) });
  const counts = { pushes: 0, events: 0, userLookups: 0 };
  // The runtime's private side of the queues, where replay pushes and looks up queues.
  const queues = (runtime as unknown as { queueDelivery: QueueDelivery }).queueDelivery;
  const pushNow = queues.pushNow.bind(queues);
  const queuesOf = queues.queuesOf.bind(queues);
  queues.pushNow = (cell, events) => {
    counts.pushes++;
    counts.events += events.length;
    pushNow(cell, events);
  };
  // Event derivation looks up a user's queues once per user it reaches: per-subscriber work.
  queues.queuesOf = (org, userId) => {
    counts.userLookups++;
    return queuesOf(org, userId);
  };
  for (const s of structuredClone(records)) runtime.replay(s);
  return { runtime, ...counts };
}

t.test('replay work per request does not grow with the number of channels', async (t) => {
  const runs: Array<{ channels: number; facts: number; pushes: number; events: number; userLookups: number; perQueue: number[] }> = [];
  for (const channels of [20, 400]) {
    const r = await populated();
    const from = r.records.length;
    // Public channels for several users, some already existing; private ones; then leaving many.
    await r.run(subscribe(1, named('pub', channels / 2), [1, 3]));
    await r.run(subscribe(1, named('pub', channels), [1, 3, 4]));
    await r.run(subscribe(1, named('priv', channels / 4), [1, 4, 5], true));
    await r.run(unsubscribe(1, [...named('pub', channels), ...named('priv', channels / 8)].map((c) => c.name), [3, 4]));
    await settle();
    const facts = r.records.length - from;
    const live = queueContents(r.runtime);
    const replayed = countedReplay(r.records);
    t.equal(queueContents(replayed.runtime), live, `${channels} channels: replay rebuilds the queues live delivery filled, ids and bytes`);
    t.equal(stateDigest(replayed.runtime), stateDigest(r.runtime), `${channels} channels: and the same state`);
    const perQueue = r.runtime.queues.exportQueues().map((q) => q.next_id);
    runs.push({ channels, facts, pushes: replayed.pushes, events: replayed.events, userLookups: replayed.userLookups, perQueue });
    replayed.runtime.stop();
    r.runtime.stop();
  }
  const [small, large] = runs;
  t.equal(small.facts, 4, 'one fact per request');
  t.equal(large.facts, small.facts, 'however many channels it names');
  t.equal(large.events, small.events, `queue events on replay: ${small.events} for ${small.channels} channels, ${large.events} for ${large.channels}`);
  t.equal(large.pushes, small.pushes, 'queue pushes on replay do not grow with the channels');
  t.equal(large.userLookups, small.userLookups, `per-user work on replay does not grow either (${large.userLookups} lookups)`);
  t.ok(Math.max(...large.perQueue) <= 4 * 4, `at most a handful of events per queue per request: ${large.perQueue.join(', ')} for 4 requests`);
});

t.test('a fact of one request gives a queue several events; replay keeps them all', async (t) => {
  const r = await populated(4);
  // User 3, a member, is added to a new private channel: stream create, then subscription add.
  await r.run(subscribe(1, named('secret', 3), [1, 3], true));
  await settle();
  const member = r.runtime.queues.exportQueues().find((q) => q.user_id === 3)!;
  t.same(member.events.map((e) => JSON.parse(`{${e.json}}`)).map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']]);
  const replayed = countedReplay(r.records);
  t.equal(queueContents(replayed.runtime), queueContents(r.runtime));
  replayed.runtime.stop();
  r.runtime.stop();
});

t.test('logs written before bulk facts (one ChannelCreated + Subscribed per channel) still replay, events included', async (t) => {
  const r = await populated(4);
  let seq = r.records[r.records.length - 1].seq;
  const channel = (id: number, name: string, inviteOnly: boolean): ChannelRecord => ({
    stream_id: id, name, description: '', rendered_description: '', invite_only: inviteOnly, is_web_public: false,
    history_public_to_subscribers: !inviteOnly, date_created: 1_800_000_000, creator_id: 1, is_archived: false,
    message_retention_days: null, recipient_id: 100 + id, is_default: false,
  });
  const props = (color: string) => defaultSubscriptionProps(color);
  const old: Fact[] = [
    { type: 'ChannelCreated', org: ORG, channel: channel(1, 'news', false) },
    { type: 'Subscribed', org: ORG, stream_id: 1, user_ids: [1, 3], props: [props('#76ce90'), props('#76ce90')], acting_user_id: 1 },
    { type: 'ChannelCreated', org: ORG, channel: channel(2, 'hidden', true) },
    { type: 'Subscribed', org: ORG, stream_id: 2, user_ids: [1, 3], props: [props('#fae589'), props('#fae589')], acting_user_id: 1 },
    { type: 'Unsubscribed', org: ORG, stream_id: 1, user_ids: [3], acting_user_id: 3 },
  ];
  const records = [...r.records, ...old.map((fact) => ({ seq: ++seq, fact }))];
  const { runtime } = countedReplay(records);
  /** A channel's subscribers, as user 1 (subscribed to every channel here) is shown them. */
  const subscribersOf = (view: Runtime, streamId: number) => (listSubscriptions(view, ORG, 1, true).find((s) => s.stream_id === streamId)!.subscribers as number[]).slice().sort();
  t.same(subscribersOf(runtime, 1), [1]);
  t.same(subscribersOf(runtime, 2), [1, 3]);
  t.same(listSubscriptions(runtime, ORG, 3, false).map((s) => s.stream_id), [2]);
  t.same(listUnsubscribed(runtime, ORG, 3).map((s) => s.stream_id), [1]);
  t.equal(channelIdByName(runtime, ORG, 'hidden'), 2);
  const eventsOf = (userId: number) => runtime.queues.exportQueues().find((q) => q.user_id === userId)!.events.map((e) => JSON.parse(`{${e.json}}`));
  t.same(eventsOf(3).map((e) => [e.type, e.op, e.streams?.[0]?.name ?? e.subscriptions?.[0]?.name ?? e.stream_ids]), [
    ['stream', 'create', 'news'],
    ['subscription', 'add', 'news'],
    ['stream', 'create', 'hidden'],
    ['subscription', 'add', 'hidden'],
    ['subscription', 'remove', 'news'],
  ], 'one event per channel, as they were delivered when written (both events of the private channel kept)');
  t.same(eventsOf(2).map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'peer_add'], ['stream', 'create'], ['subscription', 'peer_remove']], 'an administrator hears of both channels');
  t.same(eventsOf(4).map((e) => [e.type, e.op]), [['subscription', 'peer_add'], ['subscription', 'peer_remove']], 'a guest is not told of new public channels');
  // The new decisions continue from the replayed state.
  const next = runtimeWith({ append: (_r, onDurable) => queueMicrotask(onDurable) });
  for (const s of structuredClone(records)) next.replay(s);
  await next.execute(subscribe(1, [{ name: 'news' }, { name: 'later' }], [3]));
  t.same(subscribersOf(next, 1), [1, 3], 'rejoining works on a channel from the old facts');
  t.equal(listSubscriptions(next, ORG, 3, false).find((s) => s.stream_id === 1)!.color, '#76ce90', 'with the settings kept when leaving');
  t.equal(channelIdByName(next, ORG, 'later'), 3, 'new channels continue the ids');
  runtime.stop();
  next.stop();
  r.runtime.stop();
});

t.test('a request too large for one log record is split into a few facts under the budget', async (t) => {
  const r = await populated(3);
  const from = r.records.length;
  // Descriptions that render 5 bytes per character (`&` -> `&amp;`): ~6 KiB per channel.
  const channels = Array.from({ length: 900 }, (_, i) => ({ name: `long-${i}`, description: '&'.repeat(1024) }));
  const value = await r.run(subscribe(1, channels, [1, 2]));
  t.equal(value.subscribed['1'].length, 900);
  await settle();
  const facts = r.records.slice(from);
  t.ok(facts.length >= 2 && facts.length <= 3, `${facts.length} facts`);
  let created = 0;
  for (const s of facts) {
    const bytes = encodeRecord(s).length;
    t.ok(bytes <= BULK_FACT_BUDGET_BYTES && bytes < MAX_RECORD_BYTES, `a fact of ${bytes} bytes`);
    if (s.fact.type === 'SubscriptionsAdded') created += s.fact.created.length;
  }
  t.equal(created, 900, 'every channel created once');
  const perQueue = r.runtime.queues.exportQueues().map((q) => q.next_id);
  t.ok(Math.max(...perQueue) <= 3 * facts.length, `a few events per fact: ${perQueue.join(', ')}`);
  const replayed = countedReplay(r.records);
  t.equal(queueContents(replayed.runtime), queueContents(r.runtime));
  t.equal(stateDigest(replayed.runtime), stateDigest(r.runtime));
  replayed.runtime.stop();
  r.runtime.stop();
});

t.test('the subscription JSON built from shared parts is byte for byte subscriptionView', async (t) => {
  const r = await populated(4);
  const before = r.records.length;
  await r.run(subscribe(1, [{ name: 'mixed', description: 'a <b> & "c"' }], [1, 3, 2]));
  // The renderer's input, a channel context, as the request's fact makes it: the channel, its subscribers, and each one's settings.
  const [{ fact }] = r.records.slice(before);
  if (fact.type !== 'SubscriptionsAdded') return t.fail('expected SubscriptionsAdded');
  const [added] = fact.additions;
  const ch: ChannelContext = { seq: 0, channel: fact.created[0], subscribers: new Set(added.user_ids), topics: new Map(), messages: new MessageTable(), bodies: new MemoryBodies(), history: new Map() };
  const built = new SubscriptionJson(ch);
  for (const uid of [1, 2, 3]) {
    const props = { ...added.props[added.user_ids.indexOf(uid)], is_muted: uid === 2 };
    t.equal(built.render(props), JSON.stringify(subscriptionView(ch, props, true)));
  }
  r.runtime.stop();
});
