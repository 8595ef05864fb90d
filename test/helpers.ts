/**
 * Shared fixtures: an in-process chat server (no socket) with an injected clock, and
 * a request helper that encodes parameters the way Zulip clients do.
 */
import { defaultRuntimeOptions, Runtime, volatileSink, type FactSink, type RuntimeOptions } from '../actors/runtime/runtime.js';
import { createOrganization, type CreatedOrg } from '../src/bootstrap.js';
import { loadConfig, type Config } from '../src/config.js';
import { ChatApp } from '../src/http/chat_app.js';
import { inject, type InjectRequest } from '../src/http/inject.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { Abortable } from '../src/http/types.js';
import type { RoleNumber } from '../actors/shared/types.js';
import { memoryMailer } from '../src/mail/mailer.js';
import { captureLogger, noteSecret } from './log_guard.js';
import { openStore, type Store } from '../src/store.js';
import { lineLogger, quietLogger } from '../actors/core/logger.js';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { checkResponse } from './zulip_responses.js';

/** A user's credentials. */
export interface Credentials {
  user_id: number;
  email: string;
  api_key: string;
}

export interface ApiResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  json: any;
}

/** Encodes parameters as form fields: lists and objects JSON-encoded, as Zulip expects. */
export function encodeParams(params: Record<string, unknown>): string {
  const usp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    usp.append(k, typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  }
  return usp.toString();
}

export function basicAuth(c: { email: string; api_key: string }): string {
  return 'Basic ' + Buffer.from(`${c.email}:${c.api_key}`).toString('base64');
}

export interface ChatFixture {
  runtime: Runtime;
  app: ChatApp;
  config: Config;
  /** The injected clock, in ms; advance it with `clock.t += n`. */
  clock: { t: number };
  owner: Credentials;
  org: CreatedOrg;
  /** Calls the API as `who` (or unauthenticated with null). GET and DELETE send params in the query. */
  call(who: Credentials | null, method: string, path: string, params?: Record<string, unknown>, extra?: Partial<InjectRequest>): Promise<ApiResult>;
  /** Creates a member and returns their credentials. */
  createUser(email: string, fullName?: string): Promise<Credentials>;
  /** Mail the server sent (invitations), kept in memory. */
  mail: ReturnType<typeof memoryMailer>;
  /** Subscribes users (by credentials) to a channel, creating it if needed. */
  subscribe(who: Credentials, channel: string, principals?: number[]): Promise<ApiResult>;
  stop(): void;
}

export interface FixtureOptions {
  config?: Partial<Config>;
  queues?: Partial<RuntimeOptions['queues']>;
  sink?: FactSink;
}

/** Parameters that carry a credential: noted as secrets the logs must not hold. */
const SECRET_PARAMS = ['password', 'new_password', 'old_password', 'api_key'];

/**
 * `inject`, with a chat app's answer checked against Zulip's description
 * (zulip_responses.ts): every in-process API call of the tests goes through here. The
 * board's answers are not Zulip's (its `POST /api/v1/messages` is its own), so they are not.
 */
export async function injectChecked(app: Parameters<typeof inject>[0], r: InjectRequest): Promise<ApiResult> {
  const res = await inject(app, r);
  if (app instanceof ChatApp) checkResponse(r.method, r.url, res);
  return res;
}

/** Builds an in-process server with one organization and its owner. */
export async function chatFixture(opts: FixtureOptions = {}): Promise<ChatFixture> {
  const clock = { t: 1_800_000_000_000 };
  const defaults = defaultRuntimeOptions(opts.sink ?? volatileSink);
  const runtime = new Runtime({ ...defaults, now: () => clock.t, random: () => 0.5, queues: { ...defaults.queues, ...opts.queues } });
  // Rate limits are off unless a test asks for them: route tests make many requests per user.
  const off = { requests: 0, windowSecs: 60 };
  const config: Config = { ...loadConfig([], {}), rateLimit: off, rateLimitAnonymous: off, rateLimitAuthenticate: off, ...opts.config };
  const mail = memoryMailer();
  // Every request is logged, and the log is checked for credentials when the test file ends (log_guard.ts).
  const app = new ChatApp(chatRoutes, runtime, config, captureLogger(), mail);
  const org = await createOrganization(runtime, { name: 'Test Org', subdomain: '', ownerEmail: 'owner@example.com', ownerPassword: 'owner-pass', ownerName: 'Olivia Owner' });
  const owner: Credentials = { user_id: org.owner.user_id, email: org.owner.email, api_key: org.owner.api_key };
  noteSecret(owner.api_key);
  noteSecret('owner-pass');
  const call: ChatFixture['call'] = async (who, method, path, params = {}, extra = {}) => {
    const encoded = encodeParams(params);
    const m = method.toUpperCase();
    const inQuery = m === 'GET' || m === 'DELETE';
    const headers: Record<string, string> = { ...(who ? { authorization: basicAuth(who) } : {}) };
    if (who && who.api_key.length >= 6) {
      noteSecret(who.api_key);
      noteSecret(headers.authorization);
    }
    for (const name of SECRET_PARAMS) {
      const v = params[name];
      if (typeof v === 'string' && v.length >= 6) noteSecret(v);
    }
    if (!inQuery && encoded) headers['content-type'] = 'application/x-www-form-urlencoded';
    return injectChecked(app, {
      method: m,
      url: inQuery && encoded ? `${path}?${encoded}` : path,
      body: inQuery ? undefined : encoded,
      ...extra,
      headers: { ...headers, ...(extra.headers ?? {}) },
    });
  };
  const createUser: ChatFixture['createUser'] = async (email, fullName) => {
    const created = await call(owner, 'POST', '/api/v1/users', { email, password: 'pw-' + email, full_name: fullName ?? email.split('@')[0] });
    if (created.status !== 200) throw new Error(`createUser failed: ${created.body}`);
    const key = await call(null, 'POST', '/api/v1/fetch_api_key', { username: email, password: 'pw-' + email });
    return { user_id: created.json.user_id, email, api_key: key.json.api_key };
  };
  const subscribe: ChatFixture['subscribe'] = (who, channel, principals) =>
    call(who, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: channel }], principals });
  return { runtime, app, config, clock, owner, org, call, createUser, mail, subscribe, stop: () => runtime.stop() };
}

