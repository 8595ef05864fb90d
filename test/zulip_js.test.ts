/**
 * A real-client test: the `zulip-js` package against a real listening server, over
 * HTTP on a free port, with a fresh data directory. Every step is bounded by a
 * timeout so that a server that never answers fails the test instead of hanging it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { globalAgent } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig, type Config } from '../src/config.js';
import { startServer, type RunningServer } from '../src/server.js';
import { lineLogger } from '../actors/core/logger.js';
import { checkResponse } from './zulip_responses.js';

/** The parts of a zulip-js client this test uses; the package ships no types. */
interface ZulipClient {
  config: { apiKey: string; apiURL: string };
  callEndpoint(endpoint: string, method?: string, params?: Record<string, unknown>): Promise<any>;
  server: { settings(params?: Record<string, unknown>): Promise<any> };
  users: { create(params: Record<string, unknown>): Promise<any>; me: { getProfile(): Promise<any>; subscriptions: { add(params: Record<string, unknown>): Promise<any> } } };
  queues: { register(params: Record<string, unknown>): Promise<any>; deregister(params: Record<string, unknown>): Promise<any> };
  events: { retrieve(params: Record<string, unknown>): Promise<any> };
  messages: {
    send(params: Record<string, unknown>): Promise<any>;
    retrieve(params: Record<string, unknown>): Promise<any>;
    getById(params: Record<string, unknown>): Promise<any>;
    update(params: Record<string, unknown>): Promise<any>;
    getHistoryById(params: Record<string, unknown>): Promise<any>;
    flags: { add(params: Record<string, unknown>): Promise<any> };
  };
  reactions: { add(params: Record<string, unknown>): Promise<any>; remove(params: Record<string, unknown>): Promise<any> };
  streams: { getStreamId(name: string): Promise<any>; topics: { retrieve(params: Record<string, unknown>): Promise<any> } };
}
type ZulipInit = (config: Record<string, unknown>) => Promise<ZulipClient>;

// zulip-js is CommonJS whose export is the init function itself.
const zulipInit = createRequire(import.meta.url)('zulip-js') as ZulipInit;

// Every answer zulip-js receives is checked against Zulip's description, as the helpers' are
// (zulip_responses.ts): zulip-js makes its requests through this module's `fetch`.
const zulipFetch = createRequire(import.meta.url)('zulip-js/lib/helper') as { fetch: (url: string, options?: { method?: string }) => Promise<Response> };
const sendRequest = zulipFetch.fetch;
zulipFetch.fetch = async (url, options) => {
  const res = await sendRequest(url, options);
  const json = await res.clone().json().catch(() => undefined);
  checkResponse(options?.method ?? 'GET', new URL(url).pathname, { status: res.status, json });
  return res;
};

/** Rejects if `p` takes longer than `ms`. */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

