/**
 * Bots: creation (generic and incoming webhook) and its rules, authenticating as
 * the bot, listing, changing name, owner and defaults, regenerating the key,
 * deactivating; `realm_bot` events to the bot's administrators; roles; convergence;
 * durability.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { botCredentials, chatFixture, queueEvents, type ChatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { register, verifyAction } from './client_model.js';

const makeBot = (f: ChatFixture, who: Credentials, params: Record<string, unknown>) => f.call(who, 'POST', '/api/v1/bots', params);

t.test('a member creates a bot, which then posts with its own key', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  const qAdmin = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_bot', 'realm_user'] })).json.queue_id;
  const bob = await f.createUser('bob@example.com', 'Bob');
  const qBob = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['realm_bot', 'realm_user'] })).json.queue_id;
  const res = await makeBot(f, alice, { full_name: 'Deploy Bot', short_name: 'deploy', default_sending_stream: 'general' });
  t.equal(res.status, 200, res.body);
  t.match(res.json, { default_sending_stream: 'general', default_events_register_stream: null, default_all_public_streams: false });
  const bot: Credentials = { user_id: res.json.user_id, email: 'deploy-bot@parley.invalid', api_key: res.json.api_key };
  const sent = await f.call(bot, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'deploys', content: 'shipped' });
  t.equal(sent.status, 200, 'the bot authenticates with its own key: ' + sent.body);
  const listed = (await f.call(alice, 'GET', '/api/v1/bots')).json.bots;
  t.match(listed, [{ user_id: bot.user_id, full_name: 'Deploy Bot', email: bot.email, owner_id: alice.user_id, bot_type: 1, api_key: bot.api_key, is_active: true }]);
  t.same((await f.call(bob, 'GET', '/api/v1/bots')).json.bots, [], 'others do not see it');
  t.equal((await f.call(f.owner, 'GET', '/api/v1/bots')).json.bots.length, 1, 'administrators see every bot');
  t.same((await queueEvents(f, f.owner, qAdmin, 'realm_bot')).map((e: any) => [e.op, e.bot.user_id]), [['add', bot.user_id]]);
  t.same(await queueEvents(f, bob, qBob, 'realm_bot'), [], 'a member who does not administer it hears no realm_bot');
  t.equal((await queueEvents(f, bob, qBob, 'realm_user')).filter((e: any) => e.op === 'add' && e.person.user_id === bot.user_id).length, 1, 'but everyone gets realm_user add');
  const bad = async (who: Credentials, params: Record<string, unknown>, msg: string) => {
    const r = await makeBot(f, who, params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  };
  await bad(alice, { full_name: 'Again', short_name: 'deploy' }, 'Username already in use');
  await bad(alice, { full_name: 'X', short_name: 'not valid!' }, 'Bad name or username');
  await bad(alice, { full_name: 'X', short_name: 'x', bot_type: 3 }, 'Invalid bot type');
  await bad(alice, { full_name: 'X', short_name: 'y', default_sending_stream: 'nowhere' }, "Invalid channel name 'nowhere'");
  await bad(bot, { full_name: 'Child', short_name: 'child' }, 'Bots cannot create bots');
});

t.test('changing, rekeying and deactivating a bot', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const botId = (await makeBot(f, alice, { full_name: 'Hook', short_name: 'hook', bot_type: 2 })).json.user_id;
  const qAlice = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['realm_bot'] })).json.queue_id;
  const qBob = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['realm_bot'] })).json.queue_id;
  t.same((await f.call(bob, 'PATCH', `/api/v1/bots/${botId}`, { full_name: 'Mine' })).json.msg, 'Insufficient permission');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/bots/${botId}`, { full_name: 'Hook 2' })).status, 200);
  const key = (await f.call(alice, 'POST', `/api/v1/bots/${botId}/api_key/regenerate`)).json.api_key;
  const asBot = await f.call(await botCredentials(f, { user_id: botId, api_key: key }), 'GET', `/api/v1/users/${botId}`);
  t.same([asBot.status, asBot.json.user?.user_id], [200, botId], 'the new key is the bot\'s');
  const me = await f.call(await botCredentials(f, { user_id: botId, api_key: key }), 'GET', '/api/v1/users/me');
  t.same([me.status, me.json.user_id, me.json.bot_type, me.json.bot_owner_id], [200, botId, 2, alice.user_id], '/users/me as the bot: its type and owner, as Zulip\'s format_user_row');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/bots/${botId}`, { bot_owner_id: bob.user_id })).status, 200);
  t.same((await queueEvents(f, alice, qAlice, 'realm_bot')).map((e: any) => [e.op, Object.keys(e.bot).sort().join(',')]), [
    ['update', 'full_name,user_id'], ['update', 'api_key,user_id'], ['delete', 'user_id'],
  ], 'the old owner loses the bot');
  t.same((await queueEvents(f, bob, qBob, 'realm_bot')).map((e: any) => e.op), ['add', 'update'], 'the new owner gains it (and the owner update, as in Zulip)');
  t.equal((await f.call(alice, 'DELETE', `/api/v1/bots/${botId}`)).json.msg, 'Insufficient permission');
  t.equal((await f.call(bob, 'DELETE', `/api/v1/bots/${botId}`)).status, 200);
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${botId}`)).json.user.is_active, false);
  t.same((await f.call(bob, 'GET', '/api/v1/bots')).json.bots, []);
  t.same((await f.call(bob, 'DELETE', '/api/v1/bots/9999')).json.msg, 'No such bot');
  t.same((await f.call(bob, 'DELETE', `/api/v1/bots/${alice.user_id}`)).json.msg, 'No such bot', 'a human is not a bot');
});

t.test('per role: who may create which bots', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, boolean]> = [
    ['owner', f.owner, true], ['administrator', await withRole(f, 'admin@example.com', 200), true], ['moderator', await withRole(f, 'mod@example.com', 300), true],
    ['member', await withRole(f, 'member@example.com', 400), true], ['guest', await withRole(f, 'guest@example.com', 600), false],
  ];
  for (const [role, who, allowed] of roles) {
    const r = await makeBot(f, who, { full_name: `Bot of ${role}`, short_name: `b-${role}` });
    t.equal(r.status, allowed ? 200 : 400, `${role}: ${r.body}`);
  }
});

t.test('convergence: realm_bots from register plus realm_bot events equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  let one = 0;
  await verifyAction(t, f, alice, ['realm_bot'], ['realm_bots'], async () => {
    one = (await makeBot(f, alice, { full_name: 'One', short_name: 'one' })).json.user_id;
    const two = (await makeBot(f, alice, { full_name: 'Two', short_name: 'two' })).json.user_id;
    await f.call(alice, 'PATCH', `/api/v1/bots/${one}`, { full_name: 'One!', default_all_public_streams: true });
    await f.call(alice, 'POST', `/api/v1/bots/${two}/api_key/regenerate`);
    await f.call(alice, 'DELETE', `/api/v1/bots/${two}`);
  });
  t.match((await register(f, alice, ['realm_bot'])).realm_bots, [{ user_id: one, full_name: 'One!', default_all_public_streams: true }]);
});

t.test('bots survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bots-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const { user } = await store.runtime.execute({ type: 'CREATE_BOT', org, actor_id: 1, full_name: 'B', short_name: 'b', bot_type: 1 });
  await store.snapshot();
  await store.runtime.execute({ type: 'REGENERATE_BOT_KEY', org, actor_id: 1, bot_id: user.user_id });
  await store.runtime.execute({ type: 'UPDATE_BOT', org, actor_id: 1, bot_id: user.user_id, full_name: 'B2' });
  /** The bot as its owner's GET /bots lists it (with its key) and as GET /users/{id} shows it. */
  const bot = async () => {
    const api = storeClient(store, owner);
    return { bot: (await api('GET', '/api/v1/bots')).bots.find((b: any) => b.user_id === user.user_id), user: (await api('GET', `/api/v1/users/${user.user_id}`)).user };
  };
  const expected = JSON.stringify(await bot());
  await store.close();
  store = open();
  const again = await bot();
  t.equal(JSON.stringify(again), expected);
  t.match(again, { bot: { full_name: 'B2', api_key: /./ }, user: { is_bot: true, bot_owner_id: 1, full_name: 'B2' } });
  await store.close();
});
