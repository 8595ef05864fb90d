/**
 * Personal data: drafts, saved snippets, navigation views, muted users and bot
 * storage. Each endpoint and its Zulip errors; their events, and convergence
 * (register + events == a fresh register) for each event type; drafts deleted when
 * synchronization is turned off; muting marks the muted user's messages read; bot
 * storage only for bots and up to its limit; isolation between organizations; and
 * everything back after a restart, from the log and from a snapshot.
 */
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BOT_STORAGE_LIMIT, botStorageUsed, getBotStorage } from '../actors/areas/bot_storage.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { listDrafts, nextDraftId } from '../actors/areas/drafts.js';
import { listMutedUsers } from '../actors/areas/muted_users.js';
import { listNavigationViews } from '../actors/areas/navigation_views.js';
import { listSavedSnippets } from '../actors/areas/saved_snippets.js';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { botCredentials, chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { verifyState } from './client_model.js';

const ALL_TYPES = ['drafts', 'saved_snippets', 'navigation_view', 'muted_users'];

async function register(f: ChatFixture, who: Credentials, types: string[] = ALL_TYPES): Promise<any> {
  const r = await f.call(who, 'POST', '/api/v1/register', { event_types: types, fetch_event_types: types });
  if (r.status !== 200) throw new Error(r.body);
  return r.json;
}

/** The sections these types fetch, compared after each test's changes (drafts by id: their order is by edit time). */
const ALL_KEYS = ['drafts', 'saved_snippets', 'navigation_views', 'muted_users'];

function err(t: Test, r: { status: number; json: any }, status: number, code: string, msg: string, what?: string): void {
  t.same([r.status, r.json.result, r.json.code, r.json.msg], [status, 'error', code, msg], what ?? msg);
}

t.test('drafts: create, list, edit, delete; errors; events and convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'secret' }], invite_only: true });
  const general = channelIdByName(f.runtime, 1, 'general');
  const secret = channelIdByName(f.runtime, 1, 'secret');
  const reg = await register(f, alice);
  t.same(reg.drafts, []);

  const drafts = [
    { type: 'stream', to: [general], topic: 'lunch', content: 'shall we?', timestamp: 1_700_000_000.7 },
    { type: 'private', to: [bob.user_id, bob.user_id, f.owner.user_id], topic: 'ignored', content: 'hi both' },
    { type: 'private', to: [alice.user_id], topic: '', content: 'note to self' },
    { type: 'private', to: [], topic: '', content: 'to no one yet' },
    { type: '', to: [general], topic: 'x', content: 'unaddressed\n\n' },
  ];
  let r = await f.call(alice, 'POST', '/api/v1/drafts', { drafts: JSON.stringify(drafts) });
  t.equal(r.status, 200, r.body);
  t.same(r.json.ids, [1, 2, 3, 4, 5], 'ids in submission order');
  r = await f.call(alice, 'GET', '/api/v1/drafts');
  t.equal(r.json.count, 5);
  const now = Math.floor(f.clock.t / 1000);
  t.same(r.json.drafts, [
    { id: 1, type: 'stream', to: [general], topic: 'lunch', content: 'shall we?', timestamp: 1_700_000_000 },
    { id: 2, type: 'private', to: [f.owner.user_id, bob.user_id].sort((a, b) => a - b), topic: '', content: 'hi both', timestamp: now },
    { id: 3, type: 'private', to: [alice.user_id], topic: '', content: 'note to self', timestamp: now },
    { id: 4, type: '', to: [], topic: '', content: 'to no one yet', timestamp: now },
    { id: 5, type: '', to: [], topic: '', content: 'unaddressed', timestamp: now },
  ], 'oldest edit first; recipients as Zulip stores them');

  const create = (d: Record<string, unknown>) => f.call(alice, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'stream', to: [general], topic: 't', content: 'c', ...d }]) });
  err(t, await create({ to: [] }), 400, 'BAD_REQUEST', 'Must specify exactly 1 channel ID for channel messages');
  err(t, await create({ to: [general, general] }), 400, 'BAD_REQUEST', 'Must specify exactly 1 channel ID for channel messages', 'two channel ids');
  err(t, await create({ to: [secret] }), 400, 'BAD_REQUEST', 'Invalid channel ID', 'a private channel the user is not in');
  err(t, await create({ to: [99999] }), 400, 'BAD_REQUEST', 'Invalid channel ID');
  err(t, await create({ content: 'a\u0000b' }), 400, 'BAD_REQUEST', 'Message must not contain null bytes');
  err(t, await create({ topic: 'a\u0000b' }), 400, 'BAD_REQUEST', 'Topic must not contain null bytes');
  err(t, await create({ content: '   ' }), 400, 'BAD_REQUEST', 'Message must not be empty');
  err(t, await create({ timestamp: -1 }), 400, 'BAD_REQUEST', 'Timestamp must not be negative.');
  err(t, await create({ type: 'private', to: [99999] }), 400, 'BAD_REQUEST', 'Invalid user ID 99999');
  t.equal((await create({ extra: 1 })).status, 400, 'no other fields');
  t.equal((await create({ type: 'channel' })).status, 400, 'only the three types');
  r = await f.call(alice, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: '', to: [], topic: '', content: 'ok' }, { type: 'stream', to: [], topic: '', content: 'bad' }]) });
  t.equal(r.status, 400, 'one bad draft refuses all');
  t.equal((await f.call(alice, 'GET', '/api/v1/drafts')).json.count, 5, 'none was created');
  t.same((await f.call(alice, 'POST', '/api/v1/drafts', {})).json.ids, [], 'no drafts: none created');

  f.clock.t += 60_000;
  r = await f.call(alice, 'PATCH', '/api/v1/drafts/1', { draft: JSON.stringify({ type: 'stream', to: [general], topic: 'dinner', content: 'later?' }) });
  t.equal(r.status, 200, r.body);
  err(t, await f.call(alice, 'PATCH', '/api/v1/drafts/99', { draft: JSON.stringify({ type: '', to: [], topic: '', content: 'x' }) }), 404, 'BAD_REQUEST', 'Draft does not exist');
  err(t, await f.call(alice, 'PATCH', '/api/v1/drafts/2', { draft: JSON.stringify({ type: 'stream', to: [], topic: '', content: 'x' }) }), 400, 'BAD_REQUEST', 'Must specify exactly 1 channel ID for channel messages', 'edit checks as create');
  err(t, await f.call(bob, 'PATCH', '/api/v1/drafts/1', { draft: JSON.stringify({ type: '', to: [], topic: '', content: 'x' }) }), 404, 'BAD_REQUEST', 'Draft does not exist', "another user's draft does not exist");
  t.equal((await f.call(alice, 'DELETE', '/api/v1/drafts/4')).status, 200);
  err(t, await f.call(alice, 'DELETE', '/api/v1/drafts/4'), 404, 'BAD_REQUEST', 'Draft does not exist');
  err(t, await f.call(bob, 'DELETE', '/api/v1/drafts/3'), 404, 'BAD_REQUEST', 'Draft does not exist');
  t.same((await f.call(bob, 'GET', '/api/v1/drafts')).json, { result: 'success', msg: '', count: 0, drafts: [] }, "Bob sees none of Alice's");

  const fresh = await register(f, alice);
  t.same(fresh.drafts.map((d: any) => d.id), [1, 5, 3, 2], 'register: newest edit first');
  const events = await verifyState(t, f, alice, reg, ALL_TYPES, ALL_KEYS);
  t.same(events.map((e: any) => `${e.type}:${e.op}`), ['drafts:add', 'drafts:update', 'drafts:remove'], 'refused requests, and an empty list, send nothing');
  t.same(events[1].draft, { id: 1, type: 'stream', to: [general], topic: 'dinner', content: 'later?', timestamp: now + 60 });
  t.same(events[2], { type: 'drafts', op: 'remove', draft_id: 4 });
});

