/**
 * Route tests of users, the API key exchange and server settings:
 * `GET /users`, `GET /users/me`, `GET /users/{id}`, `POST /users`,
 * `POST /fetch_api_key` and `GET /server_settings`.
 */
import t from 'tap';
import { chatFixture, settle, type ApiResult, type ChatFixture } from './helpers.js';
import { register, verifyState } from './client_model.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Every key Zulip's `User` schema allows (plus `is_imported_stub`, which the spec names). */
const USER_KEYS = new Set([
  'user_id', 'delivery_email', 'email', 'full_name', 'date_joined', 'is_active', 'is_owner', 'is_admin', 'is_guest', 'is_bot',
  'bot_type', 'bot_owner_id', 'role', 'timezone', 'avatar_url', 'avatar_version', 'profile_data', 'is_imported_stub',
]);

function isError(t: Tap, res: ApiResult, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: status (${res.body})`);
  t.equal(res.json?.result, 'error', `${what}: result`);
  t.equal(res.json?.code, code, `${what}: code`);
  t.type(res.json?.msg, 'string', `${what}: msg`);
}

/** Checks one user dictionary against Zulip's `User` shape and the expected values. */
/** `avatar`: a Gravatar URL, or null where the client computes it (`client_gravatar`, true by default as in Zulip). */
function checkUser(t: Tap, u: Record<string, any>, want: { user_id: number; email: string; full_name: string; role: number }, joinedMs: number, avatar: 'url' | null = null): void {
  const what = want.email;
  t.equal(u.user_id, want.user_id, `${what}: user_id`);
  t.equal(u.email, want.email, `${what}: email`);
  t.equal(u.delivery_email, want.email, `${what}: delivery_email`);
  t.equal(u.full_name, want.full_name, `${what}: full_name`);
  t.equal(u.role, want.role, `${what}: role`);
  t.equal(u.is_owner, want.role === 100, `${what}: is_owner`);
  t.equal(u.is_admin, want.role <= 200, `${what}: is_admin`);
  t.equal(u.is_guest, want.role === 600, `${what}: is_guest`);
  t.equal(u.is_bot, false, `${what}: is_bot`);
  t.equal(u.bot_type, null, `${what}: bot_type`);
  t.equal(u.is_active, true, `${what}: is_active`);
  t.type(u.timezone, 'string', `${what}: timezone`);
  if (avatar === null) t.equal(u.avatar_url, null, `${what}: avatar_url left to the client`);
  else t.match(u.avatar_url, /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?/, `${what}: avatar_url is a Gravatar URL`);
  t.type(u.avatar_version, 'number', `${what}: avatar_version`);
  t.type(u.date_joined, 'string', `${what}: date_joined is an ISO string`);
  t.equal(Math.floor(Date.parse(u.date_joined) / 1000), Math.floor(joinedMs / 1000), `${what}: date_joined is the join time`);
  const extra = Object.keys(u).filter((k) => !USER_KEYS.has(k));
  t.same(extra, [], `${what}: no keys outside Zulip's User schema`);
}

