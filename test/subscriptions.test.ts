/**
 * Route tests of channels and subscriptions: subscribing (and creating channels),
 * listing, unsubscribing, `GET /streams`, `GET /get_stream_id`, and the
 * `subscription` and `stream` events they cause.
 */
import t from 'tap';
import { chatFixture, queueEvents, settle, type ApiResult, type ChatFixture, type Credentials } from './helpers.js';
import { channelIdByName } from '../actors/areas/channels.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const SUBS = '/api/v1/users/me/subscriptions';

function isError(t: Tap, res: ApiResult, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: status (${res.body})`);
  t.equal(res.json?.result, 'error', `${what}: result`);
  t.equal(res.json?.code, code, `${what}: code`);
  t.type(res.json?.msg, 'string', `${what}: msg`);
}

function post(f: ChatFixture, who: Credentials, names: Array<string | { name: string; description?: string }>, extra: Record<string, unknown> = {}): Promise<ApiResult> {
  return f.call(who, 'POST', SUBS, { subscriptions: names.map((n) => (typeof n === 'string' ? { name: n } : n)), ...extra });
}

async function mySubscriptions(f: ChatFixture, who: Credentials, includeSubscribers = false): Promise<Array<Record<string, any>>> {
  const res = await f.call(who, 'GET', SUBS, includeSubscribers ? { include_subscribers: true } : {});
  if (res.status !== 200) throw new Error(res.body);
  return res.json.subscriptions;
}

async function myChannelNames(f: ChatFixture, who: Credentials): Promise<string[]> {
  return (await mySubscriptions(f, who)).map((s) => s.name).sort();
}

async function visibleStreams(f: ChatFixture, who: Credentials, params: Record<string, unknown> = {}): Promise<string[]> {
  const res = await f.call(who, 'GET', '/api/v1/streams', params);
  if (res.status !== 200) throw new Error(res.body);
  return res.json.streams.map((s: { name: string }) => s.name).sort();
}

/** Everything in a queue, without acknowledging it. */
async function eventsOf(f: ChatFixture, who: Credentials, queueId: string): Promise<Array<Record<string, any>>> {
  await settle();
  const res = await f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.events;
}

interface Cast {
  f: ChatFixture;
  owner: Credentials;
  bob: Credentials;
  carol: Credentials;
}

async function cast(): Promise<Cast> {
  const f = await chatFixture();
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  return { f, owner: f.owner, bob, carol };
}

t.test('POST /users/me/subscriptions', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);

  await t.test('creates a missing channel and subscribes the caller', async (t) => {
    const res = await post(f, bob, ['bobs-channel']);
    t.equal(res.status, 200, res.body);
    t.equal(res.json.result, 'success');
    t.same(res.json.subscribed, { [String(bob.user_id)]: ['bobs-channel'] }, 'keyed by user id, as a string');
    t.same(res.json.already_subscribed, {});
    t.notOk('unauthorized' in res.json, 'unauthorized only appears with authorization_errors_fatal=false');
    t.same(await myChannelNames(f, bob), ['bobs-channel']);
    t.same(await myChannelNames(f, carol), [], 'nobody else was subscribed');
    t.ok((await visibleStreams(f, carol)).includes('bobs-channel'), 'the new public channel is visible to others');
  });

  await t.test('subscribing again reports already_subscribed, by the stored name', async (t) => {
    const res = await post(f, bob, ['BOBS-Channel']);
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, {});
    t.same(res.json.already_subscribed, { [String(bob.user_id)]: ['bobs-channel'] });
    t.same(await visibleStreams(f, bob), ['bobs-channel'], 'no second channel was created');
  });

  await t.test('several channels at once; a name repeated in one request counts once', async (t) => {
    const res = await post(f, carol, ['c-one', 'c-two', 'C-ONE', 'bobs-channel']);
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, { [String(carol.user_id)]: ['c-one', 'c-two', 'bobs-channel'] });
    t.same(res.json.already_subscribed, {});
    t.same(await myChannelNames(f, carol), ['bobs-channel', 'c-one', 'c-two']);
  });

  await t.test('names are trimmed', async (t) => {
    const res = await post(f, carol, ['  padded name  ']);
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, { [String(carol.user_id)]: ['padded name'] });
  });

  await t.test('principals by id and by email, keyed by id', async (t) => {
    const byId = await post(f, owner, ['by-id'], { principals: [bob.user_id, carol.user_id] });
    t.equal(byId.status, 200, byId.body);
    t.same(byId.json.subscribed, { [String(bob.user_id)]: ['by-id'], [String(carol.user_id)]: ['by-id'] });
    t.notOk((await myChannelNames(f, owner)).includes('by-id'), 'the caller is not subscribed unless named');

    const byEmail = await post(f, owner, ['by-email'], { principals: ['bob@example.com', 'CAROL@example.com'] });
    t.equal(byEmail.status, 200, byEmail.body);
    t.same(byEmail.json.subscribed, { [String(bob.user_id)]: ['by-email'], [String(carol.user_id)]: ['by-email'] });

    const mixed = await post(f, owner, ['by-id'], { principals: ['bob@example.com', owner.user_id] });
    t.equal(mixed.status, 200, mixed.body);
    t.same(mixed.json.subscribed, { [String(owner.user_id)]: ['by-id'] });
    t.same(mixed.json.already_subscribed, { [String(bob.user_id)]: ['by-id'] });
  });

  await t.test('a member may subscribe another member to a public channel', async (t) => {
    const res = await post(f, bob, ['bobs-channel'], { principals: [carol.user_id, bob.user_id] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.already_subscribed, { [String(carol.user_id)]: ['bobs-channel'], [String(bob.user_id)]: ['bobs-channel'] });
    const fresh = await post(f, bob, ['bob-adds-owner'], { principals: [owner.user_id] });
    t.equal(fresh.status, 200, fresh.body);
    t.same(fresh.json.subscribed, { [String(owner.user_id)]: ['bob-adds-owner'] });
  });

  await t.test('an unknown principal is 400 BAD_REQUEST, and nothing changes', async (t) => {
    for (const principal of [9999, 'nobody@example.com']) {
      const res = await post(f, owner, ['never-created'], { principals: [bob.user_id, principal] });
      isError(t, res, 400, 'BAD_REQUEST', `principal ${principal}`);
    }
    t.notOk((await visibleStreams(f, owner, { include_all: true })).includes('never-created'), 'the channel was not created');
    t.notOk((await myChannelNames(f, bob)).includes('never-created'));
  });

  await t.test('channel names are checked', async (t) => {
    const cases: Array<[string, RegExp]> = [
      ['', /empty/i],
      ['   ', /empty/i],
      ['x'.repeat(61), /too long/i],
      ['😀'.repeat(61), /too long/i],
      ['bad\u0001name', /invalid character/i],
      ['bad\nname', /invalid character/i],
    ];
    for (const [name, msg] of cases) {
      const res = await post(f, bob, [name]);
      isError(t, res, 400, 'BAD_REQUEST', `name ${JSON.stringify(name.slice(0, 10))}`);
      t.match(res.json.msg, msg, `name ${JSON.stringify(name.slice(0, 10))}: msg`);
    }
    const sixty = await post(f, bob, ['y'.repeat(60)]);
    t.equal(sixty.status, 200, `60 characters is allowed: ${sixty.body}`);
    const emoji = await post(f, bob, ['😀'.repeat(60)]);
    t.equal(emoji.status, 200, `60 code points is allowed: ${emoji.body}`);
    t.ok((await myChannelNames(f, bob)).includes('😀'.repeat(60)));
  });

  await t.test('a bad request subscribes nothing, even to the good channels in it', async (t) => {
    const res = await post(f, bob, ['good-one', '']);
    t.equal(res.status, 400, res.body);
    t.notOk((await visibleStreams(f, bob)).includes('good-one'));
  });

  await t.test('descriptions are stored and checked', async (t) => {
    const res = await post(f, bob, [{ name: 'described', description: 'A **nice** place' }]);
    t.equal(res.status, 200, res.body);
    const sub = (await mySubscriptions(f, bob)).find((s) => s.name === 'described')!;
    t.equal(sub.description, 'A **nice** place');
    t.type(sub.rendered_description, 'string');
    t.match(sub.rendered_description, /^<p>.*<\/p>$/);
    const tooLong = await post(f, bob, [{ name: 'too-described', description: 'd'.repeat(1025) }]);
    isError(t, tooLong, 400, 'BAD_REQUEST', 'description of 1025 characters');
    const longest = await post(f, bob, [{ name: 'fully-described', description: 'd'.repeat(1024) }]);
    t.equal(longest.status, 200, longest.body);
  });

  await t.test('malformed requests', async (t) => {
    isError(t, await post(f, bob, []), 400, 'BAD_REQUEST', 'empty subscriptions');
    const missing = await f.call(bob, 'POST', SUBS, {});
    isError(t, missing, 400, 'REQUEST_VARIABLE_MISSING', 'no subscriptions');
    t.equal(missing.json.var_name, 'subscriptions');
    isError(t, await f.call(bob, 'POST', SUBS, { subscriptions: [{ description: 'no name' }] }), 400, 'BAD_REQUEST', 'an item without a name');
    isError(t, await f.call(bob, 'POST', SUBS, { subscriptions: ['plain-string'] }), 400, 'BAD_REQUEST', 'an item that is not an object');
    isError(t, await f.call(bob, 'POST', SUBS, { subscriptions: [{ name: 5 }] }), 400, 'BAD_REQUEST', 'a name that is not a string');
    isError(t, await f.call(bob, 'POST', SUBS, { subscriptions: [{ name: 'x' }], principals: [1.5] }), 400, 'BAD_REQUEST', 'a fractional principal');
  });
});

t.test('private channels', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  const created = await post(f, owner, ['secret'], { invite_only: true });
  t.equal(created.status, 200, created.body);

  await t.test('a new channel is private with invite_only', async (t) => {
    const sub = (await mySubscriptions(f, owner)).find((s) => s.name === 'secret')!;
    t.equal(sub.invite_only, true);
    t.equal(sub.is_web_public, false);
    t.equal(sub.history_public_to_subscribers, false, 'private channels default to protected history');
  });

  await t.test('a non-member cannot subscribe themselves: 400 "Unable to access channel"', async (t) => {
    const res = await post(f, bob, ['secret']);
    isError(t, res, 400, 'BAD_REQUEST', 'bob joins secret');
    t.equal(res.json.msg, 'Unable to access channel (secret).');
    t.same(await myChannelNames(f, bob), [], 'bob is not subscribed');
    const cased = await post(f, bob, ['SECRET']);
    t.equal(cased.status, 400, 'nor by another spelling');
  });

  await t.test('a non-member cannot subscribe others either', async (t) => {
    const res = await post(f, bob, ['secret'], { principals: [carol.user_id] });
    t.equal(res.status, 400, res.body);
    t.same(await myChannelNames(f, carol), []);
  });

  await t.test('authorization_errors_fatal=false lists the channel in unauthorized', async (t) => {
    const res = await post(f, bob, ['secret', 'open-door'], { authorization_errors_fatal: false });
    t.equal(res.status, 200, res.body);
    t.same(res.json.unauthorized, ['secret']);
    t.same(res.json.subscribed, { [String(bob.user_id)]: ['open-door'] }, 'the public channel is still joined');
    t.same(res.json.already_subscribed, {});
    t.same(await myChannelNames(f, bob), ['open-door']);
    const clean = await post(f, bob, ['open-door'], { authorization_errors_fatal: false });
    t.same(clean.json.unauthorized, [], 'present and empty when nothing was refused');
  });

  await t.test('a subscriber (the owner) may add others', async (t) => {
    const res = await post(f, owner, ['secret'], { principals: [bob.user_id] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, { [String(bob.user_id)]: ['secret'] });
    t.ok((await myChannelNames(f, bob)).includes('secret'));
  });
});

t.test('GET /users/me/subscriptions', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  await post(f, owner, ['alpha'], { principals: [owner.user_id, bob.user_id] });
  await post(f, bob, ['beta']);
  await post(f, carol, ['gamma']);

  await t.test('lists only the caller\'s subscriptions, in Zulip\'s shape', async (t) => {
    const subs = await mySubscriptions(f, bob);
    t.same(subs.map((s) => s.name).sort(), ['alpha', 'beta']);
    const streamIds = new Map((await f.call(bob, 'GET', '/api/v1/streams')).json.streams.map((s: { name: string; stream_id: number }) => [s.name, s.stream_id]));
    for (const s of subs) {
      t.equal(s.stream_id, streamIds.get(s.name), `${s.name}: stream_id`);
      t.type(s.description, 'string');
      t.type(s.rendered_description, 'string');
      t.type(s.date_created, 'number');
      t.equal(s.date_created, Math.floor(f.clock.t / 1000), `${s.name}: date_created is in seconds`);
      t.type(s.creator_id, 'number');
      t.equal(s.invite_only, false);
      t.equal(s.is_web_public, false);
      t.equal(s.history_public_to_subscribers, true);
      t.match(s.color, /^#[0-9a-f]{6}$/i, `${s.name}: color`);
      t.equal(s.is_muted, false);
      t.equal(s.in_home_view, true, 'in_home_view is the inverse of is_muted');
      t.equal(s.pin_to_top, false);
      for (const k of ['desktop_notifications', 'audible_notifications', 'push_notifications', 'email_notifications', 'wildcard_mentions_notify']) {
        t.equal(s[k], null, `${s.name}: ${k} follows the global setting`);
      }
      t.equal(s.first_message_id, null, 'no messages yet');
      t.equal(s.is_archived, false);
      t.ok('stream_weekly_traffic' in s);
      t.ok('message_retention_days' in s);
      t.notOk('subscribers' in s, 'no subscribers unless asked');
    }
    const creator = subs.find((s) => s.name === 'alpha')!;
    t.equal(creator.creator_id, owner.user_id, 'creator_id is who created it');
    t.not(subs[0].color, subs[1].color, 'two subscriptions of one user get different colors');
  });

  await t.test('include_subscribers=true adds sorted subscriber ids', async (t) => {
    const subs = await mySubscriptions(f, bob, true);
    const alpha = subs.find((s) => s.name === 'alpha')!;
    t.same(alpha.subscribers, [owner.user_id, bob.user_id].sort((a, b) => a - b));
    t.same(subs.find((s) => s.name === 'beta')!.subscribers, [bob.user_id]);
    const without = await f.call(bob, 'GET', SUBS, { include_subscribers: false });
    t.notOk('subscribers' in without.json.subscriptions[0]);
  });

  await t.test('first_message_id follows the channel\'s first message', async (t) => {
    const sent = await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'beta', topic: 't', content: 'first' });
    t.equal(sent.status, 200, sent.body);
    await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'beta', topic: 't', content: 'second' });
    const beta = (await mySubscriptions(f, bob)).find((s) => s.name === 'beta')!;
    t.equal(beta.first_message_id, sent.json.id);
  });

  await t.test('a user with no subscriptions gets an empty list', async (t) => {
    const dave = await f.createUser('dave@example.com', 'Dave');
    t.same(await mySubscriptions(f, dave), []);
  });
});

t.test('DELETE /users/me/subscriptions', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  await post(f, owner, ['one', 'two', 'three'], { principals: [owner.user_id, bob.user_id, carol.user_id] });
  await post(f, owner, ['vault'], { invite_only: true });

  await t.test('removes the caller and reports removed and not_removed', async (t) => {
    const res = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['one'] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.removed, ['one']);
    t.same(res.json.not_removed, []);
    t.same(await myChannelNames(f, bob), ['three', 'two']);
    const again = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['one', 'Two'] });
    t.equal(again.status, 200, again.body);
    t.same(again.json.removed, ['two'], 'names match case-insensitively; the stored name is reported');
    t.same(again.json.not_removed, ['one']);
    t.same(await myChannelNames(f, bob), ['three']);
    t.same(await myChannelNames(f, carol), ['one', 'three', 'two'], 'others stay subscribed');
  });

  await t.test('an unknown channel is 400 STREAM_DOES_NOT_EXIST', async (t) => {
    const res = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['nope'] });
    isError(t, res, 400, 'STREAM_DOES_NOT_EXIST', 'unknown channel');
    t.equal(res.json.msg, "Channel 'nope' does not exist");
    t.equal(res.json.stream, 'nope');
    const mixed = await f.call(carol, 'DELETE', SUBS, { subscriptions: ['three', 'nope'] });
    t.equal(mixed.status, 400);
    t.ok((await myChannelNames(f, carol)).includes('three'), 'nothing is removed when one name is bad');
  });

  await t.test('a private channel the caller cannot see reads as nonexistent', async (t) => {
    const res = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['vault'] });
    isError(t, res, 400, 'STREAM_DOES_NOT_EXIST', 'private channel');
    t.equal(res.json.msg, "Channel 'vault' does not exist");
  });

  await t.test('a member may not remove others', async (t) => {
    const res = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['three'], principals: [carol.user_id] });
    isError(t, res, 400, 'BAD_REQUEST', 'bob removes carol');
    t.ok((await myChannelNames(f, carol)).includes('three'), 'carol is still subscribed');
  });

  await t.test('a member may name themselves as the principal', async (t) => {
    const res = await f.call(carol, 'DELETE', SUBS, { subscriptions: ['one'], principals: ['carol@example.com'] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.removed, ['one']);
  });

  await t.test('an administrator may remove others, by id or email', async (t) => {
    const res = await f.call(owner, 'DELETE', SUBS, { subscriptions: ['three'], principals: [bob.user_id, 'carol@example.com'] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.removed, ['three']);
    t.same(await myChannelNames(f, bob), []);
    t.notOk((await myChannelNames(f, carol)).includes('three'));
    t.ok((await myChannelNames(f, owner)).includes('three'), 'the administrator was not named, so stays');
    const unknown = await f.call(owner, 'DELETE', SUBS, { subscriptions: ['three'], principals: [9999] });
    isError(t, unknown, 400, 'BAD_REQUEST', 'unknown principal');
  });

  await t.test('leaving a private channel hides it', async (t) => {
    await post(f, owner, ['vault'], { principals: [carol.user_id] });
    t.ok((await visibleStreams(f, carol)).includes('vault'));
    const res = await f.call(carol, 'DELETE', SUBS, { subscriptions: ['vault'] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.removed, ['vault']);
    t.notOk((await visibleStreams(f, carol)).includes('vault'));
  });

  await t.test('malformed requests', async (t) => {
    isError(t, await f.call(bob, 'DELETE', SUBS, {}), 400, 'REQUEST_VARIABLE_MISSING', 'no subscriptions');
    isError(t, await f.call(bob, 'DELETE', SUBS, { subscriptions: [] }), 400, 'BAD_REQUEST', 'empty subscriptions');
    isError(t, await f.call(bob, 'DELETE', SUBS, { subscriptions: 'one' }), 400, 'BAD_REQUEST', 'not a JSON list');
  });
});

t.test('GET /streams', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  await post(f, owner, ['public-a']);
  await post(f, carol, ['public-b']);
  await post(f, owner, ['owners-secret'], { invite_only: true });
  await post(f, bob, ['bobs-secret'], { invite_only: true });

  await t.test('public channels are visible to every member, private ones to subscribers', async (t) => {
    t.same(await visibleStreams(f, bob), ['bobs-secret', 'public-a', 'public-b']);
    t.same(await visibleStreams(f, carol), ['public-a', 'public-b']);
    t.same(await visibleStreams(f, owner), ['owners-secret', 'public-a', 'public-b'], 'without include_all, an owner sees what a member would');
  });

  await t.test('include_public=false keeps only subscribed channels', async (t) => {
    t.same(await visibleStreams(f, bob, { include_public: false }), ['bobs-secret']);
    t.same(await visibleStreams(f, carol, { include_public: false }), ['public-b']);
  });

  await t.test('include_subscribed=false still lists public channels', async (t) => {
    t.same(await visibleStreams(f, bob, { include_subscribed: false }), ['public-a', 'public-b']);
    t.same(await visibleStreams(f, bob, { include_subscribed: false, include_public: false }), []);
  });

  await t.test('include_all shows an administrator every channel, a member only what they may see', async (t) => {
    t.same(await visibleStreams(f, owner, { include_all: true }), ['bobs-secret', 'owners-secret', 'public-a', 'public-b']);
    t.same(await visibleStreams(f, owner, { include_all_active: true }), ['bobs-secret', 'owners-secret', 'public-a', 'public-b'], 'the deprecated include_all_active too');
    t.same(await visibleStreams(f, carol, { include_all: true }), ['public-a', 'public-b']);
  });

  await t.test('channels carry channel fields, not subscription settings', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/streams');
    const streams = res.json.streams as Array<Record<string, any>>;
    t.same(streams.map((s) => s.stream_id), [...streams.map((s) => s.stream_id)].sort((a, b) => a - b), 'ordered by id');
    for (const s of streams) {
      t.type(s.stream_id, 'number');
      t.type(s.name, 'string');
      t.type(s.description, 'string');
      t.type(s.rendered_description, 'string');
      t.type(s.invite_only, 'boolean');
      t.type(s.is_web_public, 'boolean');
      t.type(s.history_public_to_subscribers, 'boolean');
      t.type(s.date_created, 'number');
      t.equal(s.is_archived, false);
      for (const k of ['color', 'is_muted', 'pin_to_top', 'in_home_view', 'subscribers']) t.notOk(k in s, `${s.name}: no ${k}`);
    }
    const secret = streams.find((s) => s.name === 'bobs-secret')!;
    t.equal(secret.invite_only, true);
    t.equal(secret.creator_id, bob.user_id);
  });
});

t.test('GET /get_stream_id', async (t) => {
  const { f, owner, bob } = await cast();
  t.teardown(f.stop);
  await post(f, owner, ['Lobby']);
  await post(f, owner, ['hidden'], { invite_only: true });
  const lobbyId = (await f.call(owner, 'GET', '/api/v1/streams')).json.streams.find((s: { name: string }) => s.name === 'Lobby').stream_id;

  await t.test('finds a channel by name, case-insensitively', async (t) => {
    for (const name of ['Lobby', 'lobby', 'LOBBY']) {
      const res = await f.call(bob, 'GET', '/api/v1/get_stream_id', { stream: name });
      t.equal(res.status, 200, res.body);
      t.equal(res.json.stream_id, lobbyId, name);
    }
  });

  await t.test('an unknown name is 400 "Invalid channel name"', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/get_stream_id', { stream: 'nonexistent' });
    isError(t, res, 400, 'BAD_REQUEST', 'unknown channel');
    t.equal(res.json.msg, "Invalid channel name 'nonexistent'");
  });

  await t.test('a private channel the caller cannot access reads as unknown', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/get_stream_id', { stream: 'hidden' });
    isError(t, res, 400, 'BAD_REQUEST', 'private channel');
    t.equal(res.json.msg, "Invalid channel name 'hidden'");
    const own = await f.call(owner, 'GET', '/api/v1/get_stream_id', { stream: 'hidden' });
    t.equal(own.status, 200, 'a subscriber finds it');
  });

  await t.test('stream is required', async (t) => {
    const res = await f.call(bob, 'GET', '/api/v1/get_stream_id');
    isError(t, res, 400, 'REQUEST_VARIABLE_MISSING', 'no stream');
    t.equal(res.json.var_name, 'stream');
  });
});

t.test('subscription and stream events', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  const register = async (who: Credentials): Promise<string> => {
    const res = await f.call(who, 'POST', '/api/v1/register', { event_types: ['subscription', 'stream'] });
    if (res.status !== 200) throw new Error(res.body);
    return res.json.queue_id;
  };
  const queues = { owner: await register(owner), bob: await register(bob), carol: await register(carol) };
  const stripIds = (events: Array<Record<string, any>>): Array<Record<string, any>> => events.map(({ id, ...rest }) => rest);

  let newsId = 0;
  await t.test('subscribing to a new public channel', async (t) => {
    const res = await post(f, owner, ['news'], { principals: [bob.user_id] });
    t.equal(res.status, 200, res.body);

    const bobs = await eventsOf(f, bob, queues.bob);
    t.same(bobs.map((e) => e.id), [0, 1], 'event ids start at 0 and increase');
    t.same(bobs.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'the channel is announced before the subscription');
    t.equal(bobs[0]?.streams?.length, 1);
    t.equal(bobs[0]?.streams?.[0]?.name, 'news');
    newsId = bobs[0]?.streams?.[0]?.stream_id;
    t.type(newsId, 'number');
    t.equal(bobs[1]?.subscriptions?.length, 1);
    const added = bobs[1]?.subscriptions?.[0];
    t.equal(added?.name, 'news');
    t.equal(added?.stream_id, newsId);
    t.same(added?.subscribers, [bob.user_id]);
    t.match(added?.color, /^#[0-9a-f]{6}$/i);

    const fetched = (await mySubscriptions(f, bob, true)).find((s) => s.name === 'news');
    t.same(added, fetched, 'the add event carries what GET /users/me/subscriptions shows');

    for (const [who, q] of [[carol, queues.carol], [owner, queues.owner]] as const) {
      const events = stripIds(await eventsOf(f, who, q));
      t.same(events.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'peer_add']], `${who.email}: create, then peer_add`);
      t.equal(events[0]?.streams?.[0]?.stream_id, newsId);
      t.same(events[1]?.stream_ids, [newsId], `${who.email}: peer_add stream_ids`);
      t.same(events[1]?.user_ids, [bob.user_id], `${who.email}: peer_add user_ids`);
    }
  });

  await t.test('unsubscribing', async (t) => {
    const before = { bob: (await eventsOf(f, bob, queues.bob)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    const res = await f.call(owner, 'DELETE', SUBS, { subscriptions: ['news'], principals: [bob.user_id] });
    t.equal(res.status, 200, res.body);
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.equal(bobs.length, 1, JSON.stringify(bobs));
    t.equal(bobs[0]?.type, 'subscription');
    t.equal(bobs[0]?.op, 'remove');
    t.same(bobs[0]?.subscriptions?.map((s: { name: string; stream_id: number }) => [s.name, s.stream_id]), [['news', newsId]]);
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.equal(carols.length, 1, JSON.stringify(carols));
    t.equal(carols[0]?.type, 'subscription');
    t.equal(carols[0]?.op, 'peer_remove');
    t.same(carols[0]?.stream_ids, [newsId]);
    t.same(carols[0]?.user_ids, [bob.user_id]);
  });

  await t.test('subscribing oneself to an existing channel sends add to oneself and peer_add to others, no create', async (t) => {
    const before = { bob: (await eventsOf(f, bob, queues.bob)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    const res = await post(f, carol, ['news']);
    t.equal(res.status, 200, res.body);
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols.map((e) => [e.type, e.op]), [['subscription', 'add']]);
    t.same(carols[0]?.subscriptions?.[0]?.subscribers, [carol.user_id], 'bob left, so carol is the only subscriber');
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['subscription', 'peer_add']]);
    t.same(bobs[0]?.user_ids, [carol.user_id]);
  });

  await t.test('a no-op request sends nothing', async (t) => {
    const before = (await eventsOf(f, carol, queues.carol)).length;
    const res = await post(f, carol, ['news']);
    t.same(res.json.already_subscribed, { [String(carol.user_id)]: ['news'] });
    const gone = await f.call(bob, 'DELETE', SUBS, { subscriptions: ['news'] });
    t.same(gone.json.not_removed, ['news']);
    t.equal((await eventsOf(f, carol, queues.carol)).length, before);
  });

  await t.test('a new private channel: announced to its subscribers and administrators only', async (t) => {
    const count = async (): Promise<Record<string, number>> => ({
      owner: (await eventsOf(f, owner, queues.owner)).length,
      bob: (await eventsOf(f, bob, queues.bob)).length,
      carol: (await eventsOf(f, carol, queues.carol)).length,
    });
    const before = await count();
    const res = await post(f, bob, ['bob-private'], { invite_only: true });
    t.equal(res.status, 200, res.body);
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols, [], 'carol learns nothing of bob-private');
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'the creator learns the channel exists before subscribing to it');
    t.equal(bobs[0]?.streams?.[0]?.name, 'bob-private');
    t.equal(bobs[0]?.streams?.[0]?.invite_only, true);
    t.equal(bobs[1]?.subscriptions?.[0]?.name, 'bob-private');
    t.equal(bobs[1]?.subscriptions?.[0]?.invite_only, true);
    const owners = (await eventsOf(f, owner, queues.owner)).slice(before.owner);
    t.ok(owners.some((e) => e.type === 'stream' && e.op === 'create' && e.streams?.[0]?.name === 'bob-private'), 'administrators are told of every new private channel');

    const mid = await count();
    const added = await post(f, owner, ['bob-private'], { principals: [carol.user_id] });
    t.equal(added.status, 200, added.body);
    const carolsNow = (await eventsOf(f, carol, queues.carol)).slice(mid.carol);
    t.same(carolsNow.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'a member added to a private channel first learns it exists');
    t.equal(carolsNow[0]?.streams?.[0]?.name, 'bob-private');
    t.same(carolsNow[1]?.subscriptions?.[0]?.subscribers, [bob.user_id, carol.user_id].sort((a, b) => a - b));
    const bobsNow = (await eventsOf(f, bob, queues.bob)).slice(mid.bob);
    t.same(bobsNow.map((e) => [e.type, e.op, e.user_ids]), [['subscription', 'peer_add', [carol.user_id]]], 'subscribers see the new peer');
  });

  await t.test('a user named twice is subscribed and announced once', async (t) => {
    const before = { bob: (await eventsOf(f, bob, queues.bob)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    const res = await post(f, owner, ['twice'], { principals: [bob.user_id, bob.user_id, 'BOB@example.com'] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, { [String(bob.user_id)]: ['twice'] });
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add']], 'one add event');
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols.map((e) => [e.type, e.op, e.user_ids]), [['stream', 'create', undefined], ['subscription', 'peer_add', [bob.user_id]]], 'one peer_add naming bob once');
    const subs = await mySubscriptions(f, bob, true);
    const twice = subs.find((s) => s.name === 'twice');
    t.same(twice?.subscribers, [bob.user_id]);
    t.equal(twice?.subscriber_count, 1);
  });

  await t.test('a channel or user named twice is unsubscribed and announced once', async (t) => {
    const before = { bob: (await eventsOf(f, bob, queues.bob)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    const res = await f.call(owner, 'DELETE', SUBS, { subscriptions: ['twice', 'TWICE', 'twice'], principals: [bob.user_id, bob.user_id] });
    t.equal(res.status, 200, res.body);
    t.same(res.json.removed, ['twice']);
    t.same(res.json.not_removed, []);
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['subscription', 'remove']], 'one remove event');
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols.map((e) => [e.type, e.op, e.user_ids]), [['subscription', 'peer_remove', [bob.user_id]]], 'one peer_remove naming bob once');
  });

  await t.test('a queue not registered for these types gets none of them', async (t) => {
    const reg = await f.call(carol, 'POST', '/api/v1/register', { event_types: ['message'] });
    const res = await post(f, owner, ['quiet'], { principals: [carol.user_id] });
    t.equal(res.status, 200, res.body);
    t.same(await eventsOf(f, carol, reg.json.queue_id), []);
  });
});

t.test('one request, many channels: a handful of events per queue, batched as Zulip batches them', async (t) => {
  const { f, owner, bob, carol } = await cast();
  t.teardown(f.stop);
  // Existing channels: two public ones carol is in, and a private one of the owner and carol.
  t.equal((await post(f, owner, ['old-1', 'old-2'], { principals: [carol.user_id] })).status, 200);
  t.equal((await post(f, owner, ['old-secret'], { principals: [owner.user_id, carol.user_id], invite_only: true })).status, 200);
  const register = async (who: Credentials): Promise<string> => {
    const res = await f.call(who, 'POST', '/api/v1/register', { event_types: ['subscription', 'stream'] });
    if (res.status !== 200) throw new Error(res.body);
    return res.json.queue_id;
  };
  const queues = { owner: await register(owner), bob: await register(bob), carol: await register(carol) };
  const id = async (name: string): Promise<number> => (await f.call(owner, 'GET', '/api/v1/get_stream_id', { stream: name })).json.stream_id;
  const oldIds = { old1: await id('old-1'), old2: await id('old-2'), secret: await id('old-secret') };
  const N = 60;
  const fresh = Array.from({ length: N }, (_, i) => `bulk-${String(i).padStart(2, '0')}`);
  const requested = [...fresh.slice(0, N / 2), 'old-1', 'old-secret', ...fresh.slice(N / 2), 'old-2'];

  const res = await post(f, owner, requested, { principals: [bob.user_id] });
  t.equal(res.status, 200, res.body);
  t.same(res.json.subscribed, { [String(bob.user_id)]: requested });
  const freshIds = (await Promise.all(fresh.map(id))).sort((a, b) => a - b);
  const publicIds = [...freshIds, oldIds.old1, oldIds.old2].sort((a, b) => a - b);

  await t.test('the user added gets the new channels, the private one, then one add event listing all', async (t) => {
    const bobs = await eventsOf(f, bob, queues.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['stream', 'create'], ['stream', 'create'], ['subscription', 'add']]);
    t.same(bobs[0].streams.map((s: { name: string }) => s.name), fresh, 'every channel the request created, in one event, in request order');
    t.ok(bobs[0].streams.every((s: { subscriber_count: number }) => s.subscriber_count === 0), 'as created, before anyone joined');
    t.same(bobs[1].streams.map((s: { stream_id: number }) => s.stream_id), [oldIds.secret], 'a member added to a private channel learns of it first');
    t.same(bobs[2].subscriptions.map((s: { name: string }) => s.name), requested, 'one add event with every new subscription, in request order');
    const fetched = await mySubscriptions(f, bob, true);
    const byId = new Map(fetched.map((s) => [s.stream_id, s]));
    for (const s of bobs[2].subscriptions) t.same(s, byId.get(s.stream_id), `${s.name}: the add event carries what GET shows`);
  });

  await t.test('peers get one peer_add for the public channels and one for the private one', async (t) => {
    const carols = await eventsOf(f, carol, queues.carol);
    t.same(carols.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'peer_add'], ['subscription', 'peer_add']]);
    t.equal(carols[0].streams.length, N);
    t.same(carols[1].stream_ids, publicIds, 'public channels: one event, stream_ids sorted');
    t.same(carols[1].user_ids, [bob.user_id]);
    t.same(carols[2].stream_ids, [oldIds.secret], 'a private channel: its own event, to its subscribers');
    t.same(carols[2].user_ids, [bob.user_id]);
    const owners = await eventsOf(f, owner, queues.owner);
    t.same(owners.map((e) => [e.type, e.op, e.stream_ids?.length]), [['stream', 'create', undefined], ['subscription', 'peer_add', N + 2], ['subscription', 'peer_add', 1]]);
  });

  await t.test('peer_add is grouped by the set of users added, as in send_peer_subscriber_events', async (t) => {
    const before = { owner: (await eventsOf(f, owner, queues.owner)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    // carol is already in old-1 and old-2: there only dee joins; in the new ones both do.
    const dee = await f.createUser('dee@example.com', 'Dee');
    const mixed = await post(f, owner, ['mix-a', 'old-1', 'mix-b', 'old-2', 'mix-c'], { principals: [carol.user_id, dee.user_id] });
    t.equal(mixed.status, 200, mixed.body);
    const owners = (await eventsOf(f, owner, queues.owner)).slice(before.owner).filter((e) => e.op === 'peer_add');
    const mixIds = (await Promise.all(['mix-a', 'mix-b', 'mix-c'].map(id))).sort((a, b) => a - b);
    const sortIds = (ids: number[]) => [...ids].sort((a, b) => a - b);
    t.same(owners.map((e) => [sortIds(e.user_ids), e.stream_ids]), [
      [sortIds([carol.user_id, dee.user_id]), mixIds],
      [[dee.user_id], [oldIds.old1, oldIds.old2].sort((a, b) => a - b)],
    ], 'one event per set of added users');
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols.map((e) => [e.type, e.op]), [['stream', 'create'], ['subscription', 'add'], ['subscription', 'peer_add']], 'carol: the new channels, her additions, then dee joining where she already was');
    t.same(carols[1].subscriptions.map((s: { name: string }) => s.name), ['mix-a', 'mix-b', 'mix-c']);
    t.same(carols[2].user_ids, [dee.user_id]);
  });

  await t.test('unsubscribing from many: one remove event listing all, batched peer_remove', async (t) => {
    const before = { bob: (await eventsOf(f, bob, queues.bob)).length, carol: (await eventsOf(f, carol, queues.carol)).length };
    const gone = await f.call(owner, 'DELETE', SUBS, { subscriptions: requested, principals: [bob.user_id] });
    t.equal(gone.status, 200, gone.body);
    t.same(gone.json.removed, requested);
    const bobs = (await eventsOf(f, bob, queues.bob)).slice(before.bob);
    t.same(bobs.map((e) => [e.type, e.op]), [['subscription', 'remove']]);
    t.same(bobs[0].subscriptions.map((s: { name: string; stream_id: number }) => s.name), requested, 'every channel left, in request order');
    t.same(bobs[0].subscriptions[0], { name: requested[0], stream_id: freshIds[0] }, 'each as {name, stream_id}');
    const carols = (await eventsOf(f, carol, queues.carol)).slice(before.carol);
    t.same(carols.map((e) => [e.type, e.op, e.stream_ids, e.user_ids]), [
      ['subscription', 'peer_remove', publicIds, [bob.user_id]],
      ['subscription', 'peer_remove', [oldIds.secret], [bob.user_id]],
    ]);
    t.same(await myChannelNames(f, bob), []);
  });
});

t.test('GET /streams/{stream_id}', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com');
  const bob = await f.createUser('bob@example.com');
  await f.subscribe(f.owner, 'open');
  const secret = await f.call(alice, 'POST', SUBS, { subscriptions: [{ name: 'secret' }], invite_only: true });
  t.equal(secret.status, 200, secret.body);
  const idOf = async (name: string): Promise<number> => (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: name })).json.stream_id;
  const open = await idOf('open');
  const hidden = await idOf('secret');
  const listed = (await f.call(bob, 'GET', '/api/v1/streams')).json.streams.find((s: any) => s.stream_id === open);
  const one = await f.call(bob, 'GET', `/api/v1/streams/${open}`);
  t.equal(one.status, 200, one.body);
  t.same(one.json.stream, listed, 'the channel as GET /streams lists it');
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${hidden}`)).json.stream.invite_only, true, 'a subscriber sees a private channel');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/streams/${hidden}`)).status, 200, 'an administrator sees a private channel');
  const refused = await f.call(bob, 'GET', `/api/v1/streams/${hidden}`);
  t.equal(refused.status, 400);
  t.same([refused.json.code, refused.json.msg], ['BAD_REQUEST', 'Invalid channel ID'], 'a private channel is no different from a missing one');
  t.same((await f.call(bob, 'GET', '/api/v1/streams/99999')).json.msg, 'Invalid channel ID');
  t.equal((await f.call(bob, 'GET', '/api/v1/streams/abc')).status, 404, 'a path segment that is not an id is no such endpoint');
});

t.test('GET /users/me/{stream_id}/topics', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com');
  const bob = await f.createUser('bob@example.com');
  await f.subscribe(f.owner, 'open', [f.owner.user_id]);
  const sendTo = async (to: string, topic: string): Promise<number> => (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to, topic, content: 'x' })).json.id;
  const m1 = await sendTo('open', 'Lunch');
  const m2 = await sendTo('open', 'plans');
  const m3 = await sendTo('open', 'lunch');
  const m4 = await sendTo('open', '');
  const openId = channelIdByName(f.runtime, 1, 'open');
  const topics = await f.call(bob, 'GET', `/api/v1/users/me/${openId}/topics`);
  t.equal(topics.status, 200, topics.body);
  t.same(topics.json.topics, [{ name: 'general chat', max_id: m4 }, { name: 'lunch', max_id: m3 }, { name: 'plans', max_id: m2 }], 'newest first, one entry per topic whatever its case, spelled as its newest message');
  t.ok(m1 < m3);
  const modern = await f.call(bob, 'GET', `/api/v1/users/me/${openId}/topics`, { allow_empty_topic_name: true });
  t.equal(modern.json.topics[0].name, '', 'the empty topic as "" when the client allows it');

  // A private channel with protected history: a later subscriber sees only what they received.
  const made = await f.call(f.owner, 'POST', SUBS, { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true, history_public_to_subscribers: false });
  t.equal(made.status, 200, made.body);
  const vaultId = channelIdByName(f.runtime, 1, 'vault');
  await sendTo('vault', 'before');
  await f.subscribe(f.owner, 'vault', [alice.user_id]);
  const after = await sendTo('vault', 'after');
  t.same((await f.call(alice, 'GET', `/api/v1/users/me/${vaultId}/topics`)).json.topics, [{ name: 'after', max_id: after }]);
  t.same((await f.call(f.owner, 'GET', `/api/v1/users/me/${vaultId}/topics`)).json.topics.map((x: any) => x.name), ['after', 'before']);
  for (const [who, id, what] of [[bob, vaultId, 'a private channel'], [bob, 99999, 'a missing channel']] as const) {
    const r = await f.call(who, 'GET', `/api/v1/users/me/${id}/topics`);
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Invalid channel ID'], what);
  }
});

t.test('GET /streams/{stream_id}/members', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com');
  const bob = await f.createUser('bob@example.com');
  await f.subscribe(f.owner, 'open', [bob.user_id, f.owner.user_id]);
  const openId = channelIdByName(f.runtime, 1, 'open');
  const res = await f.call(alice, 'GET', `/api/v1/streams/${openId}/members`);
  t.same([res.status, res.json.subscribers], [200, [f.owner.user_id, bob.user_id].sort((a, b) => a - b)]);
  await f.call(bob, 'POST', SUBS, { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true });
  const vaultId = channelIdByName(f.runtime, 1, 'vault');
  t.same((await f.call(f.owner, 'GET', `/api/v1/streams/${vaultId}/members`)).json.subscribers, [bob.user_id], 'administrators see a private channel\'s members');
  t.same((await f.call(alice, 'GET', `/api/v1/streams/${vaultId}/members`)).json.msg, 'Invalid channel ID');
  t.equal((await f.call(alice, 'GET', '/api/v1/streams/abc/members')).status, 404);
});

t.test('POST /users/me/subscriptions/properties', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com');
  await f.subscribe(alice, 'open');
  await f.subscribe(f.owner, 'other');
  const openId = channelIdByName(f.runtime, 1, 'open');
  const otherId = channelIdByName(f.runtime, 1, 'other');
  const reg = await f.call(alice, 'POST', '/api/v1/register', { event_types: ['subscription'], fetch_event_types: ['subscription'] });
  const mine = (list: any[]) => list.find((s) => s.stream_id === openId);
  const state = { ...mine(reg.json.subscriptions) };
  const data = [
    { stream_id: openId, property: 'color', value: '#123abc' },
    { stream_id: openId, property: 'in_home_view', value: false },
    { stream_id: openId, property: 'pin_to_top', value: true },
    { stream_id: openId, property: 'desktop_notifications', value: false },
  ];
  const res = await f.call(alice, 'POST', `${SUBS}/properties`, { subscription_data: JSON.stringify(data) });
  t.same([res.status, res.json], [200, { result: 'success', msg: '' }], res.body);
  const events = (await f.call(alice, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: -1, dont_block: true })).json.events;
  t.same(events.map((e: any) => [e.op, e.property, e.value]), [
    ['update', 'color', '#123abc'], ['update', 'is_muted', true], ['update', 'in_home_view', false], ['update', 'pin_to_top', true], ['update', 'desktop_notifications', false],
  ]);
  for (const e of events) state[e.property] = e.value;
  const fresh = mine((await f.call(alice, 'GET', SUBS)).json.subscriptions);
  for (const key of ['color', 'is_muted', 'in_home_view', 'pin_to_top', 'desktop_notifications']) t.same(state[key], fresh[key], `${key}: register plus the events equals a fresh fetch`);

  const cases: Array<[unknown[], string]> = [
    [[{ stream_id: openId, property: 'colour', value: '#fff' }], 'Unknown subscription property: colour'],
    [[{ stream_id: openId, property: 'color', value: 'red' }], 'color is not a valid hex color code'],
    [[{ stream_id: openId, property: 'is_muted', value: 'yes' }], 'is_muted is not a boolean'],
    [[{ stream_id: otherId, property: 'is_muted', value: true }], `Not subscribed to channel ID ${otherId}`],
    [[{ stream_id: 99999, property: 'is_muted', value: true }], 'Invalid channel ID'],
    [[{ stream_id: openId, property: 'pin_to_top', value: false }, { stream_id: openId, property: 'nope', value: 1 }], 'Unknown subscription property: nope'],
  ];
  for (const [body, msg] of cases) {
    const r = await f.call(alice, 'POST', `${SUBS}/properties`, { subscription_data: JSON.stringify(body) });
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(body));
  }
  t.equal(mine((await f.call(alice, 'GET', SUBS)).json.subscriptions).pin_to_top, true, 'a refused request changes nothing, not even its valid part');
  t.equal((await f.call(alice, 'POST', `${SUBS}/properties`, {})).json.code, 'REQUEST_VARIABLE_MISSING');
});

t.test('GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed, for channels the caller may know of', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.subscribe(f.owner, 'open', [bob.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), invite_only: true });
  const id = (name: string) => channelIdByName(f.runtime, 1, name);
  const ask = (who: typeof bob, userId: number, streamId: number) => f.call(who, 'GET', `/api/v1/users/${userId}/subscriptions/${streamId}`);
  t.same((await ask(carol, bob.user_id, id('open'))).json.is_subscribed, true);
  t.same((await ask(carol, carol.user_id, id('open'))).json.is_subscribed, false);
  t.same((await ask(f.owner, bob.user_id, id('secret'))).json.is_subscribed, false, 'an owner asks about a private channel');
  const hidden = await ask(carol, f.owner.user_id, id('secret'));
  t.same([hidden.status, hidden.json.msg], [400, 'Invalid channel ID'], 'a private channel carol is not in is as unknown to her');
  t.same((await ask(carol, 9999, id('open'))).json.msg, 'No such user');
});

t.test('GET /streams/{stream_id}/email_address: empty without an email gateway; readable channels and own bots only', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'open', [bob.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret' }]), invite_only: true });
  const id = (name: string) => channelIdByName(f.runtime, 1, name);
  const bot = (await f.call(bob, 'POST', '/api/v1/bots', { full_name: 'Bob Bot', short_name: 'bobsbot' })).json.user_id as number;
  const ask = (who: Credentials, streamId: number, params: Record<string, unknown> = {}) => f.call(who, 'GET', `/api/v1/streams/${streamId}/email_address`, params);
  t.same((await ask(bob, id('open'))).json, { result: 'success', msg: '', email: '' });
  t.equal((await ask(bob, id('open'), { sender_id: bot })).status, 200, 'with a bot of his own as sender');
  t.equal((await ask(f.owner, id('open'), { sender_id: bot })).json.msg, 'Invalid user ID', "not someone else's bot");
  t.equal((await ask(bob, id('secret'))).json.msg, 'Invalid channel ID', 'nor a channel he cannot read');
});

t.test('POST /users/me/subscriptions: the channel-creation settings apply to the channels the request creates, checked as POST /channels/create checks them', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const folder = (await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Work', description: '' })).json.channel_folder_id;
  const qAlice = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['stream', 'subscription'] })).json.queue_id;
  const onlyAlice = { direct_members: [alice.user_id], direct_subgroups: [] };
  const res = await post(f, f.owner, ['plans'], {
    principals: [f.owner.user_id, alice.user_id], folder_id: folder, topics_policy: JSON.stringify('disable_empty_topic'),
    can_send_message_group: JSON.stringify(onlyAlice), can_resolve_topics_group: 6, can_subscribe_group: 6, can_delete_own_message_group: JSON.stringify(onlyAlice),
  });
  t.equal(res.status, 200, res.body);
  t.equal(res.json.ignored_parameters_unsupported, undefined, 'every setting is taken');
  const id = (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'plans' })).json.stream_id;
  const stream = (await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream;
  t.match(stream, {
    folder_id: folder, topics_policy: 'disable_empty_topic', can_send_message_group: onlyAlice, can_resolve_topics_group: 6, can_subscribe_group: 6, can_delete_own_message_group: onlyAlice,
    can_administer_channel_group: { direct_members: [f.owner.user_id], direct_subgroups: [] },
  }, 'as POST /channels/create sets them, the creator administering it');
  const created = (await queueEvents(f, alice, qAlice, 'stream')).find((e) => e.op === 'create');
  t.match(created?.streams[0], { stream_id: id, folder_id: folder, topics_policy: 'disable_empty_topic', can_send_message_group: onlyAlice }, 'the stream create event carries them');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'plans', topic: 't', content: 'x' })).status, 400, 'can_send_message_group holds');

  // An existing channel keeps its settings.
  t.equal((await post(f, f.owner, ['plans'], { principals: [bob.user_id], topics_policy: JSON.stringify('empty_topic_only'), can_send_message_group: 6 })).status, 200);
  t.match((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream, { topics_policy: 'disable_empty_topic', can_send_message_group: onlyAlice }, 'unchanged');

  const refused = async (params: Record<string, unknown>, msg: string) => {
    const r = await post(f, f.owner, ['never'], params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  };
  await refused({ folder_id: 999 }, 'Invalid channel folder ID');
  await refused({ topics_policy: JSON.stringify('sideways') }, 'Invalid topics_policy');
  await refused({ can_send_message_group: 99999 }, 'Invalid user group ID: 99999');
  await refused({ invite_only: true, history_public_to_subscribers: false, can_create_topic_group: 6 }, "'can_create_topic_group' must be the everyone group for private channels with protected history.");
  t.notOk((await visibleStreams(f, f.owner)).includes('never'), 'a refused request creates nothing');
  const bad = await post(f, f.owner, ['never'], { topics_policy: 'not json' });
  t.equal(bad.status, 400, 'topics_policy is JSON-encoded');
});

t.test('POST /users/me/subscriptions send_new_subscription_messages: Notification Bot tells the others subscribed to existing channels', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const bot = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' })).json.user_id;
  const registered = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['message'] })).json.queue_id;
  const [qAlice, qBob, qOwner] = [await registered(alice), await registered(bob), await registered(f.owner)];
  const dms = async (who: Credentials, q: string) => {
    const out: string[] = [];
    for (const e of await queueEvents(f, who, q, 'message')) out.push((await f.call(who, 'GET', `/api/v1/messages/${e.message.id}`, { apply_markdown: false })).json.raw_content);
    return out;
  };
  const mention = `@_**Olivia Owner|${f.owner.user_id}**`;

  // Created by the request: nobody is told, and the answer says the messages were sent (none were due).
  let r = await post(f, f.owner, ['one', 'two'], { principals: [f.owner.user_id, alice.user_id] });
  t.equal(r.json.new_subscription_messages_sent, true, 'by default: asked, and under the limit');
  t.same(await dms(alice, qAlice), [], 'no message for channels the request creates');
  // Existing channels: each other human is told, once, of all of them.
  r = await post(f, f.owner, ['one', 'two', 'three'], { principals: [f.owner.user_id, alice.user_id, bob.user_id, bot] });
  t.equal(r.json.new_subscription_messages_sent, true);
  t.same(await dms(bob, qBob), [`${mention} subscribed you to the following channels:\n\n* #**one**\n* #**two**\n`], 'bob: the existing channels he joined');
  t.same(await dms(alice, qAlice), [], 'alice joined only the new one');
  t.same((await queueEvents(f, f.owner, qOwner, 'message')).filter((e) => e.message.type === 'private'), [], 'the actor is not told');
  const dave = await f.createUser('dave@example.com', 'Dave');
  const qDave = await registered(dave);
  r = await post(f, f.owner, ['three'], { principals: [dave.user_id] });
  t.same(await dms(dave, qDave), [`${mention} subscribed you to #**three**.`], 'one channel');
  r = await post(f, f.owner, ['one'], { principals: [(await f.createUser('carol@example.com', 'Carol')).user_id], send_new_subscription_messages: false });
  t.equal(r.status, 200);
  t.equal(r.json.new_subscription_messages_sent, undefined, 'not asked: not answered');
  // Over max_bulk_new_subscription_messages users: nobody is told.
  const max = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] })).json.max_bulk_new_subscription_messages;
  const many: number[] = [];
  for (let i = 0; i <= max; i++) many.push((await f.createUser(`u${i}@example.com`, `User ${i}`)).user_id);
  r = await post(f, f.owner, ['two'], { principals: many });
  t.same([r.status, r.json.new_subscription_messages_sent, Object.keys(r.json.subscribed).length], [200, false, max + 1], `${max + 1} users: none told`);
  const last = many[many.length - 1];
  t.equal((await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, narrow: JSON.stringify([{ operator: 'dm', operand: [last] }]) })).json.messages.length, 0);
});
