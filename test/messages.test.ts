/**
 * Route tests for the messages endpoints: `POST /messages`, `GET /messages`,
 * `GET /messages/{id}` and `POST /messages/flags`, asserting Zulip's behaviour.
 */
import t, { type Test } from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, type ApiResult, type ChatFixture, type Credentials } from './helpers.js';

/** Zulip's anchor value for "after every message". */
const NEWEST = 10000000000000000;

/** Every key of a channel message as `GET /messages` renders it. */
const STREAM_MESSAGE_KEYS = [
  'avatar_url', 'client', 'content', 'content_type', 'display_recipient', 'flags', 'id', 'is_me_message', 'reactions', 'recipient_id',
  'sender_email', 'sender_full_name', 'sender_id', 'sender_realm_str', 'stream_id', 'subject', 'submessages', 'timestamp', 'topic_links', 'type',
];
/** Every key of a direct message: the same without `stream_id`. */
const DIRECT_MESSAGE_KEYS = STREAM_MESSAGE_KEYS.filter((k) => k !== 'stream_id');

interface Org {
  f: ChatFixture;
  owner: Credentials;
  alice: Credentials;
  bob: Credentials;
  carol: Credentials;
  general: number;
}

/** A fresh organization: owner, Alice, Bob and Carol; everyone but Carol is in #general. */
async function org(t: Test): Promise<Org> {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice Anders');
  const bob = await f.createUser('bob@example.com', 'Bob Brown');
  const carol = await f.createUser('carol@example.com', 'Carol Clark');
  const sub = await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  if (sub.status !== 200) throw new Error(`subscribe failed: ${sub.body}`);
  return { f, owner: f.owner, alice, bob, carol, general: await channelId(f, 'general') };
}

async function channelId(f: ChatFixture, name: string): Promise<number> {
  const r = await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: name });
  if (r.status !== 200) throw new Error(`get_stream_id failed: ${r.body}`);
  return r.json.stream_id;
}

/** Creates a private channel with the given members. */
async function privateChannel(f: ChatFixture, name: string, members: number[]): Promise<number> {
  const r = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name }], principals: members, invite_only: true });
  if (r.status !== 200) throw new Error(`private channel failed: ${r.body}`);
  return channelId(f, name);
}

function post(f: ChatFixture, who: Credentials, params: Record<string, unknown>, extra?: { headers: Record<string, string> }): Promise<ApiResult> {
  return f.call(who, 'POST', '/api/v1/messages', params, extra);
}

/** Sends a message that must succeed; returns its id. */
async function send(f: ChatFixture, who: Credentials, params: Record<string, unknown>): Promise<number> {
  const r = await post(f, who, params);
  if (r.status !== 200) throw new Error(`send failed: ${r.body}`);
  return r.json.id;
}

function getMessages(f: ChatFixture, who: Credentials, params: Record<string, unknown>): Promise<ApiResult> {
  return f.call(who, 'GET', '/api/v1/messages', params);
}

/** The ids `GET /messages` returns for a request that must succeed. */
async function ids(f: ChatFixture, who: Credentials, params: Record<string, unknown>): Promise<number[]> {
  const r = await getMessages(f, who, params);
  if (r.status !== 200) throw new Error(`GET /messages failed: ${r.body}`);
  return r.json.messages.map((m: { id: number }) => m.id);
}

/** Ids of every message `who` can see under `narrow`. */
function narrowed(f: ChatFixture, who: Credentials, narrow: unknown[]): Promise<number[]> {
  return ids(f, who, { anchor: 'newest', num_before: 1000, num_after: 0, narrow });
}

function getOne(f: ChatFixture, who: Credentials, id: number | string, params: Record<string, unknown> = {}): Promise<ApiResult> {
  return f.call(who, 'GET', `/api/v1/messages/${id}`, params);
}

/** One message as `who` sees it, from `GET /messages/{id}`; the request must succeed. */
async function message(f: ChatFixture, who: Credentials, id: number, params: Record<string, unknown> = {}): Promise<any> {
  const r = await getOne(f, who, id, params);
  if (r.status !== 200) throw new Error(`GET /messages/${id} failed: ${r.body}`);
  return r.json.message;
}

function flags(f: ChatFixture, who: Credentials, params: Record<string, unknown>): Promise<ApiResult> {
  return f.call(who, 'POST', '/api/v1/messages/flags', params);
}

async function register(f: ChatFixture, who: Credentials, eventTypes: string[]): Promise<string> {
  const r = await f.call(who, 'POST', '/api/v1/register', { event_types: eventTypes });
  if (r.status !== 200) throw new Error(`register failed: ${r.body}`);
  return r.json.queue_id;
}

/** Everything in a queue, without parking. */
async function queued(f: ChatFixture, who: Credentials, queueId: string): Promise<any[]> {
  const r = await f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
  if (r.status !== 200) throw new Error(`GET /events failed: ${r.body}`);
  return r.json.events;
}

/** Asserts an error response; stops at the status so that one wrong answer is one failure. */
function expectError(t: Test, r: ApiResult, status: number, code: string, msg?: string): void {
  if (!t.equal(r.status, status, `status ${status}: ${r.body.slice(0, 300)}`)) return;
  t.equal(r.json?.result, 'error');
  t.equal(r.json?.code, code);
  if (msg !== undefined) t.equal(r.json?.msg, msg);
}

const user = (c: Credentials, fullName: string) => ({ id: c.user_id, email: c.email, full_name: fullName, is_mirror_dummy: false });

// ---------------------------------------------------------------------------
// POST /messages
// ---------------------------------------------------------------------------

