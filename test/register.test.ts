/**
 * Route tests of `POST /register`: the version fields, the initial state and its
 * sections, `fetch_event_types` and `event_types`, narrows, queue lifespans, and the
 * race-free hand-over between the initial state and the event queue.
 */
import t from 'tap';
import { Abortable } from '../src/http/types.js';
import { chatFixture, settle, type ApiResult, type ChatFixture, type Credentials } from './helpers.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

const REGISTER = '/api/v1/register';
const VERSION_KEYS = ['zulip_version', 'zulip_feature_level', 'zulip_merge_base', 'service_version', 'service_feature_level', 'service_merge_base'];
const ALWAYS = new Set(['result', 'msg', 'queue_id', 'last_event_id', ...VERSION_KEYS]);

function isError(t: Tap, res: ApiResult, status: number, code: string | string[], what: string): void {
  t.equal(res.status, status, `${what}: status (${res.body})`);
  t.equal(res.json?.result, 'error', `${what}: result`);
  const codes = Array.isArray(code) ? code : [code];
  t.ok(codes.includes(res.json?.code), `${what}: code ${res.json?.code} is one of ${codes.join(', ')}`);
  t.type(res.json?.msg, 'string', `${what}: msg`);
}

function send(f: ChatFixture, who: Credentials, channel: string, content: string, topic = 'topic'): Promise<ApiResult> {
  return f.call(who, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic, content });
}

/** Everything in a queue, without acknowledging it. */
async function eventsOf(f: ChatFixture, who: Credentials, queueId: string, lastEventId = -1): Promise<Array<Record<string, any>>> {
  await settle();
  const res = await f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: lastEventId, dont_block: true });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.events;
}

