/**
 * Actor-level tests: commands go to a `Runtime` whose sink records every stamped fact;
 * each test asserts the facts decided, the state they leave, and the events they
 * cause. The convergence test replays the recorded facts into a fresh runtime and
 * requires identical state.
 */
import t, { type Test } from 'tap';
import type { Stamped } from '../actors/areas/index.js';
import { notify, type Command, type Delivery } from '../actors/areas/index.js';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';
import { Role, type OrgRecord, type RoleNumber, type UserRecord } from '../actors/types.js';
import { ApiError } from '../actors/errors.js';
import { SYSTEM_GROUPS } from '../actors/group_settings.js';

const ORG = 1;

interface Rig {
  runtime: Runtime;
  /** Every record handed to the sink, deep-copied as the log would. */
  records: Stamped[];
  clock: { t: number };
  run(command: Command): Promise<any>;
  /** Records appended since `from`. */
  since(from: number): Stamped[];
}

/** A deterministic runtime whose sink records facts and reports them durable at once. */
function rig(): Rig {
  const records: Stamped[] = [];
  const clock = { t: 1_800_000_000_000 };
  let counter = 0;
  const sink: FactSink = {
    append(batch, onDurable) {
      records.push(...structuredClone(batch));
      queueMicrotask(onDurable);
    },
  };
  const runtime = new Runtime({
    now: () => clock.t,
    random: () => 0.5,
    randomBytes: (n) => {
      const b = Buffer.alloc(n, 0xab);
      b.writeUInt32BE(++counter, 0);
      return b;
    },
    sink,
    queues: defaultRuntimeOptions(sink).queues,
  });
  return {
    runtime,
    records,
    clock,
    run: (target) => runtime.execute(target),
    since: (from) => records.slice(from),
  };
}

/** A runtime with nothing recorded, for replay. */
function freshRuntime(): Runtime {
  const sink: FactSink = { append: (_r, onDurable) => queueMicrotask(onDurable) };
  return new Runtime({ ...defaultRuntimeOptions(sink), now: () => 0, random: () => 0.5 });
}

