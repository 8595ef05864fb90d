/**
 * Guests and `can_access_all_users_group`, path by path: with the setting at
 * `role:members`, a guest accesses themself, bots, and the users they share a
 * channel or a direct message conversation with. Each path is checked with the
 * restriction off and on, for the guest and for a member.
 */
import t from 'tap';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials } from './helpers.js';

/** The people of one test organization, seen from the guest. */
interface World {
  f: ChatFixture;
  guest: Credentials;
  /** Shares the channel "shared" with the guest. */
  alice: Credentials;
  /** Shares nothing with the guest. */
  bob: Credentials;
  /** Shares a direct message conversation with the guest. */
  carol: Credentials;
  bot: number;
}

/** An organization with the restriction on (`role:members`, group 6) or off (the default `role:everyone`). */
async function world(restricted: boolean): Promise<World> {
  const f = await chatFixture();
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  const guest = await withRole(f, 'guest@example.com', 600);
  await f.subscribe(f.owner, 'shared', [guest.user_id, alice.user_id]);
  await f.subscribe(f.owner, 'others', [bob.user_id]);
  const dm = await f.call(carol, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([guest.user_id]), content: 'hi' });
  if (dm.status !== 200) throw new Error(dm.body);
  const bot = await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' });
  if (bot.status !== 200) throw new Error(bot.body);
  if (restricted) {
    const patched = await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: 6 }) });
    if (patched.status !== 200) throw new Error(patched.body);
  }
  return { f, guest, alice, bob, carol, bot: bot.json.user_id };
}

const cases = [false, true] as const;

t.test('GET /users: a limited guest lists only the users they may access', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const ids = async (who: Credentials) => ((await w.f.call(who, 'GET', '/api/v1/users')).json.members as Array<{ user_id: number }>).map((m) => m.user_id).sort((a, b) => a - b);
    const everyone = [w.f.owner.user_id, w.alice.user_id, w.bob.user_id, w.carol.user_id, w.guest.user_id, w.bot].sort((a, b) => a - b);
    t.same(await ids(w.guest), restricted ? [w.alice.user_id, w.carol.user_id, w.guest.user_id, w.bot].sort((a, b) => a - b) : everyone, `restricted=${restricted}: guest`);
    t.same(await ids(w.alice), everyone, `restricted=${restricted}: a member sees everyone`);
    const some = await w.f.call(w.guest, 'GET', '/api/v1/users', { user_ids: JSON.stringify([w.alice.user_id, w.bob.user_id]) });
    t.same(some.json.members.map((m: { user_id: number }) => m.user_id), restricted ? [w.alice.user_id] : [w.alice.user_id, w.bob.user_id], `restricted=${restricted}: user_ids`);
    w.f.stop();
  }
});