t.test('drafts: turning synchronization off deletes them, with no draft events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.call(alice, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: '', to: [], topic: '', content: 'one' }, { type: '', to: [], topic: '', content: 'two' }]) });
  const reg = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['drafts', 'user_settings'], fetch_event_types: ['drafts'] })).json;
  t.equal(reg.drafts.length, 2);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/settings', { enable_drafts_synchronization: false })).status, 200);
  t.same(await queueEvents(f, alice, reg.queue_id), [{ type: 'user_settings', op: 'update', property: 'enable_drafts_synchronization', value: false }], 'only the setting event');
  t.equal(listDrafts(f.runtime, 1, alice.user_id).length, 0, 'the server copies are gone');
  for (const [method, path, params] of [['GET', '/api/v1/drafts', {}], ['POST', '/api/v1/drafts', { drafts: '[]' }], ['PATCH', '/api/v1/drafts/1', { draft: JSON.stringify({ type: '', to: [], topic: '', content: 'x' }) }], ['DELETE', '/api/v1/drafts/1', {}]] as const) {
    err(t, await f.call(alice, method, path, params), 400, 'BAD_REQUEST', 'User has disabled synchronizing drafts.', `${method} ${path} refused`);
  }
  t.same((await register(f, alice, ['drafts'])).drafts, []);
  await f.call(alice, 'PATCH', '/api/v1/settings', { enable_drafts_synchronization: true });
  t.same((await f.call(alice, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: '', to: [], topic: '', content: 'three' }]) })).json.ids, [3], 'ids are not reused');
});