const createOrg = (name = 'Acme'): Command => ({ type: 'CREATE_ORG', name, subdomain: name.toLowerCase(), owner_email: `owner@${name.toLowerCase()}.test`, owner_password_hash: '', owner_name: 'Ada Owner' });
const createUser = (actor: number, email: string, fullName: string, role: RoleNumber = Role.MEMBER): Command => ({ type: 'CREATE_USER', org: ORG, actor_id: actor, email, password_hash: '', full_name: fullName, role });
const subscribe = (actor: number, names: string[], principals: number[] | null = null, inviteOnly = false): Command => ({ type: 'SUBSCRIBE', org: ORG, actor_id: actor, channels: names.map((name) => ({ name })), principals, invite_only: inviteOnly, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
const unsubscribe = (actor: number, names: string[], principals: number[] | null = null): Command => ({ type: 'UNSUBSCRIBE', org: ORG, actor_id: actor, names, principals });
const sendChannel = (sender: number, streamId: number, topic: string, content: string, readBySender = true): Command => ({ type: 'SEND_MESSAGE', org: ORG, sender_id: sender, to: { stream_id: streamId, topic }, content, client: 'test', read_by_sender: readBySender });
const sendDirect = (sender: number, to: number[], content: string, readBySender = true): Command => ({ type: 'SEND_MESSAGE', org: ORG, sender_id: sender, to: { user_ids: to }, content, client: 'test', read_by_sender: readBySender });
const updateFlags = (user: number, op: 'add' | 'remove', flag: string, messages: number[]): Command => ({ type: 'UPDATE_FLAGS', user_id: user, org: ORG, op, flag, messages });

/** An organization with its owner (1), a member Bea (2) and a member Cy (3). */
async function populated(): Promise<Rig> {
  const r = rig();
  await r.run(createOrg());
  await r.run(createUser(1, 'bea@acme.test', 'Bea'));
  await r.run(createUser(1, 'cy@acme.test', 'Cy'));
  return r;
}

/** The events a user gets from some deliveries, parsed. */
function eventsFor(deliveries: Delivery[], userId: number): any[] {
  const out: any[] = [];
  for (const d of deliveries) {
    if (!('user_ids' in d) || ![...d.user_ids].includes(userId)) continue;
    const e = typeof d.event === 'function' ? d.event(userId, { empty_topic_name: false, bulk_message_deletion: false, client_gravatar: false, include_deactivated_groups: false, archived_channels: false, slim_presence: false, simplified_presence_events: false }) : d.event;
    if (e !== null) out.push(JSON.parse(`{${e.json}}`));
  }
  return out;
}

/** Every piece of actor state of one organization, as plain sorted data. */
function stateOf(rt: Runtime, org: number): unknown {
  const byKey = <K, V>(m: Map<K, V>) => [...m.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0]), 'en', { numeric: true }));
  const sorted = (s: Iterable<number>) => [...s].sort((a, b) => a - b);
  const server = rt.server();
  const o = rt.org(org)!;
  return {
    server: { seq: server.seq, orgs: byKey(server.orgs), bySubdomain: byKey(server.bySubdomain), maxMessageId: server.maxMessageId },
    org: {
      seq: o.seq, org: o.org, users: byKey(o.users), byEmail: byKey(o.byEmail), channelsByName: byKey(o.channelsByName),
      nextUserId: o.nextUserId, nextChannelId: o.nextChannelId, nextRecipientId: o.nextRecipientId,
      directMessages: byKey(o.directMessages), directIdsByUser: byKey(o.directIdsByUser), groupRecipients: byKey(o.groupRecipients),
      messageChannel: byKey(o.messageChannel),
    },
    channels: sorted(rt.channelIdsOf(org)).map((id) => {
      const c = rt.channel(org, id)!;
      return { seq: c.seq, channel: c.channel, subscribers: sorted(c.subscribers), topics: byKey(c.topics), ids: c.ids, messages: byKey(c.messages) };
    }),
    users: sorted(o.users.keys()).map((id) => {
      const u = rt.user(org, id)!;
      return {
        seq: u.seq, user_id: u.user_id, subs: byKey(u.subs), unread: sorted(u.unread),
        flags: Object.fromEntries(Object.entries(u.flags).map(([k, v]) => [k, sorted(v)])),
      };
    }),
    lastSeq: rt.lastSeq,
  };
}

function assertIncreasingSeqs(t: Test, records: Stamped[]): void {
  for (let i = 1; i < records.length; i++) {
    if (records[i].seq <= records[i - 1].seq) {
      t.fail(`seq ${records[i].seq} at ${i} does not follow ${records[i - 1].seq}`);
      return;
    }
  }
  t.pass('seqs strictly increase');
}

function codeOf(err: unknown): string | undefined {
  return err instanceof ApiError ? err.code : undefined;
}

t.test('CREATE_ORG produces OrgCreated with its owner', async (t) => {
  const r = rig();
  const value = (await r.run(createOrg())) as { org: OrgRecord; owner: UserRecord };
  t.equal(r.records.length, 1);
  const s = r.records[0];
  t.equal(s.seq, 1);
  t.equal(s.fact.type, 'OrgCreated');
  if (s.fact.type !== 'OrgCreated') return;
  t.equal(s.fact.org.id, 1);
  t.equal(s.fact.org.name, 'Acme');
  t.equal(s.fact.org.subdomain, 'acme');
  t.equal(s.fact.org.date_created, Math.floor(r.clock.t / 1000), 'the time comes from the injected clock');
  t.equal(s.fact.owner.user_id, 1);
  t.equal(s.fact.owner.email, 'owner@acme.test');
  t.equal(s.fact.owner.role, Role.OWNER);
  t.equal(s.fact.owner.is_active, true);
  t.ok(s.fact.owner.api_key.length > 0, 'the owner gets an API key');
  t.same(value.owner, s.fact.owner, 'the caller gets what the fact says');

  t.equal(r.runtime.server().bySubdomain.get('acme'), 1);
  t.equal(r.runtime.org(1)!.users.get(1)!.email, 'owner@acme.test');
  t.ok(r.runtime.user(1, 1), 'the owner has a user actor');
  t.same(notify(r.runtime, s), [], 'nobody is listening to a new organization');

  await t.rejects(r.run(createOrg()), { code: 'BAD_REQUEST' }, 'a subdomain is taken once');
  t.equal(r.records.length, 1, 'a rejected command records nothing');
});