t.test('GET /users', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const created = f.clock.t;
  const bob = await f.createUser('bob@example.com', 'Bob Builder');
  const carol = await f.createUser('carol@example.com', 'Carol');

  await t.test('lists every user in Zulip\'s shape', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/users');
    t.equal(res.status, 200, res.body);
    t.equal(res.json.result, 'success');
    t.equal(res.json.msg, '');
    const members = res.json.members as Array<Record<string, any>>;
    t.same(members.map((m) => m.user_id).sort((a, b) => a - b), [f.owner.user_id, bob.user_id, carol.user_id].sort((a, b) => a - b));
    const byId = new Map(members.map((m) => [m.user_id, m]));
    checkUser(t, byId.get(f.owner.user_id)!, { user_id: f.owner.user_id, email: 'owner@example.com', full_name: 'Olivia Owner', role: 100 }, created);
    checkUser(t, byId.get(bob.user_id)!, { user_id: bob.user_id, email: 'bob@example.com', full_name: 'Bob Builder', role: 400 }, created);
    checkUser(t, byId.get(carol.user_id)!, { user_id: carol.user_id, email: 'carol@example.com', full_name: 'Carol', role: 400 }, created);
    t.not(bob.user_id, carol.user_id, 'ids are distinct');
  });

  await t.test('user_ids filters the list', async (t) => {
    const one = await f.call(f.owner, 'GET', '/api/v1/users', { user_ids: [carol.user_id] });
    t.equal(one.status, 200, one.body);
    t.same(one.json.members.map((m: { user_id: number }) => m.user_id), [carol.user_id]);
    const two = await f.call(f.owner, 'GET', '/api/v1/users', { user_ids: [carol.user_id, f.owner.user_id] });
    t.same(two.json.members.map((m: { user_id: number }) => m.user_id).sort(), [f.owner.user_id, carol.user_id].sort());
    const none = await f.call(f.owner, 'GET', '/api/v1/users', { user_ids: [] });
    t.equal(none.status, 200);
    t.same(none.json.members, [], 'an empty filter matches nobody');
  });

  await t.test('accepts client_gravatar and include_custom_profile_fields', async (t) => {
    const res = await f.call(f.owner, 'GET', '/api/v1/users', { client_gravatar: true, include_custom_profile_fields: true });
    t.equal(res.status, 200, res.body);
    t.notOk('ignored_parameters_unsupported' in res.json);
    t.equal(res.json.members.length, 3);
  });

  await t.test("profile_data for humans only, as Zulip's format_user_row (bots have bot_type and bot_owner_id instead)", async (t) => {
    const bot = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Profile Bot', short_name: 'profile' })).json.user_id as number;
    const reg = await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm_user'] });
    const all = await f.call(f.owner, 'GET', '/api/v1/users', { include_custom_profile_fields: true });
    for (const u of [...all.json.members, ...reg.json.realm_users]) {
      if (u.is_bot) t.notOk('profile_data' in u, `bot ${u.user_id}: no profile_data`);
      else t.type(u.profile_data, 'object', `user ${u.user_id}: profile_data`);
    }
    t.ok(all.json.members.some((u: any) => u.user_id === bot), 'the bot is listed');
    const one = await f.call(f.owner, 'GET', `/api/v1/users/${bot}`, { include_custom_profile_fields: true });
    t.equal(one.status, 200, one.body);
    t.notOk('profile_data' in one.json.user, 'GET /users/{id} of a bot: no profile_data');
    t.equal(one.json.user.bot_owner_id, f.owner.user_id);
  });

  await t.test('needs credentials', async (t) => {
    isError(t, await f.call(null, 'GET', '/api/v1/users'), 401, 'UNAUTHORIZED', 'anonymous');
  });
});

