import t from 'tap';
import { botCredentials, chatFixture, type Credentials } from './helpers.js';
import type { FactSink } from '../actors/runtime/runtime.js';
import type { Stamped } from '../actors/core/domain_logic.js';

t.test('a deactivated user is refused ("Account is deactivated"), and can be reactivated', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  const reg = await f.call(carol, 'POST', '/api/v1/register', { event_types: ['realm_user'] });

  const byMember = await f.call(carol, 'DELETE', `/api/v1/users/${bob.user_id}`);
  t.equal(byMember.status, 400);
  t.equal(byMember.json.code, 'UNAUTHORIZED_PRINCIPAL');

  const res = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`);
  t.equal(res.status, 200, res.body);
  const denied = await f.call(bob, 'GET', '/api/v1/users/me');
  t.equal(denied.status, 401);
  t.equal(denied.json.code, 'UNAUTHORIZED', "Zulip's Basic-auth path: UNAUTHORIZED with the refusal's message");
  t.equal(denied.json.msg, 'Account is deactivated');
  t.equal(denied.headers['www-authenticate'], 'Basic realm="zulip"');
  const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: bob.email, password: 'pw-' + bob.email });
  t.equal(login.status, 401);
  t.equal(login.json.code, 'USER_DEACTIVATED');

  const events = await f.call(carol, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, dont_block: true });
  t.same(events.json.events.map((e: any) => e.person), [{ user_id: bob.user_id, is_active: false }]);
  t.equal(events.json.events[0].op, 'update');

  const again = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`);
  t.equal(again.status, 400);
  const back = await f.call(f.owner, 'POST', `/api/v1/users/${bob.user_id}/reactivate`);
  t.equal(back.status, 200, back.body);
  t.equal((await f.call(bob, 'GET', '/api/v1/users/me')).status, 200);
});

t.test('the only owner cannot be deactivated', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const res = await f.call(f.owner, 'DELETE', `/api/v1/users/${f.owner.user_id}`);
  t.equal(res.status, 400);
  t.match(res.json.msg, /only organization owner/);
});

t.test('a deactivated organization refuses credentials, still serves server_settings, and refuses logins', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.runtime.execute({ type: 'SET_ORG_ACTIVE', subdomain: '', active: false });
  // Zulip's authenticated_rest_api_view turns RealmDeactivatedError into UNAUTHORIZED with its message.
  const res = await f.call(f.owner, 'GET', '/api/v1/users/me');
  t.equal(res.status, 401);
  t.equal(res.json.code, 'UNAUTHORIZED');
  t.equal(res.json.msg, 'This organization has been deactivated');
  const wrongKey = await f.call({ ...f.owner, api_key: 'z'.repeat(32) }, 'GET', '/api/v1/users/me');
  t.equal(wrongKey.json.msg, 'Invalid API key', 'a wrong key learns nothing of the organization');
  // Zulip's get_server_settings serves it: that is how a client learns the state.
  const settings = await f.call(null, 'GET', '/api/v1/server_settings');
  t.equal(settings.status, 200, settings.body);
  t.equal(settings.json.realm_name, 'Test Org');
  const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: f.owner.email, password: 'x' });
  t.equal(login.status, 401);
  t.equal(login.json.code, 'REALM_DEACTIVATED', 'other routes without credentials answer REALM_DEACTIVATED');
  await f.runtime.execute({ type: 'SET_ORG_ACTIVE', subdomain: '', active: true });
  t.equal((await f.call(f.owner, 'GET', '/api/v1/users/me')).status, 200);
});