t.test('saved snippets: create, list, edit, delete; errors; events and convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const reg = await register(f, alice);
  t.same(reg.saved_snippets, []);
  let r = await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: '  Welcome ', content: 'Welcome to the **team**!\n' });
  t.same(r.json, { result: 'success', msg: '', saved_snippet_id: 1 });
  r = await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: 'Bye', content: 'See you' });
  t.equal(r.json.saved_snippet_id, 2);
  const now = Math.floor(f.clock.t / 1000);
  t.same((await f.call(alice, 'GET', '/api/v1/saved_snippets')).json.saved_snippets, [
    { id: 1, title: 'Welcome', content: 'Welcome to the **team**!', date_created: now },
    { id: 2, title: 'Bye', content: 'See you', date_created: now },
  ]);
  err(t, await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: ' ', content: 'x' }), 400, 'BAD_REQUEST', 'Title cannot be empty.');
  err(t, await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: 'x', content: '' }), 400, 'BAD_REQUEST', 'Content cannot be empty.');
  err(t, await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: 'x'.repeat(61), content: 'x' }), 400, 'BAD_REQUEST', 'title is too long (limit: 60 characters)');
  t.equal((await f.call(alice, 'POST', '/api/v1/saved_snippets', { title: 'x' })).json.code, 'REQUEST_VARIABLE_MISSING');

  t.equal((await f.call(alice, 'PATCH', '/api/v1/saved_snippets/1', { content: 'Hello!' })).status, 200);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/saved_snippets/2', { title: 'Later' })).status, 200);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/saved_snippets/2', {})).status, 200, 'nothing to change');
  err(t, await f.call(alice, 'PATCH', '/api/v1/saved_snippets/9', { title: 'x' }), 404, 'BAD_REQUEST', 'Saved snippet does not exist.');
  err(t, await f.call(bob, 'PATCH', '/api/v1/saved_snippets/1', { title: 'x' }), 404, 'BAD_REQUEST', 'Saved snippet does not exist.', "another user's snippet");
  err(t, await f.call(bob, 'DELETE', '/api/v1/saved_snippets/1'), 404, 'BAD_REQUEST', 'Saved snippet does not exist.');
  t.equal((await f.call(alice, 'DELETE', '/api/v1/saved_snippets/2')).status, 200);
  err(t, await f.call(alice, 'DELETE', '/api/v1/saved_snippets/2'), 404, 'BAD_REQUEST', 'Saved snippet does not exist.');
  t.same((await f.call(bob, 'GET', '/api/v1/saved_snippets')).json.saved_snippets, []);

  const events = await verifyState(t, f, alice, reg, ALL_TYPES, ALL_KEYS);
  t.same(events, [
    { type: 'saved_snippets', op: 'add', saved_snippet: { id: 1, title: 'Welcome', content: 'Welcome to the **team**!', date_created: now } },
    { type: 'saved_snippets', op: 'add', saved_snippet: { id: 2, title: 'Bye', content: 'See you', date_created: now } },
    { type: 'saved_snippets', op: 'update', saved_snippet: { id: 1, title: 'Welcome', content: 'Hello!', date_created: now } },
    { type: 'saved_snippets', op: 'update', saved_snippet: { id: 2, title: 'Later', content: 'See you', date_created: now } },
    { type: 'saved_snippets', op: 'remove', saved_snippet_id: 2 },
  ], 'no event for an edit that changes nothing');
});