t.test('CREATE_USER: an owner may, a member may not', async (t) => {
  const r = rig();
  await r.run(createOrg());
  const before = r.records.length;
  const value = (await r.run(createUser(1, 'bea@acme.test', 'Bea'))) as { user_id: number };
  const [created] = r.since(before);
  t.equal(created.fact.type, 'UserCreated');
  if (created.fact.type !== 'UserCreated') return;
  t.equal(created.fact.org, ORG);
  t.equal(created.fact.user.user_id, 2);
  t.equal(value.user_id, 2);
  t.equal(created.fact.user.role, Role.MEMBER);
  t.equal(created.fact.acting_user_id, 1);
  t.not(created.fact.user.recipient_id, r.runtime.org(ORG)!.users.get(1)!.recipient_id, 'each user has their own recipient');
  t.ok(r.runtime.user(ORG, 2), 'a user actor exists for the new user');
  const events = notify(r.runtime, created);
  for (const uid of [1, 2]) {
    const got = eventsFor(events, uid);
    // The owner, an administrator, also gets the new human's export consent (Zulip's realm_export_consent on creation).
    const consent = uid === 1 ? [{ type: 'realm_export_consent', user_id: 2, consented: false }] : [];
    t.equal(got.length, 3 + consent.length);
    t.match(got[0], { type: 'realm_user', op: 'add', person: { user_id: 2, email: 'bea@acme.test', full_name: 'Bea' } });
    t.same(got.slice(1), [
      { type: 'user_group', op: 'add_members', group_id: SYSTEM_GROUPS.members, user_ids: [2] },
      { type: 'user_group', op: 'add_members', group_id: SYSTEM_GROUPS.full_members, user_ids: [2] },
      ...consent,
    ], 'a new member joins role:members and role:fullmembers');
  }

  const seq = r.runtime.lastSeq;
  const count = r.records.length;
  let error: unknown;
  await r.run(createUser(2, 'mallory@acme.test', 'Mallory')).catch((e) => (error = e));
  t.equal(codeOf(error), 'UNAUTHORIZED_PRINCIPAL', 'a member cannot create users');
  t.equal(r.records.length, count, 'no fact');
  t.equal(r.runtime.lastSeq, seq, 'no seq was used');
  t.equal(r.runtime.org(ORG)!.users.size, 2);

  await r.run(createUser(2, 'bea2@acme.test', 'Bea Two')).catch((e) => (error = e));
  t.equal(codeOf(error), 'UNAUTHORIZED_PRINCIPAL');
  error = undefined;
  await r.run(createUser(1, 'BEA@acme.test', 'Bea Again')).catch((e) => (error = e));
  t.equal(codeOf(error), 'BAD_REQUEST', 'emails are unique, case-insensitively');
  t.equal(r.records.length, count);
});