t.test('POST /messages', async (t) => {
  t.test('sends to a channel by name with type "stream"', async (t) => {
    const { f, owner, alice, general } = await org(t);
    const r = await post(f, owner, { type: 'stream', to: 'general', topic: 'greetings', content: 'hello **world**' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(Object.keys(r.json).sort(), ['id', 'msg', 'result']);
    t.equal(r.json.result, 'success');
    t.equal(r.json.msg, '');
    t.type(r.json.id, 'number');
    const m = await message(f, alice, r.json.id);
    t.equal(m.type, 'stream');
    t.equal(m.stream_id, general);
    t.equal(m.display_recipient, 'general');
    t.equal(m.subject, 'greetings');
    t.equal(m.sender_id, owner.user_id);
    t.equal(m.sender_email, 'owner@example.com');
    t.equal(m.sender_full_name, 'Olivia Owner');
    t.equal(m.content, '<p>hello <strong>world</strong></p>');
    t.equal(m.timestamp, Math.floor(f.clock.t / 1000));
  });

  t.test('sends to a channel by id with type "channel"', async (t) => {
    const { f, owner, alice, general } = await org(t);
    const byInt = await post(f, owner, { type: 'channel', to: general, topic: 'by id', content: 'one' });
    if (!t.equal(byInt.status, 200, byInt.body)) return;
    t.equal((await message(f, alice, byInt.json.id)).stream_id, general);
    const byList = await post(f, owner, { type: 'channel', to: [general], topic: 'by id', content: 'two' });
    if (!t.equal(byList.status, 200, byList.body)) return;
    t.equal((await message(f, alice, byList.json.id)).stream_id, general);
    const byJsonName = await post(f, owner, { type: 'stream', to: '"general"', topic: 'by name', content: 'three' });
    if (!t.equal(byJsonName.status, 200, byJsonName.body)) return;
    t.equal((await message(f, alice, byJsonName.json.id)).display_recipient, 'general');
    t.ok(byInt.json.id < byList.json.id && byList.json.id < byJsonName.json.id, 'ids increase');
  });

  t.test('a channel message names exactly one channel', async (t) => {
    const { f, owner } = await org(t);
    await f.subscribe(owner, 'random');
    const r = await post(f, owner, { type: 'stream', to: ['general', 'random'], topic: 'x', content: 'two channels' });
    expectError(t, r, 400, 'BAD_REQUEST', 'Expected exactly one channel');
  });

  t.test('sends a direct message to user ids with type "private"', async (t) => {
    const { f, alice, bob } = await org(t);
    const r = await post(f, alice, { type: 'private', to: [bob.user_id], content: 'hi bob' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(Object.keys(r.json).sort(), ['id', 'msg', 'result']);
    const m = await message(f, bob, r.json.id);
    t.equal(m.type, 'private');
    t.equal(m.subject, '');
    t.notOk('stream_id' in m, 'a direct message has no stream_id');
    t.strictSame(m.display_recipient, [user(alice, 'Alice Anders'), user(bob, 'Bob Brown')]);
    t.equal(m.content, '<p>hi bob</p>');
    t.strictSame(Object.keys(m).sort(), DIRECT_MESSAGE_KEYS.slice().sort());
  });

  t.test('sends a direct message to emails with type "direct"', async (t) => {
    const { f, alice, bob, carol } = await org(t);
    const list = await post(f, alice, { type: 'direct', to: ['bob@example.com'], content: 'by email list' });
    if (!t.equal(list.status, 200, list.body)) return;
    t.strictSame((await message(f, bob, list.json.id)).display_recipient, [user(alice, 'Alice Anders'), user(bob, 'Bob Brown')]);
    const csv = await post(f, alice, { type: 'direct', to: 'bob@example.com, carol@example.com', content: 'by comma-separated emails' });
    if (!t.equal(csv.status, 200, csv.body)) return;
    const group = await message(f, carol, csv.json.id);
    t.equal(group.type, 'private');
    t.strictSame(group.display_recipient, [user(alice, 'Alice Anders'), user(bob, 'Bob Brown'), user(carol, 'Carol Clark')]);
    const single = await post(f, alice, { type: 'direct', to: 'bob@example.com', content: 'one bare email' });
    if (!t.equal(single.status, 200, single.body)) return;
    t.strictSame((await message(f, bob, single.json.id)).display_recipient, [user(alice, 'Alice Anders'), user(bob, 'Bob Brown')]);
  });

  t.test('a direct message to oneself has one participant', async (t) => {
    const { f, alice } = await org(t);
    const id = await send(f, alice, { type: 'direct', to: [alice.user_id], content: 'note to self' });
    const m = await message(f, alice, id);
    t.strictSame(m.display_recipient, [user(alice, 'Alice Anders')]);
  });

  t.test("a one-to-one direct message lists its two participants in email order", async (t) => {
    // Zulip's MessageDict.hydrate_recipient_info places the sender before or after the
    // recipient by comparing emails: alice@ sorts before owner@ although the owner's id is lower.
    const { f, owner, alice } = await org(t);
    const id = await send(f, owner, { type: 'private', to: [alice.user_id], content: 'hi alice' });
    t.ok(owner.user_id < alice.user_id);
    t.strictSame((await message(f, alice, id)).display_recipient, [user(alice, 'Alice Anders'), user(owner, 'Olivia Owner')]);
  });

  t.test('"subject" is accepted as the old name of "topic"', async (t) => {
    const { f, owner, alice } = await org(t);
    const r = await post(f, owner, { type: 'stream', to: 'general', subject: 'legacy name', content: 'x' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.notOk('ignored_parameters_unsupported' in r.json, 'subject is not reported as unsupported');
    t.equal((await message(f, alice, r.json.id)).subject, 'legacy name');
  });

  t.test('a channel message without a topic is refused', async (t) => {
    const { f, owner } = await org(t);
    const r = await post(f, owner, { type: 'stream', to: 'general', content: 'no topic' });
    expectError(t, r, 400, 'BAD_REQUEST', 'Missing topic');
  });

  t.test('the empty topic is valid; "(no topic)" and "general chat" mean it', async (t) => {
    const { f, owner, alice } = await org(t);
    const topics = ['', '(no topic)', 'general chat', '   '];
    for (const topic of topics) {
      const r = await post(f, owner, { type: 'stream', to: 'general', topic, content: `topic ${JSON.stringify(topic)}` });
      if (!t.equal(r.status, 200, `topic ${JSON.stringify(topic)}: ${r.body}`)) return;
      const got = await getOne(f, alice, r.json.id, { allow_empty_topic_name: true });
      if (!t.equal(got.status, 200, got.body)) return;
      t.equal(got.json.message.subject, '', `topic ${JSON.stringify(topic)} is stored as the empty topic`);
    }
    const list = await getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, allow_empty_topic_name: true });
    t.strictSame(list.json.messages.map((m: any) => m.subject), ['', '', '', '']);
    t.notOk('ignored_parameters_unsupported' in list.json, 'allow_empty_topic_name is a supported parameter of GET /messages');
    const one = await getOne(f, alice, list.json.messages[0].id, { allow_empty_topic_name: true });
    t.notOk('ignored_parameters_unsupported' in one.json, 'allow_empty_topic_name is a supported parameter of GET /messages/{id}');
  });

  t.test('without allow_empty_topic_name the empty topic is shown as "general chat"', async (t) => {
    const { f, owner, alice } = await org(t);
    const id = await send(f, owner, { type: 'stream', to: 'general', topic: '', content: 'in the empty topic' });
    t.equal((await message(f, alice, id)).subject, 'general chat');
    const list = await getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0 });
    t.equal(list.json.messages[0].subject, 'general chat');
  });

  t.test('topics are trimmed and truncated to 60 code points with "..."', async (t) => {
    const { f, owner, alice } = await org(t);
    const cases: Array<[string, string]> = [
      ['  padded  ', 'padded'],
      ['x'.repeat(60), 'x'.repeat(60)],
      ['x'.repeat(61), 'x'.repeat(57) + '...'],
      ['\u{1F600}'.repeat(60), '\u{1F600}'.repeat(60)],
      ['\u{1F600}'.repeat(61), '\u{1F600}'.repeat(57) + '...'],
    ];
    for (const [topic, stored] of cases) {
      const id = await send(f, owner, { type: 'stream', to: 'general', topic, content: 'x' });
      t.equal((await message(f, alice, id)).subject, stored, `topic of ${Array.from(topic).length} code points`);
    }
  });

  t.test('content over 10000 code points is truncated with "[message truncated]"', async (t) => {
    const { f, owner, alice } = await org(t);
    const marker = '\n[message truncated]';
    const cases: Array<[string, string]> = [
      ['a'.repeat(10000), 'a'.repeat(10000)],
      ['a'.repeat(10001), 'a'.repeat(10000 - marker.length) + marker],
      ['\u{1F600}'.repeat(10000), '\u{1F600}'.repeat(10000)],
      ['\u{1F600}'.repeat(10001), '\u{1F600}'.repeat(10000 - marker.length) + marker],
    ];
    for (const [content, stored] of cases) {
      const r = await post(f, owner, { type: 'stream', to: 'general', topic: 'long', content });
      if (!t.equal(r.status, 200, r.body.slice(0, 200))) return;
      const got = await getOne(f, alice, r.json.id);
      t.equal(got.json.raw_content, stored, `content of ${Array.from(content).length} code points`);
      t.equal(Array.from(got.json.raw_content).length, Math.min(Array.from(content).length, 10000));
    }
  });

  t.test('content loses trailing whitespace and leading newlines', async (t) => {
    const { f, owner, alice } = await org(t);
    const id = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: '\n\n  indented line  \n\t \n' });
    t.equal((await getOne(f, alice, id)).json.raw_content, '  indented line');
  });

  t.test('empty content is refused', async (t) => {
    const { f, owner } = await org(t);
    for (const content of ['', '   ', '\n\t \n']) {
      const r = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content });
      expectError(t, r, 400, 'BAD_REQUEST', 'Message must not be empty');
    }
    const dm = await post(f, owner, { type: 'direct', to: [owner.user_id], content: '' });
    expectError(t, dm, 400, 'BAD_REQUEST', 'Message must not be empty');
  });

  t.test('content with a null byte is refused', async (t) => {
    const { f, owner, alice } = await org(t);
    const r = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'before\u0000after' });
    expectError(t, r, 400, 'BAD_REQUEST', 'Message must not contain null bytes');
    const dm = await post(f, owner, { type: 'direct', to: [alice.user_id], content: '\u0000' });
    expectError(t, dm, 400, 'BAD_REQUEST', 'Message must not contain null bytes');
    t.strictSame(await ids(f, alice, { anchor: 'newest', num_before: 10, num_after: 0 }), [], 'nothing was stored');
  });

  t.test('an unknown channel is STREAM_DOES_NOT_EXIST', async (t) => {
    const { f, owner } = await org(t);
    const byName = await post(f, owner, { type: 'stream', to: 'nosuch', topic: 't', content: 'x' });
    expectError(t, byName, 400, 'STREAM_DOES_NOT_EXIST', "Channel 'nosuch' does not exist");
    t.equal(byName.json.stream, 'nosuch');
    const byId = await post(f, owner, { type: 'channel', to: 9999, topic: 't', content: 'x' });
    expectError(t, byId, 400, 'STREAM_DOES_NOT_EXIST', "Channel with ID '9999' does not exist");
    t.equal(byId.json.stream_id, 9999);
    // Digits too many for an id (route_fuzz seed 679120): looked up as a name, never Infinity.
    const digits = `1${'0'.repeat(400)}`;
    const long = await post(f, owner, { type: 'channel', to: digits, topic: 't', content: 'x' });
    expectError(t, long, 400, 'STREAM_DOES_NOT_EXIST', `Channel '${digits}' does not exist`);
    t.equal(long.json.stream, digits);
  });

  t.test('an unknown recipient of a direct message is refused', async (t) => {
    const { f, alice, bob } = await org(t);
    const byId = await post(f, alice, { type: 'private', to: [bob.user_id, 9999], content: 'x' });
    expectError(t, byId, 400, 'BAD_REQUEST', 'Invalid user ID 9999');
    const byEmail = await post(f, alice, { type: 'direct', to: ['nobody@example.com'], content: 'x' });
    expectError(t, byEmail, 400, 'BAD_REQUEST', "Invalid email 'nobody@example.com'");
    const empty = await post(f, alice, { type: 'direct', to: [], content: 'x' });
    expectError(t, empty, 400, 'BAD_REQUEST', 'Message must have recipients');
    t.strictSame(await ids(f, bob, { anchor: 'newest', num_before: 10, num_after: 0 }), [], 'nothing was stored');
  });

  t.test('a private channel the sender is not subscribed to is refused', async (t) => {
    const { f, owner, alice, bob } = await org(t);
    const secret = await privateChannel(f, 'secret', [owner.user_id, bob.user_id]);
    const byName = await post(f, alice, { type: 'stream', to: 'secret', topic: 't', content: 'let me in' });
    expectError(t, byName, 400, 'BAD_REQUEST', "Not authorized to send to channel 'secret'");
    const byId = await post(f, alice, { type: 'channel', to: secret, topic: 't', content: 'let me in' });
    expectError(t, byId, 400, 'BAD_REQUEST', "Not authorized to send to channel 'secret'");
    t.strictSame(await narrowed(f, bob, [{ operator: 'channel', operand: 'secret' }]), [], 'nothing was stored');
    const member = await post(f, bob, { type: 'stream', to: 'secret', topic: 't', content: 'members may' });
    if (!t.equal(member.status, 200, member.body)) return;
  });

  t.test('a public channel accepts messages from a member who is not subscribed', async (t) => {
    const { f, carol, alice } = await org(t);
    const r = await post(f, carol, { type: 'stream', to: 'general', topic: 't', content: 'from outside' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.equal((await message(f, alice, r.json.id)).sender_id, carol.user_id);
  });

  t.test('missing required parameters are REQUEST_VARIABLE_MISSING', async (t) => {
    const { f, owner } = await org(t);
    const noContent = await post(f, owner, { type: 'stream', to: 'general', topic: 't' });
    expectError(t, noContent, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'content' argument");
    t.equal(noContent.json.var_name, 'content');
    const noType = await post(f, owner, { to: 'general', topic: 't', content: 'x' });
    expectError(t, noType, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'type' argument");
    t.equal(noType.json.var_name, 'type');
    const noTo = await post(f, owner, { type: 'stream', topic: 't', content: 'x' });
    t.equal(noTo.status, 400, noTo.body);
    t.equal(noTo.json.result, 'error');
  });

  t.test('an unknown message type is refused', async (t) => {
    const { f, owner } = await org(t);
    for (const type of ['foo', 'huddle', '']) {
      const r = await post(f, owner, { type, to: 'general', topic: 't', content: 'x' });
      expectError(t, r, 400, 'BAD_REQUEST');
      t.match(r.json.msg, /^Invalid type\b/);
    }
  });

  t.test('unsupported parameters are reported, sorted, in ignored_parameters_unsupported', async (t) => {
    const { f, owner, alice } = await org(t);
    const r = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'x', zzz_extra: 'z', aaa_extra: 'a' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.ignored_parameters_unsupported, ['aaa_extra', 'zzz_extra']);
    t.equal((await getOne(f, alice, r.json.id)).json.raw_content, 'x', 'the message was still sent');
    const clean = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'y', read_by_sender: true, queue_id: 'q', local_id: '1' });
    if (!t.equal(clean.status, 200, clean.body)) return;
    t.notOk('ignored_parameters_unsupported' in clean.json, 'documented parameters are not reported');
  });

  t.test('read_by_sender: API clients leave their own message unread unless asked', async (t) => {
    const { f, owner, alice } = await org(t);
    const plain = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'from a script' });
    t.strictSame((await message(f, owner, plain)).flags, [], 'an API client default leaves the sender unread');
    t.strictSame((await message(f, alice, plain)).flags, []);
    const read = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'read by me', read_by_sender: true });
    t.strictSame((await message(f, owner, read)).flags, ['read']);
    t.strictSame((await message(f, alice, read)).flags, [], 'read_by_sender does not mark other users');
    const dm = await send(f, owner, { type: 'direct', to: [alice.user_id], content: 'dm read by me', read_by_sender: true });
    t.strictSame((await message(f, owner, dm)).flags, ['read']);
    t.strictSame((await message(f, alice, dm)).flags, []);
  });

  t.test('read_by_sender: interactive clients mark their own message read by default', async (t) => {
    const { f, owner, alice } = await org(t);
    const mobile = { headers: { 'user-agent': 'ZulipMobile/27.192 (Android 14)' } };
    const byDefault = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'from the app' }, mobile);
    if (!t.equal(byDefault.status, 200, byDefault.body)) return;
    const m = await message(f, owner, byDefault.json.id);
    t.equal(m.client, 'ZulipMobile');
    t.strictSame(m.flags, ['read']);
    t.strictSame((await message(f, alice, byDefault.json.id)).flags, []);
    const optOut = await post(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'keep unread', read_by_sender: false }, mobile);
    t.strictSame((await message(f, owner, optOut.json.id)).flags, [], 'read_by_sender=false wins over the client default');
  });

  t.test('local_id and queue_id: only the sending queue gets local_message_id', async (t) => {
    const { f, owner, alice } = await org(t);
    const sendingQueue = await register(f, owner, ['message']);
    const otherOwnQueue = await register(f, owner, ['message']);
    const aliceQueue = await register(f, alice, ['message']);
    const id = await send(f, owner, { type: 'stream', to: 'general', topic: 'echo', content: 'local echo', queue_id: sendingQueue, local_id: '1.01' });

    const mine = await queued(f, owner, sendingQueue);
    t.equal(mine.length, 1);
    t.strictSame(Object.keys(mine[0]).sort(), ['flags', 'id', 'local_message_id', 'message', 'type']);
    t.equal(mine[0].type, 'message');
    t.equal(mine[0].id, 0);
    t.equal(mine[0].local_message_id, '1.01');
    t.equal(mine[0].message.id, id);
    t.strictSame(mine[0].flags, []);

    const other = await queued(f, owner, otherOwnQueue);
    t.equal(other.length, 1);
    t.strictSame(Object.keys(other[0]).sort(), ['flags', 'id', 'message', 'type'], "the sender's other queue has no local_message_id");
    t.equal(other[0].message.id, id);

    const hers = await queued(f, alice, aliceQueue);
    t.equal(hers.length, 1);
    t.notOk('local_message_id' in hers[0], "another user's queue has no local_message_id");
    t.strictSame(hers[0].message, other[0].message, 'every queue gets the same message');
  });

  t.test('local_id without queue_id echoes nothing', async (t) => {
    const { f, owner } = await org(t);
    const q = await register(f, owner, ['message']);
    await send(f, owner, { type: 'direct', to: [owner.user_id], content: 'no queue named', local_id: '7' });
    const events = await queued(f, owner, q);
    t.equal(events.length, 1);
    t.notOk('local_message_id' in events[0]);
  });

  t.test('a message event carries the read flag of read_by_sender', async (t) => {
    const { f, owner, alice } = await org(t);
    const ownerQueue = await register(f, owner, ['message']);
    const aliceQueue = await register(f, alice, ['message']);
    await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'x', read_by_sender: true });
    t.strictSame((await queued(f, owner, ownerQueue))[0].flags, ['read']);
    t.strictSame((await queued(f, alice, aliceQueue))[0].flags, []);
  });

  t.test('@**Full Name** mentions give that user the mentioned flag', async (t) => {
    const { f, owner, alice, bob } = await org(t);
    const aliceQueue = await register(f, alice, ['message']);
    const id = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'hi @**Alice Anders**' });
    const m = await message(f, alice, id);
    t.strictSame(m.flags, ['mentioned']);
    t.equal(m.content, `<p>hi <span class="user-mention" data-user-id="${alice.user_id}">@Alice Anders</span></p>`);
    t.strictSame((await message(f, bob, id)).flags, [], 'other subscribers are not mentioned');
    t.strictSame((await queued(f, alice, aliceQueue))[0].flags, ['mentioned'], 'the message event carries the flag');

    const withId = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: `ping @**Bob Brown|${bob.user_id}**` });
    t.strictSame((await message(f, bob, withId)).flags, ['mentioned']);
    t.strictSame((await message(f, alice, withId)).flags, []);

    const silent = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'quietly @_**Alice Anders**' });
    t.strictSame((await message(f, alice, silent)).flags, [], 'a silent mention does not mention');

    const unknown = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'hi @**Nobody Here**' });
    t.strictSame((await message(f, alice, unknown)).flags, []);
    t.equal((await message(f, alice, unknown)).content, '<p>hi @<strong>Nobody Here</strong></p>', 'an unmatched mention stays text');

    const dm = await send(f, owner, { type: 'direct', to: [alice.user_id], content: '@**Alice Anders** look' });
    t.strictSame((await message(f, alice, dm)).flags, ['mentioned']);
  });
});

