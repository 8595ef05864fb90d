/**
 * Data directories written by older code still load to the same state. The fixture
 * under test/fixtures/format-v1 (a snapshot plus the log after it, written by commit
 * 748db87) is recovered by today's code, and what clients see of it is compared with
 * what that commit served from the same directory. Views may gain fields; none may change.
 * `PARLEY_WRITE_FIXTURE_VIEWS=1` rewrites the expected views (only ever from the commit named above).
 */
import t from 'tap';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store.js';
import { ChatApp } from '../src/http/chat_app.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { loadConfig } from '../src/config.js';
import { basicAuth, encodeParams, injectChecked } from './helpers.js';
import { boardOn } from './board_helpers.js';
import { lineLogger, quietLogger } from '../actors/core/logger.js';
import { versionFields } from '../actors/render/register_payloads.js';
import { fixturePath } from './paths.js';

const FIXTURE = fixturePath('format-v1');
const EXPECTED = join(FIXTURE, 'views.json');

/** Drops what differs from one recovery to the next (fresh queue ids, clocks). */
function stable(value: any): any {
  if (Array.isArray(value)) return value.map(stable);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!['queue_id', 'server_timestamp', 'presences', 'server_presence_ping_interval_seconds'].includes(k)) out[k] = stable(v);
    return out;
  }
  return value;
}

/**
 * Values that changed on purpose since the fixture was written, and nothing else: a
 * channel's own permission groups that only add to the organization's now default to
 * nobody (group 1), as Zulip's do; they were shown with the organization's groups.
 * And `is_default` left channel objects: Zulip shows it only in
 * `GET /streams?include_default=true` (clients read `realm_default_streams`). And
 * `register` lost its top-level `role` (Zulip's has none: the role is in `realm_users`),
 * and reports the feature level Parley now serves. And `max_message_id` is the user's own
 * (below).
 */
const DROPPED = new Set(['is_default']);
const VERSION = versionFields();
const CORRECTED: Record<string, number> = {
  can_add_subscribers_group: 1,
  can_administer_channel_group: 1,
  can_delete_any_message_group: 1,
  can_delete_own_message_group: 1,
};
function corrected(value: any): any {
  if (Array.isArray(value)) return value.map(corrected);
  if (!value || typeof value !== 'object') return value;
  const isChannel = 'stream_id' in value && 'invite_only' in value;
  const isRegister = 'last_event_id' in value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (isChannel && DROPPED.has(k)) continue;
    if (isRegister && k === 'role') continue;
    if (k in VERSION) {
      out[k] = VERSION[k];
      continue;
    }
    out[k] = isChannel && k in CORRECTED ? CORRECTED[k] : corrected(v);
  }
  return out;
}

t.test('a snapshot and log written by commit 748db87 recover to the state it served', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-format-v1-'));
  cpSync(join(FIXTURE, 'store'), dir, { recursive: true });
  const logs: string[] = [];
  const clock = { t: 1_900_000_000_000 };
  const store = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 64 * 1024 * 1024, skipCorrupt: false, log: lineLogger((l) => logs.push(l)), onFatal: (e) => { throw e; }, runtime: { now: () => clock.t } });
  t.teardown(() => store.close());
  t.ok(store.recovery.snapshot, 'recovery starts from the fixture snapshot');
  t.ok(store.recovery.replayed > 0, 'and replays the log after it');
  const config = { ...loadConfig([], {}), rateLimit: { requests: 0, windowSecs: 60 }, rateLimitAnonymous: { requests: 0, windowSecs: 60 } };
  const app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  const creds = JSON.parse(readFileSync(join(FIXTURE, 'credentials.json'), 'utf8'));
  const get = async (who: any, path: string, params: Record<string, unknown> = {}) => {
    const q = encodeParams(params);
    const res = await injectChecked(app, { method: 'GET', url: q ? `${path}?${q}` : path, headers: { authorization: basicAuth(who) } });
    return { status: res.status, json: stable(res.json) };
  };
  const views: Record<string, unknown> = {};
  for (const who of [creds.owner, ...creds.users]) {
    // client_gravatar=false: the commit that wrote the fixture always sent avatar URLs (Zulip's default is now true).
    views[`${who.email} messages`] = await get(who, '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 1000, narrow: [], client_gravatar: false });
    views[`${who.email} subscriptions`] = await get(who, '/api/v1/users/me/subscriptions', { include_subscribers: true });
    views[`${who.email} me`] = await get(who, '/api/v1/users/me');
    const reg = await injectChecked(app, { method: 'POST', url: '/api/v1/register', body: encodeParams({ fetch_event_types: ['message', 'subscription', 'realm_user', 'update_message_flags', 'stream'], client_gravatar: false }), headers: { authorization: basicAuth(who), 'content-type': 'application/x-www-form-urlencoded' } });
    views[`${who.email} register`] = { status: reg.status, json: stable(reg.json) };
  }
  views['users'] = await get(creds.owner, '/api/v1/users', { client_gravatar: false });
  views['streams'] = await get(creds.owner, '/api/v1/streams');
  const board = boardOn(store.runtime, clock);
  views['board messages'] = stable((await board.call('GET', '/messages.json')).json);
  views['guestbook'] = stable((await board.call('GET', '/guestbook.json')).json);
  if (process.env.PARLEY_WRITE_FIXTURE_VIEWS === '1') writeFileSync(EXPECTED, JSON.stringify(views, null, 1) + '\n');
  const expected = corrected(JSON.parse(readFileSync(EXPECTED, 'utf8')));
  // max_message_id was the server's newest message id; it is each user's newest received
  // message, which is the newest of that user's own feed (the messages view above).
  for (const who of [creds.owner, ...creds.users]) {
    const ids: number[] = expected[`${who.email} messages`].json.messages.map((m: { id: number }) => m.id);
    for (const view of ['me', 'register']) expected[`${who.email} ${view}`].json.max_message_id = ids.length > 0 ? Math.max(...ids) : -1;
  }
  t.same(Object.keys(views), Object.keys(expected), 'the same views are compared');
  for (const key of Object.keys(expected)) t.has(views[key], expected[key], key);
});