t.test('SUBSCRIBE to a missing channel creates it, then subscribes', async (t) => {
  const r = await populated();
  const before = r.records.length;
  const value = (await r.run(subscribe(1, ['design'], [1, 2]))) as { subscribed: Record<string, string[]> };
  const facts = r.since(before);
  t.same(facts.map((s) => s.fact.type), ['SubscriptionsAdded'], 'one fact for the whole request');
  assertIncreasingSeqs(t, r.records);
  t.equal(facts[0].seq, r.records[before - 1].seq + 1, 'seqs continue from the previous fact');
  const [subscribed] = facts;
  if (subscribed.fact.type !== 'SubscriptionsAdded') return;
  t.equal(subscribed.fact.created.length, 1);
  const streamId = subscribed.fact.created[0].stream_id;
  t.equal(subscribed.fact.created[0].name, 'design');
  t.equal(subscribed.fact.created[0].creator_id, 1);
  t.equal(subscribed.fact.additions.length, 1);
  t.equal(subscribed.fact.additions[0].stream_id, streamId);
  t.same(subscribed.fact.additions[0].user_ids, [1, 2]);
  t.equal(subscribed.fact.additions[0].props.length, 2, 'one set of settings per subscriber');
  t.same(value.subscribed, { 1: ['design'], 2: ['design'] });

  const ch = r.runtime.channel(ORG, streamId)!;
  t.equal(ch.channel.name, 'design');
  t.same([...ch.subscribers].sort(), [1, 2]);
  t.equal(ch.seq, subscribed.seq, 'the channel actor reflects the newest fact');
  t.equal(r.runtime.org(ORG)!.channelsByName.get('design'), streamId);
  t.ok(r.runtime.user(ORG, 2)!.subs.has(streamId));
  t.notOk(r.runtime.user(ORG, 3)!.subs.has(streamId));

  // Events: everyone hears of a public channel; subscribers get their subscription; others a peer_add.
  const events = notify(r.runtime, subscribed);
  for (const uid of [1, 2]) {
    const got = eventsFor(events, uid);
    t.same(got.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], `user ${uid} hears of the channel, then of the subscription`);
    t.equal(got[0].streams[0].name, 'design');
    t.equal(got[0].streams[0].subscriber_count, 0, 'the channel as created, before anyone joined');
    t.equal(got[1].subscriptions[0].stream_id, streamId);
  }
  const cy = eventsFor(events, 3);
  t.same(cy.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'peer_add']]);
  t.same(cy[1], { type: 'subscription', op: 'peer_add', stream_ids: [streamId], user_ids: [1, 2] });

  const again = r.records.length;
  const repeat = (await r.run(subscribe(1, ['Design'], [1]))) as { already_subscribed: Record<string, string[]> };
  t.equal(r.records.length, again, 'subscribing again decides nothing');
  t.same(repeat.already_subscribed, { 1: ['design'] });
});

t.test('an invite-only channel is announced to administrators and to its members only', async (t) => {
  const r = await populated();
  const before = r.records.length;
  await r.run(subscribe(1, ['secret'], [1, 2], true));
  const [subscribed] = r.since(before);
  const events = notify(r.runtime, subscribed);
  t.same(eventsFor(events, 1).map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'administrators learn of it when it is made');
  t.same(eventsFor(events, 3), [], 'a non-subscriber hears nothing of a private channel');
  t.same(eventsFor(events, 2).map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'a member added learns of it, then of the subscription');
  t.equal(eventsFor(events, 2)[0].streams[0].name, 'secret');
});

t.test('guests are not told of public channels being created', async (t) => {
  const r = await populated();
  await r.run(createUser(1, 'guest@acme.test', 'Gus', Role.GUEST));
  const before = r.records.length;
  await r.run(subscribe(1, ['lobby'], [1]));
  const [created] = r.since(before);
  const events = notify(r.runtime, created);
  t.same(eventsFor(events, 4).filter((e) => e.type === 'stream'), []);
  t.equal(eventsFor(events, 2).filter((e) => e.type === 'stream').length, 1);
});