t.test('navigation views: add, list, update, remove; errors; events and convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const reg = await register(f, alice);
  t.same(reg.navigation_views, []);
  t.equal((await f.call(alice, 'POST', '/api/v1/navigation_views', { fragment: 'inbox', is_pinned: false })).status, 200);
  t.equal((await f.call(alice, 'POST', '/api/v1/navigation_views', { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert words' })).status, 200);
  t.same((await f.call(alice, 'GET', '/api/v1/navigation_views')).json.navigation_views, [
    { fragment: 'inbox', is_pinned: false, name: null },
    { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert words' },
  ]);
  const add = (p: Record<string, unknown>) => f.call(alice, 'POST', '/api/v1/navigation_views', { is_pinned: true, ...p });
  err(t, await add({ fragment: 'recent', name: 'Mine' }), 400, 'BAD_REQUEST', 'Built-in views cannot have a custom name.');
  err(t, await add({ fragment: 'narrow/is/dm' }), 400, 'BAD_REQUEST', 'Custom views must have a valid name.');
  err(t, await add({ fragment: 'inbox' }), 400, 'BAD_REQUEST', 'Navigation view already exists.');
  err(t, await add({ fragment: 'narrow/is/dm', name: 'Alert words' }), 400, 'BAD_REQUEST', 'Navigation view already exists.', 'a name already used');
  err(t, await add({ fragment: '  ', name: 'x' }), 400, 'BAD_REQUEST', 'fragment cannot be blank');
  t.equal((await f.call(alice, 'POST', '/api/v1/navigation_views', { fragment: 'feed' })).json.code, 'REQUEST_VARIABLE_MISSING', 'is_pinned is required');

  const frag = encodeURIComponent('narrow/is/alerted');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/navigation_views/${frag}`, { name: 'Alerts', is_pinned: false })).status, 200);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/navigation_views/inbox', { is_pinned: true })).status, 200);
  err(t, await f.call(alice, 'PATCH', '/api/v1/navigation_views/inbox', { name: 'Mine' }), 400, 'BAD_REQUEST', 'Built-in views cannot have a custom name.');
  err(t, await f.call(alice, 'PATCH', '/api/v1/navigation_views/feed', { name: 'Mine' }), 400, 'BAD_REQUEST', 'Built-in views cannot have a custom name.', 'even one not configured');
  err(t, await f.call(alice, 'PATCH', '/api/v1/navigation_views/feed', { is_pinned: true }), 404, 'NOT_FOUND', 'Navigation view does not exist.');
  err(t, await f.call(alice, 'PATCH', '/api/v1/navigation_views/nope', { name: 'Alerts' }), 400, 'BAD_REQUEST', 'Navigation view already exists.', 'a name in use');
  err(t, await f.call(alice, 'DELETE', '/api/v1/navigation_views/nope'), 404, 'NOT_FOUND', 'Navigation view does not exist.');
  t.equal((await f.call(alice, 'DELETE', '/api/v1/navigation_views/inbox')).status, 200);
  const bob = await f.createUser('bob@example.com', 'Bob');
  err(t, await f.call(bob, 'DELETE', `/api/v1/navigation_views/${frag}`), 404, 'NOT_FOUND', 'Navigation view does not exist.', "another user's view");

  const events = await verifyState(t, f, alice, reg, ALL_TYPES, ALL_KEYS);
  t.same(events, [
    { type: 'navigation_view', op: 'add', navigation_view: { fragment: 'inbox', is_pinned: false, name: null } },
    { type: 'navigation_view', op: 'add', navigation_view: { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert words' } },
    { type: 'navigation_view', op: 'update', fragment: 'narrow/is/alerted', data: { name: 'Alerts', is_pinned: false } },
    { type: 'navigation_view', op: 'update', fragment: 'inbox', data: { is_pinned: true } },
    { type: 'navigation_view', op: 'remove', fragment: 'inbox' },
  ]);
});

t.test("a navigation view's fragment with raw slashes, as Zulip's example sends it: the rest of the path is the fragment", async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const reg = await register(f, alice);
  t.equal((await f.call(alice, 'POST', '/api/v1/navigation_views', { fragment: 'narrow/is/alerted', is_pinned: true, name: 'Alert words' })).status, 200);
  t.equal((await f.call(alice, 'POST', '/api/v1/navigation_views', { fragment: 'narrow/channel/9-a', is_pinned: true, name: 'Nine' })).status, 200);
  const patched = await f.call(alice, 'PATCH', '/api/v1/navigation_views/narrow/is/alerted', { is_pinned: false, name: 'Alerts' });
  t.equal(patched.status, 200, patched.body);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/navigation_views/narrow/is/alerted/', { is_pinned: true })).status, 200, 'a trailing slash is not part of the fragment');
  t.equal((await f.call(alice, 'PATCH', '/api/v1/navigation_views/narrow%2Fchannel/9-a', { is_pinned: false })).status, 200, 'raw and encoded slashes mixed');
  err(t, await f.call(alice, 'DELETE', '/api/v1/navigation_views/narrow/is'), 404, 'NOT_FOUND', 'Navigation view does not exist.', 'a prefix of a fragment is another fragment');
  const gone = await f.call(alice, 'DELETE', '/api/v1/navigation_views/narrow/is/alerted');
  t.equal(gone.status, 200, gone.body);
  t.same((await f.call(alice, 'GET', '/api/v1/navigation_views')).json.navigation_views, [{ fragment: 'narrow/channel/9-a', is_pinned: false, name: 'Nine' }]);
  t.equal((await f.call(alice, 'PUT', '/api/v1/navigation_views/narrow/is/alerted')).status, 405, 'other methods: 405');
  const events = await verifyState(t, f, alice, reg, ALL_TYPES, ALL_KEYS);
  t.same(events.slice(2), [
    { type: 'navigation_view', op: 'update', fragment: 'narrow/is/alerted', data: { is_pinned: false, name: 'Alerts' } },
    { type: 'navigation_view', op: 'update', fragment: 'narrow/is/alerted', data: { is_pinned: true } },
    { type: 'navigation_view', op: 'update', fragment: 'narrow/channel/9-a', data: { is_pinned: false } },
    { type: 'navigation_view', op: 'remove', fragment: 'narrow/is/alerted' },
  ]);
});

t.test('muted users: mute marks their messages read; errors; events and convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  const send = async (who: Credentials, p: Record<string, unknown>) => (await f.call(who, 'POST', '/api/v1/messages', p)).json.id as number;
  const fromBob = [await send(bob, { type: 'stream', to: 'general', topic: 't', content: 'one' }), await send(bob, { type: 'direct', to: [alice.user_id], content: 'two' })];
  const fromOwner = await send(f.owner, { type: 'stream', to: 'general', topic: 't', content: 'three' });
  const alreadyRead = await send(bob, { type: 'stream', to: 'general', topic: 't', content: 'four' });
  await f.call(alice, 'POST', '/api/v1/messages/flags', { messages: [alreadyRead], op: 'add', flag: 'read' });
  const reg = await register(f, alice, [...ALL_TYPES, 'update_message_flags']);
  t.same(reg.muted_users, []);

  f.clock.t += 5_000;
  t.equal((await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${bob.user_id}`)).status, 200);
  const flags = async (id: number) => (await f.call(alice, 'GET', `/api/v1/messages/${id}`)).json.message.flags as string[];
  for (const id of fromBob) t.ok((await flags(id)).includes('read'), `Bob's message ${id} is read now`);
  t.notOk((await flags(fromOwner)).includes('read'), "others' messages stay unread");
  t.notOk((await f.call(bob, 'GET', `/api/v1/messages/${fromBob[0]}`)).json.message.flags.includes('muted'), 'nothing changes for Bob');

  err(t, await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${alice.user_id}`), 400, 'BAD_REQUEST', 'Cannot mute self');
  err(t, await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${bob.user_id}`), 400, 'BAD_REQUEST', 'User already muted');
  err(t, await f.call(alice, 'POST', '/api/v1/users/me/muted_users/99999'), 400, 'BAD_REQUEST', 'No such user');
  err(t, await f.call(alice, 'DELETE', '/api/v1/users/me/muted_users/99999'), 400, 'BAD_REQUEST', 'No such user');
  err(t, await f.call(alice, 'DELETE', `/api/v1/users/me/muted_users/${f.owner.user_id}`), 400, 'BAD_REQUEST', 'User is not muted');
  // A bot, and a deactivated user, may be muted (Zulip allows both).
  const bot = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' })).json.user_id as number;
  t.equal((await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${bot}`)).status, 200);
  t.equal((await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${f.owner.user_id}`)).status, 200);
  t.equal((await f.call(alice, 'DELETE', `/api/v1/users/me/muted_users/${f.owner.user_id}`)).status, 200);

  const now = Math.floor(f.clock.t / 1000);
  t.same((await register(f, alice)).muted_users, [{ id: bob.user_id, timestamp: now }, { id: bot, timestamp: now }]);
  // The unread messages converge too: muting marked messages read.
  const events = await verifyState(t, f, alice, reg, [...ALL_TYPES, 'update_message_flags'], [...ALL_KEYS, 'unread_msgs']);
  t.same(events[0], { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: fromBob, all: false }, 'read first, as in Zulip');
  t.same(events.filter((e: any) => e.type === 'muted_users').map((e: any) => e.muted_users.map((m: any) => m.id)), [[bob.user_id], [bob.user_id, bot], [bob.user_id, bot, f.owner.user_id], [bob.user_id, bot]]);
  t.same(events.filter((e: any) => e.type === 'update_message_flags').map((e: any) => e.messages), [fromBob, [fromOwner]], "muting the owner marked the owner's message read");
  t.same((await f.call(bob, 'POST', '/api/v1/register', { fetch_event_types: ['muted_users'] })).json.muted_users, [], "Bob's own list is empty");
});