t.test('GET /users/{id} and /users/{email}: "Insufficient permission" for a user the guest may not access', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    for (const path of [`/api/v1/users/${w.bob.user_id}`, '/api/v1/users/bob@example.com', `/api/v1/users/user${w.bob.user_id}@parley.invalid`]) {
      const r = await w.f.call(w.guest, 'GET', path);
      if (restricted) t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Insufficient permission'], path);
      else t.equal(r.json.user?.full_name, 'Bob', path);
      t.equal((await w.f.call(w.alice, 'GET', path)).json.user?.full_name, 'Bob', `${path}: a member`);
    }
    for (const id of [w.alice.user_id, w.carol.user_id, w.bot, w.guest.user_id]) {
      t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${id}`)).status, 200, `restricted=${restricted}: ${id} is accessible`);
    }
    t.equal((await w.f.call(w.guest, 'GET', '/api/v1/users/nobody@example.com')).json.msg, 'No such user', 'unknown stays unknown');
    w.f.stop();
  }
});

t.test("register: realm_users names an inaccessible user as Zulip's \"Unknown user\", unless user_list_incomplete", async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const users = async (who: Credentials, caps?: object) => {
      const r = await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), ...(caps ? { client_capabilities: JSON.stringify(caps) } : {}) });
      return r.json.realm_users as Array<Record<string, unknown>>;
    };
    const bob = (await users(w.guest)).find((u) => u.user_id === w.bob.user_id);
    if (restricted) {
      t.same(bob, {
        email: `user${w.bob.user_id}@parley.invalid`, user_id: w.bob.user_id, avatar_version: 1, is_admin: false, is_owner: false, is_guest: false,
        role: 400, is_bot: false, full_name: 'Unknown user', timezone: '', is_active: true, date_joined: '1970-01-01T00:00:00+00:00',
        delivery_email: null, avatar_url: '/static/images/unknown-user-avatar.png', profile_data: {}, is_imported_stub: false,
      }, 'the placeholder');
      t.notOk((await users(w.guest, { user_list_incomplete: true })).some((u) => u.user_id === w.bob.user_id), 'left out with user_list_incomplete');
      const owner = (await users(w.guest)).find((u) => u.user_id === w.f.owner.user_id);
      t.equal(owner?.full_name, 'Unknown user', 'the owner shares nothing with the guest either');
    } else {
      t.equal(bob?.full_name, 'Bob', 'unrestricted: the real user');
    }
    for (const id of [w.alice.user_id, w.carol.user_id]) t.not((await users(w.guest)).find((u) => u.user_id === id)?.full_name, 'Unknown user', `${id} is named`);
    t.equal((await users(w.alice)).find((u) => u.user_id === w.bob.user_id)?.full_name, 'Bob', 'a member sees Bob');
    w.f.stop();
  }
});

t.test('direct messages: a limited guest may not address a user they may not access', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const send = (who: Credentials, to: number[]) => w.f.call(who, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(to), content: 'hello' });
    for (const to of [[w.bob.user_id], [w.alice.user_id, w.bob.user_id]]) {
      const r = await send(w.guest, to);
      if (restricted) t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'You do not have permission to access some of the recipients.'], `restricted: to ${to}`);
      else t.equal(r.status, 200, `unrestricted: to ${to}`);
    }
    for (const to of [[w.alice.user_id], [w.carol.user_id], [w.bot], [w.guest.user_id], [w.alice.user_id, w.carol.user_id]]) {
      t.equal((await send(w.guest, to)).status, 200, `restricted=${restricted}: to ${to} is allowed`);
    }
    // A member may write to the guest, who then shares that conversation with them.
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200, 'the owner writes to the guest');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.f.owner.user_id}`)).status, 200, 'and is accessible to the guest from then on');
    t.equal((await send(w.guest, [w.f.owner.user_id])).status, 200, 'who may answer');
    w.f.stop();
  }
});

t.test('typing: a limited guest may not notify a user they may not access', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const typing = (who: Credentials, to: number[]) => w.f.call(who, 'POST', '/api/v1/typing', { op: 'start', to: JSON.stringify(to) });
    const r = await typing(w.guest, [w.bob.user_id]);
    if (restricted) t.same([r.status, r.json.msg], [400, 'You do not have permission to access some of the recipients.'], 'restricted: refused');
    else t.equal(r.status, 200, 'unrestricted: sent');
    for (const to of [[w.alice.user_id], [w.carol.user_id, w.alice.user_id], [w.bot]]) t.equal((await typing(w.guest, to)).status, 200, `restricted=${restricted}: to ${to}`);
    t.equal((await typing(w.alice, [w.bob.user_id])).status, 200, 'a member notifies anyone');
    t.equal((await typing(w.guest, [999])).json.msg, 'Invalid user ID 999', 'an unknown id first');
    w.f.stop();
  }
});