// ---------------------------------------------------------------------------
// GET /messages, on one shared, read-only history
// ---------------------------------------------------------------------------

t.test('GET /messages', async (t) => {
  const { f, owner, alice, bob, carol, general } = await org(t);
  await f.subscribe(owner, 'random', [owner.user_id, alice.user_id]);
  const random = await channelId(f, 'random');
  const secret = await privateChannel(f, 'secret', [owner.user_id, bob.user_id]);
  const mine = { read_by_sender: true };
  // The history, in id order, with who sees what:
  const m1 = await send(f, owner, { type: 'stream', to: 'general', topic: 'lunch', content: 'apple pie', ...mine });
  const m2 = await send(f, alice, { type: 'stream', to: 'random', topic: 'books', content: 'banana bread', ...mine });
  const m3 = await send(f, bob, { type: 'direct', to: [alice.user_id], content: 'hello alice' });
  const m4 = await send(f, owner, { type: 'stream', to: 'general', topic: 'dinner', content: 'cherry tart', ...mine });
  const m5 = await send(f, owner, { type: 'direct', to: [alice.user_id, bob.user_id], content: 'group hello', ...mine });
  const m6 = await send(f, bob, { type: 'stream', to: 'secret', topic: 'plans', content: 'secret apple' });
  const m7 = await send(f, alice, { type: 'stream', to: 'general', topic: 'Lunch', content: 'more apple', ...mine });
  const m8 = await send(f, alice, { type: 'direct', to: [owner.user_id], content: 'hi owner', ...mine });
  const m9 = await send(f, bob, { type: 'direct', to: [alice.user_id, carol.user_id], content: 'trio' });
  // Alice has read m1 and starred m4; her unread messages are m3, m4, m5 and m9.
  if ((await flags(f, alice, { messages: [m1], op: 'add', flag: 'read' })).status !== 200) throw new Error('mark read failed');
  if ((await flags(f, alice, { messages: [m4], op: 'add', flag: 'starred' })).status !== 200) throw new Error('star failed');
  const aliceAll = [m1, m2, m3, m4, m5, m7, m8, m9];

  t.test('anchor=newest returns everything the user can read, in id order across channels and DMs', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'newest', num_before: 100, num_after: 0 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(Object.keys(r.json).sort(), ['anchor', 'found_anchor', 'found_newest', 'found_oldest', 'history_limited', 'messages', 'msg', 'result']);
    t.equal(r.json.result, 'success');
    t.equal(r.json.msg, '');
    t.strictSame(r.json.messages.map((m: any) => m.id), aliceAll);
    t.equal(r.json.anchor, NEWEST);
    t.equal(r.json.found_anchor, false);
    t.equal(r.json.found_oldest, true);
    t.equal(r.json.found_newest, true);
    t.equal(r.json.history_limited, false);
    t.strictSame(await ids(f, owner, { anchor: 'newest', num_before: 100, num_after: 0 }), [m1, m2, m4, m5, m6, m7, m8]);
    t.strictSame(await ids(f, bob, { anchor: 'newest', num_before: 100, num_after: 0 }), [m1, m3, m4, m5, m6, m7, m9]);
    t.strictSame(await ids(f, carol, { anchor: 'newest', num_before: 100, num_after: 0 }), [m9], 'channels one is not in are not in the feed');
  });

  t.test('anchor=newest with a short window', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'newest', num_before: 2, num_after: 0 });
    t.strictSame(r.json.messages.map((m: any) => m.id), [m8, m9]);
    t.equal(r.json.anchor, NEWEST);
    t.equal(r.json.found_anchor, false);
    t.equal(r.json.found_oldest, false);
    t.equal(r.json.found_newest, true);
  });

  t.test('anchor=oldest', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'oldest', num_before: 0, num_after: 3 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m1, m2, m3]);
    t.equal(r.json.anchor, 0);
    t.equal(r.json.found_anchor, false);
    t.equal(r.json.found_oldest, true);
    t.equal(r.json.found_newest, false);
    const all = await getMessages(f, alice, { anchor: 'oldest', num_before: 0, num_after: 100 });
    t.strictSame(all.json.messages.map((m: any) => m.id), aliceAll);
    t.equal(all.json.found_oldest, true);
    t.equal(all.json.found_newest, true);
  });

  t.test('a numeric anchor that is present', async (t) => {
    const r = await getMessages(f, alice, { anchor: m4, num_before: 1, num_after: 1 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m3, m4, m5]);
    t.equal(r.json.anchor, m4);
    t.equal(r.json.found_anchor, true);
    t.equal(r.json.found_oldest, false);
    t.equal(r.json.found_newest, false);
    const wide = await getMessages(f, alice, { anchor: String(m4), num_before: 10, num_after: 10 });
    t.strictSame(wide.json.messages.map((m: any) => m.id), aliceAll);
    t.equal(wide.json.found_anchor, true);
    t.equal(wide.json.found_oldest, true, 'fewer than num_before older messages');
    t.equal(wide.json.found_newest, true, 'fewer than num_after newer messages');
    const only = await getMessages(f, alice, { anchor: m1, num_before: 0, num_after: 0 });
    t.strictSame(only.json.messages.map((m: any) => m.id), [m1]);
    t.equal(only.json.found_anchor, true);
  });

  t.test('a numeric anchor the user cannot see is not found', async (t) => {
    const r = await getMessages(f, alice, { anchor: m6, num_before: 1, num_after: 1 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m5, m7]);
    t.equal(r.json.anchor, m6);
    t.equal(r.json.found_anchor, false);
    const past = await getMessages(f, alice, { anchor: m9 + 1000, num_before: 1, num_after: 5 });
    t.strictSame(past.json.messages.map((m: any) => m.id), [m9]);
    t.equal(past.json.found_anchor, false);
    t.equal(past.json.found_newest, true);
  });

  t.test('include_anchor=false leaves the anchor out and does not report it found', async (t) => {
    const after = await getMessages(f, alice, { anchor: m4, num_before: 0, num_after: 2, include_anchor: false });
    if (!t.equal(after.status, 200, after.body)) return;
    t.strictSame(after.json.messages.map((m: any) => m.id), [m5, m7]);
    t.equal(after.json.found_anchor, false);
    t.equal(after.json.anchor, m4);
    const before = await getMessages(f, alice, { anchor: m4, num_before: 2, num_after: 0, include_anchor: false });
    t.strictSame(before.json.messages.map((m: any) => m.id), [m2, m3]);
    t.equal(before.json.found_anchor, false);
  });

  t.test('anchor=first_unread starts at the oldest unread message', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'first_unread', num_before: 1, num_after: 1 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m2, m3, m4]);
    t.equal(r.json.anchor, m3);
    t.equal(r.json.found_anchor, true);
    t.equal(r.json.found_oldest, false);
    t.equal(r.json.found_newest, false);
    const legacy = await getMessages(f, alice, { use_first_unread_anchor: true, num_before: 0, num_after: 0 });
    if (!t.equal(legacy.status, 200, legacy.body)) return;
    t.equal(legacy.json.anchor, m3, 'use_first_unread_anchor is the old spelling of first_unread');
    t.strictSame(legacy.json.messages.map((m: any) => m.id), [m3]);
    const inGeneral = await getMessages(f, alice, { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [{ operator: 'channel', operand: 'general' }] });
    t.equal(inGeneral.json.anchor, m4, 'the first unread message matching the narrow');
  });

  t.test('anchor=first_unread with nothing unread anchors after the newest message', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'first_unread', num_before: 5, num_after: 5, narrow: [{ operator: 'channel', operand: 'random' }] });
    if (!t.equal(r.status, 200, r.body)) return;
    t.equal(r.json.anchor, NEWEST);
    t.strictSame(r.json.messages.map((m: any) => m.id), [m2]);
    t.equal(r.json.found_anchor, false);
    t.equal(r.json.found_oldest, true);
    t.equal(r.json.found_newest, true);
  });

  t.test('a missing anchor is an error', async (t) => {
    const r = await getMessages(f, alice, { num_before: 1, num_after: 1 });
    expectError(t, r, 400, 'BAD_REQUEST', "Missing 'anchor' argument.");
  });

  t.test('an invalid anchor is an error', async (t) => {
    for (const anchor of ['bogus', '12abc', 'NEWEST']) {
      const r = await getMessages(f, alice, { anchor, num_before: 1, num_after: 1 });
      expectError(t, r, 400, 'BAD_REQUEST', 'Invalid anchor');
    }
  });

  t.test('a negative anchor counts as 0', async (t) => {
    const r = await getMessages(f, alice, { anchor: -5, num_before: 0, num_after: 2 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.equal(r.json.anchor, 0);
    t.strictSame(r.json.messages.map((m: any) => m.id), [m1, m2]);
    t.equal(r.json.found_oldest, true);
  });

  t.test('num_before and num_after default to 0', async (t) => {
    const r = await getMessages(f, alice, { anchor: m4, num_after: 1 });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m4, m5]);
    t.equal(r.json.found_anchor, true);
    const noAfter = await getMessages(f, alice, { anchor: m4, num_before: 1 });
    if (!t.equal(noAfter.status, 200, noAfter.body)) return;
    t.strictSame(noAfter.json.messages.map((m: any) => m.id), [m3, m4]);
  });

  t.test('window sizes are checked', async (t) => {
    const tooMany = await getMessages(f, alice, { anchor: 'newest', num_before: 3000, num_after: 2001 });
    expectError(t, tooMany, 400, 'BAD_REQUEST', 'Too many messages requested (maximum 5000).');
    const atLimit = await getMessages(f, alice, { anchor: 'newest', num_before: 3000, num_after: 2000 });
    if (!t.equal(atLimit.status, 200, atLimit.body)) return;
    const negative = await getMessages(f, alice, { anchor: 'newest', num_before: -1, num_after: 0 });
    expectError(t, negative, 400, 'BAD_REQUEST');
    const notInt = await getMessages(f, alice, { anchor: 'newest', num_before: 'many', num_after: 0 });
    expectError(t, notInt, 400, 'BAD_REQUEST');
  });

  t.test('narrow by channel name, id, and the legacy "stream" operator', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }]), [m1, m4, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'GENERAL' }]), [m1, m4, m7], 'channel names match case-insensitively');
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: general }]), [m1, m4, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'stream', operand: 'general' }]), [m1, m4, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'stream', operand: random }]), [m2]);
    t.strictSame(await narrowed(f, bob, [{ operator: 'channel', operand: secret }]), [m6]);
  });

  t.test('narrow by topic, case-insensitively', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: 'lunch' }]), [m1, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: 'LUNCH' }]), [m1, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'topic', operand: 'books' }]), [m2]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'random' }, { operator: 'topic', operand: 'lunch' }]), []);
  });

  t.test('narrow by direct message conversation: ids, emails and group conversations', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: [bob.user_id] }]), [m3]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: 'bob@example.com' }]), [m3]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: [owner.user_id] }]), [m8]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'pm-with', operand: 'bob@example.com' }]), [m3], 'pm-with is the old name of dm');
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: [owner.user_id, bob.user_id] }]), [m5]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: 'owner@example.com,bob@example.com' }]), [m5]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: [bob.user_id, carol.user_id] }]), [m9]);
    t.strictSame(await narrowed(f, bob, [{ operator: 'dm', operand: [alice.user_id, carol.user_id] }]), [m9]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm', operand: [carol.user_id] }]), [], 'a group conversation is not a one-to-one conversation');
    t.strictSame(await narrowed(f, alice, [{ operator: 'dm-including', operand: bob.user_id }]), [m3, m5, m9]);
  });

  t.test('narrow by is:dm', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'dm' }]), [m3, m5, m8, m9]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'private' }]), [m3, m5, m8, m9]);
  });

  t.test('narrow by sender, by email or id', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'sender', operand: 'owner@example.com' }]), [m1, m4, m5]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'sender', operand: alice.user_id }]), [m2, m7, m8]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }, { operator: 'sender', operand: 'alice@example.com' }]), [m7]);
  });

  t.test('narrow by is:starred and is:unread', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'starred' }]), [m4]);
    t.strictSame(await narrowed(f, bob, [{ operator: 'is', operand: 'starred' }]), [], 'stars are personal');
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'unread' }]), [m3, m4, m5, m9]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }, { operator: 'is', operand: 'unread' }]), [m4]);
  });

  t.test('narrow by a simple search term', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'search', operand: 'apple' }]), [m1, m7], 'not the private channel message');
    t.strictSame(await narrowed(f, alice, [{ operator: 'search', operand: 'APPLE' }]), [m1, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'search', operand: 'apple pie' }]), [m1], 'every word must match');
    t.strictSame(await narrowed(f, bob, [{ operator: 'search', operand: 'apple' }]), [m1, m6, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'search', operand: 'durian' }]), []);
  });

  t.test('search results carry match_content and match_subject', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: 'general' }, { operator: 'search', operand: 'pie' }] });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages.map((m: any) => m.id), [m1]);
    t.equal(r.json.messages[0].match_content, '<p>apple <span class="highlight">pie</span></p>');
    t.equal(r.json.messages[0].match_subject, 'lunch');
  });

  t.test('negated terms', async (t) => {
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: 'lunch', negated: true }]), [m4]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'sender', operand: 'alice@example.com', negated: true }]), [m1, m3, m4, m5, m9]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'dm', negated: true }]), [m1, m2, m4, m7]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'channel', operand: 'general', negated: true }]), [m2, m3, m5, m8, m9]);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'unread', negated: false }]), [m3, m4, m5, m9], 'negated: false is an ordinary term');
  });

  t.test('the legacy [operator, operand] pair form', async (t) => {
    t.strictSame(await narrowed(f, alice, [['channel', 'general'], ['topic', 'lunch']]), [m1, m7]);
    t.strictSame(await narrowed(f, alice, [['stream', 'random']]), [m2]);
    t.strictSame(await narrowed(f, alice, [['is', 'starred']]), [m4]);
    t.strictSame(await narrowed(f, alice, [['sender', 'owner@example.com'], { operator: 'is', operand: 'dm' }]), [m5], 'pairs and objects mix');
  });

  t.test('an empty narrow is the whole feed', async (t) => {
    t.strictSame(await narrowed(f, alice, []), aliceAll);
  });

  t.test('invalid narrows are BAD_NARROW', async (t) => {
    const ask = (narrow: unknown) => getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow });
    expectError(t, await ask([{ operator: 'bogus', operand: 'x' }]), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown operator bogus');
    expectError(t, await ask([{ operator: 'is', operand: 'bogus' }]), 400, 'BAD_NARROW', "Invalid narrow operator: unknown 'is' operand bogus");
    expectError(t, await ask([{ operator: 'channel', operand: 'nosuch' }]), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown channel nosuch');
    expectError(t, await ask([{ operator: 'channel', operand: 9999 }]), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown channel 9999');
    expectError(t, await ask([{ operator: 'sender', operand: 'nobody@example.com' }]), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown user nobody@example.com');
    expectError(t, await ask([{ operator: 'dm', operand: 'nobody@example.com' }]), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown user in nobody@example.com');
  });

  t.test('malformed narrows are refused', async (t) => {
    const raw = (narrow: string) => getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow });
    for (const narrow of ['{"operator":"is"}', 'not json', '"is:starred"', '[["is"]]', '[42]', '[{"operator":"channel"}]']) {
      const r = await raw(narrow);
      t.equal(r.status, 400, `narrow ${narrow}: ${r.body}`);
      t.equal(r.json.result, 'error');
      t.ok(['BAD_REQUEST', 'BAD_NARROW'].includes(r.json.code), `narrow ${narrow} has code ${r.json.code}`);
    }
  });

  t.test('a private channel the user is not in narrows to their own (empty) history', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: 'secret' }] });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages, []);
    t.equal(r.json.found_anchor, false);
    t.equal(r.json.found_oldest, true);
    t.equal(r.json.found_newest, true);
    const byId = await getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: secret }, { operator: 'search', operand: 'apple' }] });
    if (!t.equal(byId.status, 200, byId.body)) return;
    t.strictSame(byId.json.messages, []);
  });

  t.test('messages have the exact Zulip shape', async (t) => {
    const r = await getMessages(f, alice, { anchor: m1, num_before: 0, num_after: 2 });
    const [stream, , direct] = r.json.messages;
    t.strictSame(Object.keys(stream).sort(), STREAM_MESSAGE_KEYS.slice().sort());
    t.match(stream, {
      id: m1, sender_id: owner.user_id, sender_email: 'owner@example.com', sender_full_name: 'Olivia Owner', sender_realm_str: '',
      type: 'stream', stream_id: general, display_recipient: 'general', subject: 'lunch', content: '<p>apple pie</p>', content_type: 'text/html',
      client: 'Unspecified', is_me_message: false, timestamp: Math.floor(f.clock.t / 1000),
    });
    t.strictSame(stream.flags, ['read']);
    t.strictSame(stream.reactions, []);
    t.strictSame(stream.submessages, []);
    t.strictSame(stream.topic_links, []);
    t.type(stream.recipient_id, 'number');
    t.strictSame(Object.keys(direct).sort(), DIRECT_MESSAGE_KEYS.slice().sort());
    t.match(direct, { id: m3, sender_id: bob.user_id, type: 'private', subject: '', content: '<p>hello alice</p>' });
    t.strictSame(direct.display_recipient, [user(alice, 'Alice Anders'), user(bob, 'Bob Brown')]);
    t.strictSame(direct.flags, []);
  });

  t.test('apply_markdown=false returns the raw Markdown', async (t) => {
    const raw = await getMessages(f, alice, { anchor: m1, num_before: 0, num_after: 0, apply_markdown: false });
    t.equal(raw.json.messages[0].content, 'apple pie');
    t.equal(raw.json.messages[0].content_type, 'text/x-markdown');
    const html = await getMessages(f, alice, { anchor: m1, num_before: 0, num_after: 0, apply_markdown: true });
    t.equal(html.json.messages[0].content, '<p>apple pie</p>');
    t.equal(html.json.messages[0].content_type, 'text/html');
  });

  t.test('client_gravatar is a supported parameter', async (t) => {
    const r = await getMessages(f, alice, { anchor: 'newest', num_before: 1, num_after: 0, client_gravatar: false });
    if (!t.equal(r.status, 200, r.body)) return;
    t.notOk('ignored_parameters_unsupported' in r.json);
  });

  t.test('GET /messages/{id} returns one message with its raw content', async (t) => {
    const r = await getOne(f, alice, m1);
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(Object.keys(r.json).sort(), ['message', 'msg', 'raw_content', 'result']);
    t.equal(r.json.raw_content, 'apple pie');
    t.strictSame(Object.keys(r.json.message).sort(), STREAM_MESSAGE_KEYS.slice().sort());
    t.match(r.json.message, { id: m1, content: '<p>apple pie</p>', content_type: 'text/html', subject: 'lunch', stream_id: general });
    t.strictSame(r.json.message.flags, ['read']);
    const list = await getMessages(f, alice, { anchor: m1, num_before: 0, num_after: 0 });
    t.strictSame(r.json.message, list.json.messages[0], 'the same dictionary GET /messages returns');
    t.strictSame((await message(f, alice, m4)).flags, ['starred']);
    const dm = await getOne(f, alice, m5);
    t.equal(dm.json.raw_content, 'group hello');
    t.strictSame(Object.keys(dm.json.message).sort(), DIRECT_MESSAGE_KEYS.slice().sort());
    const byId = (a: { id: number }, b: { id: number }) => a.id - b.id;
    t.strictSame(dm.json.message.display_recipient.slice().sort(byId), [user(owner, 'Olivia Owner'), user(alice, 'Alice Anders'), user(bob, 'Bob Brown')]);
  });

  t.test('GET /messages/{id} with apply_markdown=false', async (t) => {
    const r = await getOne(f, alice, m3, { apply_markdown: false });
    t.equal(r.json.message.content, 'hello alice');
    t.equal(r.json.message.content_type, 'text/x-markdown');
    t.equal(r.json.raw_content, 'hello alice');
  });

  t.test('GET /messages/{id} of a public channel message one never received is read and historical', async (t) => {
    t.strictSame((await message(f, bob, m2)).flags, ['read', 'historical']);
    t.strictSame((await message(f, carol, m1)).flags, ['read', 'historical']);
  });

  t.test('GET /messages/{id} of an inaccessible message', async (t) => {
    expectError(t, await getOne(f, alice, m6), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(t, await getOne(f, owner, m3), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(t, await getOne(f, carol, m5), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });

  t.test('GET /messages/{id} of a nonexistent message', async (t) => {
    expectError(t, await getOne(f, alice, 999999), 400, 'BAD_REQUEST', 'Invalid message(s)');
    expectError(t, await getOne(f, alice, 0), 400, 'BAD_REQUEST', 'Invalid message(s)');
  });

  t.test('GET /messages/{id} with a non-numeric id matches no endpoint', async (t) => {
    const r = await getOne(f, alice, 'abc');
    t.equal(r.status, 404, r.body);
    t.equal(r.json?.result, 'error');
  });
});

// ---------------------------------------------------------------------------
// History that predates a subscription
// ---------------------------------------------------------------------------

t.test("max_message_id is the newest message the user received, as Zulip's register and GET /users/me give it", async (t) => {
  const { f, owner, alice, bob, carol } = await org(t);
  const maxOf = async (who: Credentials): Promise<[number, number]> => [
    (await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['message'] })).json.max_message_id,
    (await f.call(who, 'GET', '/api/v1/users/me')).json.max_message_id,
  ];
  t.same(await maxOf(carol), [-1, -1], 'nothing received yet: -1');
  const inGeneral = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'to general' });
  const toAlice = await send(f, owner, { type: 'direct', to: JSON.stringify([alice.user_id]), content: 'just alice' });
  t.same(await maxOf(alice), [toAlice, toAlice], 'a direct message counts for its recipients');
  t.same(await maxOf(bob), [inGeneral, inGeneral], "another user's direct message does not");
  t.same(await maxOf(carol), [-1, -1], 'nor a channel one was never subscribed to');
  // A channel left: what was sent while subscribed counts, what came after does not.
  await f.call(bob, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(['general']) });
  const afterLeft = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'after bob left' });
  t.same(await maxOf(bob), [inGeneral, inGeneral], 'messages after leaving do not count');
  // Another organization's messages (ids are server-wide) never do.
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const theirs = (method: string, path: string, params: Record<string, unknown> = {}) => f.call(beta.owner, method, path, params, { headers: { host: 'beta.localhost' } });
  const foreign = (await theirs('POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([beta.owner.user_id]), content: 'elsewhere' })).json.id;
  t.ok(foreign > afterLeft, 'the other organization sent the newest message on the server');
  t.same(await maxOf(alice), [afterLeft, afterLeft], "the other organization's messages do not count");
  t.equal((await theirs('POST', '/api/v1/register', { fetch_event_types: ['message'] })).json.max_message_id, foreign, 'and count there');
});