t.test('muted users: their new messages arrive read for the muter, until unmuted', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  const reg = await register(f, alice, ['message']);
  await f.call(alice, 'POST', `/api/v1/users/me/muted_users/${bob.user_id}`);
  const send = async (who: Credentials, p: Record<string, unknown>) => (await f.call(who, 'POST', '/api/v1/messages', p)).json.id as number;
  const muted = [await send(bob, { type: 'stream', to: 'general', topic: 't', content: 'hi' }), await send(bob, { type: 'direct', to: [alice.user_id], content: 'psst' })];
  const fromOwner = await send(f.owner, { type: 'stream', to: 'general', topic: 't', content: 'hello' });
  await f.call(alice, 'DELETE', `/api/v1/users/me/muted_users/${bob.user_id}`);
  const after = await send(bob, { type: 'stream', to: 'general', topic: 't', content: 'back' });
  const events = await queueEvents(f, alice, reg.queue_id, 'message');
  t.same(events.map((e: any) => [e.message.id, e.flags.includes('read')]), [[muted[0], true], [muted[1], true], [fromOwner, false], [after, false]], 'the message events carry it');
  const unread = async (who: Credentials, id: number) => !(await f.call(who, 'GET', `/api/v1/messages/${id}`)).json.message.flags.includes('read');
  const stored = [];
  for (const id of [...muted, fromOwner, after]) stored.push(await unread(alice, id));
  t.same(stored, [false, false, true, true], 'and the stored flags');
  t.ok(await unread(f.owner, muted[0]), "for the owner, Bob's message is unread");
});

