/**
 * Actor-level tests: commands go to a `Runtime` whose sink records every stamped fact;
 * each test asserts the facts decided, the events they cause, and the state they leave,
 * read through the API over that runtime (actor_rig.ts). Replaying the recorded facts is
 * actor_replay.test.ts.
 */
import t from 'tap';
import { notify } from '../actors/areas/index.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { Role, type OrgRecord, type UserRecord } from '../actors/shared/types.js';
import { SYSTEM_GROUPS } from '../actors/rules/group_settings.js';
import { api, assertIncreasingSeqs, codeOf, createOrg, createUser, eventsFor, messageIds, ORG, populated, rig, sendChannel, sendDirect, subscribe, unsubscribe, updateFlags, type Rig } from './actor_rig.js';

/** A user's personal recipient, as the fact that made them recorded it. */
function recipientOf(r: Rig, userId: number): number {
  for (const { fact } of r.records) {
    if (fact.type === 'OrgCreated' && fact.owner.user_id === userId) return fact.owner.recipient_id;
    if (fact.type === 'UserCreated' && fact.user.user_id === userId) return fact.user.recipient_id;
  }
  throw new Error(`no user ${userId}`);
}

const isSubscribed = async (r: Rig, userId: number, streamId: number): Promise<boolean> => (await api(r, 1)('GET', `/api/v1/users/${userId}/subscriptions/${streamId}`)).is_subscribed;
const subscribers = async (r: Rig, streamId: number): Promise<number[]> => ((await api(r, 1)('GET', `/api/v1/streams/${streamId}/members`)).subscribers as number[]).slice().sort();
const unread = (r: Rig, userId: number) => messageIds(r, userId, [{ operator: 'is', operand: 'unread' }]);

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

  t.equal((await api(r, 1)('GET', '/api/v1/server_settings')).realm_name, 'Acme', 'the subdomain acme is the new organization');
  t.equal((await api(r, 1)('GET', '/api/v1/users/1')).user.email, 'owner@acme.test');
  t.same((await api(r, 1)('GET', '/api/v1/users/me/subscriptions')).subscriptions, [], 'the owner has a user actor, with no subscriptions yet');
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
  t.not(created.fact.user.recipient_id, recipientOf(r, 1), 'each user has their own recipient');
  t.same((await api(r, 2)('GET', '/api/v1/users/me/subscriptions')).subscriptions, [], 'a user actor exists for the new user');
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
  t.same(((await api(r, 1)('GET', '/api/v1/users')).members as Array<{ user_id: number; is_bot: boolean }>).filter((u) => !u.is_bot).map((u) => u.user_id), [1, 2]);

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

  t.equal((await api(r, 1)('GET', `/api/v1/streams/${streamId}`)).stream.name, 'design');
  t.same(await subscribers(r, streamId), [1, 2]);
  t.equal((await api(r, 1)('GET', '/api/v1/get_stream_id', { stream: 'design' })).stream_id, streamId);
  t.ok(await isSubscribed(r, 2, streamId));
  t.notOk(await isSubscribed(r, 3, streamId));

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
  const streamId = channelIdByName(r.runtime, ORG, 'design');

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

  t.same(await messageIds(r, 1, [{ operator: 'channel', operand: streamId }]), [1, 2, 3]);
  t.same(await messageIds(r, 2, [{ operator: 'channel', operand: streamId }]), [1, 2, 3], 'and a subscriber receives them all');
  const topics = (await api(r, 1)('GET', `/api/v1/users/me/${streamId}/topics`)).topics as Array<{ name: string; max_id: number }>;
  const topic = (name: string) => topics.filter((e) => e.name.toLowerCase() === name);
  t.same(topic('roadmap'), [{ name: 'roadmap', max_id: 2 }], 'topics match case-insensitively: one topic, spelled as its newest message spells it (as Zulip lists them)');
  t.same(topic('other'), [{ name: 'Other', max_id: 3 }]);
  t.same(await messageIds(r, 1, []), [1, 2, 3], 'three messages, the newest 3');
  t.equal((await api(r, 1)('GET', '/api/v1/messages/2')).message.stream_id, streamId);

  t.same(await unread(r, 1), [2, 3], 'the sender read their own message');
  t.same(await unread(r, 2), [1, 2, 3], 'read_by_sender=false leaves it unread for its sender');
  t.same(await messageIds(r, 2, [{ operator: 'is', operand: 'mentioned' }]), [1]);
  t.same(await messageIds(r, 1, [{ operator: 'is', operand: 'mentioned' }]), []);
  t.same((await unread(r, 3)).length, 0, 'a non-subscriber gets nothing');

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
  t.equal(sent.fact.message.recipient_id, recipientOf(r, 1), 'a 1:1 message goes to the other user\'s recipient');
  const direct = [{ operator: 'is', operand: 'dm' }];
  t.same(await messageIds(r, 1, direct), [1]);
  t.same(await messageIds(r, 2, direct), [1]);
  t.same(await messageIds(r, 3, direct), []);
  t.ok((await unread(r, 1)).includes(1));
  t.notOk((await unread(r, 2)).includes(1));
  const events = notify(r.runtime, sent);
  t.same(eventsFor(events, 1).map((e) => e.flags), [[]]);
  t.same(eventsFor(events, 2).map((e) => e.flags), [['read']]);
  t.same(eventsFor(events, 3), []);

  const groups = r.records.length;
  await r.run(sendDirect(1, [2, 3], 'group one'));
  await r.run(sendDirect(3, [1, 2], 'group two'));
  const [g1, g2] = r.since(groups).flatMap(({ fact }) => (fact.type === 'MessageSent' ? [fact.message] : []));
  t.same(g1.dm_user_ids, [1, 2, 3]);
  t.equal(g1.recipient_id, g2.recipient_id, 'a group conversation keeps its recipient');
  const recipients = [1, 2, 3].map((id) => recipientOf(r, id));
  t.notOk(recipients.includes(g1.recipient_id), 'and it is nobody\'s personal recipient');

  let error: unknown;
  await r.run(sendDirect(1, [99], 'nobody')).catch((e) => (error = e));
  t.equal(codeOf(error), 'BAD_REQUEST');
});

