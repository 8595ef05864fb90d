/**
 * Guests and `can_access_all_users_group`, path by path: with the setting at
 * `role:members`, a guest accesses themself, bots, and the users they share a
 * channel or a direct message conversation with. Each path is checked with the
 * restriction off and on, for the guest and for a member.
 */
import t from 'tap';
import { Role } from '../actors/shared/types.js';
import { queueEvents, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';
import { applyEvent } from './client_model.js';

/** The people of one test organization, seen from the guest. */
interface World {
  f: ChatFixture;
  guest: Credentials;
  /** Shares the channel "shared" with the guest. */
  alice: Credentials;
  /** Shares nothing with the guest. */
  bob: Credentials;
  /** Shares a group direct message conversation (with the bot) with the guest. */
  carol: Credentials;
  bot: number;
}

/** An organization with the restriction on (`role:members`, group 6) or off (the default `role:everyone`). */
async function organization(restricted: boolean): Promise<World> {
  const { f, alice, bob, carol, guest } = await world({
    users: { alice: 'Alice', bob: 'Bob', carol: 'Carol', guest: 'guest' },
    roles: { guest: Role.GUEST },
    channels: { shared: ['guest', 'alice'], others: ['bob'] },
  });
  const bot = await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' });
  if (bot.status !== 200) throw new Error(bot.body);
  const dm = await f.call(carol, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([guest.user_id, bot.json.user_id]), content: 'hi' });
  if (dm.status !== 200) throw new Error(dm.body);
  if (restricted) {
    const patched = await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: 6 }) });
    if (patched.status !== 200) throw new Error(patched.body);
  }
  return { f, guest, alice, bob, carol, bot: bot.json.user_id };
}

const cases = [false, true] as const;

t.test('GET /users: a limited guest lists only the users they may access', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
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
    const w = await organization(restricted);
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
    const w = await organization(restricted);
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
    const w = await organization(restricted);
    const send = (who: Credentials, to: number[]) => w.f.call(who, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(to), content: 'hello' });
    for (const to of [[w.bob.user_id], [w.alice.user_id, w.bob.user_id]]) {
      const r = await send(w.guest, to);
      if (restricted) t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'You do not have permission to access some of the recipients.'], `restricted: to ${to}`);
      else t.equal(r.status, 200, `unrestricted: to ${to}`);
    }
    for (const to of [[w.alice.user_id], [w.carol.user_id], [w.bot], [w.guest.user_id], [w.alice.user_id, w.carol.user_id]]) {
      t.equal((await send(w.guest, to)).status, 200, `restricted=${restricted}: to ${to} is allowed`);
    }
    // A 1:1 conversation grants no access (Zulip counts channels and group conversations
    // only: a 1:1 message's recipient is PERSONAL); a group conversation does.
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200, 'the owner writes to the guest');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.f.owner.user_id}`)).status, restricted ? 400 : 200, `restricted=${restricted}: the owner stays out of reach`);
    t.equal((await send(w.guest, [w.f.owner.user_id])).status, restricted ? 400 : 200, `restricted=${restricted}: the guest may not answer 1:1`);
    t.equal((await send(w.f.owner, [w.guest.user_id, w.alice.user_id])).status, 200, 'the owner writes to the guest and alice');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.f.owner.user_id}`)).status, 200, 'the owner is accessible from then on');
    t.equal((await send(w.guest, [w.f.owner.user_id])).status, 200, 'and the guest may answer, 1:1 too');
    w.f.stop();
  }
});

t.test('typing: a limited guest may not notify a user they may not access', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
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
    const w = await organization(restricted);
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

/** A register's users, active and not, in user id order. */
function usersOf(state: any): Record<string, unknown[]> {
  const byId = (list: any[]) => [...list].sort((x, y) => x.user_id - y.user_id);
  return { realm_users: byId(state.realm_users), realm_non_active_users: byId(state.realm_non_active_users) };
}

/** `who`'s register with `events` applied by the client model (Zulip's `apply_event`; an inaccessible user on the default organization's domain). */
function applied(before: any, events: any[], who: Credentials): Record<string, unknown[]> {
  const state = structuredClone(before);
  for (const e of events) applyEvent(state, e, { me: who.user_id, fake_email_domain: 'parley.invalid' });
  return usersOf(state);
}

t.test('realm_user events: a limited guest hears of the users they may access, and of others as "Unknown user"', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
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
    t.same(applied(before, events, w.guest), usersOf(after), `restricted=${restricted}: events converge on a fresh register`);
    w.f.stop();
  }
});