t.test('roles: guests, members and bots', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const guest = await withRole(f, 'guest@example.com', 600);
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  await f.subscribe(f.owner, 'shared', [f.owner.user_id, guest.user_id, alice.user_id]);
  const general = channelIdByName(f.runtime, 1, 'general');
  const shared = channelIdByName(f.runtime, 1, 'shared');
  const draft = (streamId: number) => f.call(guest, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'stream', to: [streamId], topic: 't', content: 'c' }]) });
  err(t, await draft(general), 400, 'BAD_REQUEST', 'Invalid channel ID', "a guest's draft to a public channel they are not in");
  t.equal((await draft(shared)).status, 200, 'and to one they are in');
  t.equal((await f.call(bob, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'stream', to: [general], topic: 't', content: 'c' }]) })).status, 200, 'a member may draft to any public channel');
  t.equal((await f.call(guest, 'POST', '/api/v1/saved_snippets', { title: 'g', content: 'guest snippet' })).status, 200, 'guests have snippets');
  t.equal((await f.call(guest, 'POST', '/api/v1/navigation_views', { fragment: 'inbox', is_pinned: true })).status, 200, 'and views');
  t.equal((await f.call(guest, 'POST', `/api/v1/users/me/muted_users/${bob.user_id}`)).status, 200, 'a guest who may access everyone mutes anyone');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_access_all_users_group: JSON.stringify({ new: 6 }) })).status, 200);
  err(t, await f.call(guest, 'DELETE', `/api/v1/users/me/muted_users/${bob.user_id}`), 400, 'BAD_REQUEST', 'Insufficient permission', 'a limited guest cannot reach a user they cannot access');
  t.equal((await f.call(guest, 'POST', `/api/v1/users/me/muted_users/${alice.user_id}`)).status, 200, 'but can mute a user of their channels');
  for (const who of [f.owner, alice, guest]) {
    err(t, await f.call(who, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ a: 'b' }) }), 403, 'PERMISSION_DENIED', 'This endpoint is only available to bots.', `bot storage refused to ${who.email}`);
  }
  const made = (await f.call(alice, 'POST', '/api/v1/bots', { full_name: 'Mine', short_name: 'mine' })).json;
  const bot: Credentials = await botCredentials(f, made);
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ a: 'b' }) })).status, 200, "a member's bot has storage");
  t.equal((await f.call(bot, 'POST', '/api/v1/saved_snippets', { title: 'b', content: 'bot snippet' })).status, 200, 'bots have personal data too');
});