t.test('SEND_CHANNEL_MESSAGE: ids, topics and unread state', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2]));
  const streamId = r.runtime.org(ORG)!.channelsByName.get('design')!;

  const before = r.records.length;
  const first = (await r.run(sendChannel(1, streamId, 'Roadmap', 'hi @**Bea**'))) as { id: number };
  const [sent] = r.since(before);
  t.equal(sent.fact.type, 'MessageSent');
  if (sent.fact.type !== 'MessageSent') return;
  t.equal(sent.fact.message.id, 1, 'the first message id is 1');
  t.equal(first.id, 1);
  t.equal(sent.fact.message.stream_id, streamId);
  t.equal(sent.fact.message.topic, 'Roadmap');
  t.equal(sent.fact.message.sender_id, 1);
  t.equal(sent.fact.message.timestamp, Math.floor(r.clock.t / 1000));
  t.same(sent.fact.mentioned, [2]);
  t.equal(sent.fact.read_by_sender, true);

  r.clock.t += 5000;
  const second = (await r.run(sendChannel(2, streamId, 'roadmap', 'sure', false))) as { id: number };
  t.equal(second.id, 2, 'the next message id');
  await r.run(sendChannel(2, streamId, 'Other', 'elsewhere', false));

  const ch = r.runtime.channel(ORG, streamId)!;
  t.same(ch.ids, [1, 2, 3]);
  t.same([...ch.messages.keys()], [1, 2, 3]);
  t.same(ch.topics.get('roadmap'), { name: 'Roadmap', max_id: 2 }, 'topics match case-insensitively and keep their first spelling');
  t.same(ch.topics.get('other'), { name: 'Other', max_id: 3 });
  t.equal(r.runtime.server().maxMessageId, 3);
  t.equal(r.runtime.org(ORG)!.messageChannel.get(2), streamId);

  const ownerCtx = r.runtime.user(ORG, 1)!;
  const beaCtx = r.runtime.user(ORG, 2)!;
  t.same([...ownerCtx.unread].sort(), [2, 3], 'the sender read their own message');
  t.same([...beaCtx.unread].sort(), [1, 2, 3], 'read_by_sender=false leaves it unread for its sender');
  t.same([...beaCtx.flags.mentioned], [1]);
  t.same([...ownerCtx.flags.mentioned], []);
  t.same(r.runtime.user(ORG, 3)!.unread.size, 0, 'a non-subscriber gets nothing');

  const events = notify(r.runtime, sent);
  const messages = (user: number) => eventsFor(events, user).filter((e) => e.type === 'message');
  t.same(messages(1).map((e) => [e.type, e.message.id, e.flags]), [['message', 1, ['read']]]);
  t.same(messages(2).map((e) => [e.type, e.message.id, e.flags]), [['message', 1, ['mentioned']]]);
  t.same(eventsFor(events, 1).filter((e) => e.type === 'stream').map((e) => [e.property, e.value]), [['first_message_id', 1]], 'the channel\'s first message is announced');
  t.same(eventsFor(events, 3).filter((e) => e.type === 'message'), [], 'a non-subscriber gets no message');
});

t.test('SEND_DIRECT: participants, recipients and unread state', async (t) => {
  const r = await populated();
  const before = r.records.length;
  const value = (await r.run(sendDirect(2, [1], 'psst', true))) as { id: number };
  const [sent] = r.since(before);
  if (sent.fact.type !== 'MessageSent') return t.fail('expected MessageSent');
  t.equal(value.id, 1);
  t.same(sent.fact.message.dm_user_ids, [1, 2]);
  t.equal(sent.fact.message.stream_id, null);
  const org = r.runtime.org(ORG)!;
  t.equal(sent.fact.message.recipient_id, org.users.get(1)!.recipient_id, 'a 1:1 message goes to the other user\'s recipient');
  t.same(org.directIdsByUser.get(1), [1]);
  t.same(org.directIdsByUser.get(2), [1]);
  t.notOk(org.directIdsByUser.has(3));
  t.ok(r.runtime.user(ORG, 1)!.unread.has(1));
  t.notOk(r.runtime.user(ORG, 2)!.unread.has(1));
  const events = notify(r.runtime, sent);
  t.same(eventsFor(events, 1).map((e) => e.flags), [[]]);
  t.same(eventsFor(events, 2).map((e) => e.flags), [['read']]);
  t.same(eventsFor(events, 3), []);

  await r.run(sendDirect(1, [2, 3], 'group one'));
  await r.run(sendDirect(3, [1, 2], 'group two'));
  const [g1, g2] = [org.directMessages.get(2)!, org.directMessages.get(3)!];
  t.same(g1.dm_user_ids, [1, 2, 3]);
  t.equal(g1.recipient_id, g2.recipient_id, 'a group conversation keeps its recipient');
  const recipients = [...org.users.values()].map((u) => u.recipient_id);
  t.notOk(recipients.includes(g1.recipient_id), 'and it is nobody\'s personal recipient');

  let error: unknown;
  await r.run(sendDirect(1, [99], 'nobody')).catch((e) => (error = e));
  t.equal(codeOf(error), 'BAD_REQUEST');
});