t.test('UPDATE_FLAGS records only real changes', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2]));
  const streamId = channelIdByName(r.runtime, ORG, 'design');
  await r.run(sendChannel(1, streamId, 't', 'one'));
  await r.run(sendChannel(1, streamId, 't', 'two'));
  await r.run(sendChannel(2, streamId, 't', 'three', false));

  let before = r.records.length;
  const value = (await r.run(updateFlags(2, 'add', 'read', [1, 2]))) as { messages: number[] };
  const [flagged] = r.since(before);
  t.same(flagged.fact, { type: 'FlagsUpdated', org: ORG, user_id: 2, op: 'add', flag: 'read', messages: [1, 2] });
  t.same(value.messages, [1, 2]);
  t.same(await unread(r, 2), [3]);
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
  t.same(await messageIds(r, 2, [{ operator: 'is', operand: 'starred' }]), [2]);
  before = r.records.length;
  await r.run(updateFlags(2, 'remove', 'starred', [1]));
  t.equal(r.records.length, before, 'removing an absent flag is no change either');
  await r.run(updateFlags(2, 'remove', 'starred', [2]));
  t.same(await messageIds(r, 2, [{ operator: 'is', operand: 'starred' }]), []);

  let error: unknown;
  await r.run(updateFlags(2, 'add', 'mentioned', [1])).catch((e) => (error = e));
  t.equal(codeOf(error), 'BAD_REQUEST', 'mentioned is not a flag a client sets');
});

t.test('UNSUBSCRIBE produces SubscriptionsRemoved and its events', async (t) => {
  const r = await populated();
  await r.run(subscribe(1, ['design'], [1, 2, 3]));
  const streamId = channelIdByName(r.runtime, ORG, 'design');
  const before = r.records.length;
  const value = (await r.run(unsubscribe(2, ['design']))) as { removed: string[] };
  t.same(value.removed, ['design']);
  const [left] = r.since(before);
  t.same(left.fact, { type: 'SubscriptionsRemoved', org: ORG, removals: [{ stream_id: streamId, user_ids: [2] }], acting_user_id: 2 });
  t.same(await subscribers(r, streamId), [1, 3]);
  t.notOk(await isSubscribed(r, 2, streamId));
  const events = notify(r.runtime, left);
  t.same(eventsFor(events, 2), [{ type: 'subscription', op: 'remove', subscriptions: [{ name: 'design', stream_id: streamId }] }]);
  t.same(eventsFor(events, 1), [{ type: 'subscription', op: 'peer_remove', stream_ids: [streamId], user_ids: [2] }]);

  await r.run(sendChannel(1, streamId, 't', 'after bea left'));
  t.equal((await unread(r, 2)).length, 0, 'a former subscriber gets no new messages');
});