t.test('user status: a limited guest sees, fetches and hears of the statuses of the users they may access only', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const q = (await w.f.call(w.guest, 'POST', '/api/v1/register', { event_types: JSON.stringify(['user_status']) })).json.queue_id;
    const qMember = (await w.f.call(w.alice, 'POST', '/api/v1/register', { event_types: JSON.stringify(['user_status']) })).json.queue_id;
    for (const who of [w.alice, w.bob]) t.equal((await w.f.call(who, 'POST', '/api/v1/users/me/status', { status_text: `busy ${who.user_id}` })).status, 200);
    t.equal((await w.f.call(w.bob, 'PATCH', '/api/v1/settings', { presence_enabled: false })).status, 200);
    const heard = (await queueEvents(w.f, w.guest, q, 'user_status')).map((e) => e.user_id);
    t.same(heard, restricted ? [w.alice.user_id] : [w.alice.user_id, w.bob.user_id, w.bob.user_id], `restricted=${restricted}: events`);
    t.same((await queueEvents(w.f, w.alice, qMember, 'user_status')).map((e) => e.user_id), [w.alice.user_id, w.bob.user_id, w.bob.user_id], 'a member hears of everyone');
    const state = (await w.f.call(w.guest, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['user_status']) })).json.user_status;
    t.same(Object.keys(state).map(Number), restricted ? [w.alice.user_id] : [w.alice.user_id, w.bob.user_id], `restricted=${restricted}: register`);
    const bobs = await w.f.call(w.guest, 'GET', `/api/v1/users/${w.bob.user_id}/status`);
    if (restricted) t.same([bobs.status, bobs.json.msg], [400, 'Insufficient permission'], 'restricted: refused');
    else t.same(bobs.json.status, { away: true, status_text: `busy ${w.bob.user_id}` }, 'unrestricted: fetched');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.alice.user_id}/status`)).json.status?.status_text, `busy ${w.alice.user_id}`, 'alice is accessible');
    t.equal((await w.f.call(w.alice, 'GET', `/api/v1/users/${w.bob.user_id}/status`)).status, 200, 'a member fetches anyone');
    w.f.stop();
  }
});

/** Zulip's "Unknown user" placeholder, as `realm_users` names an inaccessible user. */
function placeholder(id: number): Record<string, unknown> {
  return {
    email: `user${id}@parley.invalid`, user_id: id, avatar_version: 1, is_admin: false, is_owner: false, is_guest: false,
    role: 400, is_bot: false, full_name: 'Unknown user', timezone: '', is_active: true, date_joined: '1970-01-01T00:00:00+00:00',
    delivery_email: null, avatar_url: '/static/images/unknown-user-avatar.png', profile_data: {}, is_imported_stub: false,
  };
}

/** A guest's `realm_users` with `realm_user` events applied, as a client keeps it (Zulip's `apply_event`). */
function applyRealmUser(users: Array<Record<string, unknown>>, events: any[]): Array<Record<string, unknown>> {
  const byId = new Map(users.map((u) => [u.user_id as number, { ...u }]));
  for (const e of events) {
    if (e.op === 'add') byId.set(e.person.user_id, e.person);
    else if (e.op === 'remove') byId.set(e.person.user_id, placeholder(e.person.user_id));
    else if (e.op === 'update') {
      const u = byId.get(e.person.user_id);
      if (!u) throw new Error(`update of a user the client does not know: ${JSON.stringify(e)}`);
      const { new_email: email, ...rest } = e.person;
      Object.assign(u, rest, email !== undefined ? { email } : {});
    }
  }
  return [...byId.values()].sort((a, b) => (a.user_id as number) - (b.user_id as number));
}

t.test('realm_user events: a limited guest hears of the users they may access, and of others as "Unknown user"', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
    const before = await register(w.guest);
    const member = await register(w.alice);
    for (const who of [w.alice, w.bob]) t.equal((await w.f.call(who, 'PATCH', '/api/v1/settings', { full_name: `Renamed ${who.user_id}`, timezone: 'Europe/Paris' })).status, 200);
    t.equal((await w.f.call(w.f.owner, 'PATCH', `/api/v1/users/${w.bob.user_id}`, { role: 300 })).status, 200);
    t.equal((await w.f.call(w.f.owner, 'PATCH', `/api/v1/users/${w.alice.user_id}`, { role: 300 })).status, 200);
    const dave = await w.f.createUser('dave@example.com', 'Dave');
    t.equal((await w.f.call(w.f.owner, 'DELETE', `/api/v1/users/${w.bob.user_id}`)).status, 200);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    const about = (id: number) => events.filter((e) => e.person.user_id === id);
    t.equal(about(w.bob.user_id).length, restricted ? 0 : 4, `restricted=${restricted}: events about bob`);
    t.equal(about(w.alice.user_id).length, 3, 'events about alice, who shares a channel');
    const daves = about(dave.user_id);
    t.equal(daves.length, 1, 'one add for a new user');
    t.equal(daves[0].person.full_name, restricted ? 'Unknown user' : 'Dave', `restricted=${restricted}: the new user's name`);
    t.equal((await queueEvents(w.f, w.alice, member.queue_id, 'realm_user')).filter((e) => e.person.user_id === w.bob.user_id).length, 4, 'a member hears all about bob');
    const after = await register(w.guest);
    const apply = (state: any) => applyRealmUser([...state.realm_users, ...state.realm_non_active_users], events);
    t.same(apply(before), applyRealmUser([...after.realm_users, ...after.realm_non_active_users], []), `restricted=${restricted}: events converge on a fresh register`);
    w.f.stop();
  }
});