t.test('UPDATE_FLAGS records only real changes', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2]));
  const streamId = r.runtime.org(ORG)!.channelsByName.get('design')!;
  await r.run(sendChannel(1, streamId, 't', 'one'));
  await r.run(sendChannel(1, streamId, 't', 'two'));
  await r.run(sendChannel(2, streamId, 't', 'three', false));

  let before = r.records.length;
  const value = (await r.run(updateFlags(2, 'add', 'read', [1, 2]))) as { messages: number[] };
  const [flagged] = r.since(before);
  t.same(flagged.fact, { type: 'FlagsUpdated', org: ORG, user_id: 2, op: 'add', flag: 'read', messages: [1, 2] });
  t.same(value.messages, [1, 2]);
  t.same([...r.runtime.user(ORG, 2)!.unread], [3]);
  t.same(eventsFor(notify(r.runtime, flagged), 2), [{ type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [1, 2], all: false }]);
  t.same(eventsFor(notify(r.runtime, flagged), 1), [], 'only the user themself hears of it');

  before = r.records.length;
  const seq = r.runtime.lastSeq;
  const unchanged = (await r.run(updateFlags(2, 'add', 'read', [1, 2]))) as { messages: number[] };
  t.equal(r.records.length, before, 'an unchanged flag yields no fact');
  t.equal(r.runtime.lastSeq, seq);
  t.same(unchanged.messages, []);

  const partial = (await r.run(updateFlags(2, 'add', 'read', [1, 2, 3]))) as { messages: number[] };
  t.same(partial.messages, [3], 'only what changed');
  const [last] = r.since(before);
  t.same(last.fact.type === 'FlagsUpdated' && last.fact.messages, [3]);

  await r.run(updateFlags(2, 'add', 'starred', [2]));
  t.same([...r.runtime.user(ORG, 2)!.flags.starred], [2]);
  before = r.records.length;
  await r.run(updateFlags(2, 'remove', 'starred', [1]));
  t.equal(r.records.length, before, 'removing an absent flag is no change either');
  await r.run(updateFlags(2, 'remove', 'starred', [2]));
  t.same([...r.runtime.user(ORG, 2)!.flags.starred], []);

  let error: unknown;
  await r.run(updateFlags(2, 'add', 'mentioned', [1])).catch((e) => (error = e));
  t.equal(codeOf(error), 'BAD_REQUEST', 'mentioned is not a flag a client sets');
});

t.test('UNSUBSCRIBE produces SubscriptionsRemoved and its events', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2, 3]));
  const streamId = r.runtime.org(ORG)!.channelsByName.get('design')!;
  const before = r.records.length;
  const value = (await r.run(unsubscribe(2, ['design']))) as { removed: string[] };
  t.same(value.removed, ['design']);
  const [left] = r.since(before);
  t.same(left.fact, { type: 'SubscriptionsRemoved', org: ORG, removals: [{ stream_id: streamId, user_ids: [2] }], acting_user_id: 2 });
  t.same([...r.runtime.channel(ORG, streamId)!.subscribers].sort(), [1, 3]);
  t.notOk(r.runtime.user(ORG, 2)!.subs.has(streamId));
  const events = notify(r.runtime, left);
  t.same(eventsFor(events, 2), [{ type: 'subscription', op: 'remove', subscriptions: [{ name: 'design', stream_id: streamId }] }]);
  t.same(eventsFor(events, 1), [{ type: 'subscription', op: 'peer_remove', stream_ids: [streamId], user_ids: [2] }]);

  await r.run(sendChannel(1, streamId, 't', 'after bea left'));
  t.equal(r.runtime.user(ORG, 2)!.unread.size, 0, 'a former subscriber gets no new messages');
});