t.test('a direct message to a limited guest from someone they shared nothing with: the guest learns of its participants first', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user', 'message']), client_gravatar: 'false' })).json;
    const before = await register(w.guest);
    const send = (who: Credentials, to: number[]) => w.f.call(who, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify(to), content: 'hello' });
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200);
    t.equal((await send(w.f.owner, [w.guest.user_id])).status, 200, 'a second message');
    t.equal((await send(w.alice, [w.guest.user_id, w.bob.user_id])).status, 200, 'a group with bob, from alice');
    const events = await queueEvents(w.f, w.guest, before.queue_id);
    const shape = events.map((e) => (e.type === 'realm_user' ? `add ${e.person.user_id} ${e.person.full_name}` : `message ${e.message.sender_id}`));
    // Zulip's get_recipients_for_user_creation_events: a 1:1 sender the guest may not
    // access is sent before each message, since a 1:1 conversation grants no access.
    t.same(shape, restricted
      ? [`add ${w.f.owner.user_id} Olivia Owner`, `message ${w.f.owner.user_id}`, `add ${w.f.owner.user_id} Olivia Owner`, `message ${w.f.owner.user_id}`, `add ${w.bob.user_id} Bob`, `message ${w.alice.user_id}`]
      : [`message ${w.f.owner.user_id}`, `message ${w.f.owner.user_id}`, `message ${w.alice.user_id}`], `restricted=${restricted}: events in order`);
    const after = await register(w.guest);
    const fresh = usersOf(after);
    t.equal((fresh.realm_users as any[]).find((u) => u.user_id === w.f.owner.user_id)?.full_name, restricted ? 'Unknown user' : 'Olivia Owner', `restricted=${restricted}: a fresh register still hides the 1:1 sender, as Zulip's`);
    const others = (users: Record<string, unknown[]>) => Object.fromEntries(Object.entries(users).map(([k, list]) => [k, list.filter((u: any) => u.user_id !== w.f.owner.user_id)]));
    t.same(others(applied(before, events.filter((e) => e.type === 'realm_user'), w.guest)), others(fresh), `restricted=${restricted}: converges on a fresh register for the others (bob through the group)`);
    w.f.stop();
  }
});

t.test('subscriptions: a limited guest learns of the users they come to share a channel with', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
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
    t.same(applied(before, events, w.guest), usersOf(after), `restricted=${restricted}: converges on a fresh register`);
    w.f.stop();
  }
});

t.test('unsubscribing: limited guests who no longer share anything with the user get a realm_user remove', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
    const register = async (who: Credentials) => (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
    t.equal((await w.f.subscribe(w.f.owner, 'shared', [w.carol.user_id])).status, 200, 'carol joins too');
    const before = await register(w.guest);
    for (const who of [w.alice, w.carol]) t.equal((await w.f.call(who, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(['shared']) })).status, 200);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    t.same(events, restricted ? [{ type: 'realm_user', op: 'remove', person: { user_id: w.alice.user_id, full_name: 'Unknown user' } }] : [], `restricted=${restricted}: alice is removed, carol (a direct message) stays`);
    const after = await register(w.guest);
    t.same(applied(before, events, w.guest), usersOf(after), `restricted=${restricted}: converges on a fresh register`);
    w.f.stop();
  }
});

t.test('deactivation: limited guests who shared only channels with the user get a realm_user remove, those in a conversation the update', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
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
    t.same(applied(before, events, w.guest), usersOf(after), `restricted=${restricted}: converges on a fresh register`);
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.alice.user_id}`)).status, restricted ? 400 : 200, 'alice is out of reach');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.carol.user_id}`)).status, 200, 'carol is not');
    w.f.stop();
  }
});