t.test('zulip-js drives a real server: login, users, channels, queues, messages', { timeout: 60_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-zulip-js-'));
  const logs: string[] = [];
  const config: Config = {
    ...loadConfig([], {}),
    host: '127.0.0.1',
    port: 0,
    dataDir,
    fsync: 'none',
    heartbeatMinMs: 300,
    heartbeatMaxMs: 400,
  };
  let server: RunningServer | undefined;
  t.teardown(async () => {
    if (server) await within(10_000, 'server.stop', server.stop());
    // zulip-js keeps connections alive through Node's global agent; close them so the process exits now.
    globalAgent.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  server = await within(20_000, 'startServer', startServer(config, { log: lineLogger((line) => logs.push(line)), onFatal: (err) => logs.push(`fatal: ${err.message}`) }));
  t.ok(server.port > 0, 'uWS picked a real port');
  t.not(server.port, 0);
  const boot = server.bootstrapped;
  if (!boot) throw new Error('a fresh data directory must bootstrap an organization');
  const realm = `http://127.0.0.1:${server.port}`;

  // Log in with a password: zulip-js calls fetch_api_key.
  const owner = await within(10_000, 'owner login', zulipInit({ realm, username: boot.owner.email, password: boot.password }));
  t.equal(owner.config.apiKey, boot.owner.api_key, 'fetch_api_key returned the owner\'s key');

  const settings = await within(5_000, 'server settings', owner.server.settings());
  t.equal(settings.result, 'success', JSON.stringify(settings));
  t.type(settings.zulip_version, 'string');
  t.type(settings.zulip_feature_level, 'number');
  t.equal(settings.authentication_methods?.password, true);
  t.equal(settings.realm_url, realm);
  const viaEndpoint = await within(5_000, 'callEndpoint', owner.callEndpoint('/server_settings', 'GET'));
  t.equal(viaEndpoint.zulip_feature_level, settings.zulip_feature_level);

  const me = await within(5_000, 'own profile', owner.users.me.getProfile());
  t.equal(me.result, 'success', JSON.stringify(me));
  t.equal(me.user_id, boot.owner.user_id);
  const ownerId: number = me.user_id;

  // A second user, created by the owner, logs in on their own.
  const created = await within(10_000, 'users.create', owner.users.create({ email: 'bob@example.com', password: 'bob-secret-pw', full_name: 'Bob Builder' }));
  t.equal(created.result, 'success', JSON.stringify(created));
  const bobId: number = created.user_id;
  t.type(bobId, 'number');
  const bob = await within(10_000, 'bob login', zulipInit({ realm, username: 'bob@example.com', password: 'bob-secret-pw' }));
  t.type(bob.config.apiKey, 'string');
  t.ok(bob.config.apiKey.length > 0);
  const wrong = await within(10_000, 'bad login', owner.callEndpoint('/fetch_api_key', 'POST', { username: 'bob@example.com', password: 'nope' }));
  t.equal(wrong.result, 'error', 'a wrong password is refused');

  // Both subscribed to a new channel (subscriptions and principals go as JSON arrays).
  const sub = await within(5_000, 'subscribe', owner.users.me.subscriptions.add({ subscriptions: [{ name: 'lobby' }], principals: [ownerId, bobId] }));
  t.equal(sub.result, 'success', JSON.stringify(sub));
  t.same(sub.subscribed, { [ownerId]: ['lobby'], [bobId]: ['lobby'] });

  // Bob registers a queue (event_types goes JSON-encoded through multipart).
  const reg = await within(5_000, 'register', bob.queues.register({ event_types: ['message'] }));
  t.equal(reg.result, 'success', JSON.stringify(reg));
  t.type(reg.queue_id, 'string');
  t.equal(reg.last_event_id, -1);
  const queueId: string = reg.queue_id;

  // Bob starts long-polling before anything is sent, as a real client would.
  let lastEventId: number = reg.last_event_id;
  const firstPoll = bob.events.retrieve({ queue_id: queueId, last_event_id: lastEventId });

  const channelMsg = await within(5_000, 'send channel message', owner.messages.send({ type: 'stream', to: 'lobby', topic: 'greetings', content: 'hello **bob**' }));
  t.equal(channelMsg.result, 'success', JSON.stringify(channelMsg));
  const directMsg = await within(5_000, 'send direct message', owner.messages.send({ type: 'direct', to: [bobId], content: 'psst, bob' }));
  t.equal(directMsg.result, 'success', JSON.stringify(directMsg));
  t.ok(directMsg.id > channelMsg.id, 'message ids increase');

  // Receive both, over as many long-polls as it takes.
  const received = new Map<number, any>();
  let pending: Promise<any> | undefined = firstPoll;
  const deadline = Date.now() + 15_000;
  while (received.size < 2 && Date.now() < deadline) {
    const got = await within(10_000, 'events.retrieve', pending ?? bob.events.retrieve({ queue_id: queueId, last_event_id: lastEventId }));
    pending = undefined;
    t.equal(got.result, 'success', JSON.stringify(got));
    for (const event of got.events) {
      t.ok(event.id > lastEventId, 'event ids increase');
      lastEventId = event.id;
      if (event.type === 'message') received.set(event.message.id, event);
    }
  }
  t.same([...received.keys()].sort((a, b) => a - b), [channelMsg.id, directMsg.id], 'both messages arrived as events');
  const channelEvent = received.get(channelMsg.id);
  t.equal(channelEvent?.message.display_recipient, 'lobby');
  t.equal(channelEvent?.message.subject, 'greetings');
  t.equal(channelEvent?.message.sender_id, ownerId);
  t.match(channelEvent?.message.content, /<strong>bob<\/strong>/);
  t.same(channelEvent?.flags, [], 'unread for bob');
  const directEvent = received.get(directMsg.id);
  t.equal(directEvent?.message.type, 'private');
  t.same(directEvent?.message.display_recipient.map((u: { id: number }) => u.id).sort(), [ownerId, bobId].sort((a, b) => a - b));

  // Read them back with narrows (zulip-js JSON-encodes the narrow).
  const inTopic = await within(5_000, 'messages in topic', bob.messages.retrieve({
    anchor: 'newest', num_before: 20, num_after: 0,
    narrow: [{ operator: 'channel', operand: 'lobby' }, { operator: 'topic', operand: 'greetings' }],
  }));
  t.equal(inTopic.result, 'success', JSON.stringify(inTopic));
  t.same(inTopic.messages.map((m: { id: number }) => m.id), [channelMsg.id]);
  t.equal(inTopic.messages[0].sender_id, ownerId);
  t.equal(inTopic.found_newest, true);

  const dms = await within(5_000, 'direct messages', bob.messages.retrieve({
    anchor: 'newest', num_before: 20, num_after: 0,
    narrow: [{ operator: 'dm', operand: [ownerId] }],
  }));
  t.equal(dms.result, 'success', JSON.stringify(dms));
  t.same(dms.messages.map((m: { id: number }) => m.id), [directMsg.id]);
  t.equal(dms.messages[0].content, '<p>psst, bob</p>');

  const byEmail = await within(5_000, 'direct messages by email', bob.messages.retrieve({
    anchor: 'newest', num_before: 20, num_after: 0,
    narrow: [{ operator: 'dm', operand: boot.owner.email }],
  }));
  t.same(byEmail.messages?.map((m: { id: number }) => m.id), [directMsg.id], 'a dm operand may be an email');

  // Reactions, topics and marking read, through zulip-js.
  const reacted = await within(5_000, 'reactions.add', bob.reactions.add({ message_id: channelMsg.id, emoji_name: 'tada' }));
  t.equal(reacted.result, 'success', JSON.stringify(reacted));
  const withReaction = await within(5_000, 'messages.getById', bob.messages.getById({ message_id: channelMsg.id }));
  t.same(withReaction.message.reactions.map((r: { emoji_name: string; emoji_code: string; user_id: number }) => [r.emoji_name, r.emoji_code, r.user_id]), [['tada', '1f389', bobId]]);
  const unreacted = await within(5_000, 'reactions.remove', bob.reactions.remove({ message_id: channelMsg.id, emoji_name: 'tada' }));
  t.equal(unreacted.result, 'success', JSON.stringify(unreacted));
  const lobby = await within(5_000, 'streams.getStreamId', bob.streams.getStreamId('lobby'));
  const topics = await within(5_000, 'streams.topics.retrieve', bob.streams.topics.retrieve({ stream_id: lobby.stream_id }));
  t.same(topics.topics, [{ name: 'greetings', max_id: channelMsg.id }]);
  const read = await within(5_000, 'messages.flags.add', bob.messages.flags.add({ flag: 'read', messages: [channelMsg.id] }));
  t.same(read.messages, [channelMsg.id], JSON.stringify(read));
  const all = await within(5_000, 'mark_all_as_read', bob.callEndpoint('/mark_all_as_read', 'POST'));
  t.same([all.result, all.complete], ['success', true], JSON.stringify(all));

  // With nothing else to say, the server sends a heartbeat on its short timeout.
  const started = Date.now();
  const beat = await within(5_000, 'heartbeat', bob.events.retrieve({ queue_id: queueId, last_event_id: lastEventId }));
  t.equal(beat.result, 'success', JSON.stringify(beat));
  t.same(beat.events.map((e: { type: string }) => e.type), ['heartbeat']);
  t.equal(beat.events[0].id, lastEventId + 1);
  t.ok(Date.now() - started >= 250, 'not before the shortest heartbeat delay');

  // Deleting the queue through zulip-js; the queue is then gone.
  const gone = await within(5_000, 'deregister', bob.queues.deregister({ queue_id: queueId }));
  t.equal(gone.result, 'success', JSON.stringify(gone));
  const after = await within(5_000, 'poll deleted queue', bob.events.retrieve({ queue_id: queueId, last_event_id: beat.events[0].id }));
  t.equal(after.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(after.queue_id, queueId);

  // Editing, moving and resolving, through zulip-js, seen by Bob's new queue.
  const editQueue = await within(5_000, 'register for edits', bob.queues.register({ event_types: ['update_message'] }));
  const edited = await within(5_000, 'messages.update content', owner.messages.update({ message_id: channelMsg.id, content: 'hello **everyone**' }));
  t.same([edited.result, edited.detached_uploads], ['success', []], JSON.stringify(edited));
  const resolved = await within(5_000, 'messages.update resolve', owner.messages.update({ message_id: channelMsg.id, topic: '✔ greetings', propagate_mode: 'change_all' }));
  t.equal(resolved.result, 'success', JSON.stringify(resolved));
  await within(5_000, 'subscribe to archive', owner.users.me.subscriptions.add({ subscriptions: [{ name: 'archive' }], principals: [ownerId, bobId] }));
  const archiveId = (await within(5_000, 'streams.getStreamId archive', bob.streams.getStreamId('archive'))).stream_id;
  const movedAway = await within(5_000, 'messages.update move', owner.messages.update({ message_id: channelMsg.id, stream_id: archiveId, propagate_mode: 'change_all', send_notification_to_old_thread: false }));
  t.equal(movedAway.result, 'success', JSON.stringify(movedAway));
  const now = await within(5_000, 'messages.getById after edits', bob.messages.getById({ message_id: channelMsg.id }));
  t.match(now.message, { display_recipient: 'archive', subject: '✔ greetings', content: '<p>hello <strong>everyone</strong></p>' });
  const history = await within(5_000, 'messages.getHistoryById', bob.messages.getHistoryById({ message_id: channelMsg.id }));
  t.same(history.message_history.map((h: { topic: string }) => h.topic), ['greetings', 'greetings', '✔ greetings', '✔ greetings'], JSON.stringify(history));
  const updates: any[] = [];
  let last = -1;
  for (let i = 0; i < 5 && updates.length < 3; i++) {
    const got = await within(5_000, 'events.retrieve updates', bob.events.retrieve({ queue_id: editQueue.queue_id, last_event_id: last, dont_block: true }));
    for (const e of got.events) {
      last = e.id;
      if (e.type === 'update_message') updates.push(e);
    }
  }
  t.same(updates.map((e) => [e.message_id, e.content !== undefined, e.subject ?? null, e.new_stream_id ?? null]), [
    [channelMsg.id, true, null, null],
    [channelMsg.id, false, '✔ greetings', null],
    [channelMsg.id, false, null, archiveId],
  ], 'one update_message per edit, with what changed');

  t.same(logs.filter((l) => /internal error|fatal/.test(l)), [], 'the server logged no internal error');
});