t.test('messages sent before one subscribed are history, not part of the personal feed', async (t) => {
  const { f, owner, carol } = await org(t);
  const before = await send(f, owner, { type: 'stream', to: 'general', topic: 'old', content: 'before carol joined', read_by_sender: true });
  const sub = await f.subscribe(carol, 'general');
  if (!t.equal(sub.status, 200, sub.body)) return;
  const after = await send(f, owner, { type: 'stream', to: 'general', topic: 'new', content: 'after carol joined', read_by_sender: true });
  t.strictSame(await ids(f, carol, { anchor: 'newest', num_before: 10, num_after: 0 }), [after], 'the combined feed holds only received messages');
  const channel = await getMessages(f, carol, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: 'general' }] });
  t.strictSame(channel.json.messages.map((m: any) => m.id), [before, after], 'a channel narrow includes the history');
  t.strictSame(channel.json.messages[0].flags, ['read', 'historical']);
  t.strictSame(channel.json.messages[1].flags, []);
});

t.test('GET /messages message_ids: the listed messages one may read, in id order, without an anchor', async (t) => {
  const { f, owner, alice, bob, carol } = await org(t);
  const inGeneral = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'public' });
  await privateChannel(f, 'secret', [owner.user_id, alice.user_id]);
  const inSecret = await send(f, owner, { type: 'stream', to: 'secret', topic: 't', content: 'private' });
  const toBob = await send(f, owner, { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'dm' });
  const byIds = (who: Credentials, messageIds: unknown, extra: Record<string, unknown> = {}) => getMessages(f, who, { message_ids: JSON.stringify(messageIds), ...extra });

  const r = await byIds(alice, [toBob, inSecret, inGeneral, inGeneral, 99999999]);
  t.equal(r.status, 200, r.body);
  t.strictSame(r.json.messages.map((m: any) => m.id), [inGeneral, inSecret], "ascending, once each; bob's direct message and an unknown id left out silently");
  // Zulip answers found_* false and no anchor for a fetch by ids.
  t.strictSame(Object.keys(r.json).sort(), ['found_anchor', 'found_newest', 'found_oldest', 'history_limited', 'messages', 'msg', 'result']);
  t.strictSame([r.json.found_anchor, r.json.found_oldest, r.json.found_newest, r.json.history_limited], [false, false, false, false]);
  t.equal(r.json.ignored_parameters_unsupported, undefined, 'message_ids is a parameter Parley takes');
  t.strictSame(r.json.messages[0].flags, [], 'flags as a range fetch gives them: unread');
  t.strictSame((await byIds(bob, [toBob, inSecret])).json.messages.map((m: any) => m.id), [toBob], 'bob reads his direct message, not the private channel');
  t.strictSame((await byIds(alice, [inGeneral, inSecret], { narrow: JSON.stringify([{ operator: 'channel', operand: 'secret' }]) })).json.messages.map((m: any) => m.id), [inSecret], 'a narrow filters them');
  t.strictSame((await byIds(carol, [inGeneral])).json.messages, [], 'carol never received the channel message');
  const history = await byIds(carol, [inGeneral], { narrow: JSON.stringify([{ operator: 'channel', operand: 'general' }]) });
  t.strictSame(history.json.messages.map((m: any) => [m.id, m.flags]), [[inGeneral, ['read', 'historical']]], 'with the public channel narrowed to, history is included');
  t.strictSame((await byIds(alice, [])).json.messages, [], 'no ids, no messages');
  t.equal((await byIds(alice, [inGeneral], { num_before: 0, num_after: 0 })).status, 200, 'zero counts are no range');

  const incompatible = 'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor';
  for (const extra of [{ anchor: 'newest' }, { num_before: 1 }, { num_after: 2 }, { use_first_unread_anchor: true }]) {
    const bad = await byIds(alice, [inGeneral], extra);
    expectError(t, bad, 400, 'BAD_REQUEST', incompatible);
    t.equal(bad.json.parameters, 'num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor', `${Object.keys(extra)[0]}: the parameters named`);
  }
  expectError(t, await byIds(alice, Array.from({ length: 5001 }, (_, i) => i + 1)), 400, 'BAD_REQUEST', 'Too many messages requested (maximum 5000).');
  t.equal((await byIds(alice, [-1])).status, 400, 'a negative id');
  t.equal((await byIds(alice, 'x')).status, 400, 'not a list');
  expectError(t, await getMessages(f, alice, {}), 400, 'BAD_REQUEST', "Missing 'anchor' argument.");
});