/** A guest's register with realm_user state and events. */
async function registerUsers(w: World, who: Credentials): Promise<any> {
  return (await w.f.call(who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']), client_gravatar: 'false' })).json;
}

/** Whether the realm_user state of `before` with `events` applied equals a fresh register's. */
async function converges(w: World, who: Credentials, before: any, events: any[]): Promise<[unknown, unknown]> {
  const after = await registerUsers(w, who);
  return [applied(before, events, who), usersOf(after)];
}

/** A realm_user event in short: `op user_id` and the name an add carries. */
const brief = (e: any): string => `${e.op} ${e.person.user_id}${e.op === 'add' ? ` ${e.person.full_name}` : e.op === 'update' ? ` ${JSON.stringify({ ...e.person, user_id: undefined })}` : ''}`;

t.test('reactivation: guests who may access the user hear of it; those who lost them at deactivation get the user back', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
    const before = await registerUsers(w, w.guest);
    const member = await registerUsers(w, w.carol);
    for (const id of [w.alice.user_id, w.bob.user_id, w.bot]) t.equal((await w.f.call(w.f.owner, 'DELETE', `/api/v1/users/${id}`)).status, 200, `deactivate ${id}`);
    for (const id of [w.alice.user_id, w.bob.user_id, w.bot]) t.equal((await w.f.call(w.f.owner, 'POST', `/api/v1/users/${id}/reactivate`)).status, 200, `reactivate ${id}`);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    const off = '{"is_active":false}';
    const on = '{"is_active":true}';
    // Zulip's do_reactivate_user: `update` to get_user_ids_who_can_access_user only, so a
    // guest who may not access bob hears nothing of him; bots are accessible to all.
    t.same(events.map(brief), restricted
      ? [`remove ${w.alice.user_id}`, `update ${w.bot} ${off}`, `add ${w.alice.user_id} Alice`, `update ${w.bot} ${on}`]
      : [`update ${w.alice.user_id} ${off}`, `update ${w.bob.user_id} ${off}`, `update ${w.bot} ${off}`, `update ${w.alice.user_id} ${on}`, `update ${w.bob.user_id} ${on}`, `update ${w.bot} ${on}`], `restricted=${restricted}: the guest's events`);
    t.equal(events.find((e) => e.op === 'add')?.person.is_active, restricted ? true : undefined, 'the returning user comes back active');
    const [applied, fresh] = await converges(w, w.guest, before, events);
    t.same(applied, fresh, `restricted=${restricted}: converges on a fresh register`);
    const memberEvents = await queueEvents(w.f, w.carol, member.queue_id, 'realm_user');
    t.equal(memberEvents.filter((e) => e.op === 'update').length, 6, 'a member hears every deactivation and reactivation');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.alice.user_id}`)).status, 200, 'alice is accessible again');
    t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.bob.user_id}`)).status, restricted ? 400 : 200, 'bob is as before');
    w.f.stop();
  }
});

t.test('can_access_all_users_group changes: each guest is told the users they lose or gain, and converges', async (t) => {
  const w = await organization(false);
  const hidden = [w.f.owner.user_id, w.bob.user_id].sort((a, b) => a - b);
  t.equal((await w.f.call(w.f.owner, 'DELETE', `/api/v1/users/${w.bob.user_id}`)).status, 200, 'bob is deactivated: hidden all the same');
  for (const [to, op] of [[6, 'remove'], [7, 'add']] as const) {
    const before = await registerUsers(w, w.guest);
    const member = await registerUsers(w, w.alice);
    t.equal((await w.f.call(w.f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: to }) })).status, 200);
    const events = await queueEvents(w.f, w.guest, before.queue_id, 'realm_user');
    t.same(events.map((e) => e.op), [op, op], `to ${to}: one ${op} per user the guest shares nothing with`);
    t.same(events.map((e) => e.person.user_id).sort((a, b) => a - b), hidden, `to ${to}: the owner and bob`);
    if (op === 'add') t.same(events.map((e) => e.person.full_name).sort(), ['Bob', 'Olivia Owner'], 'the real users');
    const [applied, fresh] = await converges(w, w.guest, before, events);
    t.same(applied, fresh, `to ${to}: converges on a fresh register`);
    t.same(await queueEvents(w.f, w.alice, member.queue_id, 'realm_user'), [], `to ${to}: a member is told nothing`);
    t.equal((await w.f.call(w.f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: to }) })).json.result, 'success', 'again: no change');
    t.same(await queueEvents(w.f, w.guest, before.queue_id, 'realm_user'), events, 'and no more events');
  }
  w.f.stop();
});