t.test('users deactivate themselves, and the bots they own go first', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bot = (await f.call(alice, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' })).json.user_id as number;
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user', 'realm_bot'] })).json.queue_id;
  const res = await f.call(alice, 'DELETE', '/api/v1/users/me');
  t.equal(res.status, 200, res.body);
  const active = async (id: number): Promise<boolean> => (await f.call(f.owner, 'GET', `/api/v1/users/${id}`)).json.user.is_active;
  t.equal(await active(bot), false, 'the bot is deactivated');
  t.equal(await active(alice.user_id), false);
  const events = (await f.call(f.owner, 'GET', '/api/v1/events', { queue_id: q, last_event_id: -1, dont_block: true })).json.events;
  t.same(events.filter((e: any) => e.type === 'realm_user').map((e: any) => e.person.user_id), [bot, alice.user_id], 'bots first, then their owner');
  t.equal((await f.call(alice, 'GET', '/api/v1/users/me')).json.msg, 'Account is deactivated');
  const only = await f.call(f.owner, 'DELETE', '/api/v1/users/me');
  t.same([only.status, only.json.msg], [400, 'Cannot deactivate the only organization owner']);
  const { user: admin } = await f.runtime.execute({ type: 'CREATE_USER', org: 1, actor_id: null, email: 'admin@example.com', password_hash: '', full_name: 'Admin', role: 200 });
  const { user: owner2 } = await f.runtime.execute({ type: 'CREATE_USER', org: 1, actor_id: null, email: 'o2@example.com', password_hash: '', full_name: 'O2', role: 100 });
  const byAdmin = await f.call({ user_id: admin.user_id, email: admin.email, api_key: admin.api_key }, 'DELETE', `/api/v1/users/${owner2.user_id}`);
  t.same([byAdmin.status, byAdmin.json.code, byAdmin.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner'], 'an administrator cannot deactivate an owner');
});

t.test('DELETE /users/{id} with actions: the bots first, then the user; profile renamed, messages of the kinds asked for deleted; the notice mailed', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  const bot = await f.call(bob, 'POST', '/api/v1/bots', { full_name: 'Bob Bot', short_name: 'bobbot' });
  t.equal(bot.status, 200, bot.body);
  const botCreds = await botCredentials(f, { user_id: bot.json.user_id, api_key: bot.json.api_key });
  await f.subscribe(f.owner, 'open', [bob.user_id, carol.user_id, botCreds.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'closed' }]), principals: JSON.stringify([bob.user_id, carol.user_id]), invite_only: true });
  const send = async (who: Credentials, params: Record<string, unknown>) => {
    const r = await f.call(who, 'POST', '/api/v1/messages', params);
    if (r.status !== 200) throw new Error(r.body);
    return r.json.id as number;
  };
  const pub = await send(bob, { type: 'stream', to: 'open', topic: 't', content: 'public' });
  const botPub = await send(botCreds, { type: 'stream', to: 'open', topic: 't', content: 'from the bot' });
  const priv = await send(bob, { type: 'stream', to: 'closed', topic: 't', content: 'private' });
  const dm = await send(bob, { type: 'direct', to: JSON.stringify([carol.user_id]), content: 'direct' });
  const kept = await send(carol, { type: 'stream', to: 'open', topic: 't', content: 'carol stays' });

  const bad = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`, { actions: JSON.stringify({ delete_everything: true }) });
  t.same([bad.status, bad.json.msg], [400, 'Invalid action: delete_everything']);
  const shown = async (id: number) => (await f.call(f.owner, 'GET', `/api/v1/users/${id}`)).json.user;
  t.ok((await shown(bob.user_id)).is_active, 'a refused request deactivates no one');

  const r = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`, {
    actions: JSON.stringify({ delete_profile: true, delete_public_channel_messages: true, delete_direct_messages: true }),
    deactivation_notification_comment: 'Thanks for everything.',
  });
  t.equal(r.status, 200, r.body);
  t.same([(await shown(bob.user_id)).full_name, (await shown(botCreds.user_id)).full_name], [`Deleted User ${bob.user_id}`, `Deleted User ${botCreds.user_id}`]);
  const exists = async (id: number) => (await f.call(carol, 'GET', `/api/v1/messages/${id}`)).status === 200;
  t.same([await exists(pub), await exists(botPub), await exists(priv), await exists(dm), await exists(kept)], [false, false, true, false, true], 'public and direct messages gone, private ones kept as asked');
  t.match(f.mail.sent.at(-1), { to: 'bob@example.com', subject: 'Your account on Test Org has been deactivated' });
  t.match(f.mail.sent.at(-1)!.text, /Thanks for everything\./);
});

t.test('DELETE /users/{id}: the deactivation of the user and their bots, and their renaming, are one durable batch', async (t) => {
  const batches: Stamped[][] = [];
  const sink: FactSink = { append(records, onDurable) { batches.push(records); queueMicrotask(onDurable); } };
  const f = await chatFixture({ sink });
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const bot = (await f.call(bob, 'POST', '/api/v1/bots', { full_name: 'Bob Bot', short_name: 'bobbot' })).json.user_id as number;
  const r = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`, { actions: JSON.stringify({ delete_profile: true }) });
  t.equal(r.status, 200, r.body);
  const batch = batches.find((b) => b.some((s) => s.fact.type === 'UserActivationChanged'));
  const shown = (batch ?? []).map((s) => {
    const fact = s.fact as unknown as { type: string; user_id: number; full_name?: string };
    return fact.type === 'UserUpdated' ? `${fact.type} ${fact.user_id} ${fact.full_name}` : `${fact.type} ${fact.user_id}`;
  });
  t.same(shown, [
    `UserActivationChanged ${bot}`, `UserActivationChanged ${bob.user_id}`,
    `UserUpdated ${bot} Deleted User ${bot}`, `UserUpdated ${bob.user_id} Deleted User ${bob.user_id}`,
  ], 'all four facts in the one batch, the bot first');
});