t.test('a direct message to a limited guest from someone they shared nothing with: the guest learns of its participants first', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user', 'message']), client_gravatar: 'false' })).json;
    const before = await register(w.guest);
    const send = (who: Credentials, to: number[]) => w.f.call(who, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(to), content: 'hello' });
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200);
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200, 'a second message');
    t.equal((await send(w.alice, [w.guest.user_id, w.bob.user_id])).status, 200, 'a group with bob, from alice');
    const events = await queueEvents(w.f, w.guest, before.queue_id);
    const shape = events.map((e) => (e.type === 'realm_user' ? `add ${e.person.user_id} ${e.person.full_name}` : `message ${e.message.sender_id}`));
    t.same(shape, restricted
      ? [`add ${w.f.owner.user_id} Olivia Owner`, `message ${w.f.owner.user_id}`, `message ${w.f.owner.user_id}`, `add ${w.bob.user_id} Bob`, `message ${w.alice.user_id}`]
      : [`message ${w.f.owner.user_id}`, `message ${w.f.owner.user_id}`, `message ${w.alice.user_id}`], `restricted=${restricted}: events in order`);
    const after = await register(w.guest);
    const applied = applyRealmUser([...before.realm_users, ...before.realm_non_active_users], events.filter((e) => e.type === 'realm_user'));
    t.same(applied, applyRealmUser([...after.realm_users, ...after.realm_non_active_users], []), `restricted=${restricted}: converges on a fresh register`);
    w.f.stop();
  }
});

t.test('subscriptions: a limited guest learns of the users they come to share a channel with', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
    const sharedId = (await w.f.call(w.f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'shared' })).json.stream_id;
    t.equal((await w.f.call(w.f.owner, 'POST', '/api/v1/default_streams', { stream_id: sharedId })).status, 200);
    const before = await register(w.guest);
    t.equal((await w.f.subscribe(w.f.owner, 'shared', [w.bob.user_id])).status, 200, 'bob joins the guest');
    t.equal((await w.f.subscribe(w.f.owner, 'shared', [w.bob.user_id])).status, 200, 'again: nothing new');
    const erin = await w.f.createUser('erin@example.com', 'Erin');
    t.equal((await w.f.subscribe(w.f.owner, 'third', [w.guest.user_id, w.f.owner.user_id])).status, 200, 'the guest joins the owner');
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    t.same(events.map((e) => `${e.person.user_id} ${e.person.full_name}`), restricted
      ? [`${w.bob.user_id} Bob`, `${erin.user_id} Unknown user`, `${erin.user_id} Erin`, `${w.f.owner.user_id} Olivia Owner`]
      : [`${erin.user_id} Erin`], `restricted=${restricted}: adds`);
    const after = await register(w.guest);
    t.same(applyRealmUser([...before.realm_users, ...before.realm_non_active_users], events), applyRealmUser([...after.realm_users, ...after.realm_non_active_users], []), `restricted=${restricted}: converges on a fresh register`);
    w.f.stop();
  }
});

t.test('unsubscribing: limited guests who no longer share anything with the user get a realm_user remove', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
    t.equal((await w.f.subscribe(w.f.owner, 'shared', [w.carol.user_id])).status, 200, 'carol joins too');
    const before = await register(w.guest);
    for (const who of [w.alice, w.carol]) t.equal((await w.f.call(who, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(['shared']) })).status, 200);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    t.same(events, restricted ? [{ type: 'realm_user', op: 'remove', person: { user_id: w.alice.user_id, full_name: 'Unknown user' } }] : [], `restricted=${restricted}: alice is removed, carol (a direct message) stays`);
    const after = await register(w.guest);
    t.same(applyRealmUser([...before.realm_users, ...before.realm_non_active_users], events), applyRealmUser([...after.realm_users, ...after.realm_non_active_users], []), `restricted=${restricted}: converges on a fresh register`);
    w.f.stop();
  }
});

t.test('deactivation: limited guests who shared only channels with the user get a realm_user remove, those in a conversation the update', async (t) => {
  for (const restricted of cases) {
    const w = await world(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
    t.equal((await w.f.subscribe(w.f.owner, 'shared', [w.carol.user_id])).status, 200, 'carol shares the channel too');
    const before = await register(w.guest);
    for (const who of [w.alice, w.carol]) t.equal((await w.f.call(w.f.owner, 'DELETE', `/api/v1/users/${who.user_id}`)).status, 200);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    t.same(events, [
      restricted
        ? { type: 'realm_user', op: 'remove', person: { user_id: w.alice.user_id, full_name: 'Unknown user' } }
        : { type: 'realm_user', op: 'update', person: { user_id: w.alice.user_id, is_active: false } },
      { type: 'realm_user', op: 'update', person: { user_id: w.carol.user_id, is_active: false } },
    ], `restricted=${restricted}: events`);
    const after = await register(w.guest);
    t.same(applyRealmUser([...before.realm_users, ...before.realm_non_active_users], events), applyRealmUser([...after.realm_users, ...after.realm_non_active_users], []), `restricted=${restricted}: converges on a fresh register`);
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.alice.user_id}`)).status, restricted ? 400 : 200, 'alice is out of reach');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.carol.user_id}`)).status, 200, 'carol is not');
    w.f.stop();
  }
});