t.test('GET /users/me and GET /users/{user_id}', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const created = f.clock.t;
  const bob = await f.createUser('bob@example.com', 'Bob');

  await t.test('/users/me is the caller, with max_message_id and profile_data', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/users/me');
    t.equal(res.status, 200, res.body);
    const { result, msg, max_message_id, ...user } = res.json;
    t.equal(result, 'success');
    t.equal(msg, '');
    t.equal(max_message_id, -1, 'no messages received yet: -1, as in Zulip');
    t.same(user.profile_data, {});
    checkUser(t, user, { user_id: bob.user_id, email: 'bob@example.com', full_name: 'Bob', role: 400 }, created, 'url');
    const owner = await f.call(f.owner, 'GET', '/api/v1/users/me');
    t.equal(owner.json.user_id, f.owner.user_id);
    t.equal(owner.json.is_owner, true);
    t.equal(owner.json.role, 100);
  });

  await t.test('/users/me reports the newest message id the caller received', async (t) => {
    await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
    const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi' });
    t.equal(sent.status, 200, sent.body);
    const res = await f.call(bob, 'GET', '/api/v1/users/me');
    t.equal(res.json.max_message_id, sent.json.id);
  });

  await t.test('/users/{id} returns one user', async (t) => {
    const res = await f.call(bob, 'GET', `/api/v1/users/${f.owner.user_id}`);
    t.equal(res.status, 200, res.body);
    checkUser(t, res.json.user, { user_id: f.owner.user_id, email: 'owner@example.com', full_name: 'Olivia Owner', role: 100 }, created);
    const self = await f.call(bob, 'GET', `/api/v1/users/${bob.user_id}`, { client_gravatar: false, include_custom_profile_fields: true });
    t.equal(self.status, 200);
    t.equal(self.json.user.email, 'bob@example.com');
    t.notOk('ignored_parameters_unsupported' in self.json);
  });

  await t.test('/users/{id} for an unknown id is 400 "No such user"', async (t) => {
    for (const id of [999, 0]) {
      const res = await f.call(bob, 'GET', `/api/v1/users/${id}`);
      isError(t, res, 400, 'BAD_REQUEST', `user ${id}`);
      t.equal(res.json.msg, 'No such user');
    }
  });

  await t.test('/users/{id} with a non-integer id is a client error', async (t) => {
    // Zulip routes these to GET /users/{email} ("No such user", 400); a 404 for the shape is acceptable too.
    for (const id of ['abc', '1.5', '-3']) {
      const res = await f.call(bob, 'GET', `/api/v1/users/${id}`);
      t.ok([400, 404].includes(res.status), `user ${id}: status ${res.status}`);
      t.equal(res.json?.result, 'error');
      t.ok(['BAD_REQUEST', 'NOT_FOUND'].includes(res.json?.code), `user ${id}: code ${res.json?.code}`);
    }
  });
});