// ---------------------------------------------------------------------------
// POST /messages/flags
// ---------------------------------------------------------------------------

t.test('POST /messages/flags', async (t) => {
  t.test('add and remove starred; the response lists only changed ids', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    const b = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'two' });
    const add = await flags(f, alice, { messages: [a], op: 'add', flag: 'starred' });
    if (!t.equal(add.status, 200, add.body)) return;
    t.strictSame(add.json, { result: 'success', msg: '', messages: [a] });
    t.strictSame((await message(f, alice, a)).flags, ['starred']);
    const again = await flags(f, alice, { messages: [a, b], op: 'add', flag: 'starred' });
    t.strictSame(again.json.messages, [b], 'an already starred message is not changed');
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'starred' }]), [a, b]);
    t.strictSame(await narrowed(f, owner, [{ operator: 'is', operand: 'starred' }]), [], "another user's stars are unaffected");
    const remove = await flags(f, alice, { messages: [a], op: 'remove', flag: 'starred' });
    t.strictSame(remove.json, { result: 'success', msg: '', messages: [a] });
    t.strictSame((await message(f, alice, a)).flags, []);
    const removeAgain = await flags(f, alice, { messages: [a], op: 'remove', flag: 'starred' });
    t.strictSame(removeAgain.json.messages, []);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'starred' }]), [b]);
  });

  t.test('add and remove read', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    const b = await send(f, owner, { type: 'direct', to: [alice.user_id], content: 'two' });
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'unread' }]), [a, b]);
    const read = await flags(f, alice, { messages: [a, b], op: 'add', flag: 'read' });
    t.strictSame(read.json, { result: 'success', msg: '', messages: [a, b] });
    t.strictSame((await message(f, alice, b)).flags, ['read']);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'unread' }]), []);
    const unread = await flags(f, alice, { messages: [a], op: 'remove', flag: 'read' });
    t.strictSame(unread.json, { result: 'success', msg: '', messages: [a], ignored_because_not_subscribed_channels: [] });
    t.strictSame((await message(f, alice, a)).flags, []);
    t.strictSame(await narrowed(f, alice, [{ operator: 'is', operand: 'unread' }]), [a]);
    const first = await getMessages(f, alice, { anchor: 'first_unread', num_before: 0, num_after: 0 });
    t.equal(first.json.anchor, a);
  });

  t.test('marking unread skips channels one is not subscribed to', async (t) => {
    const { f, owner, alice } = await org(t);
    await f.subscribe(owner, 'random', [owner.user_id, alice.user_id]);
    const random = await channelId(f, 'random');
    const inRandom = await send(f, owner, { type: 'stream', to: 'random', topic: 't', content: 'x' });
    const inGeneral = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'y' });
    t.equal((await flags(f, alice, { messages: [inRandom, inGeneral], op: 'add', flag: 'read' })).status, 200);
    const left = await f.call(alice, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: ['random'] });
    if (!t.equal(left.status, 200, left.body)) return;
    const r = await flags(f, alice, { messages: [inRandom, inGeneral], op: 'remove', flag: 'read' });
    if (!t.equal(r.status, 200, r.body)) return;
    t.strictSame(r.json.messages, [inGeneral]);
    t.strictSame(r.json.ignored_because_not_subscribed_channels, [random]);
    t.strictSame((await message(f, alice, inRandom)).flags, ['read'], 'the message stays read');
  });

  t.test('collapsed is settable', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one', read_by_sender: true });
    const r = await flags(f, owner, { messages: [a], op: 'add', flag: 'collapsed' });
    t.strictSame(r.json.messages, [a]);
    t.strictSame((await message(f, owner, a)).flags, ['read', 'collapsed']);
    t.strictSame((await message(f, alice, a)).flags, []);
  });

  t.test('an unknown flag is refused', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    const r = await flags(f, alice, { messages: [a], op: 'add', flag: 'bogus' });
    expectError(t, r, 400, 'BAD_REQUEST', "Invalid flag: 'bogus'");
  });

  t.test('a flag the client may not set is refused as not editable', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    for (const flag of ['mentioned', 'historical', 'has_alert_word', 'stream_wildcard_mentioned']) {
      const r = await flags(f, alice, { messages: [a], op: 'add', flag });
      expectError(t, r, 400, 'BAD_REQUEST', `Flag not editable: '${flag}'`);
    }
    t.strictSame((await message(f, alice, a)).flags, [], 'nothing changed');
  });

  t.test('flags on messages the user cannot access are refused', async (t) => {
    const { f, owner, alice, bob } = await org(t);
    await privateChannel(f, 'secret', [owner.user_id]);
    const hidden = await send(f, owner, { type: 'stream', to: 'secret', topic: 't', content: 'hidden' });
    const dm = await send(f, owner, { type: 'direct', to: [bob.user_id], content: 'not for alice' });
    const visible = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'visible' });
    for (const id of [hidden, dm, 999999]) {
      const r = await flags(f, alice, { messages: [visible, id], op: 'add', flag: 'starred' });
      expectError(t, r, 400, 'BAD_REQUEST', 'Invalid message(s)');
    }
    t.strictSame((await message(f, alice, visible)).flags, [], 'no flag was changed by a refused request');
  });

  t.test('missing and invalid parameters', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    const noFlag = await flags(f, alice, { messages: [a], op: 'add' });
    expectError(t, noFlag, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'flag' argument");
    t.equal(noFlag.json.var_name, 'flag');
    const noMessages = await flags(f, alice, { op: 'add', flag: 'read' });
    expectError(t, noMessages, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'messages' argument");
    const noOp = await flags(f, alice, { messages: [a], flag: 'read' });
    expectError(t, noOp, 400, 'REQUEST_VARIABLE_MISSING', "Missing 'op' argument");
    const badOp = await flags(f, alice, { messages: [a], op: 'toggle', flag: 'read' });
    expectError(t, badOp, 400, 'BAD_REQUEST');
    const badList = await flags(f, alice, { messages: 'not json', op: 'add', flag: 'read' });
    expectError(t, badList, 400, 'BAD_REQUEST');
  });

  t.test('an update_message_flags event reaches the user\'s queues, and only theirs', async (t) => {
    const { f, owner, alice } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'one' });
    const b = await send(f, owner, { type: 'stream', to: 'general', topic: 't', content: 'two' });
    const aliceQueue = await register(f, alice, ['update_message_flags']);
    const ownerQueue = await register(f, owner, ['update_message_flags']);
    t.equal((await flags(f, alice, { messages: [a], op: 'add', flag: 'starred' })).status, 200);
    t.equal((await flags(f, alice, { messages: [a, b], op: 'add', flag: 'starred' })).status, 200);
    t.equal((await flags(f, alice, { messages: [b], op: 'remove', flag: 'starred' })).status, 200);
    const events = await queued(f, alice, aliceQueue);
    t.strictSame(events, [
      { id: 0, type: 'update_message_flags', op: 'add', operation: 'add', flag: 'starred', messages: [a], all: false },
      { id: 1, type: 'update_message_flags', op: 'add', operation: 'add', flag: 'starred', messages: [b], all: false },
      { id: 2, type: 'update_message_flags', op: 'remove', operation: 'remove', flag: 'starred', messages: [b], all: false },
    ]);
    t.strictSame(await queued(f, owner, ownerQueue), [], "other users' queues get nothing");
  });

  t.test('marking unread sends message_details for the unread bookkeeping', async (t) => {
    const { f, owner, alice, general } = await org(t);
    const a = await send(f, owner, { type: 'stream', to: 'general', topic: 'lunch', content: 'one' });
    const dm = await send(f, owner, { type: 'direct', to: [alice.user_id], content: 'two' });
    t.equal((await flags(f, alice, { messages: [a, dm], op: 'add', flag: 'read' })).status, 200);
    const q = await register(f, alice, ['update_message_flags']);
    t.equal((await flags(f, alice, { messages: [a, dm], op: 'remove', flag: 'read' })).status, 200);
    const [event] = await queued(f, alice, q);
    t.match(event, { type: 'update_message_flags', op: 'remove', flag: 'read', messages: [a, dm], all: false });
    t.match(event.message_details, {
      [a]: { type: 'stream', stream_id: general, topic: 'lunch' },
      [dm]: { type: 'private', user_ids: [owner.user_id] },
    });
  });
});

