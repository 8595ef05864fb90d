/**
 * `GET /messages/matches_narrow` (Zulip's `messages_in_narrow_backend`): which of some
 * messages the caller holds and that match a narrow, with search highlighting.
 */
import t from 'tap';
import { chatFixture, type ChatFixture, type Credentials } from './helpers.js';
import { createOrganization } from '../src/bootstrap.js';

const matches = (f: ChatFixture, who: Credentials, msgIds: number[], narrow: unknown) =>
  f.call(who, 'GET', '/api/v1/messages/matches_narrow', { msg_ids: JSON.stringify(msgIds), narrow: JSON.stringify(narrow) });

t.test('matches_narrow: matching messages keyed by id, highlighted for a search', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  const send = async (who: Credentials, topic: string, content: string) => (await f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic, content })).json.id as number;
  const a = await send(alice, 'lunch <plans>', 'pizza **today**');
  const b = await send(bob, 'lunch <plans>', 'salad today');
  const c = await send(bob, 'other', 'nothing here');
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: [bob.user_id], content: 'pizza secret' })).json.id as number;

  let r = await matches(f, bob, [a, b, c, dm], [{ operator: 'search', operand: 'pizza' }]);
  t.equal(r.status, 200, r.body);
  t.same(r.json, {
    result: 'success', msg: '',
    messages: {
      [a]: { match_content: '<p><span class="highlight">pizza</span> <strong>today</strong></p>', match_subject: 'lunch &lt;plans&gt;' },
      [dm]: { match_content: '<p><span class="highlight">pizza</span> secret</p>', match_subject: '' },
    },
  });
  r = await matches(f, bob, [a, b, c], [{ operator: 'topic', operand: 'lunch <plans>' }]);
  t.same(r.json.messages, {
    [a]: { match_content: '<p>pizza <strong>today</strong></p>', match_subject: 'lunch &lt;plans&gt;' },
    [b]: { match_content: '<p>salad today</p>', match_subject: 'lunch &lt;plans&gt;' },
  }, 'without a search: the rendered content and the escaped topic');
  r = await matches(f, bob, [a, b, c], [{ operator: 'sender', operand: bob.user_id }, { operator: 'search', operand: 'today' }]);
  t.same(Object.keys(r.json.messages), [String(b)], 'every term must match');
  t.same((await matches(f, bob, [a, b, c], [{ operator: 'is', operand: 'dm' }])).json.messages, {}, 'nothing matches: an empty object');
  t.same(Object.keys((await matches(f, bob, [a, c, dm], [])).json.messages), [a, c, dm].map(String), 'an empty narrow matches everything held');

  // Only messages the caller holds: not another's direct message, not history from before they joined.
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.subscribe(f.owner, 'general', [carol.user_id]);
  t.same((await matches(f, carol, [a, b, dm, 99999], [])).json.messages, {}, 'history they never received, others\' DMs and missing ids are left out');
  const d = await send(alice, 'lunch <plans>', 'pizza again');
  t.same(Object.keys((await matches(f, carol, [a, d], [{ operator: 'search', operand: 'pizza' }])).json.messages), [String(d)]);

  // Errors: the narrow as GET /messages checks it; both parameters required.
  r = await matches(f, bob, [a], [{ operator: 'channel', operand: 'nowhere' }]);
  t.same([r.status, r.json.code], [400, 'BAD_NARROW']);
  r = await matches(f, bob, [a], [{ operator: 'sender', operand: 99999 }]);
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_NARROW', 'Invalid narrow operator: unknown user 99999']);
  r = await f.call(bob, 'GET', '/api/v1/messages/matches_narrow', { narrow: '[]' });
  t.same([r.status, r.json.msg], [400, "Missing 'msg_ids' argument"]);
  r = await f.call(bob, 'GET', '/api/v1/messages/matches_narrow', { msg_ids: `[${a}]` });
  t.same([r.status, r.json.msg], [400, "Missing 'narrow' argument"]);
  r = await f.call(bob, 'GET', '/api/v1/messages/matches_narrow', { msg_ids: '["x"]', narrow: '[]' });
  t.equal(r.status, 400);
});

t.test('matches_narrow: ids from another organization are no messages here', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  const host = { headers: { host: 'other.localhost' } };
  await f.call(boss, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'there' }] }, host);
  const foreign = (await f.call(boss, 'POST', '/api/v1/messages', { type: 'stream', to: 'there', topic: 't', content: 'elsewhere' }, host)).json.id as number;
  const there = await f.call(boss, 'GET', '/api/v1/messages/matches_narrow', { msg_ids: `[${foreign}]`, narrow: '[]' }, host);
  t.same(Object.keys(there.json.messages), [String(foreign)], 'its owner sees it there');
  const here = await matches(f, f.owner, [foreign], []);
  t.same(here.json, (await matches(f, f.owner, [99999], [])).json);
  t.same(here.json.messages, {});
});
