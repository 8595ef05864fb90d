/**
 * The rest of Zulip's narrow grammar (`NarrowBuilder`): `in:`, `is:followed`, `is:muted`,
 * `channels:`, `with:`, `group-pm-with`, the underscore spellings, and the combinations
 * Zulip refuses.
 */
import t from 'tap';
import { chatFixture, type ChatFixture, type Credentials } from './helpers.js';

const ids = async (f: ChatFixture, who: Credentials, narrow: unknown): Promise<number[]> => {
  const r = await f.call(who, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify(narrow) });
  if (r.status !== 200) throw new Error(r.body);
  return r.json.messages.map((m: any) => m.id);
};

t.test('in:, is:followed, is:muted, channels:, with:, group-pm-with', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const cy = await f.createUser('cy@example.com', 'Cy');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  await f.subscribe(f.owner, 'quiet', [f.owner.user_id, bob.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), invite_only: 'true' });
  const send = async (to: string, topic: string) => (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to, topic, content: 'x' })).json.id as number;
  const dm = async (to: number[]) => (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(to), content: 'x' })).json.id as number;
  const streamId = async (name: string) => (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: name })).json.stream_id as number;
  const g1 = await send('general', 'followed');
  const g2 = await send('general', 'muted');
  const g3 = await send('general', 'plain');
  const q1 = await send('quiet', 'a');
  const q2 = await send('quiet', 'unmuted');
  const s1 = await send('secret', 's');
  const d1 = await dm([bob.user_id]);
  const d2 = await dm([bob.user_id, cy.user_id]);
  const general = await streamId('general');
  const quiet = await streamId('quiet');
  const policy = (stream_id: number, topic: string, visibility_policy: number) => f.call(bob, 'POST', '/api/v1/user_topics', { stream_id, topic, visibility_policy });
  await policy(general, 'followed', 3);
  await policy(general, 'muted', 1);
  await policy(quiet, 'unmuted', 2);
  await f.call(bob, 'POST', '/api/v1/users/me/subscriptions/properties', { subscription_data: JSON.stringify([{ stream_id: quiet, property: 'is_muted', value: true }]) });

  t.same(await ids(f, bob, [{ operator: 'is', operand: 'followed' }]), [g1]);
  t.same(await ids(f, bob, [{ operator: 'is', operand: 'muted' }]), [g2, q1], 'muted topics, and a muted channel\'s topics not unmuted');
  t.same(await ids(f, bob, [{ operator: 'is', operand: 'muted', negated: true }]), [g1, g3, q2, d1, d2]);
  t.same(await ids(f, bob, [{ operator: 'in', operand: 'home' }]), [g1, g3, q2, d1, d2]);
  t.same(await ids(f, bob, [{ operator: 'in', operand: 'home' }, { operator: 'channel', operand: 'quiet' }]), [q1, q2], 'a narrow to a muted channel shows it');
  t.same(await ids(f, bob, [{ operator: 'in', operand: 'all' }]), [g1, g2, g3, q1, q2, d1, d2]);
  t.same(await ids(f, f.owner, [{ operator: 'channels', operand: 'public' }]), [g1, g2, g3, q1, q2], 'public channels, not the private one');
  t.same(await ids(f, cy, [{ operator: 'channels', operand: 'public' }]), [g1, g2, g3, q1, q2], 'their whole history, to a non-subscriber');
  t.same(await ids(f, f.owner, [{ operator: 'channels', operand: 'web-public' }]), [], 'web-public channels are off');
  t.same(await ids(f, f.owner, [{ operator: 'group-pm-with', operand: bob.user_id }]), [d2], 'group conversations only');
  t.same(await ids(f, f.owner, [{ operator: 'pm_with', operand: 'bob@example.com' }]), [d1], 'the underscore spelling (an email string, as Zulip takes it)');
  t.same(await ids(f, f.owner, [{ operator: 'dm', operand: [] }]), [], 'an empty list names no conversation');
  t.same(await ids(f, f.owner, [{ operator: 'dm-including', operand: f.owner.user_id }]), [d1, d2]);

  // with: the message's conversation now, whatever the narrow said.
  t.same(await ids(f, bob, [{ operator: 'channel', operand: 'quiet' }, { operator: 'topic', operand: 'a' }, { operator: 'with', operand: g3 }]), [g3]);
  t.same(await ids(f, bob, [{ operator: 'with', operand: String(d2) }]), [d2]);
  await f.call(f.owner, 'PATCH', `/api/v1/messages/${g3}`, { topic: 'moved', propagate_mode: 'change_one', send_notification_to_new_thread: 'false' });
  const g4 = await send('general', 'moved');
  t.same(await ids(f, bob, [{ operator: 'with', operand: g3 }]), [g3, g4], 'after a move: the new topic');
  t.same(await ids(f, bob, [{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: 'plain' }, { operator: 'with', operand: s1 }]), [], 'an unreadable message with a conversation narrow: the narrow as it is');
  let r = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, narrow: JSON.stringify([{ operator: 'with', operand: s1 }]) });
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_NARROW', "Invalid narrow operator: Invalid 'with' operator"]);
  r = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, narrow: JSON.stringify([{ operator: 'with', operand: g1 }, { operator: 'with', operand: g2 }]) });
  t.same([r.status, r.json.msg], [400, "Invalid narrow operator combination: Duplicate 'with' operators."]);

  // A string operand names a channel, even one whose name is digits.
  await f.subscribe(f.owner, '2024', [f.owner.user_id]);
  const year = await streamId('2024');
  const y = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: year, topic: 'year', content: 'x' })).json.id as number;
  t.same(await ids(f, f.owner, [{ operator: 'channel', operand: '2024' }]), [y], 'the channel named 2024, not the channel with id 2024');
  t.same(await ids(f, f.owner, [{ operator: 'channel', operand: String(general) }]), [g1, g2, g3, g4], 'digits naming no channel: an id');

  // What Zulip refuses.
  const refused: Array<[unknown, string]> = [
    [[{ operator: 'channel', operand: 'general' }, { operator: 'dm', operand: [bob.user_id] }], 'Invalid narrow operator: No message can be both a channel message and direct message'],
    [[{ operator: 'topic', operand: 'x' }, { operator: 'is', operand: 'dm' }], 'Invalid narrow operator: No message can be both a channel message and direct message'],
    [[{ operator: 'in', operand: 'elsewhere' }], "Invalid narrow operator: unknown 'in' operand elsewhere"],
    [[{ operator: 'channels', operand: 'all' }], 'Invalid narrow operator: unknown channels operand all'],
  ];
  for (const [narrow, msg] of refused) {
    r = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, narrow: JSON.stringify(narrow) });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_NARROW', msg], JSON.stringify(narrow));
  }
  t.same(await ids(f, bob, [{ operator: 'channel', operand: 'general' }, { operator: 'is', operand: 'dm', negated: true }]), [g1, g2, g3, g4], 'a negated term is no conflict');
});
