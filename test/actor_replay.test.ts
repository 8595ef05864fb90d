/**
 * Replay of the recorded facts, a persistence test of every actor kind: a runtime that
 * replays the log (or a prefix of it) holds the very contexts the live one does, each
 * actor's seq included, and both carry on the same way. It reads contexts by design
 * (test_rules.test.ts lists it).
 */
import t from 'tap';
import { Role } from '../actors/shared/types.js';
import type { Runtime } from '../actors/runtime/runtime.js';
import { assertIncreasingSeqs, createUser, freshRuntime, ORG, populated, sendChannel, sendDirect, subscribe, unsubscribe, updateFlags } from './actor_rig.js';

/** Every piece of actor state of one organization, as plain sorted data. */
function stateOf(rt: Runtime, org: number): unknown {
  const byKey = <K, V>(m: { entries(): Iterable<[K, V]> }) => [...m.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0]), 'en', { numeric: true }));
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
      return { seq: c.seq, channel: c.channel, subscribers: sorted(c.subscribers), topics: byKey(c.topics), ids: [...c.messages.ids], messages: byKey(c.messages) };
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

t.test("a channel actor's seq is its newest fact's", async (t) => {
  const r = await populated();
  const before = r.records.length;
  await r.run(subscribe(1, ['design'], [1, 2]));
  const [subscribed] = r.since(before);
  if (subscribed.fact.type !== 'SubscriptionsAdded') return t.fail('expected SubscriptionsAdded');
  const ch = r.runtime.channel(ORG, subscribed.fact.created[0].stream_id)!;
  t.equal(ch.seq, subscribed.seq, 'the channel actor reflects the newest fact');
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
