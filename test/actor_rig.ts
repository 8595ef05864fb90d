/**
 * The actor-level test rig: a deterministic runtime whose sink records every stamped fact,
 * the commands the actor tests send, and the API over the rig's runtime, through which
 * they read the state their commands leave (issue 26 §2). Shared by actors.test.ts and
 * actor_replay.test.ts.
 */
import type { Test } from 'tap';
import type { Stamped } from '../actors/areas/index.js';
import type { Command, Delivery } from '../actors/areas/index.js';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';
import { Role, type RoleNumber } from '../actors/shared/types.js';
import { ApiError } from '../actors/shared/errors.js';
import { quietLogger } from '../actors/core/logger.js';
import { loadConfig } from '../src/config.js';
import { ChatApp } from '../src/http/chat_app.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { basicAuth, encodeParams, injectChecked } from './helpers.js';

export const ORG = 1;

export interface Rig {
  runtime: Runtime;
  /** Every record handed to the sink, deep-copied as the log would. */
  records: Stamped[];
  clock: { t: number };
  run(command: Command): Promise<any>;
  /** Records appended since `from`. */
  since(from: number): Stamped[];
}

/** A deterministic runtime whose sink records facts and reports them durable at once. */
export function rig(): Rig {
  const records: Stamped[] = [];
  const clock = { t: 1_800_000_000_000 };
  let counter = 0;
  const sink: FactSink = {
    append(batch, onDurable) {
      records.push(...structuredClone(batch));
      queueMicrotask(onDurable);
    },
  };
  const runtime = new Runtime({
    now: () => clock.t,
    random: () => 0.5,
    randomBytes: (n) => {
      const b = Buffer.alloc(n, 0xab);
      b.writeUInt32BE(++counter, 0);
      return b;
    },
    sink,
    queues: defaultRuntimeOptions(sink).queues,
  });
  return {
    runtime,
    records,
    clock,
    run: (target) => runtime.execute(target),
    since: (from) => records.slice(from),
  };
}

/** A runtime with nothing recorded, for replay. */
export function freshRuntime(): Runtime {
  const sink: FactSink = { append: (_r, onDurable) => queueMicrotask(onDurable) };
  return new Runtime({ ...defaultRuntimeOptions(sink), now: () => 0, random: () => 0.5 });
}

export const createOrg = (name = 'Acme'): Command => ({ type: 'CREATE_ORG', name, subdomain: name.toLowerCase(), owner_email: `owner@${name.toLowerCase()}.test`, owner_password_hash: '', owner_name: 'Ada Owner' });
export const createUser = (actor: number, email: string, fullName: string, role: RoleNumber = Role.MEMBER): Command => ({ type: 'CREATE_USER', org: ORG, actor_id: actor, email, password_hash: '', full_name: fullName, role });
export const subscribe = (actor: number, names: string[], principals: number[] | null = null, inviteOnly = false): Command => ({ type: 'SUBSCRIBE', org: ORG, actor_id: actor, channels: names.map((name) => ({ name })), principals, invite_only: inviteOnly, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
export const unsubscribe = (actor: number, names: string[], principals: number[] | null = null): Command => ({ type: 'UNSUBSCRIBE', org: ORG, actor_id: actor, names, principals });
export const sendChannel = (sender: number, streamId: number, topic: string, content: string, readBySender = true): Command => ({ type: 'SEND_MESSAGE', org: ORG, sender_id: sender, to: { stream_id: streamId, topic }, content, client: 'test', read_by_sender: readBySender });
export const sendDirect = (sender: number, to: number[], content: string, readBySender = true): Command => ({ type: 'SEND_MESSAGE', org: ORG, sender_id: sender, to: { user_ids: to }, content, client: 'test', read_by_sender: readBySender });
export const updateFlags = (user: number, op: 'add' | 'remove', flag: string, messages: number[]): Command => ({ type: 'UPDATE_FLAGS', user_id: user, org: ORG, op, flag, messages });

/** An organization with its owner (1), a member Bea (2) and a member Cy (3). */
export async function populated(): Promise<Rig> {
  const r = rig();
  await r.run(createOrg());
  await r.run(createUser(1, 'bea@acme.test', 'Bea'));
  await r.run(createUser(1, 'cy@acme.test', 'Cy'));
  return r;
}

/** The events a user gets from some deliveries, parsed. */
export function eventsFor(deliveries: Delivery[], userId: number): any[] {
  const out: any[] = [];
  for (const d of deliveries) {
    if (!('user_ids' in d) || ![...d.user_ids].includes(userId)) continue;
    const e = typeof d.event === 'function' ? d.event(userId, { empty_topic_name: false, bulk_message_deletion: false, client_gravatar: false, include_deactivated_groups: false, archived_channels: false, slim_presence: false, simplified_presence_events: false }) : d.event;
    if (e !== null) out.push(JSON.parse(`{${e.json}}`));
  }
  return out;
}

export function assertIncreasingSeqs(t: Test, records: Stamped[]): void {
  for (let i = 1; i < records.length; i++) {
    if (records[i].seq <= records[i - 1].seq) {
      t.fail(`seq ${records[i].seq} at ${i} does not follow ${records[i - 1].seq}`);
      return;
    }
  }
  t.pass('seqs strictly increase');
}

export function codeOf(err: unknown): string | undefined {
  return err instanceof ApiError ? err.code : undefined;
}

/**
 * Calls the API of the rig's runtime as the user `userId` (their credentials taken from
 * the recorded facts that made them) at the organization Acme: the parsed JSON, the
 * answer checked against Zulip's description.
 */
export function api(r: Rig, userId: number): (method: string, path: string, params?: Record<string, unknown>) => Promise<any> {
  let who: { email: string; api_key: string } | undefined;
  for (const { fact } of r.records) {
    if (fact.type === 'OrgCreated' && fact.org.id === ORG && fact.owner.user_id === userId) who = fact.owner;
    if (fact.type === 'UserCreated' && fact.org === ORG && fact.user.user_id === userId) who = fact.user;
  }
  if (!who) throw new Error(`no user ${userId} was made`);
  const off = { requests: 0, windowSecs: 60 };
  const app = new ChatApp(chatRoutes, r.runtime, { ...loadConfig([], {}), rateLimit: off, rateLimitAnonymous: off, rateLimitAuthenticate: off }, quietLogger);
  const headers = { authorization: basicAuth(who), host: 'acme.localhost' };
  return async (method, path, params = {}) => {
    const q = encodeParams(params);
    const res = await injectChecked(app, method === 'GET'
      ? { method, url: q ? `${path}?${q}` : path, headers }
      : { method, url: path, body: q, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' } });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.body}`);
    return res.json;
  };
}

/** The ids of the messages `userId` finds with `narrow`, oldest first (GET /messages). */
export async function messageIds(r: Rig, userId: number, narrow: Array<{ operator: string; operand: unknown }>): Promise<number[]> {
  const found = await api(r, userId)('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 1000, narrow: JSON.stringify(narrow) });
  return (found.messages as Array<{ id: number }>).map((m) => m.id);
}