t.test('role changes: a user becoming a limited guest loses the users they share nothing with, a promoted guest gains them', async (t) => {
  const w = await organization(true);
  const demoted = await registerUsers(w, w.carol);
  t.equal((await w.f.call(w.f.owner, 'PATCH', `/api/v1/users/${w.carol.user_id}`, { role: 600 })).status, 200, 'carol becomes a guest');
  const carolEvents = await queueEvents(w.f, w.carol, demoted.queue_id, 'realm_user');
  t.same(carolEvents.filter((e) => e.op === 'remove').map((e) => e.person.user_id).sort((a, b) => a - b), [w.f.owner.user_id, w.alice.user_id, w.bob.user_id].sort((a, b) => a - b), 'carol shares only a group conversation with the guest');
  const [applied, fresh] = await converges(w, w.carol, demoted, carolEvents);
  t.same(applied, fresh, 'the demoted user converges on a fresh register');

  const promoted = await registerUsers(w, w.guest);
  t.equal((await w.f.call(w.f.owner, 'PATCH', `/api/v1/users/${w.guest.user_id}`, { role: 400 })).status, 200, 'the guest becomes a member');
  const guestEvents = await queueEvents(w.f, w.guest, promoted.queue_id, 'realm_user');
  t.same(guestEvents.filter((e) => e.op === 'add').map((e) => `${e.person.user_id} ${e.person.full_name}`).sort(), [`${w.f.owner.user_id} Olivia Owner`, `${w.bob.user_id} Bob`].sort(), 'the users the guest could not access');
  t.same(guestEvents.filter((e) => e.op === 'update').map((e) => e.person), [{ user_id: w.guest.user_id, role: 400 }], 'and the role update');
  const [applied2, fresh2] = await converges(w, w.guest, promoted, guestEvents);
  t.same(applied2, fresh2, 'the promoted guest converges on a fresh register');
  const other = await registerUsers(w, w.alice);
  t.equal((await w.f.call(w.f.owner, 'PATCH', `/api/v1/users/${w.alice.user_id}`, { role: 300 })).status, 200, 'a member becomes a moderator');
  t.same((await queueEvents(w.f, w.alice, other.queue_id, 'realm_user')).map((e) => e.op), ['update'], 'nothing else');
  w.f.stop();
});

t.test('message payloads: a sender a limited guest may not access is "Unknown user" in GET /messages and in channel message events', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
    const q = (await w.f.call(w.guest, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']) })).json.queue_id;
    const qMember = (await w.f.call(w.alice, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']) })).json.queue_id;
    const post = async (who: Credentials, content: string) => (await w.f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: 'shared', topic: 't', content })).json.id as number;
    const fromBob = await post(w.bob, 'from outside the channel');
    const fromAlice = await post(w.alice, 'from a subscriber');
    const dm = (await w.f.call(w.f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([w.guest.user_id]), content: '1:1' })).json.id as number;
    const unknown = { sender_full_name: 'Unknown user', sender_email: `user${w.bob.user_id}@parley.invalid`, avatar_url: '/static/images/unknown-user-avatar.png' };
    const named = (m: any) => ({ sender_full_name: m.sender_full_name, sender_email: m.sender_email, avatar_url: m.avatar_url });
    const events = await queueEvents(w.f, w.guest, q, 'message');
    const bobEvent = events.find((e) => e.message.id === fromBob).message;
    if (restricted) t.same(named(bobEvent), unknown, 'restricted: the event hides bob (Zulip: sender not subscribed to the channel)');
    else t.equal(bobEvent.sender_full_name, 'Bob', 'unrestricted: the event names bob');
    t.equal(events.find((e) => e.message.id === fromAlice).message.sender_full_name, 'Alice', 'a subscriber is named');
    t.equal(events.find((e) => e.message.id === dm).message.sender_full_name, 'Olivia Owner', 'a 1:1 sender is named in the event, after the realm_user add');
    t.equal((await queueEvents(w.f, w.alice, qMember, 'message')).find((e) => e.message.id === fromBob).message.sender_full_name, 'Bob', 'a member sees bob');

    const fetched = (await w.f.call(w.guest, 'GET', '/api/v1/messages', { anchor: 'oldest', num_after: 100, narrow: JSON.stringify([]), client_gravatar: 'false' })).json.messages as any[];
    const byId = (id: number) => fetched.find((m) => m.id === id);
    if (restricted) {
      t.same(named(byId(fromBob)), unknown, 'restricted: GET /messages hides bob');
      t.same(named(byId(dm)), { sender_full_name: 'Unknown user', sender_email: `user${w.f.owner.user_id}@parley.invalid`, avatar_url: '/static/images/unknown-user-avatar.png' }, 'and the 1:1 sender, whom a 1:1 conversation does not make accessible');
    } else {
      t.equal(byId(fromBob).sender_full_name, 'Bob', 'unrestricted: GET /messages names bob');
      t.equal(byId(dm).sender_full_name, 'Olivia Owner', 'and the 1:1 sender');
    }
    t.equal(byId(fromAlice).sender_full_name, 'Alice', 'alice is named');
    const one = (await w.f.call(w.guest, 'GET', `/api/v1/messages/${fromBob}`)).json.message;
    t.equal(one.sender_full_name, restricted ? 'Unknown user' : 'Bob', `restricted=${restricted}: GET /messages/{id}`);
    t.equal((await w.f.call(w.alice, 'GET', `/api/v1/messages/${fromBob}`)).json.message.sender_full_name, 'Bob', 'a member fetches bob');
    w.f.stop();
  }
});