// ---------------------------------------------------------------------------
// Narrow operands that name users, the search bound, and sliced scans
// ---------------------------------------------------------------------------

t.test('narrow operands naming users who are not in the organization are BAD_NARROW, ids and emails alike', async (t) => {
  const { f, alice, bob } = await org(t);
  const ask = (narrow: unknown) => getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow });
  // Another organization on the same server, with more users than this one: its ids above
  // ours exist there, and must still be unknown here.
  const { createOrganization } = await import('../src/bootstrap.js');
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const otherOwner = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  let foreignId = 0;
  for (let i = 0; i < 8; i++) {
    const r = await f.call(otherOwner, 'POST', '/api/v1/users', { email: `u${i}@other.example`, password: 'pw', full_name: `U${i}` }, { headers: { host: 'other.localhost' } });
    if (r.status !== 200) throw new Error(`create in other org failed: ${r.body}`);
    foreignId = r.json.user_id;
  }
  const lookup = await f.call(f.owner, 'GET', `/api/v1/users/${foreignId}`);
  t.same([lookup.status, lookup.json.msg], [400, 'No such user'], `user ${foreignId} exists only in the other organization`);

  const cases: Array<[unknown, string]> = [
    [[{ operator: 'dm', operand: [99999] }], 'Invalid narrow operator: unknown user in [99999]'],
    [[{ operator: 'dm', operand: [bob.user_id, 99999] }], `Invalid narrow operator: unknown user in [${bob.user_id}, 99999]`],
    [[{ operator: 'dm', operand: [foreignId] }], `Invalid narrow operator: unknown user in [${foreignId}]`],
    [[{ operator: 'dm', operand: [-1] }], 'Invalid narrow operator: unknown user in [-1]'],
    [[{ operator: 'dm', operand: '99999' }], 'Invalid narrow operator: unknown user in 99999'],
    [[{ operator: 'dm', operand: 'bob@example.com,99999' }], 'Invalid narrow operator: unknown user in bob@example.com,99999'],
    [[{ operator: 'dm', operand: 'u1@other.example' }], 'Invalid narrow operator: unknown user in u1@other.example'],
    [[{ operator: 'pm-with', operand: [99999] }], 'Invalid narrow operator: unknown user in [99999]'],
    [[{ operator: 'group-pm-with', operand: 99999 }], 'Invalid narrow operator: unknown user 99999'],
    [[{ operator: 'dm-including', operand: 99999 }], 'Invalid narrow operator: unknown user 99999'],
    [[{ operator: 'dm-including', operand: foreignId }], `Invalid narrow operator: unknown user ${foreignId}`],
    [[{ operator: 'sender', operand: 99999 }], 'Invalid narrow operator: unknown user 99999'],
    [[{ operator: 'sender', operand: '99999' }], 'Invalid narrow operator: unknown user 99999'],
    [[{ operator: 'sender', operand: [bob.user_id, alice.user_id] }], `Invalid narrow operator: unknown user [${bob.user_id}, ${alice.user_id}]`],
    [[{ operator: 'sender', operand: 99999, negated: true }], 'Invalid narrow operator: unknown user 99999'],
    [[['sender', '99999']], 'Invalid narrow operator: unknown user 99999'],
  ];
  for (const [narrow, msg] of cases) expectError(t, await ask(narrow), 400, 'BAD_NARROW', msg);
  // An email that is not a valid address names nobody, whatever the directory holds.
  for (const operand of ['bob@example.com\u0000', 'bob\u0000@example.com', ' bob@example.com\u0007', 'Bob <bob@example.com>']) {
    const r = await ask([{ operator: 'sender', operand }]);
    expectError(t, r, 400, 'BAD_NARROW');
    t.match(r.json?.msg, /^Invalid narrow operator: unknown user /);
  }
  // The same users by id and by email still narrow.
  t.equal((await ask([{ operator: 'dm', operand: [bob.user_id] }])).status, 200);
  t.equal((await ask([{ operator: 'sender', operand: String(bob.user_id) }])).status, 200);
  t.equal((await ask([{ operator: 'sender', operand: [bob.user_id] }])).status, 200, 'a one-element list names one user');
  t.equal((await ask([{ operator: 'dm-including', operand: 'BOB@example.com' }])).status, 200);
});