/** Resolves with the promise's value, or with 'timeout' after `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('the register response', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  await f.subscribe(f.owner, 'owners-only');
  const sent = await send(f, f.owner, 'general', 'hello');
  t.equal(sent.status, 200, sent.body);
  const res = await f.call(bob, 'POST', REGISTER, {}, { headers: { host: 'localhost:9991' } });
  const r = res.json;

  await t.test('queue, last_event_id and version fields', async (t) => {
    t.equal(res.status, 200, res.body);
    t.equal(r.result, 'success');
    t.equal(r.msg, '');
    t.type(r.queue_id, 'string');
    t.ok(r.queue_id.length > 0);
    t.equal(r.last_event_id, -1);
    t.type(r.zulip_version, 'string');
    t.ok(Number.isInteger(r.zulip_feature_level) && r.zulip_feature_level > 0, 'zulip_feature_level is a positive integer');
    t.type(r.zulip_merge_base, 'string');
    t.equal(r.service_version, r.zulip_version);
    t.equal(r.service_feature_level, r.zulip_feature_level);
    t.equal(r.service_merge_base, r.zulip_merge_base);
    const settings = await f.call(null, 'GET', '/api/v1/server_settings');
    for (const k of VERSION_KEYS) t.equal(r[k], settings.json[k], `${k} agrees with server_settings`);
    // docs/api.md's "Feature level" says why 427: 428 is the first change not served.
    t.equal(r.zulip_feature_level, 427);
    t.notOk('realm_is_zephyr_mirror_realm' in r, 'removed at level 426');
  });

  await t.test('the realm section has every limit and Zulip default', async (t) => {
    t.equal(r.max_message_length, 10000);
    t.equal(r.max_topic_length, 60);
    t.equal(r.max_stream_name_length, 60);
    t.equal(r.max_stream_description_length, 1024);
    t.equal(r.max_channel_folder_name_length, 60);
    t.equal(r.max_channel_folder_description_length, 1024);
    t.equal(r.max_file_upload_size_mib, 100);
    t.equal(r.realm_empty_topic_display_name, 'general chat');
    t.equal(r.event_queue_longpoll_timeout_seconds, 90);
    t.equal(r.realm_name, 'Test Org');
    t.equal(r.realm_url, 'http://localhost:9991');
    t.equal(r.server_presence_ping_interval_seconds, 60);
    t.equal(r.server_presence_offline_threshold_seconds, 200);
    t.equal(r.server_typing_started_expiry_period_milliseconds, 45000);
    t.equal(r.server_typing_stopped_wait_period_milliseconds, 12000);
    t.equal(r.server_typing_started_wait_period_milliseconds, 30000);
    t.notOk('max_user_name_length' in r, 'an internal limit does not leak');
  });

  await t.test('the user sections', async (t) => {
    t.ok(Array.isArray(r.realm_users));
    const users = r.realm_users as Array<Record<string, any>>;
    t.same(users.map((u) => u.user_id).sort((a, b) => a - b), [f.owner.user_id, bob.user_id].sort((a, b) => a - b));
    const me = users.find((u) => u.user_id === bob.user_id)!;
    t.equal(me.email, 'bob@example.com');
    t.equal(me.full_name, 'Bob');
    t.equal(me.role, 400);
    t.equal(me.is_active, true);
    t.same(r.realm_non_active_users, []);
    t.equal(r.user_id, bob.user_id);
    t.equal(r.email, 'bob@example.com');
    t.equal(r.full_name, 'Bob');
    t.equal(r.is_admin, false);
    t.equal(r.is_owner, false);
    t.notOk('role' in r, 'the role is in realm_users: Zulip\'s register has no top-level role');
  });

  await t.test('the subscription sections', async (t) => {
    t.same(r.subscriptions.map((s: { name: string }) => s.name), ['general']);
    t.same(r.subscriptions[0].subscribers, [f.owner.user_id, bob.user_id].sort((a, b) => a - b), 'subscribers are included by default');
    t.same(r.unsubscribed, []);
    t.same(r.never_subscribed.map((s: { name: string }) => s.name), ['owners-only'], 'public channels the user is not in');
    t.same(r.never_subscribed[0].subscribers, [f.owner.user_id]);
    const fetched = await f.call(bob, 'GET', '/api/v1/users/me/subscriptions', { include_subscribers: true });
    t.same(r.subscriptions, fetched.json.subscriptions, 'the same as GET /users/me/subscriptions');
  });

  await t.test('max_message_id', async (t) => {
    t.equal(r.max_message_id, sent.json.id);
  });

  await t.test('include_subscribers=false leaves subscribers out', async (t) => {
    const res = await f.call(bob, 'POST', REGISTER, { include_subscribers: false, fetch_event_types: ['subscription'] });
    t.equal(res.status, 200, res.body);
    t.notOk('subscribers' in res.json.subscriptions[0]);
  });

  await t.test('register needs credentials', async (t) => {
    const anon = await f.call(null, 'POST', REGISTER);
    isError(t, anon, 401, 'UNAUTHORIZED', 'anonymous');
  });
});

t.test('fetch_event_types and event_types choose the sections', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');

  await t.test('fetch_event_types=["message"] gives max_message_id and nothing else', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: ['message'] });
    t.equal(res.status, 200, res.body);
    t.type(res.json.max_message_id, 'number');
    t.same(Object.keys(res.json).filter((k) => !ALWAYS.has(k)).sort(), ['max_message_id']);
    for (const k of ['realm_users', 'subscriptions', 'max_message_length', 'realm_name']) t.notOk(k in res.json, `no ${k}`);
  });

  await t.test('fetch_event_types=["default_stream_groups"] gives realm_default_stream_groups, as Zulip names it', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: ['default_stream_groups'] });
    t.equal(res.status, 200, res.body);
    t.same(Object.keys(res.json).filter((k) => !ALWAYS.has(k)), ['realm_default_stream_groups']);
    t.same(res.json.realm_default_stream_groups, []);
  });

  await t.test('fetch_event_types=["realm"] gives the realm settings only', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: ['realm'] });
    t.equal(res.json.max_message_length, 10000);
    t.equal(res.json.realm_empty_topic_display_name, 'general chat');
    t.equal(res.json.event_queue_longpoll_timeout_seconds, 90);
    for (const k of ['realm_users', 'subscriptions', 'max_message_id']) t.notOk(k in res.json, `no ${k}`);
  });

  await t.test('fetch_event_types=["realm_user","subscription"]', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: ['realm_user', 'subscription'] });
    t.ok(Array.isArray(res.json.realm_users));
    t.ok(Array.isArray(res.json.subscriptions));
    t.ok(Array.isArray(res.json.never_subscribed));
    t.ok(Array.isArray(res.json.unsubscribed));
    for (const k of ['max_message_id', 'max_message_length', 'realm_name']) t.notOk(k in res.json, `no ${k}`);
  });

  await t.test('fetch_event_types=[] fetches nothing', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: [] });
    t.equal(res.status, 200, res.body);
    t.same(Object.keys(res.json).filter((k) => !ALWAYS.has(k)), []);
    for (const k of ALWAYS) t.ok(k in res.json, `${k} is always present`);
  });

  await t.test('without fetch_event_types, event_types chooses', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { event_types: ['message'] });
    t.same(Object.keys(res.json).filter((k) => !ALWAYS.has(k)), ['max_message_id']);
  });

  await t.test('fetch_event_types wins over event_types', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { event_types: ['message'], fetch_event_types: ['realm_user'] });
    t.ok('realm_users' in res.json);
    t.notOk('max_message_id' in res.json);
  });

  await t.test('neither: every section', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER);
    for (const k of ['realm_users', 'subscriptions', 'never_subscribed', 'max_message_id', 'max_message_length', 'realm_user_groups', 'streams']) t.ok(k in res.json, `has ${k}`);
  });

  await t.test('unknown event types are accepted and fetch nothing', async (t) => {
    const res = await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: ['no_such_type'] });
    t.equal(res.status, 200, res.body);
    t.same(Object.keys(res.json).filter((k) => !ALWAYS.has(k)), []);
  });

  await t.test('malformed type lists are 400', async (t) => {
    isError(t, await f.call(f.owner, 'POST', REGISTER, { event_types: 'message' }), 400, 'BAD_REQUEST', 'not JSON');
    isError(t, await f.call(f.owner, 'POST', REGISTER, { event_types: [1] }), 400, 'BAD_REQUEST', 'not strings');
    isError(t, await f.call(f.owner, 'POST', REGISTER, { fetch_event_types: '{"a":1}' }), 400, 'BAD_REQUEST', 'an object');
  });
});

t.test('event_types filters what the queue receives', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  const subsOnly = await f.call(bob, 'POST', REGISTER, { event_types: ['subscription'] });
  const msgsOnly = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });
  const all = await f.call(bob, 'POST', REGISTER);

  const sent = await send(f, f.owner, 'general', 'a message');
  t.equal(sent.status, 200, sent.body);
  const sub = await f.subscribe(f.owner, 'second', [bob.user_id]);
  t.equal(sub.status, 200, sub.body);

  const subsEvents = await eventsOf(f, bob, subsOnly.json.queue_id);
  t.same(subsEvents.map((e) => e.type), ['subscription'], 'a subscription queue gets no message event');
  t.equal(subsEvents[0]?.op, 'add');
  t.equal(subsEvents[0]?.subscriptions?.[0]?.name, 'second');

  const msgEvents = await eventsOf(f, bob, msgsOnly.json.queue_id);
  t.same(msgEvents.map((e) => e.type), ['message'], 'a message queue gets no subscription event');
  t.equal(msgEvents[0]?.message?.id, sent.json.id);

  const allEvents = await eventsOf(f, bob, all.json.queue_id);
  // The message is general's first: a `stream` update of first_message_id follows it, as in Zulip.
  t.same(allEvents.map((e) => `${e.type}${e.property ? ':' + e.property : ''}`), ['message', 'stream:first_message_id', 'stream', 'subscription'], 'an unfiltered queue gets everything, in order');
});

t.test('a narrow filters message events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'a', [f.owner.user_id, bob.user_id]);
  await f.subscribe(f.owner, 'b', [f.owner.user_id, bob.user_id]);
  const aId = (await f.call(bob, 'GET', '/api/v1/get_stream_id', { stream: 'a' })).json.stream_id;

  const legacy = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], narrow: [['stream', 'a']] });
  t.equal(legacy.status, 200, legacy.body);
  const objects = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], narrow: [{ operator: 'channel', operand: 'a' }] });
  t.equal(objects.status, 200, objects.body);
  const byId = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], narrow: [{ operator: 'stream', operand: aId }] });
  t.equal(byId.status, 200, byId.body);
  const topic = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], narrow: [['stream', 'a'], ['topic', 'wanted']] });
  const unfiltered = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });

  const inB = await send(f, f.owner, 'b', 'in b', 'wanted');
  const inA = await send(f, f.owner, 'a', 'in a', 'other');
  const inATopic = await send(f, f.owner, 'a', 'in a, wanted topic', 'WANTED');
  const dm = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'private', to: [bob.user_id], content: 'direct' });
  for (const r of [inB, inA, inATopic, dm]) t.equal(r.status, 200, r.body);

  for (const [what, reg] of [['legacy pairs', legacy], ['operator objects', objects], ['channel id operand', byId]] as const) {
    const events = await eventsOf(f, bob, reg.json.queue_id);
    t.same(events.map((e) => e.message?.id), [inA.json.id, inATopic.json.id], `${what}: only messages of a`);
  }
  t.same((await eventsOf(f, bob, topic.json.queue_id)).map((e) => e.message?.id), [inATopic.json.id], 'channel and topic, topic case-insensitive');
  t.same((await eventsOf(f, bob, unfiltered.json.queue_id)).map((e) => e.message?.id), [inB.json.id, inA.json.id, inATopic.json.id, dm.json.id]);

  await t.test('a narrow does not filter non-message events', async (t) => {
    const reg = await f.call(bob, 'POST', REGISTER, { event_types: ['message', 'subscription'], narrow: [['stream', 'a']] });
    const res = await f.subscribe(f.owner, 'c', [bob.user_id]);
    t.equal(res.status, 200, res.body);
    const events = await eventsOf(f, bob, reg.json.queue_id);
    t.same(events.map((e) => [e.type, e.op]), [['subscription', 'add']]);
  });
});

t.test('a narrow naming an unknown user never breaks message delivery', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  for (const narrow of [[['sender', 'nobody@example.com']], [['dm', 'nobody@example.com']]]) {
    const reg = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], narrow });
    if (reg.status !== 200) {
      isError(t, reg, 400, ['BAD_NARROW', 'BAD_REQUEST'], `register with ${JSON.stringify(narrow)} is refused`);
      continue;
    }
    const sent = await within(send(f, f.owner, 'general', `after ${JSON.stringify(narrow)}`), 2000);
    t.not(sent, 'timeout', `a send after registering ${JSON.stringify(narrow)} completes`);
    if (sent === 'timeout') continue;
    t.equal(sent.status, 200, `the sender is not punished for another user's narrow: ${sent.body}`);
    t.same(await eventsOf(f, bob, reg.json.queue_id), [], 'the queue matches nothing');
  }
  const later = await within(send(f, f.owner, 'general', 'still works'), 2000);
  t.equal(later === 'timeout' ? 'timeout' : later.status, 200, 'the channel still accepts messages');
});

t.test('register is race-free: every message is in the state or in the queue, exactly once', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);

  await t.test('a message sent before register is in max_message_id, not in the queue', async (t) => {
    const before = await send(f, f.owner, 'general', 'before');
    const reg = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });
    t.equal(reg.json.max_message_id, before.json.id);
    t.equal(reg.json.last_event_id, -1);
    t.same(await eventsOf(f, bob, reg.json.queue_id), [], 'not delivered again as an event');

    const after = await send(f, f.owner, 'general', 'after');
    const events = await eventsOf(f, bob, reg.json.queue_id);
    t.same(events.map((e) => [e.id, e.type, e.message?.id]), [[0, 'message', after.json.id]], 'a message sent after is delivered once');
    t.equal(events[0]?.message?.content, '<p>after</p>');
    t.same(await eventsOf(f, bob, reg.json.queue_id, 0), [], 'acknowledged, it is gone');
    const history = await f.call(bob, 'GET', '/api/v1/messages', { anchor: reg.json.max_message_id, num_before: 0, num_after: 100, include_anchor: false });
    t.same(history.json.messages.map((m: { id: number }) => m.id), [after.json.id], 'GET /messages after max_message_id agrees with the queue');
  });

  await t.test('a send in flight while register runs lands on exactly one side', async (t) => {
    for (let i = 0; i < 5; i++) {
      const pending = send(f, f.owner, 'general', `in flight ${i}`);
      const reg = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });
      const sent = await pending;
      t.equal(sent.status, 200, sent.body);
      const events = await eventsOf(f, bob, reg.json.queue_id);
      const inState = reg.json.max_message_id >= sent.json.id;
      const inQueue = events.filter((e) => e.message?.id === sent.json.id).length;
      t.equal(Number(inState) + inQueue, 1, `message ${i}: in the state (${inState}) or the queue (${inQueue}), exactly once`);
    }
  });

  await t.test('a parked poll of a new queue is woken by the next message only', async (t) => {
    const reg = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });
    const abort = new Abortable();
    const poll = f.call(bob, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: reg.json.last_event_id }, { abort });
    await settle();
    const sent = await send(f, f.owner, 'general', 'wake up');
    const got = await within(poll, 2000);
    if (got === 'timeout') abort.abort();
    t.not(got, 'timeout', 'the poll completed');
    if (got === 'timeout') return;
    t.equal(got.status, 200, got.body);
    t.same(got.json.events.map((e: { message: { id: number } }) => e.message.id), [sent.json.id]);
  });
});

t.test('queue_lifespan_secs', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const poll = (queueId: string): Promise<ApiResult> => f.call(bob, 'GET', '/api/v1/events', { queue_id: queueId, dont_block: true });

  const short = await f.call(bob, 'POST', REGISTER, { event_types: ['message'] });
  const long = await f.call(bob, 'POST', REGISTER, { event_types: ['message'], queue_lifespan_secs: 3600 });
  t.equal(long.status, 200, long.body);
  t.notOk('ignored_parameters_unsupported' in long.json, 'queue_lifespan_secs is a known parameter');

  f.clock.t += 601_000;
  f.runtime.queues.tick();
  const shortGone = await poll(short.json.queue_id);
  isError(t, shortGone, 400, 'BAD_EVENT_QUEUE_ID', 'the default queue after 601 idle seconds');
  t.equal(shortGone.json.queue_id, short.json.queue_id);
  t.equal((await poll(long.json.queue_id)).status, 200, 'the long-lived queue survives 601 idle seconds');

  f.clock.t += 3601_000;
  f.runtime.queues.tick();
  isError(t, await poll(long.json.queue_id), 400, 'BAD_EVENT_QUEUE_ID', 'the long-lived queue after 3601 idle seconds');

  for (const bad of [-1, 'abc', 1.5]) {
    isError(t, await f.call(bob, 'POST', REGISTER, { queue_lifespan_secs: bad }), 400, 'BAD_REQUEST', `queue_lifespan_secs=${bad}`);
  }
});

t.test('a bad narrow is 400', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const cases: unknown[] = [
    [['no_such_operator', 'x']],
    [['is', 'nonsense']],
    [{ operator: 'stream' }],
    [{ operator: 'stream', operand: { nested: true } }],
    [{ operator: 'stream', operand: 'a', negated: 'yes' }],
    [['stream']],
    [1],
    ['stream'],
  ];
  for (const narrow of cases) {
    isError(t, await f.call(f.owner, 'POST', REGISTER, { narrow }), 400, ['BAD_NARROW', 'BAD_REQUEST'], `narrow ${JSON.stringify(narrow)}`);
  }
  isError(t, await f.call(f.owner, 'POST', REGISTER, { narrow: '{"operator":"stream"}' }), 400, ['BAD_NARROW', 'BAD_REQUEST'], 'an object');
  isError(t, await f.call(f.owner, 'POST', REGISTER, { narrow: '[["stream",' }), 400, 'BAD_REQUEST', 'malformed JSON');
  const ok = await f.call(f.owner, 'POST', REGISTER, { narrow: [], fetch_event_types: [] });
  t.equal(ok.status, 200, 'an empty narrow is fine');
});

t.test('unread_msgs groups unread ids by conversation, as Zulip does', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const cy = await f.createUser('cy@example.com', 'Cy');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id, cy.user_id]);
  await f.subscribe(f.owner, 'random', [f.owner.user_id, bob.user_id]);
  const ids: Record<string, number> = {};
  const post = async (name: string, who: Credentials, params: Record<string, unknown>): Promise<void> => {
    const res = await f.call(who, 'POST', '/api/v1/messages', params);
    t.equal(res.status, 200, `${name}: ${res.body}`);
    ids[name] = res.json.id;
  };
  await post('g1', f.owner, { type: 'stream', to: 'general', topic: 'Lunch', content: 'hi' });
  await post('g2', cy, { type: 'stream', to: 'general', topic: 'lunch', content: 'hello @**Bob**' });
  await post('g3', f.owner, { type: 'stream', to: 'general', topic: 'plans', content: 'x' });
  await post('r1', f.owner, { type: 'stream', to: 'random', topic: '', content: 'no topic' });
  await post('dm', cy, { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'psst' });
  await post('group', f.owner, { type: 'direct', to: JSON.stringify([bob.user_id, cy.user_id]), content: 'all of us' });
  await post('self', bob, { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'note to self' });
  await post('read', f.owner, { type: 'stream', to: 'general', topic: 'plans', content: 'seen' });
  const marked = await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: JSON.stringify([ids.read]), op: 'add', flag: 'read' });
  t.equal(marked.status, 200, marked.body);

  const res = await f.call(bob, 'POST', REGISTER, { fetch_event_types: JSON.stringify(['message', 'update_message_flags']) });
  t.equal(res.status, 200, res.body);
  const u = res.json.unread_msgs;
  t.same(u.streams, [
    { stream_id: u.streams[0].stream_id, topic: 'Lunch', unread_message_ids: [ids.g1, ids.g2] },
    { stream_id: u.streams[0].stream_id, topic: 'plans', unread_message_ids: [ids.g3] },
    { stream_id: u.streams[2].stream_id, topic: 'general chat', unread_message_ids: [ids.r1] },
  ], 'one entry per channel and case-folded topic; the read message is left out; the empty topic has its display name');
  t.ok(u.streams[0].stream_id < u.streams[2].stream_id, 'channels in id order');
  t.same(u.pms, [
    { other_user_id: bob.user_id, sender_id: bob.user_id, unread_message_ids: [ids.self] },
    { other_user_id: cy.user_id, sender_id: cy.user_id, unread_message_ids: [ids.dm] },
  ].sort((a, b) => a.other_user_id - b.other_user_id), 'one-to-one conversations, including the one with oneself');
  const group = [f.owner.user_id, bob.user_id, cy.user_id].sort((a, b) => a - b).join(',');
  t.same(u.huddles, [{ user_ids_string: group, unread_message_ids: [ids.group] }], 'group conversations by their sorted members');
  t.same(u.mentions, [ids.g2], 'the unread mention');
  t.equal(u.count, 7, 'every unread message counts');
  t.equal(u.old_unreads_missing, false);

  const modern = await f.call(bob, 'POST', REGISTER, { fetch_event_types: JSON.stringify(['update_message_flags']), client_capabilities: JSON.stringify({ empty_topic_name: true }) });
  t.equal(modern.json.unread_msgs.streams[2].topic, '', 'a client that shows the empty topic gets it as ""');
});

t.test('register refuses a narrow naming a user not in the organization, as GET /messages does', async (t) => {
  const f = await chatFixture();
  t.teardown(() => f.stop());
  for (const narrow of [[{ operator: 'sender', operand: 99999 }], [{ operator: 'sender', operand: 'nobody@example.com' }]]) {
    const reg = await f.call(f.owner, 'POST', '/api/v1/register', { narrow });
    t.equal(reg.status, 400, JSON.stringify(narrow));
    t.equal(reg.json.code, 'BAD_NARROW');
    const get = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, narrow });
    t.equal(get.json.code, reg.json.code, 'the same answer as GET /messages');
  }
  const ok = await f.call(f.owner, 'POST', '/api/v1/register', { narrow: [{ operator: 'sender', operand: f.owner.user_id }] });
  t.equal(ok.status, 200, ok.body);
  // Zulip's `check_narrow_for_events`: a queue filters by channel, topic, sender and is: alone.
  for (const operator of ['dm', 'search', 'has', 'dm-including', 'id']) {
    const refused = await f.call(f.owner, 'POST', '/api/v1/register', { narrow: [[operator, operator === 'has' ? 'link' : '1']] });
    t.same([refused.status, refused.json.msg], [400, `Operator ${operator} not supported.`], operator);
  }
});
