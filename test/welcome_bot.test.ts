/**
 * The Welcome Bot's test message (`POST /realm/test_welcome_bot_custom_message`):
 * administrators only, Zulip's length limit and empty-text error, a real direct message
 * from the cross-realm Welcome Bot to the caller (unread, in their events and in
 * message history), and nobody else's; plus `dev_fetch_api_key`, refused as on a Zulip
 * production server.
 */
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, queueEvents, withRole, type Credentials, probeMessageId } from './helpers.js';

t.test('the test message: a direct message from the Welcome Bot to the caller', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const other = await withRole(f, 'other@example.com', 200);
  const reg = (await f.call(admin, 'POST', '/api/v1/register', { event_types: ['message'], fetch_event_types: ['message', 'realm_user'] })).json;
  const otherReg = (await f.call(other, 'POST', '/api/v1/register', { event_types: ['message'] })).json;
  const res = await f.call(admin, 'POST', '/api/v1/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'Welcome to **Acme**! Read #rules.' });
  t.equal(res.status, 200, res.body);
  t.same(Object.keys(res.json).sort(), ['message_id', 'msg', 'result']);
  const m = (await f.call(admin, 'GET', `/api/v1/messages/${res.json.message_id}`)).json.message;
  t.equal(m.sender_email, 'welcome-bot@zulip.com');
  t.equal(m.sender_full_name, 'Welcome Bot');
  t.equal(m.type, 'private');
  t.match(m.content, /Welcome to <strong>Acme<\/strong>!/);
  t.same(m.display_recipient.map((r: { email: string }) => r.email).sort(), ['admin@example.com', 'welcome-bot@zulip.com']);
  t.same(m.flags, [], 'unread for the caller');
  t.equal(m.sender_realm_str, 'zulipinternal');
  const events = await queueEvents(f, admin, reg.queue_id, 'message');
  t.same(events.map((e) => e.message.id), [res.json.message_id], 'the caller gets it as an event');
  t.same(await queueEvents(f, other, otherReg.queue_id, 'message'), [], 'another administrator does not');
  t.equal((await f.call(other, 'GET', `/api/v1/messages/${res.json.message_id}`)).status, 400, 'nor may read it');
  const bots = (await f.call(admin, 'POST', '/api/v1/register', { fetch_event_types: ['realm_user'] })).json.cross_realm_bots.map((b: { email: string }) => b.email);
  t.ok(bots.includes('welcome-bot@zulip.com'), 'the Welcome Bot is a cross-realm bot, as in Zulip');
  const unread = (await f.call(admin, 'POST', '/api/v1/register', { fetch_event_types: ['message', 'update_message_flags'] })).json.unread_msgs;
  t.same(unread.pms.map((p: { other_user_id: number; unread_message_ids: number[] }) => [p.other_user_id, p.unread_message_ids]), [[2_000_000_002, [res.json.message_id]]]);
  const dm = await f.call(admin, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: JSON.stringify([{ operator: 'dm', operand: ['welcome-bot@zulip.com'] }]) });
  t.same(dm.json.messages.map((x: { id: number }) => x.id), [res.json.message_id], 'the conversation with the bot holds it');
});

t.test('errors and roles', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const send = (who: Credentials, text: unknown) => f.call(who, 'POST', '/api/v1/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: text });
  const empty = await send(f.owner, '');
  t.same([empty.status, empty.json.code, empty.json.msg], [400, 'BAD_REQUEST', 'Message must not be empty']);
  const long = await send(f.owner, 'é'.repeat(8001));
  t.same([long.status, long.json.msg], [400, 'welcome_message_custom_text is too long (limit: 8000 characters)']);
  t.equal((await send(f.owner, '😀'.repeat(8000))).status, 200, '8000 characters is the limit, counted as characters');
  const missing = await f.call(f.owner, 'POST', '/api/v1/realm/test_welcome_bot_custom_message', {});
  t.same([missing.status, missing.json.code], [400, 'REQUEST_VARIABLE_MISSING']);
  const probe = () => probeMessageId(f);
  for (const [role, who, ok] of [
    ['owner', f.owner, true], ['administrator', await withRole(f, 'admin@example.com', 200), true], ['moderator', await withRole(f, 'mod@example.com', 300), false],
    ['member', await withRole(f, 'member@example.com', 400), false], ['guest', await withRole(f, 'guest@example.com', 600), false],
  ] as Array<[string, Credentials, boolean]>) {
    const before = await probe();
    const r = await send(who, 'hello');
    t.same([r.status, r.json.code, r.json.msg], ok ? [200, undefined, ''] : [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], role);
    t.equal(await probe(), before + 1 + (ok ? 1 : 0), `${role}: ${ok ? 'one message' : 'no message'}`);
    if (!ok) t.equal((await send(who, '')).json.msg, 'Must be an organization administrator', `${role}: the role is checked first`);
  }
  // In another organization, the message goes to that organization's caller.
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const theirs = await f.call(beta.owner, 'POST', '/api/v1/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'hi beta' }, { headers: { host: 'beta.localhost' } });
  t.equal(theirs.status, 200);
  const there = await f.call(beta.owner, 'GET', `/api/v1/messages/${theirs.json.message_id}`, {}, { headers: { host: 'beta.localhost' } });
  t.same([there.status, there.json.message?.content], [200, '<p>hi beta</p>']);
  const here = await f.call(f.owner, 'GET', `/api/v1/messages/${theirs.json.message_id}`);
  t.same([here.status, here.json.msg], [400, 'Invalid message(s)'], 'not in this organization');
});

t.test('dev_fetch_api_key: refused as on a Zulip production server', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const r = await f.call(null, 'POST', '/api/v1/dev_fetch_api_key', { username: 'owner@example.com' });
  t.same([r.status, r.json.result, r.json.code, r.json.msg], [400, 'error', 'BAD_REQUEST', 'Endpoint not available in production.']);
  t.equal(r.json.api_key, undefined, 'never a key');
  t.equal(r.body.includes(f.owner.api_key), false);
  const authed = await f.call(f.owner, 'POST', '/api/v1/dev_fetch_api_key', { username: 'owner@example.com' });
  t.equal(authed.json.msg, 'Endpoint not available in production.', 'credentials change nothing');
  t.equal((await f.call(null, 'POST', '/api/v1/dev_fetch_api_key', {})).json.code, 'REQUEST_VARIABLE_MISSING');
  const settings = (await f.call(null, 'GET', '/api/v1/server_settings')).json;
  t.equal(settings.authentication_methods.dev, false, 'server_settings says there is no development login');
});