t.test('bot storage: bots only, overwrite, keys, removal, the limit', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const made = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Keeper', short_name: 'keeper' })).json;
  const bot: Credentials = await botCredentials(f, made);
  for (const [method, params] of [['GET', {}], ['PUT', { storage: JSON.stringify({ a: 'b' }) }], ['DELETE', {}]] as const) {
    err(t, await f.call(f.owner, method, '/api/v1/bot_storage', params), 403, 'PERMISSION_DENIED', 'This endpoint is only available to bots.', `${method} by a human`);
  }
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage, {});
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ colour: 'red', size: '3', __proto__x: 'y' }) })).status, 200);
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ colour: 'blue' }) })).status, 200, 'an existing key is overwritten');
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage, { colour: 'blue', size: '3', __proto__x: 'y' });
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage', { keys: JSON.stringify(['size']) })).json.storage, { size: '3' }, 'keys selects');
  err(t, await f.call(bot, 'GET', '/api/v1/bot_storage', { keys: JSON.stringify(['size', 'nope']) }), 400, 'BAD_REQUEST', 'Key does not exist.');
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ n: 1 }) })).status, 400, 'values are strings');
  err(t, await f.call(bot, 'DELETE', '/api/v1/bot_storage', { keys: JSON.stringify(['size', 'nope']) }), 400, 'BAD_REQUEST', 'Key does not exist.');
  t.same(Object.keys((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage).length, 3, 'a refused removal removes nothing');
  t.equal((await f.call(bot, 'DELETE', '/api/v1/bot_storage', { keys: JSON.stringify(['size']) })).status, 200);
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage, { colour: 'blue', __proto__x: 'y' });
  t.equal((await f.call(bot, 'DELETE', '/api/v1/bot_storage')).status, 200, 'no keys: everything');
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage, {});

  // The limit counts characters (code points) of keys and values, after overwriting.
  const fill = BOT_STORAGE_LIMIT - 'big'.length - 'k'.length - 2;
  let r = await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ big: 'x'.repeat(fill), k: '\u{1F600}\u{1F600}' }) });
  t.equal(r.status, 200, 'exactly at the limit, an emoji counting as one character');
  t.equal(botStorageUsed(f.runtime, 1, bot.user_id), BOT_STORAGE_LIMIT);
  err(t, await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ z: '' }) }), 400, 'BAD_REQUEST', `Request exceeds storage limit by 1 characters. The limit is ${BOT_STORAGE_LIMIT} characters.`);
  r = await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ k: 'a', z: '' }) });
  t.equal(r.status, 200, 'overwriting frees what the old value took');
  err(t, await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ k: 'ab' }) }), 400, 'BAD_REQUEST', `Request exceeds storage limit by 1 characters. The limit is ${BOT_STORAGE_LIMIT} characters.`);
  t.same((await f.call(bot, 'GET', '/api/v1/bot_storage', { keys: JSON.stringify(['k', 'z']) })).json.storage, { k: 'a', z: '' }, 'a refused write changes nothing');
  t.equal((await f.call(bot, 'DELETE', '/api/v1/bot_storage', { keys: JSON.stringify(['big']) })).status, 200);
  t.equal(botStorageUsed(f.runtime, 1, bot.user_id), 3, 'removal frees its characters');
});