t.test('replaying the recorded facts converges to identical state', async (t) => {
  const r = await populated();
  await r.run(createUser(1, 'guest@acme.test', 'Gus', Role.GUEST));
  await r.run(subscribe(1, ['design', 'random'], [1, 2]));
  await r.run(subscribe(3, ['random']));
  await r.run(subscribe(1, ['secret'], [1, 3], true));
  const design = r.runtime.org(ORG)!.channelsByName.get('design')!;
  const random = r.runtime.org(ORG)!.channelsByName.get('random')!;
  const secret = r.runtime.org(ORG)!.channelsByName.get('secret')!;
  await r.run(sendChannel(1, design, 'Roadmap', 'hello @**Bea** and @**Cy**'));
  r.clock.t += 60_000;
  await r.run(sendChannel(2, design, 'roadmap', 'ping @**all**', false));
  await r.run(sendChannel(3, random, 'Coffee', 'anyone? @**topic**'));
  await r.run(sendChannel(3, secret, 'plans', 'shh'));
  await r.run(sendDirect(2, [1], 'hi owner'));
  await r.run(sendDirect(1, [2, 3], 'group'));
  await r.run(sendDirect(3, [3], 'note to self'));
  await r.run(updateFlags(2, 'add', 'read', [1, 2, 3]));
  await r.run(updateFlags(1, 'add', 'starred', [2, 5]));
  await r.run(updateFlags(1, 'remove', 'starred', [2]));
  await r.run(updateFlags(3, 'add', 'collapsed', [4]));
  await r.run(unsubscribe(1, ['random'], [2]));
  await r.run(sendChannel(1, random, 'Coffee', 'after bea left'));

  assertIncreasingSeqs(t, r.records);
  t.equal(r.records[r.records.length - 1].seq, r.runtime.lastSeq, 'every decided fact was logged');
  t.same(r.records.map((s) => s.seq), r.records.map((_, i) => i + 1), 'and none was skipped');

  const replica = freshRuntime();
  for (const s of structuredClone(r.records)) replica.replay(s);
  t.strictSame(stateOf(replica, ORG), stateOf(r.runtime, ORG), 'replayed state equals live state');
  t.same(replica.channelIdsOf(ORG).sort(), r.runtime.channelIdsOf(ORG).sort());

  // Both continue the same way: same next message id and seq.
  const liveNext = (await r.run(sendChannel(1, design, 'next', 'after replay'))) as { id: number };
  const replicaNext = (await replica.execute(sendChannel(1, design, 'next', 'after replay'))) as { id: number };
  t.equal(replicaNext.id, liveNext.id, 'the message id counter is recovered');
  t.equal(replica.lastSeq, r.runtime.lastSeq, 'the seq counter is recovered');
  t.same(replica.channel(ORG, design)!.topics.get('next'), r.runtime.channel(ORG, design)!.topics.get('next'));

  const newUser = (await replica.execute(createUser(1, 'dee@acme.test', 'Dee'))) as unknown as { user_id: number };
  const liveUser = (await r.run(createUser(1, 'dee@acme.test', 'Dee'))) as { user_id: number };
  t.equal(newUser.user_id, liveUser.user_id, 'the user id counter is recovered');
});

t.test('replaying a prefix of the log gives the state at that point', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2]));
  const streamId = r.runtime.org(ORG)!.channelsByName.get('design')!;
  await r.run(sendChannel(1, streamId, 'a', 'one'));
  const mid = structuredClone(stateOf(r.runtime, ORG));
  const cut = r.records.length;
  await r.run(sendChannel(2, streamId, 'b', 'two'));
  await r.run(updateFlags(1, 'add', 'read', [2]));

  const replica = freshRuntime();
  for (const s of structuredClone(r.records.slice(0, cut))) replica.replay(s);
  t.strictSame(stateOf(replica, ORG), mid);
});