t.test('an email with a NUL byte names nobody wherever an email enters', async (t) => {
  const { f, alice } = await org(t);
  const dm = await post(f, alice, { type: 'direct', to: ['bob@example.com\u0000'], content: 'hi' });
  expectError(t, dm, 400, 'BAD_REQUEST');
  const sub = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: ['bob@example.com\u0000'] });
  t.equal(sub.status, 400, sub.body);
  t.equal(sub.json?.result, 'error');
  const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'bob@example.com\u0000', password: 'pw-bob@example.com' });
  expectError(t, login, 401, 'AUTHENTICATION_FAILED');
});

t.test('other invalid narrow operands are BAD_NARROW, never a 500', async (t) => {
  const { f, alice } = await org(t);
  const ask = (narrow: unknown) => getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow });
  expectError(t, await ask([{ operator: 'id', operand: 'abc' }]), 400, 'BAD_NARROW', 'Invalid narrow operator: Invalid message ID');
  expectError(t, await ask([{ operator: 'id', operand: -3 }]), 400, 'BAD_NARROW', 'Invalid narrow operator: Invalid message ID');
  expectError(t, await ask([{ operator: 'search', operand: '   ' }]), 400, 'BAD_NARROW');
  expectError(t, await ask([{ operator: 'search', operand: 42 }]), 400, 'BAD_NARROW');
  expectError(t, await ask([{ operator: 'topic', operand: ['a', 'b'] }]), 400, 'BAD_NARROW');
  expectError(t, await ask([{ operator: 'dm', operand: [2 ** 60] }]), 400, 'BAD_NARROW', 'Invalid narrow operand for dm');
  expectError(t, await ask(Array.from({ length: 101 }, () => ({ operator: 'is', operand: 'dm' }))), 400, 'BAD_NARROW', 'Invalid narrow: too many terms (limit: 100)');
  // A deeply nested operator used to be printed with String(), which recursed and overflowed.
  const nestedOperator = (depth: number) => ask(`[{"operator":${'['.repeat(depth)}"x"${']'.repeat(depth)},"operand":"x"}]`);
  expectError(t, await nestedOperator(90), 400, 'BAD_NARROW', 'Invalid narrow operator: unknown operator a list');
  // Deeper than JSON parameters may nest: refused before it is parsed.
  expectError(t, await nestedOperator(20000), 400, 'BAD_REQUEST', 'Argument "narrow" is nested too deeply (at most 100 levels).');
});