t.test('organizations are isolated', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss: Credentials = { user_id: beta.owner.user_id, email: beta.owner.email, api_key: beta.owner.api_key };
  const host = { headers: { host: 'beta.localhost' } };
  const other = (await f.runtime.execute({ type: 'CREATE_USER', org: beta.organization_id, actor_id: null, email: 'x@beta.example', password_hash: '', full_name: 'X', role: 400 })).user.user_id;
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${other}`)).json.msg, 'No such user', 'an id only the other organization has');
  t.equal((await f.call(boss, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: '', to: [], topic: '', content: 'beta' }]) }, host)).status, 200);
  t.equal((await f.call(boss, 'POST', '/api/v1/saved_snippets', { title: 'b', content: 'beta' }, host)).status, 200);
  t.equal((await f.call(boss, 'POST', '/api/v1/navigation_views', { fragment: 'inbox', is_pinned: true }, host)).status, 200);
  // The default organization's owner has the same user id.
  t.equal(f.owner.user_id, boss.user_id);
  const mine = await register(f, f.owner);
  t.same([mine.drafts, mine.saved_snippets, mine.navigation_views], [[], [], []]);
  err(t, await f.call(f.owner, 'DELETE', '/api/v1/drafts/1'), 404, 'BAD_REQUEST', 'Draft does not exist');
  err(t, await f.call(f.owner, 'POST', `/api/v1/users/me/muted_users/${other}`), 400, 'BAD_REQUEST', 'No such user', 'a user of another organization');
  t.equal((await f.call(boss, 'GET', '/api/v1/drafts', {}, host)).json.count, 1);
});

t.test('personal data survives a restart, from the log and from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-personal-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const rt = () => store.runtime;
  const { user: other } = await rt().execute({ type: 'CREATE_USER', org, actor_id: null, email: 'm@example.com', password_hash: '', full_name: 'M', role: 400 });
  const { user: bot } = await rt().execute({ type: 'CREATE_BOT', org, actor_id: 1, full_name: 'B', short_name: 'b', bot_type: 1 });
  await rt().execute({ type: 'CREATE_DRAFTS', org, user_id: 1, drafts: [{ type: '', to: [], topic: '', content: 'kept' }, { type: '', to: [], topic: '', content: 'gone' }] });
  await rt().execute({ type: 'DELETE_DRAFT', org, user_id: 1, draft_id: 2 });
  await rt().execute({ type: 'CREATE_SAVED_SNIPPET', org, user_id: 1, title: 'T', content: 'C' });
  await rt().execute({ type: 'ADD_NAVIGATION_VIEW', org, user_id: 1, fragment: 'narrow/is/dm', is_pinned: true, name: 'DMs' });
  await rt().execute({ type: 'UPDATE_NAVIGATION_VIEW', org, user_id: 1, fragment: 'narrow/is/dm', is_pinned: false });
  const before = (await rt().execute({ type: 'SEND_MESSAGE', org, sender_id: other.user_id, to: { user_ids: [1] }, content: 'before', client: 't', read_by_sender: false })).id;
  await rt().execute({ type: 'MUTE_USER', org, user_id: 1, muted_user_id: other.user_id });
  const afterMute = (await rt().execute({ type: 'SEND_MESSAGE', org, sender_id: other.user_id, to: { user_ids: [1] }, content: 'after', client: 't', read_by_sender: false })).id;
  await rt().execute({ type: 'SET_BOT_STORAGE', org, user_id: bot.user_id, storage: { k: 'v', w: 'ü' } });
  await rt().execute({ type: 'REMOVE_BOT_STORAGE', org, user_id: bot.user_id, keys: ['w'] });
  const expect = async () => {
    t.same(listDrafts(rt(), org, 1).map((d) => d.content), ['kept']);
    t.equal(nextDraftId(rt(), org, 1), 3, 'the next draft id is kept');
    t.same(listSavedSnippets(rt(), org, 1).map((s) => [s.id, s.title, s.content]), [[1, 'T', 'C']]);
    t.same(listNavigationViews(rt(), org, 1), [{ fragment: 'narrow/is/dm', is_pinned: false, name: 'DMs' }]);
    t.same(listMutedUsers(rt(), org, 1).map((m) => m.id), [other.user_id]);
    const api = storeClient(store, owner);
    const read = async (id: number) => ((await api('GET', `/api/v1/messages/${id}`)).message.flags as string[]).includes('read');
    t.same([!(await read(before)), !(await read(afterMute))], [false, false], 'messages of the muted user read, before and after muting');
    t.same(Object.entries(getBotStorage(rt(), org, bot.user_id, undefined)), [['k', 'v']]);
    t.equal(botStorageUsed(rt(), org, bot.user_id), 2);
  };
  await expect();
  await store.close();
  store = open();
  await expect();
  await store.snapshot();
  await store.close();
  store = open();
  await expect();
  t.same((await rt().execute({ type: 'CREATE_DRAFTS', org, user_id: 1, drafts: [{ type: '', to: [], topic: '', content: 'new' }] })).ids, [3], 'ids continue after a snapshot');
  await store.close();
});
