/**
 * User status: text, emoji and the legacy `away` (the `presence_enabled` setting,
 * inverted), its checks, `user_status` events, `GET /users/{id}/status`, and
 * convergence of register plus events.
 */
import t from 'tap';
import { chatFixture, queueEvents } from './helpers.js';
import { register, verifyAction, verifyState } from './client_model.js';

t.test('status text, emoji and away', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['user_status', 'user_settings'] })).json.queue_id;
  let r = await f.call(alice, 'POST', '/api/v1/users/me/status', { status_text: ' on vacation ', emoji_name: 'car' });
  t.equal(r.status, 200, r.body);
  t.same((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}/status`)).json.status, { status_text: 'on vacation', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
  r = await f.call(alice, 'POST', '/api/v1/users/me/status', { away: true });
  t.equal(r.status, 200);
  t.equal((await f.call(alice, 'POST', '/api/v1/register', { fetch_event_types: ['user_settings'] })).json.user_settings.presence_enabled, false, 'away is presence_enabled turned off');
  t.same((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}/status`)).json.status.away, true);
  const events = await queueEvents(f, f.owner, q, 'user_status');
  t.same(events, [
    { type: 'user_status', user_id: alice.user_id, status_text: 'on vacation', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' },
    { type: 'user_status', user_id: alice.user_id, away: true },
  ]);
  const bad = async (params: Record<string, unknown>, msg: string) => {
    const res = await f.call(alice, 'POST', '/api/v1/users/me/status', params);
    t.same([res.status, res.json.msg], [400, msg], JSON.stringify(params));
  };
  await bad({}, 'Client did not pass any new values.');
  await bad({ status_text: 'x'.repeat(61) }, 'status_text is too long (limit: 60 characters)');
  await bad({ emoji_name: 'no_such_emoji_here' }, "Emoji 'no_such_emoji_here' does not exist");
  await bad({ emoji_code: '1f697' }, 'Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  await bad({ emoji_name: 'car', emoji_code: 'zzz' }, 'Invalid emoji code.');
  t.same((await f.call(f.owner, 'GET', '/api/v1/users/999/status')).json.msg, 'No such user');
  await f.call(alice, 'POST', '/api/v1/users/me/status', { status_text: '', emoji_name: '', away: false });
  t.same((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}/status`)).json.status, {}, 'cleared');
});

t.test('convergence: register plus user_status events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.call(bob, 'POST', '/api/v1/users/me/status', { status_text: 'busy' });
  await verifyAction(t, f, f.owner, ['user_status'], ['user_status'], async () => {
    await f.call(alice, 'POST', '/api/v1/users/me/status', { status_text: 'lunch', emoji_name: 'pizza' });
    await f.call(bob, 'POST', '/api/v1/users/me/status', { status_text: '', away: true });
    await f.call(alice, 'PATCH', '/api/v1/settings', { presence_enabled: false });
    await f.call(alice, 'POST', '/api/v1/users/me/status', { emoji_name: '' });
  });
  const fresh = (await register(f, f.owner, ['user_status'])).user_status;
  t.same(fresh, { [alice.user_id]: { away: true, status_text: 'lunch' }, [bob.user_id]: { away: true } }, 'and it really changed');
});

t.test('POST /users/{user_id}/status: administrators (and a bot\'s owner) change another user\'s status', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const { withRole } = await import('./helpers.js');
  const { Role } = await import('../actors/shared/types.js');
  const { createOrganization } = await import('../src/bootstrap.js');
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const admin = await withRole(f, 'admin@example.com', Role.ADMIN);
  const moderator = await withRole(f, 'mod@example.com', Role.MODERATOR);
  const dave = await f.createUser('dave@example.com', 'Dave');
  const reg = await register(f, f.owner, ['user_status']);
  const status = (id: number) => f.call(f.owner, 'GET', `/api/v1/users/${id}/status`).then((r) => r.json.status);
  const set = (who: typeof alice, id: number, params: Record<string, unknown>) => f.call(who, 'POST', `/api/v1/users/${id}/status`, params);

  let r = await set(admin, alice.user_id, { status_text: ' in a meeting ', emoji_name: 'car' });
  t.equal(r.status, 200, r.body);
  t.same(await status(alice.user_id), { status_text: 'in a meeting', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
  r = await set(f.owner, alice.user_id, { emoji_name: '' });
  t.same(await status(alice.user_id), { status_text: 'in a meeting' }, 'owners too; the emoji cleared');
  // Who may not: members (even for themselves) and moderators; Zulip's "Insufficient permission".
  for (const who of [bob, moderator, alice]) {
    r = await set(who, alice.user_id, { status_text: 'hacked' });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Insufficient permission']);
  }
  // A bot's owner may change the bot's status.
  const botId = (await f.call(bob, 'POST', '/api/v1/bots', { full_name: 'Bob Bot', short_name: 'bobbot' })).json.user_id as number;
  t.equal((await set(bob, botId, { status_text: 'beep' })).status, 200);
  t.same(await status(botId), { status_text: 'beep' });
  // The request's own checks, after the permission check.
  const bad = async (params: Record<string, unknown>, msg: string) => {
    const res = await set(admin, alice.user_id, params);
    t.same([res.status, res.json.msg], [400, msg], JSON.stringify(params));
  };
  await bad({}, 'Client did not pass any new values.');
  await bad({ away: true }, 'Client did not pass any new values.');
  await bad({ status_text: 'x'.repeat(61) }, 'status_text is too long (limit: 60 characters)');
  await bad({ emoji_code: '1f697' }, 'Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  await bad({ emoji_name: 'no_such_emoji_here' }, "Emoji 'no_such_emoji_here' does not exist");
  t.same((await set(admin, 99999, { status_text: 'x' })).json.msg, 'No such user');
  await f.call(f.owner, 'DELETE', `/api/v1/users/${dave.user_id}`);
  t.same((await set(admin, dave.user_id, { status_text: 'x' })).json.msg, 'User is deactivated');
  t.same((await set(alice, 99999, { status_text: 'x' })).json.msg, 'No such user', 'a missing user before the permission');

  // Another organization's user is no user here.
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  let foreign = 0;
  for (let i = 0; i < 12; i++) foreign = (await f.call(boss, 'POST', '/api/v1/users', { email: `u${i}@other.example`, password: 'pw', full_name: `U${i}` }, { headers: { host: 'other.localhost' } })).json.user_id;
  const lookup = await f.call(f.owner, 'GET', `/api/v1/users/${foreign}`);
  t.same([lookup.status, lookup.json.msg], [400, 'No such user'], 'the id is no user here');
  t.same((await set(admin, foreign, { status_text: 'x' })).json, (await set(admin, 99999, { status_text: 'x' })).json);

  // Everyone is told with user_status events, and register plus events equals a fresh register.
  await verifyState(t, f, f.owner, reg, ['user_status'], ['user_status']);
  const fresh = (await register(f, f.owner, ['user_status'])).user_status;
  t.same(fresh, { [alice.user_id]: { status_text: 'in a meeting' }, [botId]: { status_text: 'beep' } });
});
