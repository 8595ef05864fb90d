/**
 * Emoji reactions: adding and removing, `reaction` events and their audience, the
 * reactions in message payloads, Zulip's errors, and durability.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { queueEvents, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { world } from './world.js';
import { applyEvent } from './client_model.js';

const path = (id: number) => `/api/v1/messages/${id}/reactions`;

const reactionEvents = (f: ChatFixture, who: Credentials, queueId: string): Promise<any[]> => queueEvents(f, who, queueId, 'reaction');

/** Carol is not in general; alice's message there, for reacting to. */
async function withMessage() {
  const w = await world({ users: { alice: 'Alice', bob: 'Bob', carol: 'Carol' }, channels: { general: ['owner', 'alice', 'bob'] } });
  const sent = (await w.f.call(w.alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hello' })).json.id as number;
  return { ...w, sent };
}

t.test('add and remove, events, payloads', async (t) => {
  const { f, alice, bob, carol, sent } = await withMessage();
  t.teardown(f.stop);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['reaction', 'message'] });
  const qCarol = (await f.call(carol, 'POST', '/api/v1/register', { event_types: ['reaction'] })).json.queue_id;
  const byName = await f.call(bob, 'POST', path(sent), { emoji_name: 'tada' });
  t.same([byName.status, byName.json.result], [200, 'success'], byName.body);
  const withCode = await f.call(alice, 'POST', path(sent), { emoji_name: 'heart', emoji_code: '2764', reaction_type: 'unicode_emoji' });
  t.equal(withCode.status, 200, withCode.body);
  const vote = await f.call(f.owner, 'POST', path(sent), { emoji_name: 'party_popper', emoji_code: '1f389', reaction_type: 'unicode_emoji' });
  t.equal(vote.status, 200, vote.body);
  const events = await reactionEvents(f, bob, reg.json.queue_id);
  t.same(events[0], { type: 'reaction', op: 'add', user_id: bob.user_id, user: { user_id: bob.user_id, email: 'bob@example.com', full_name: 'Bob' }, message_id: sent, emoji_name: 'tada', emoji_code: '1f389', reaction_type: 'unicode_emoji' });
  t.equal(events[2].emoji_name, 'tada', 'a second reaction with the same emoji takes the first one\'s name, as in Zulip');
  t.same(await reactionEvents(f, carol, qCarol), [], 'a non-subscriber of a channel is not told');
  const message = (await f.call(carol, 'GET', `/api/v1/messages/${sent}`)).json.message;
  t.same(message.reactions.map((r: any) => [r.emoji_name, r.emoji_code, r.user_id]), [['tada', '1f389', bob.user_id], ['heart', '2764', alice.user_id], ['tada', '1f389', f.owner.user_id]], 'the message shows them, to anyone who may read it');

  t.equal((await f.call(bob, 'DELETE', path(sent), { emoji_name: 'tada' })).status, 200);
  t.equal((await f.call(alice, 'DELETE', path(sent), { emoji_code: '2764' })).status, 200);
  const after = await reactionEvents(f, bob, reg.json.queue_id);
  t.same(after.slice(3).map((e) => [e.op, e.emoji_name, e.user_id]), [['remove', 'tada', bob.user_id], ['remove', 'heart', alice.user_id]]);
  t.same((await f.call(bob, 'GET', `/api/v1/messages/${sent}`)).json.message.reactions.map((r: any) => r.user_id), [f.owner.user_id]);

  // The client model's reaction: the cached message (without reactions when bob registered) converges with a fresh fetch.
  const cache = { messages: [{ id: sent, reactions: [] as any[] }] };
  for (const e of await reactionEvents(f, bob, reg.json.queue_id)) applyEvent(cache, e, bob.user_id);
  t.same(cache.messages[0].reactions, (await f.call(bob, 'GET', `/api/v1/messages/${sent}`)).json.message.reactions, 'convergence');
});

t.test('errors', async (t) => {
  const { f, alice, bob, carol, sent } = await withMessage();
  t.teardown(f.stop);
  await f.call(bob, 'POST', path(sent), { emoji_name: 'tada' });
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'psst' })).json.id as number;
  const cases: Array<[Credentials, string, number, Record<string, unknown>, string, string]> = [
    [bob, 'POST', sent, { emoji_name: 'tada' }, 'REACTION_ALREADY_EXISTS', 'Reaction already exists.'],
    [bob, 'DELETE', sent, { emoji_name: 'heart' }, 'REACTION_DOES_NOT_EXIST', "Reaction doesn't exist."],
    [bob, 'POST', sent, { emoji_name: 'no_such_emoji_here' }, 'BAD_REQUEST', "Emoji 'no_such_emoji_here' does not exist"],
    [bob, 'POST', sent, { emoji_name: 'x', emoji_code: 'zzzz', reaction_type: 'unicode_emoji' }, 'BAD_REQUEST', 'Invalid emoji code.'],
    [bob, 'POST', sent, { emoji_name: 'x', emoji_code: '1f389', reaction_type: 'sticker' }, 'BAD_REQUEST', 'Invalid emoji type.'],
    [bob, 'POST', sent, { emoji_name: 'x', emoji_code: '123', reaction_type: 'realm_emoji' }, 'BAD_REQUEST', 'Invalid custom emoji.'],
    [bob, 'DELETE', sent, {}, 'BAD_REQUEST', 'At least one of the following arguments must be present: emoji_name, emoji_code'],
    [carol, 'POST', dm, { emoji_name: 'tada' }, 'BAD_REQUEST', 'Invalid message(s)'],
    [bob, 'POST', 99999, { emoji_name: 'tada' }, 'BAD_REQUEST', 'Invalid message(s)'],
    [bob, 'POST', sent, {}, 'REQUEST_VARIABLE_MISSING', "Missing 'emoji_name' argument"],
  ];
  for (const [who, method, id, params, code, msg] of cases) {
    const r = await f.call(who, method, path(id), params);
    t.same([r.status, r.json.code, r.json.msg], [400, code, msg], `${method} ${JSON.stringify(params)}`);
  }
  t.equal((await f.call(bob, 'POST', path(dm), { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' })).status, 200, 'the one extra emoji, on a direct message');
  t.same((await f.call(alice, 'GET', `/api/v1/messages/${dm}`)).json.message.reactions.map((r: any) => r.emoji_name), ['zulip']);
});

t.test('reactions survive a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-reactions-'));
  const open = () => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const dm = (await store.runtime.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { user_ids: [1] }, content: 'note', client: 't', read_by_sender: false })).id;
  const react = (op: 'add' | 'remove', name: string, code: string) => store.runtime.execute({ type: 'REACT', org, op, message_id: dm, reaction: { emoji_name: name, emoji_code: code, reaction_type: 'unicode_emoji', user_id: 1 } });
  await react('add', 'tada', '1f389');
  await store.snapshot();
  await react('add', 'heart', '2764');
  await react('remove', 'tada', '1f389');
  await store.close();
  store = open();
  t.teardown(() => store.close());
  t.same((await storeClient(store, owner)('GET', `/api/v1/messages/${dm}`)).message.reactions.map((r: any) => r.emoji_name), ['heart']);
});