t.test('scheduled messages and drafts to users a limited guest may not access', async (t) => {
  for (const restricted of cases) {
    const w = await organization(restricted);
    const at = Math.floor(w.f.clock.t / 1000) + 3600;
    const schedule = (to: number[]) => w.f.call(w.guest, 'POST', '/api/v1/scheduled_messages', { type: 'direct', to: JSON.stringify(to), content: 'later', scheduled_delivery_timestamp: at });
    // Zulip's check_schedule_message runs check_message, and so check_sender_can_access_recipients.
    const toBob = await schedule([w.bob.user_id]);
    if (restricted) t.same([toBob.status, toBob.json.msg], [400, 'You do not have permission to access some of the recipients.'], 'restricted: scheduling to bob is refused');
    else t.equal(toBob.status, 200, 'unrestricted: scheduled');
    const toAlice = await schedule([w.alice.user_id]);
    t.equal(toAlice.status, 200, 'to alice, who shares a channel');
    const edited = await w.f.call(w.guest, 'PATCH', `/api/v1/scheduled_messages/${toAlice.json.scheduled_message_id}`, { to: JSON.stringify([w.bob.user_id]) });
    t.equal(edited.status, restricted ? 400 : 200, `restricted=${restricted}: readdressing to bob`);
    // Alice leaves the channel: at delivery the guest may no longer address her.
    t.equal((await w.f.call(w.alice, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(['shared']) })).status, 200);
    if (!restricted) t.equal((await w.f.call(w.guest, 'PATCH', `/api/v1/scheduled_messages/${toAlice.json.scheduled_message_id}`, { to: JSON.stringify([w.alice.user_id]) })).status, 200, 'back to alice');
    w.f.clock.t += 3600_000;
    await w.f.runtime.scheduled.sweep();
    const listed = (await w.f.call(w.guest, 'GET', '/api/v1/scheduled_messages')).json.scheduled_messages as any[];
    const mine = listed.find((m) => m.scheduled_message_id === toAlice.json.scheduled_message_id);
    if (restricted) t.same([mine?.failed], [true], 'restricted: delivery fails, kept as failed');
    else t.equal(mine, undefined, 'unrestricted: delivered');

    // Zulip's further_validated_draft_dict checks only that the users exist: a draft may name anyone.
    const draft = await w.f.call(w.guest, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'private', to: [w.bob.user_id], topic: '', content: 'unsent' }]) });
    t.equal(draft.status, 200, `restricted=${restricted}: a draft to bob is kept`);
    t.equal((await w.f.call(w.guest, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'private', to: [99999], topic: '', content: 'x' }]) })).status, 400, 'an unknown user is refused');
    w.f.stop();
  }
});

t.test("can_access_all_users_group takes role:everyone or role:members only (Zulip's require_system_group and allowed_system_groups)", async (t) => {
  const w = await organization(false);
  const group = await w.f.call(w.f.owner, 'POST', '/api/v1/user_groups/create', { name: 'Friends', description: '', members: JSON.stringify([w.guest.user_id]) });
  t.equal(group.status, 200, group.body);
  const set = (value: unknown) => w.f.call(w.f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: value }) });
  const systemOnly = "'can_access_all_users_group' must be a system user group.";
  for (const [value, msg] of [
    [{ direct_members: [w.guest.user_id], direct_subgroups: [] }, systemOnly],
    [group.json.group_id, systemOnly],
    [{ direct_members: [], direct_subgroups: [6, 3] }, systemOnly],
    [1, "'can_access_all_users_group' setting cannot be set to 'role:nobody' group."],
    [3, "'can_access_all_users_group' setting cannot be set to 'role:administrators' group."],
    [8, "'can_access_all_users_group' setting cannot be set to 'role:internet' group."],
  ] as const) {
    const r = await set(value);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(value));
  }
  t.equal((await set({ direct_members: [], direct_subgroups: [6] })).status, 200, 'one system subgroup is that group');
  t.equal((await w.f.call(w.guest, 'GET', `/api/v1/users/${w.bob.user_id}`)).status, 400, 'role:members it is');
  t.equal((await set(7)).status, 200);
  w.f.stop();
});