t.test('the search operand is bounded at MAX_SEARCH_LENGTH code points', async (t) => {
  const { MAX_SEARCH_LENGTH } = await import('../actors/engines/narrow.js');
  const { f, alice, owner } = await org(t);
  await send(f, owner, { type: 'stream', to: 'general', topic: 'bound', content: 'needle' });
  const ask = (operand: string) => getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'search', operand }] });
  const atLimit = await ask('needle ' + '😀'.repeat(MAX_SEARCH_LENGTH - 7));
  t.equal(atLimit.status, 200, `${MAX_SEARCH_LENGTH} code points (more UTF-16 units) is allowed: ${atLimit.body.slice(0, 200)}`);
  expectError(t, await ask('needle ' + 'x'.repeat(MAX_SEARCH_LENGTH - 6)), 400, 'BAD_NARROW', `Invalid narrow operator: search operand too long (limit: ${MAX_SEARCH_LENGTH} characters)`);
  expectError(t, await ask('x '.repeat(512 * 1024)), 400, 'BAD_NARROW', `Invalid narrow operator: search operand too long (limit: ${MAX_SEARCH_LENGTH} characters)`);
  const reg = await f.call(alice, 'POST', '/api/v1/register', { event_types: ['message'], narrow: [{ operator: 'search', operand: 'x'.repeat(MAX_SEARCH_LENGTH + 1) }] });
  expectError(t, reg, 400, 'BAD_NARROW');
  // Repeated words count once: a search of one word said 300 times finds what the word finds.
  t.strictSame((await ask('needle '.repeat(140))).json?.messages?.map((m: { content: string }) => m.content), ['<p>needle</p>']);
});

t.test('a long search scans in slices, and other requests are answered in between', async (t) => {
  const { queryMessages, SCAN_SLICE } = await import('../actors/engines/message_query.js');
  const { f, alice, owner, general } = await org(t);
  const total = SCAN_SLICE.messages * 5;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    pending.push(f.runtime.execute({ type: 'SEND_MESSAGE', org: f.org.organization_id, sender_id: owner.user_id, to: { stream_id: general, topic: `t${i % 7}` }, content: `filler ${i}`, client: 'test', read_by_sender: true }));
  }
  await Promise.all(pending);

  // Directly: a search that matches nothing examines every message, a slice at a time.
  let yields = 0;
  const page = await queryMessages(f.runtime, { org: f.org.organization_id, user_id: alice.user_id, anchor: 'newest', num_before: 10, num_after: 0, include_anchor: true, narrow: [{ operator: 'search', operand: 'absent', negated: false }] }, { onYield: () => yields++, sliceMs: 1e9 });
  t.strictSame(page.messages, []);
  t.equal(page.found_oldest, true);
  t.ok(yields >= Math.floor(total / SCAN_SLICE.messages) - 1, `${total} messages were scanned in ${yields + 1} slices`);

  // Through the API: a server_settings request that arrives while the search runs is answered first.
  const order: string[] = [];
  const search = getMessages(f, alice, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'search', operand: 'absent' }] }).then((r) => {
    order.push('search');
    return r;
  });
  const settings = new Promise<ApiResult>((resolve) => setImmediate(() => resolve(f.call(null, 'GET', '/api/v1/server_settings')))).then((r) => {
    order.push('server_settings');
    return r;
  });
  const [s, ss] = await Promise.all([search, settings]);
  t.equal(s.status, 200, s.body.slice(0, 200));
  t.equal(ss.status, 200);
  t.strictSame(order, ['server_settings', 'search'], 'the request started after the search finished before it');

  // A client that goes away ends the scan at the next slice.
  let checks = 0;
  await t.rejects(
    queryMessages(f.runtime, { org: f.org.organization_id, user_id: alice.user_id, anchor: 'newest', num_before: 10, num_after: 0, include_anchor: true, narrow: [{ operator: 'search', operand: 'absent', negated: false }] }, { aborted: () => ++checks > 1, sliceMs: 1e9 }),
    /aborted/,
  );
  t.equal(checks, 2, 'the scan stopped at the first slice after the abort');
});

t.test('POST /messages/render', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const res = await f.call(alice, 'POST', '/api/v1/messages/render', { content: '**hi** @**Olivia Owner** <b>' });
  t.equal(res.status, 200, res.body);
  t.match(res.json.rendered, /^<p><strong>hi<\/strong> <span class="user-mention" data-user-id="1">@Olivia Owner<\/span> &lt;b&gt;<\/p>$/);
  const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([f.owner.user_id]), content: '**hi** @**Olivia Owner** <b>' });
  const fetched = await f.call(alice, 'GET', `/api/v1/messages/${sent.json.id}`);
  t.equal(res.json.rendered, fetched.json.message.content, 'exactly what the message itself renders to');
  t.equal((await f.call(alice, 'POST', '/api/v1/messages/render', {})).json.code, 'REQUEST_VARIABLE_MISSING');
  const next = await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([f.owner.user_id]), content: 'next' });
  t.equal(next.json.id, sent.json.id + 1, 'rendering sends nothing: it took no message id');
});