/** Starts a request that may park; returns its promise and the handle to abort it. */
export function startPoll(f: ChatFixture, who: Credentials, params: Record<string, unknown>): { result: Promise<ApiResult>; abort: Abortable } {
  const abort = new Abortable();
  return { result: f.call(who, 'GET', '/api/v1/events', params, { abort }), abort };
}

/** Resolves after the event loop has turned, so batched deliveries have run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/** What a queue holds now (no waiting), without the event ids; only events of `type` when given. */
export async function queueEvents(f: ChatFixture, who: Credentials, queueId: string, type?: string): Promise<any[]> {
  const res = await f.call(who, 'GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.events.filter((e: any) => type === undefined || e.type === type).map(({ id: _id, ...e }: any) => e);
}

/** Creates a user with a role directly (no HTTP: roles other than member cannot be made through POST /users). */
export async function withRole(f: ChatFixture, email: string, role: RoleNumber): Promise<Credentials> {
  const { user } = await f.runtime.execute({ type: 'CREATE_USER', org: 1, actor_id: null, email, password_hash: '', full_name: email.split('@')[0], role });
  return { user_id: user.user_id, email: user.email, api_key: user.api_key };
}

/**
 * Form-encoded API calls, as `who`, to the runtime of an opened store (for tests that reopen a
 * data directory), at `host` when given (an organization with a subdomain): the parsed JSON.
 */
export function storeClient(store: Store, who: { email: string; api_key: string }, host?: string): (method: string, path: string, params?: Record<string, unknown>) => Promise<any> {
  const app = new ChatApp(chatRoutes, store.runtime, loadConfig([], {}), quietLogger);
  const headers = { authorization: basicAuth(who), ...(host === undefined ? {} : { host }) };
  return async (method, path, params = {}) => {
    const q = encodeParams(params);
    const res = await injectChecked(app, method === 'GET'
      ? { method, url: `${path}?${q}`, headers }
      : { method, url: path, body: q, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' } });
    return res.json;
  };
}

/**
 * A store over `dir` as the restart tests open it: fsync always, quiet (or its log lines
 * into `logs`), any fatal error thrown.
 */
export function openTestStore(dir: string, opts: { logs?: string[]; skipCorrupt?: boolean; keepSnapshots?: number } = {}): Store {
  const log = opts.logs ? lineLogger((l) => opts.logs!.push(l)) : quietLogger;
  return openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 10, segmentBytes: 1 << 20, skipCorrupt: opts.skipCorrupt ?? false, keepSnapshots: opts.keepSnapshots, log, onFatal: (e) => { throw e; } });
}

/** The files of a gzipped tar archive, by name below its one directory (read with tar-stream, pax names included). */
export async function untar(gz: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (d) => chunks.push(d as Buffer));
      stream.on('end', () => {
        files.set(header.name.split('/').slice(1).join('/'), Buffer.concat(chunks));
        next();
      });
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  reader.end(gunzipSync(gz));
  await done;
  return files;
}

/** A bot's credentials from the answer of POST /bots (which has no email): its email as GET /users/{id} shows it to `f`'s owner. */
export async function botCredentials(f: ChatFixture, made: { user_id: number; api_key: string }): Promise<Credentials> {
  const shown = await f.call(f.owner, 'GET', `/api/v1/users/${made.user_id}`);
  if (shown.status !== 200) throw new Error(`no bot ${made.user_id}: ${shown.body}`);
  return { user_id: made.user_id, email: shown.json.user.email, api_key: made.api_key };
}

/**
 * Sends the owner a direct message to themself and answers its id: message ids are
 * server-wide and ascending, so two probes one apart mean no message was sent between them.
 */
export async function probeMessageId(f: ChatFixture): Promise<number> {
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([f.owner.user_id]), content: 'probe' });
  if (sent.status !== 200) throw new Error(sent.body);
  return sent.json.id as number;
}
