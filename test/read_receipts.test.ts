/**
 * `GET /messages/{message_id}/read_receipts` (Zulip's `read_receipts` view), the
 * `enable_read_receipts` organization setting behind it (`PATCH /realm`, register,
 * `realm` events, restart), and each user's `send_read_receipts`.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { Role } from '../actors/shared/types.js';
import { type Store } from '../src/store.js';
import { createOrganization } from '../src/bootstrap.js';

const receipts = (f: ChatFixture, who: Credentials, id: number) => f.call(who, 'GET', `/api/v1/messages/${id}/read_receipts`);
const markRead = (f: ChatFixture, who: Credentials, id: number) => f.call(who, 'POST', '/api/v1/messages/flags', { messages: [id], op: 'add', flag: 'read' });

t.test('read receipts: who read a message, by Zulip\'s rules', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  const dave = await f.createUser('dave@example.com', 'Dave');
  const erin = await f.createUser('erin@example.com', 'Erin');
  const outsider = await f.createUser('outsider@example.com', 'Outsider');
  const everyone = [f.owner, alice, bob, carol, dave, erin].map((u) => u.user_id);
  await f.subscribe(f.owner, 'general', everyone);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'secret' }], invite_only: true, principals: [f.owner.user_id, alice.user_id] });
  const id = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'read me' })).json.id as number;

  // Off by default, as Parley has always reported it; access is checked first.
  let r = await receipts(f, bob, id);
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Read receipts are disabled in this organization.']);
  r = await receipts(f, bob, 99999);
  t.same([r.status, r.json.msg], [400, 'Invalid message(s)'], 'a missing message is invalid before the setting is looked at');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { enable_read_receipts: true })).status, 200);

  t.same((await receipts(f, bob, id)).json, { result: 'success', msg: '', user_ids: [] }, 'nobody has read it yet');
  for (const u of [f.owner, bob, carol, dave, erin]) await markRead(f, u, id);
  t.same((await receipts(f, bob, id)).json.user_ids, [f.owner.user_id, bob.user_id, carol.user_id, dave.user_id, erin.user_id], 'the readers, the caller included, never the sender');
  // Carol stops sharing; Dave mutes the caller; the caller muted Erin; Bob marks it unread again.
  await f.call(carol, 'PATCH', '/api/v1/settings', { send_read_receipts: false });
  await f.call(dave, 'POST', `/api/v1/users/me/muted_users/${bob.user_id}`);
  await f.call(bob, 'POST', `/api/v1/users/me/muted_users/${erin.user_id}`);
  t.same((await receipts(f, bob, id)).json.user_ids, [f.owner.user_id, bob.user_id], 'no one sharing off, muting the caller, or muted by the caller');
  t.same((await receipts(f, alice, id)).json.user_ids, [f.owner.user_id, bob.user_id, dave.user_id, erin.user_id], 'another viewer sees Dave and Erin: only Bob is muted by or muting them');
  await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: [id], op: 'remove', flag: 'read' });
  t.same((await receipts(f, alice, id)).json.user_ids, [f.owner.user_id, dave.user_id, erin.user_id], 'marked unread: no longer read');
  // A deactivated user is left out.
  await f.call(f.owner, 'DELETE', `/api/v1/users/${erin.user_id}`);
  t.same((await receipts(f, alice, id)).json.user_ids, [f.owner.user_id, dave.user_id], 'deactivated users are left out');
  // Someone who never received the message (subscribed later) is no reader.
  await f.subscribe(f.owner, 'general', [outsider.user_id]);
  t.same((await receipts(f, outsider, id)).json.user_ids, [f.owner.user_id, dave.user_id], 'a later subscriber may ask, and is not counted');

  // Private channels and direct messages: only those with access may ask.
  const secret = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'secret', topic: 't', content: 'hush' })).json.id as number;
  t.same((await receipts(f, bob, secret)).json.msg, 'Invalid message(s)');
  t.same((await receipts(f, f.owner, secret)).json.user_ids, [], 'a subscriber may');
  const dm = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: [bob.user_id], content: 'psst' })).json.id as number;
  t.same((await receipts(f, carol, dm)).json.msg, 'Invalid message(s)');
  await markRead(f, bob, dm);
  t.same((await receipts(f, alice, dm)).json.user_ids, [bob.user_id]);
});

t.test('read receipts: an id from another organization is no message here', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { enable_read_receipts: true });
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  const host = { headers: { host: 'other.localhost' } };
  await f.call(boss, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'there' }] }, host);
  const foreign = (await f.call(boss, 'POST', '/api/v1/messages', { type: 'stream', to: 'there', topic: 't', content: 'elsewhere' }, host)).json.id as number;
  t.ok(foreign > 0);
  const here = await receipts(f, f.owner, foreign);
  const missing = await receipts(f, f.owner, 99999);
  t.same([here.status, here.json], [missing.status, missing.json]);
  t.equal(here.status, 400);
});

t.test('enable_read_receipts: administrators only, realm events converge, and it survives a restart', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const member = await f.createUser('m@example.com', 'M');
  const moderator = await withRole(f, 'mod@example.com', Role.MODERATOR);
  for (const who of [member, moderator]) {
    const r = await f.call(who, 'PATCH', '/api/v1/realm', { enable_read_receipts: true });
    t.same([r.status, r.json.code], [400, 'UNAUTHORIZED_PRINCIPAL']);
  }
  t.same((await f.call(f.owner, 'PATCH', '/api/v1/realm', { enable_read_receipts: 'yes' })).json.msg, 'enable_read_receipts is not a boolean');
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm'], fetch_event_types: ['realm'] })).json;
  t.equal(reg.realm_enable_read_receipts, false);
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { enable_read_receipts: true });
  const events = await queueEvents(f, f.owner, reg.queue_id, 'realm');
  t.same(events, [{ type: 'realm', op: 'update', property: 'enable_read_receipts', value: true }]);
  for (const e of events) reg['realm_' + e.property] = e.value;
  const fresh = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] })).json;
  t.equal(fresh.realm_enable_read_receipts, true);
  t.equal(reg.realm_enable_read_receipts, fresh.realm_enable_read_receipts);

  const dir = mkdtempSync(join(tmpdir(), 'parley-receipts-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const receipts = async () => (await storeClient(store, owner)('POST', '/api/v1/register', { fetch_event_types: ['realm'] })).realm_enable_read_receipts;
  t.equal(await receipts(), false, 'off before');
  await store.runtime.execute({ type: 'UPDATE_REALM', org, actor_id: 1, settings: { enable_read_receipts: true } });
  await store.close();
  store = open();
  t.equal(await receipts(), true, 'replayed from the log');
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await receipts(), true, 'and from a snapshot');
  await store.close();
});