t.test('POST /users', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const countUsers = async (): Promise<number> => (await f.call(f.owner, 'GET', '/api/v1/users')).json.members.length;

  await t.test('an owner creates a user, who can then fetch a key and authenticate', async (t) => {
    const before = f.clock.t;
    f.clock.t += 60_000;
    const res = await f.call(f.owner, 'POST', '/api/v1/users', { email: 'dora@example.com', password: 'dora-secret', full_name: 'Dora Explorer' });
    t.equal(res.status, 200, res.body);
    t.equal(res.json.result, 'success');
    t.type(res.json.user_id, 'number');
    t.not(res.json.user_id, f.owner.user_id);
    t.not(res.json.user_id, bob.user_id);
    const fetched = await f.call(f.owner, 'GET', `/api/v1/users/${res.json.user_id}`);
    checkUser(t, fetched.json.user, { user_id: res.json.user_id, email: 'dora@example.com', full_name: 'Dora Explorer', role: 400 }, before + 60_000);

    const key = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'dora@example.com', password: 'dora-secret' });
    t.equal(key.status, 200, key.body);
    t.equal(key.json.user_id, res.json.user_id);
    t.equal(key.json.email, 'dora@example.com');
    t.type(key.json.api_key, 'string');
    t.ok(key.json.api_key.length >= 20, 'the key is long enough to be a secret');
    const dora = { user_id: res.json.user_id as number, email: 'dora@example.com', api_key: key.json.api_key as string };
    const me = await f.call(dora, 'GET', '/api/v1/users/me');
    t.equal(me.status, 200, me.body);
    t.equal(me.json.user_id, dora.user_id);
    t.not(dora.api_key, f.owner.api_key, 'every user has their own key');
    t.not(dora.api_key, bob.api_key);
  });

  await t.test('other users learn of the new user through a realm_user event', async (t) => {
    const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['realm_user'] });
    t.equal(reg.status, 200, reg.body);
    const res = await f.call(f.owner, 'POST', '/api/v1/users', { email: 'erin@example.com', password: 'erin-pw', full_name: 'Erin' });
    t.equal(res.status, 200, res.body);
    await settle();
    const events = await f.call(bob, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: -1, dont_block: true });
    t.equal(events.status, 200, events.body);
    t.equal(events.json.events.length, 1, events.body);
    const e = events.json.events[0];
    t.equal(e.type, 'realm_user');
    t.equal(e.op, 'add');
    t.equal(e.person.user_id, res.json.user_id);
    t.equal(e.person.email, 'erin@example.com');
    t.equal(e.person.full_name, 'Erin');
  });

  await t.test('a new user joins the default channels that are not archived, with subscription events', async (t) => {
    const create = async (name: string, isDefault: boolean): Promise<number> => {
      const res = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name, subscribers: [f.owner.user_id], is_default_stream: isDefault });
      t.equal(res.status, 200, res.body);
      return res.json.id;
    };
    const lobby = await create('lobby', true);
    const gone = await create('old lobby', true);
    await create('side room', false);
    t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${gone}`)).status, 200);
    const reg = await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['subscription'] });
    const res = await f.call(f.owner, 'POST', '/api/v1/users', { email: 'fay@example.com', password: 'fay-pw', full_name: 'Fay' });
    t.equal(res.status, 200, res.body);
    await settle();
    const key = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'fay@example.com', password: 'fay-pw' });
    const fay = { user_id: res.json.user_id as number, email: 'fay@example.com', api_key: key.json.api_key as string };
    const subs = await f.call(fay, 'GET', '/api/v1/users/me/subscriptions');
    t.same(subs.json.subscriptions.map((s: { stream_id: number }) => s.stream_id), [lobby], 'the default channel only');
    const events = await f.call(f.owner, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: -1, dont_block: true });
    t.match(events.json.events, [{ type: 'subscription', op: 'peer_add', stream_ids: [lobby], user_ids: [fay.user_id] }], 'subscribers of the channel learn of the new one');
  });

  await t.test('a member may not create users: 400 UNAUTHORIZED_PRINCIPAL', async (t) => {
    const before = await countUsers();
    const res = await f.call(bob, 'POST', '/api/v1/users', { email: 'mallory@example.com', password: 'pw', full_name: 'Mallory' });
    isError(t, res, 400, 'UNAUTHORIZED_PRINCIPAL', 'member creates a user');
    t.equal(await countUsers(), before, 'nobody was created');
    const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'mallory@example.com', password: 'pw' });
    t.equal(login.status, 401);
  });

  await t.test('a duplicate email is 400, whatever its case', async (t) => {
    const before = await countUsers();
    for (const email of ['bob@example.com', 'BOB@Example.com', 'owner@example.com', ' bob@example.com ']) {
      const res = await f.call(f.owner, 'POST', '/api/v1/users', { email, password: 'pw', full_name: 'Dup' });
      isError(t, res, 400, 'BAD_REQUEST', `duplicate ${JSON.stringify(email)}`);
      t.match(res.json.msg, /already in use/i, `duplicate ${JSON.stringify(email)}: msg`);
    }
    t.equal(await countUsers(), before, 'nobody was created');
  });

  await t.test('an invalid email is 400 BAD_REQUEST', async (t) => {
    const before = await countUsers();
    for (const email of ['', 'not-an-email', 'a@', '@example.com', 'a b@example.com', 'a@b@example.com', 'x'.repeat(250) + '@example.com', '<a@example.com>']) {
      const res = await f.call(f.owner, 'POST', '/api/v1/users', { email, password: 'pw', full_name: 'Bad Email' });
      isError(t, res, 400, 'BAD_REQUEST', `email ${JSON.stringify(email.slice(0, 40))}`);
    }
    t.equal(await countUsers(), before, 'nobody was created');
  });

  await t.test('an email with control, format or whitespace characters, or not exactly one address, is 400 "Invalid email"', async (t) => {
    const before = await countUsers();
    const bad = [
      'nul\u0000@example.com', 'nul@example.com\u0000', '\u0000nul@example.com', 'nul@exa\u0000mple.com',
      'bell\u0007@example.com', 'del\u007f@example.com', 'c1\u0085x@example.com', 'esc@example.com\u001b',
      'tab\there@example.com', 'line\nbreak@example.com', 'nbsp\u00a0x@example.com', 'ideo\u3000x@example.com',
      'zero\u200bwidth@example.com', 'bidi\u202eevil@example.com', 'bom\ufeff@example.com', 'ls\u2028x@example.com',
      'a@example.com,b@example.com', 'a@example.com b@example.com', 'Alice <alice@example.com>', 'a@example.com;b@example.com',
      '"quoted local"@example.com', '"a,b"@example.com', 'a..b@example.com', '.a@example.com', 'a.@example.com',
      'a@example', 'a@-example.com', 'a@example-.com', 'a@example.c', 'a@example.com-', 'a@[999.1.1.1]', 'a@[not-ip]',
      'a@exa_mple.com', 'x'.repeat(243) + '@example.com',
    ];
    // Labels are ASCII: a line separator in a TAP line would cut the report short.
    const label = (email: string): string => JSON.stringify(email.slice(0, 40)).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    for (const email of bad) {
      const res = await f.call(f.owner, 'POST', '/api/v1/users', { email, password: 'pw', full_name: 'Bad Email' });
      isError(t, res, 400, 'BAD_REQUEST', `email ${label(email)}`);
      t.match(res.json?.msg, /^Invalid email '/, `email ${label(email)}: msg`);
      t.notOk(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(res.json?.msg ?? ''), `email ${label(email)}: msg shows no control characters`);
    }
    t.equal(await countUsers(), before, 'nobody was created');
    const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'nul\u0000@example.com', password: 'pw' });
    isError(t, login, 401, 'AUTHENTICATION_FAILED', 'log in with a NUL in the username');
  });

  await t.test('valid unusual emails are accepted, as Django\'s EmailValidator accepts them', async (t) => {
    const good = ["o'neil+tag@example.com", 'dots.in.local@sub.example.co', 'x@localhost', 'lit@[127.0.0.1]', 'six@[::1]', 'idn@bücher.example', 'UPPER@EXAMPLE.ORG', ' padded@example.com '];
    for (const [i, email] of good.entries()) {
      const res = await f.call(f.owner, 'POST', '/api/v1/users', { email, password: 'pw', full_name: `Good ${i}` });
      t.equal(res.status, 200, `email ${JSON.stringify(email)}: ${res.body}`);
    }
    const padded = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'padded@example.com', password: 'pw' });
    t.equal(padded.status, 200, `the blanks around an email are not part of it: ${padded.body}`);
  });

  await t.test('an invalid email is refused before the password is hashed, and by the actor too', async (t) => {
    await t.rejects(f.runtime.execute({ type: 'CREATE_USER', org: f.org.organization_id, actor_id: null, email: 'nul\u0000@example.com', password_hash: 'x', full_name: 'N', role: 400 }), /Invalid email/);
  });

  await t.test('an empty, blank or over-long full name is 400 BAD_REQUEST', async (t) => {
    const before = await countUsers();
    const cases: Array<[string, RegExp]> = [
      ['', /short/i],
      ['   ', /short/i],
      ['x'.repeat(101), /long/i],
      ['😀'.repeat(101), /long/i],
      ['Tab\there', /invalid/i],
      ['Null\u0000byte', /invalid/i],
    ];
    for (const [i, [name, msg]] of cases.entries()) {
      const res = await f.call(f.owner, 'POST', '/api/v1/users', { email: `name${i}@example.com`, password: 'pw', full_name: name });
      isError(t, res, 400, 'BAD_REQUEST', `full_name ${JSON.stringify(name.slice(0, 12))}`);
      t.match(res.json.msg, msg, `full_name ${JSON.stringify(name.slice(0, 12))}: msg`);
    }
    t.equal(await countUsers(), before, 'nobody was created');
    const longest = await f.call(f.owner, 'POST', '/api/v1/users', { email: 'longname@example.com', password: 'pw', full_name: '😀'.repeat(100) });
    t.equal(longest.status, 200, `100 code points is the limit, not 100 UTF-16 units: ${longest.body}`);
  });

  await t.test('a missing parameter is REQUEST_VARIABLE_MISSING naming it', async (t) => {
    const full = { email: 'missing@example.com', password: 'pw', full_name: 'Missing' };
    for (const name of ['email', 'password', 'full_name'] as const) {
      const params: Record<string, string> = { ...full };
      delete params[name];
      const res = await f.call(f.owner, 'POST', '/api/v1/users', params);
      isError(t, res, 400, 'REQUEST_VARIABLE_MISSING', `no ${name}`);
      t.equal(res.json.var_name, name);
      t.equal(res.json.msg, `Missing '${name}' argument`);
    }
  });

  await t.test('needs credentials', async (t) => {
    isError(t, await f.call(null, 'POST', '/api/v1/users', { email: 'anon@example.com', password: 'pw', full_name: 'Anon' }), 401, 'UNAUTHORIZED', 'anonymous');
  });
});

t.test('POST /fetch_api_key', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);

  await t.test('the right password returns api_key, email and user_id, without credentials', async (t) => {
    const res = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password: 'owner-pass' });
    t.equal(res.status, 200, res.body);
    t.equal(res.json.result, 'success');
    t.equal(res.json.api_key, f.owner.api_key);
    t.equal(res.json.email, 'owner@example.com');
    t.equal(res.json.user_id, f.owner.user_id);
    const again = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password: 'owner-pass' });
    t.equal(again.json.api_key, res.json.api_key, 'the key is stable');
  });

  await t.test('the username is matched case-insensitively', async (t) => {
    const res = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'Owner@Example.COM', password: 'owner-pass' });
    t.equal(res.status, 200, res.body);
    t.equal(res.json.email, 'owner@example.com', 'the stored email is returned');
  });

  await t.test('a wrong password is 401 AUTHENTICATION_FAILED', async (t) => {
    for (const password of ['wrong', 'OWNER-PASS', 'owner-pass ', '']) {
      const res = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password });
      isError(t, res, 401, 'AUTHENTICATION_FAILED', `password ${JSON.stringify(password)}`);
      t.equal(res.json.msg, 'Your username or password is incorrect');
      t.notOk('api_key' in res.json);
    }
  });

  await t.test('an unknown user reads the same as a wrong password', async (t) => {
    const res = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'nobody@example.com', password: 'owner-pass' });
    isError(t, res, 401, 'AUTHENTICATION_FAILED', 'unknown user');
    t.equal(res.json.msg, 'Your username or password is incorrect');
  });

  await t.test('missing parameters are REQUEST_VARIABLE_MISSING', async (t) => {
    const noPassword = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com' });
    isError(t, noPassword, 400, 'REQUEST_VARIABLE_MISSING', 'no password');
    t.equal(noPassword.json.var_name, 'password');
    const noUser = await f.call(null, 'POST', '/api/v1/fetch_api_key', { password: 'owner-pass' });
    isError(t, noUser, 400, 'REQUEST_VARIABLE_MISSING', 'no username');
    t.equal(noUser.json.var_name, 'username');
  });

  await t.test('only POST', async (t) => {
    const res = await f.call(null, 'GET', '/api/v1/fetch_api_key', { username: 'owner@example.com', password: 'owner-pass' });
    t.equal(res.status, 405, 'a password in a URL is not accepted');
  });
});

t.test('GET /server_settings', async (t) => {
  const f: ChatFixture = await chatFixture();
  t.teardown(f.stop);

  await t.test('needs no credentials and carries Zulip\'s fields', async (t) => {
    const res = await f.call(null, 'GET', '/api/v1/server_settings', {}, { headers: { host: 'localhost:9991' } });
    t.equal(res.status, 200, res.body);
    const s = res.json;
    t.equal(s.result, 'success');
    t.equal(s.msg, '');
    t.type(s.zulip_version, 'string');
    t.ok(s.zulip_version.length > 0, 'zulip_version is not empty');
    t.ok(Number.isInteger(s.zulip_feature_level) && s.zulip_feature_level > 0, 'zulip_feature_level is a positive integer');
    t.type(s.zulip_merge_base, 'string');
    t.equal(s.service_version, s.zulip_version, 'service_version mirrors zulip_version');
    t.equal(s.service_feature_level, s.zulip_feature_level, 'service_feature_level mirrors zulip_feature_level');
    t.equal(s.service_merge_base, s.zulip_merge_base, 'service_merge_base mirrors zulip_merge_base');
    t.equal(s.realm_url, 'http://localhost:9991');
    t.equal(s.realm_uri, s.realm_url, 'realm_uri is the deprecated alias of realm_url');
    t.equal(s.realm_name, 'Test Org');
    t.type(s.realm_icon, 'string');
    t.type(s.realm_description, 'string');
    t.equal(s.realm_web_public_access_enabled, false);
    t.equal(s.push_notifications_enabled, false);
    t.equal(s.is_incompatible, false);
    t.equal(s.email_auth_enabled, true);
    t.equal(s.require_email_format_usernames, true);
    t.type(s.authentication_methods, 'object');
    t.equal(s.authentication_methods.password, true);
    t.equal(s.authentication_methods.email, true);
    for (const [k, v] of Object.entries(s.authentication_methods)) t.type(v, 'boolean', `authentication_methods.${k} is a boolean`);
    for (const k of ['password', 'dev', 'email', 'ldap', 'remoteuser']) t.ok(k in s.authentication_methods, `authentication_methods has ${k}`);
    t.ok(Array.isArray(s.external_authentication_methods));
  });

  await t.test('realm_url follows the Host header', async (t) => {
    const res = await f.call(null, 'GET', '/api/v1/server_settings', {}, { headers: { host: '127.0.0.1:8080' } });
    t.equal(res.json.realm_url, 'http://127.0.0.1:8080');
  });

  await t.test('works with credentials too, even wrong ones', async (t) => {
    t.equal((await f.call(f.owner, 'GET', '/api/v1/server_settings')).status, 200);
    t.equal((await f.call({ ...f.owner, api_key: 'wrong' }, 'GET', '/api/v1/server_settings')).status, 200);
  });

  await t.test('only GET', async (t) => {
    const res = await f.call(null, 'POST', '/api/v1/server_settings');
    t.equal(res.status, 405);
    t.same(res.json.allowed_methods, ['GET']);
  });
});

t.test('a password followed by NUL bytes does not log in (scrypt pads its HMAC key with zeros)', async (t) => {
  const f = await chatFixture();
  t.teardown(() => f.stop());
  for (const password of ['owner-pass\u0000', 'owner-pass\u0000\u0000\u0000']) {
    const res = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password });
    t.equal(res.status, 401, JSON.stringify(password));
  }
  const ok = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password: 'owner-pass' });
  t.equal(ok.status, 200);
});

t.test('GET /users/{email}', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('Alice@Example.com', 'Alice');
  const byId = await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`);
  for (const email of ['Alice@Example.com', 'alice@example.com', 'ALICE@EXAMPLE.COM', `user${alice.user_id}@127.0.0.1`]) {
    const res = await f.call(f.owner, 'GET', `/api/v1/users/${encodeURIComponent(email)}`);
    t.equal(res.status, 200, `${email}: ${res.body}`);
    t.same(res.json.user, byId.json.user, `${email} finds the same user as their id`);
  }
  isError(t, await f.call(f.owner, 'GET', '/api/v1/users/nobody@example.com'), 400, 'BAD_REQUEST', 'an unknown email');
  t.equal((await f.call(f.owner, 'GET', '/api/v1/users/nobody@example.com')).json.msg, 'No such user');
  isError(t, await f.call(f.owner, 'GET', '/api/v1/users/user99999@127.0.0.1'), 400, 'BAD_REQUEST', 'a dummy email of nobody');
  const me = await f.call(f.owner, 'GET', '/api/v1/users/me');
  t.equal(me.json.user_id, f.owner.user_id, '/users/me is still the caller, not an email lookup');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`)).json.user.email, 'Alice@Example.com', 'digits still mean an id');
  t.equal((await f.call(f.owner, 'DELETE', '/api/v1/users/alice@example.com')).status, 405, 'an email path is read-only, as in Zulip');
  t.equal((await f.call(f.owner, 'GET', '/api/v1/users/-1')).status, 404, 'a negative id is no such endpoint');
  await f.call(f.owner, 'DELETE', `/api/v1/users/${alice.user_id}`);
  const gone = await f.call(f.owner, 'GET', '/api/v1/users/alice@example.com');
  t.equal(gone.status, 200, 'a deactivated user is still found');
  t.equal(gone.json.user.is_active, false);
});

t.test('client_gravatar: null avatar URLs by default, real ones when the client asks, in fetches and events alike', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const byDefault = (await f.call(f.owner, 'GET', '/api/v1/users')).json.members[0];
  t.equal(byDefault.avatar_url, null);
  const asked = (await f.call(f.owner, 'GET', '/api/v1/users', { client_gravatar: false })).json.members[0];
  t.match(asked.avatar_url, /^https:\/\/secure\.gravatar\.com\/avatar\//);
  const qNull = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user', 'message'], fetch_event_types: ['realm_user'] })).json;
  const qUrl = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user', 'message'], fetch_event_types: ['realm_user'], client_gravatar: false })).json;
  t.equal(qNull.realm_users[0].avatar_url, null);
  t.match(qUrl.realm_users[0].avatar_url, /^https:/);
  await f.createUser('newbie@example.com', 'Newbie');
  await f.subscribe(f.owner, 'general');
  await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi' });
  const events = async (q: string) => (await f.call(f.owner, 'GET', '/api/v1/events', { queue_id: q, last_event_id: -1, dont_block: true })).json.events;
  const [nullEvents, urlEvents] = [await events(qNull.queue_id), await events(qUrl.queue_id)];
  t.equal(nullEvents.find((e: any) => e.type === 'realm_user').person.avatar_url, null);
  t.match(urlEvents.find((e: any) => e.type === 'realm_user').person.avatar_url, /^https:/);
  t.equal(nullEvents.find((e: any) => e.type === 'message').message.avatar_url, null);
  t.match(urlEvents.find((e: any) => e.type === 'message').message.avatar_url, /^https:/);
  const messages = async (params: Record<string, unknown>) => (await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0, ...params })).json.messages[0].avatar_url;
  t.equal(await messages({}), null);
  t.match(await messages({ client_gravatar: false }), /^https:/);
});

t.test("delivery emails follow each user's email_address_visibility, in every view and through events", async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  t.equal((await f.call(bob, 'PATCH', '/api/v1/settings', { email_address_visibility: 3 })).status, 200, 'bob: administrators only');
  const seen = async (who: typeof carol) => (await f.call(who, 'GET', `/api/v1/users/${bob.user_id}`)).json.user.delivery_email;
  t.same([await seen(carol), await seen(f.owner), await seen(bob)], [null, 'bob@example.com', 'bob@example.com'], 'a member does not see it; an owner and bob do');
  t.equal((await f.call(carol, 'GET', '/api/v1/users')).json.members.find((u: any) => u.user_id === bob.user_id).delivery_email, null);

  const reg = await register(f, carol, ['realm_user']);
  const emails = (r: any) => Object.fromEntries(r.realm_users.map((u: any) => [u.user_id, u.delivery_email]));
  t.equal(emails(reg)[bob.user_id], null);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${carol.user_id}`, { role: 200 })).status, 200, 'carol becomes an administrator');
  t.equal((await f.call(bob, 'PATCH', '/api/v1/settings', { email_address_visibility: 4 })).status, 200, 'bob: nobody');
  const dee = await f.createUser('dee@example.com', 'Dee');
  // Every user (their delivery emails among their fields) and carol's own flags converge.
  const events = await verifyState(t, f, carol, reg, ['realm_user'], ['realm_users', 'realm_non_active_users', 'is_admin', 'is_owner', 'is_guest', 'is_moderator']);
  t.ok(events.some((e) => e.op === 'update' && e.person.user_id === bob.user_id && e.person.delivery_email === 'bob@example.com'), 'the promotion shows carol the address');
  const state = emails(await register(f, carol, ['realm_user']));
  t.equal(state[bob.user_id], null);
  t.equal(state[dee.user_id], 'dee@example.com');
});
