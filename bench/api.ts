/**
 * The Zulip API calls the scenarios make, over the bench's raw-socket client:
 * form encoding, Basic auth, setup helpers that spread work over connections, and
 * `QueuePoller`, one event queue with its long-poll cursor.
 */
import type { Connection, HttpResponse } from './client.js';
import { encodeRequest } from './client.js';

/** A user's API credentials. */
export interface Credentials {
  user_id: number;
  email: string;
  api_key: string;
}

/** An event as `GET /events` returns it (only the fields the bench reads). */
export interface ApiEvent {
  id: number;
  type: string;
  message?: { id: number; sender_id: number; content: string };
}

export function basicAuth(c: { email: string; api_key: string }): string {
  return 'Basic ' + Buffer.from(`${c.email}:${c.api_key}`).toString('base64');
}

/** Encodes parameters as Zulip clients do: lists and objects as JSON, the rest as text. */
export function encodeForm(params: Record<string, unknown>): string {
  const usp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    usp.append(k, typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  }
  return usp.toString();
}

/** Encodes an API request; GET and DELETE carry their parameters in the query. */
export function apiRequest(conn: Connection, who: Credentials | null, method: string, path: string, params: Record<string, unknown> = {}): string {
  const encoded = encodeForm(params);
  const headers: Record<string, string> = who ? { Authorization: basicAuth(who) } : {};
  if (method === 'GET' || method === 'DELETE') return encodeRequest(conn.endpoint, method, encoded ? `${path}?${encoded}` : path, headers);
  headers['Content-Type'] = 'application/x-www-form-urlencoded';
  return encodeRequest(conn.endpoint, method, path, headers, encoded);
}

/** Parses a response that must be a success, or throws with the server's words. */
export function expectSuccess(res: HttpResponse, what: string): any {
  let json: any;
  try {
    json = JSON.parse(res.body);
  } catch {
    throw new Error(`${what}: HTTP ${res.status}, not JSON: ${res.body.slice(0, 200)}`);
  }
  if (res.status === 429) throw new Error(`${what}: HTTP 429: the server rate-limits the bench; run it with PARLEY_RATE_LIMIT=0 and PARLEY_RATE_LIMIT_ANONYMOUS=0: ${res.body.slice(0, 200)}`);
  if (res.status !== 200 || json.result !== 'success') throw new Error(`${what}: HTTP ${res.status}: ${res.body.slice(0, 300)}`);
  return json;
}

/** Makes one API call and returns its JSON, throwing on any error. */
export async function call(conn: Connection, who: Credentials | null, method: string, path: string, params?: Record<string, unknown>): Promise<any> {
  return expectSuccess(await conn.send(apiRequest(conn, who, method, path, params)), `${method} ${path}`);
}

/** Runs `fn` over `items`, each connection handling one item at a time. */
export async function spread<T, R>(conns: Connection[], items: T[], fn: (conn: Connection, item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    conns.slice(0, Math.max(1, Math.min(conns.length, items.length))).map(async (conn) => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(conn, items[i], i);
      }
    }),
  );
  return out;
}

/** Creates `count` members through the API (as the owner) and fetches their API keys. */
export function createUsers(conns: Connection[], owner: Credentials, count: number, prefix: string): Promise<Credentials[]> {
  const indexes = Array.from({ length: count }, (_, i) => i);
  return spread(conns, indexes, async (conn, i) => {
    const email = `${prefix}-${i}@bench.invalid`;
    const password = `pw-${prefix}-${i}`;
    const created = await call(conn, owner, 'POST', '/api/v1/users', { email, password, full_name: `Bench ${prefix} ${i}` });
    const key = await call(conn, null, 'POST', '/api/v1/fetch_api_key', { username: email, password });
    return { user_id: created.user_id as number, email, api_key: key.api_key as string };
  });
}

/** Subscribes users to a channel (creating it), acting as `who`. */
export async function subscribe(conn: Connection, who: Credentials, channel: string, userIds: number[]): Promise<void> {
  await call(conn, who, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: userIds });
}

/** Sends a channel message and returns its id. */
export async function sendChannelMessage(conn: Connection, who: Credentials, channel: string, topic: string, content: string): Promise<number> {
  const json = await call(conn, who, 'POST', '/api/v1/messages', { type: 'stream', to: channel, topic, content });
  return json.id as number;
}

/** A registered queue: whose it is, and where its long-poll cursor stands. */
export interface RegisteredQueue {
  user: Credentials;
  queueId: string;
  lastEventId: number;
}

/** Registers `count` message queues, round-robin over `users`, over several connections. */
export function registerQueues(conns: Connection[], users: Credentials[], count: number): Promise<RegisteredQueue[]> {
  const owners = Array.from({ length: count }, (_, i) => users[i % users.length]);
  return spread(conns, owners, async (conn, user) => {
    const json = await call(conn, user, 'POST', '/api/v1/register', { event_types: ['message'] });
    return { user, queueId: json.queue_id as string, lastEventId: json.last_event_id as number };
  });
}

/** One queue's long-poll over one connection; `accept` moves the cursor. */
export class QueuePoller {
  constructor(public conn: Connection, readonly queue: RegisteredQueue) {}

  /** Sends `GET /events` from the current cursor (acknowledging what came before). */
  poll(dontBlock = false): Promise<HttpResponse> {
    const params: Record<string, unknown> = { queue_id: this.queue.queueId, last_event_id: this.queue.lastEventId };
    if (dontBlock) params.dont_block = true;
    return this.conn.send(apiRequest(this.conn, this.queue.user, 'GET', '/api/v1/events', params));
  }

  /** Checks a poll's response and advances the cursor past its events. */
  accept(res: HttpResponse): ApiEvent[] {
    const events = expectSuccess(res, `GET /events (queue ${this.queue.queueId})`).events as ApiEvent[];
    if (events.length > 0) this.queue.lastEventId = events[events.length - 1].id;
    return events;
  }
}

/**
 * Long-polls in a loop, handing each batch of events to `onEvents`, until `running()`
 * turns false (close the connection to end a parked poll) or `maxPolls` is reached.
 * Resolves normally when stopped; rejects on an error while still running.
 */
export async function keepPolling(poller: QueuePoller, onEvents: (events: ApiEvent[], res: HttpResponse) => void, running: () => boolean, maxPolls = 10_000_000): Promise<void> {
  for (let i = 0; i < maxPolls && running(); i++) {
    let res: HttpResponse;
    try {
      res = await poller.poll();
    } catch (err) {
      if (!running()) return;
      throw err;
    }
    onEvents(poller.accept(res), res);
  }
}
