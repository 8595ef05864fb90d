/**
 * The send path's JavaScript cost, without sockets: `node dist/bench/inproc.js [--messages M]`.
 * Builds this build's chat app in process (no uWS, no disk: a sink that encodes every
 * record as the log would and calls it durable on the next loop turn), with one channel
 * of 10 subscribers whose queues are long-polled the way clients poll them, and sends M
 * messages through `ChatApp.handle` from 50 concurrent senders. Reports the main
 * thread's CPU time per message (process.cpuUsage, the pollers' own bookkeeping
 * subtracted), which a busy machine moves far less than it moves throughput.
 *
 * For a same-machine A/B of two builds, copy this file's build into the other build's
 * dist/bench/ and run both alternately, e.g.
 *   for i in 1 2 3; do node A/dist/bench/inproc.js; node B/dist/bench/inproc.js; done
 */
import { performance } from 'node:perf_hooks';
import { quietLogger } from '../actors/core/logger.js';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';
import { encodeRecord } from '../snapshots/codec.js';
import { createOrganization } from '../src/bootstrap.js';
import { loadConfig, type Config } from '../src/config.js';
import { ChatApp } from '../src/http/chat_app.js';
import { Abortable, type IncomingRequest, type OutgoingResponse } from '../src/http/types.js';
import { chatRoutes } from '../src/routes/chat/index.js';

const SUBSCRIBERS = 10;
const SENDERS = 50;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

/** Durable on the next loop turn, in batches, after encoding each record as the log does. */
function encodingSink(): FactSink {
  let waiting: Array<() => void> = [];
  return {
    append(records, onDurable) {
      for (const r of records) encodeRecord(r);
      if (waiting.length === 0) {
        setImmediate(() => {
          const done = waiting;
          waiting = [];
          for (const fn of done) fn();
        });
      }
      waiting.push(onDurable);
    },
  };
}

function form(params: Record<string, string>): Buffer {
  return Buffer.from(new URLSearchParams(params).toString());
}

function request(method: string, path: string, auth: string, params: Record<string, string>): IncomingRequest {
  const inQuery = method === 'GET';
  return {
    method,
    path,
    query: inQuery ? new URLSearchParams(params).toString() : '',
    headers: { host: '127.0.0.1', authorization: auth, 'user-agent': 'bench/1.0', ...(inQuery ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1' }) },
    body: inQuery ? Buffer.alloc(0) : form(params),
    remoteAddress: '127.0.0.1',
  };
}

/** Answers one request as the transport would: at once, through a promise, or later through the exchange. */
function call(app: ChatApp, req: IncomingRequest): Promise<OutgoingResponse> {
  const exchange = new Abortable();
  const later = new Promise<OutgoingResponse>((resolve) => (exchange.responder = resolve));
  const out = app.handle(req, exchange);
  return out === null ? later : Promise.resolve(out);
}

function bodyOf(out: OutgoingResponse): string {
  return typeof out.body === 'string' ? out.body : out.body.toString();
}

const LAST_EVENT = /\{"id":(\d+),"type":/g;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--messages');
  const total = i < 0 ? 60_000 : Number(argv[i + 1]);
  const runtime = new Runtime({ ...defaultRuntimeOptions(encodingSink()), log: quietLogger });
  const off = { requests: 0, windowSecs: 60 };
  const config: Config = { ...loadConfig([], {}), rateLimit: off, rateLimitAnonymous: off, rateLimitAuthenticate: off };
  const app = new ChatApp(chatRoutes, runtime, config, quietLogger);
  const org = await createOrganization(runtime, { name: 'Bench', subdomain: '', ownerEmail: 'owner@example.com', ownerPassword: 'owner-pass', ownerName: 'Owner' });
  const basic = (email: string, key: string): string => 'Basic ' + Buffer.from(`${email}:${key}`).toString('base64');
  const ownerAuth = basic(org.owner.email, org.owner.api_key);
  const ok = async (req: IncomingRequest): Promise<any> => {
    const out = await call(app, req);
    if (out.status !== 200) throw new Error(`${req.method} ${req.path}: ${out.status} ${bodyOf(out)}`);
    return JSON.parse(bodyOf(out));
  };
  const users: string[] = [];
  for (let u = 0; u < SUBSCRIBERS; u++) {
    const email = `user${u}@example.com`;
    const created = await ok(request('POST', '/api/v1/users', ownerAuth, { email, password: `pw-${email}-long`, full_name: `User ${u}` }));
    const key = await ok(request('POST', '/api/v1/fetch_api_key', '', { username: email, password: `pw-${email}-long` }));
    users.push(basic(email, key.api_key));
    void created;
  }
  await ok(request('POST', '/api/v1/users/me/subscriptions', ownerAuth, { subscriptions: JSON.stringify([{ name: 'bench' }]), principals: JSON.stringify([...Array(SUBSCRIBERS).keys()].map((k) => k + 2)) }));

  // Pollers: each long-polls its queue, acknowledging what it got; their own work is timed and subtracted.
  let polling = true;
  let clientMs = 0;
  const polls: Array<Promise<void>> = [];
  for (const auth of users) {
    const queue = await ok(request('POST', '/api/v1/register', auth, { event_types: JSON.stringify(['message']) }));
    polls.push(
      (async () => {
        let last = queue.last_event_id as number;
        while (polling) {
          const out = await call(app, request('GET', '/api/v1/events', auth, { queue_id: queue.queue_id, last_event_id: String(last) }));
          const t0 = performance.now();
          const body = bodyOf(out);
          for (const m of body.matchAll(LAST_EVENT)) last = Number(m[1]);
          clientMs += performance.now() - t0;
        }
      })(),
    );
  }

  const send = (n: number, auth: string): IncomingRequest => request('POST', '/api/v1/messages', auth, { type: 'stream', to: 'bench', topic: `topic ${n % 5}`, content: CONTENT });
  const run = async (count: number): Promise<void> => {
    let next = 0;
    await Promise.all(
      Array.from({ length: SENDERS }, async (_, s) => {
        while (next < count) {
          next++;
          const out = await call(app, send(s, users[s % users.length]));
          if (out.status !== 200) throw new Error(`send: ${out.status} ${bodyOf(out)}`);
        }
      }),
    );
  };
  await run(Math.min(10_000, total));
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  clientMs = 0;
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  await run(total);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - wall0;
  polling = false;
  // Any parked poll is answered by the queue's heartbeat; do not wait for it.
  const usPerMessage = ((cpu.user + cpu.system) / 1000 - clientMs) * 1000 / total;
  console.log(`${process.argv[1]}: ${total} messages, ${usPerMessage.toFixed(2)} us of CPU per message (pollers' ${(clientMs * 1000 / total).toFixed(2)} us subtracted), ${(total / (wallMs / 1000)).toFixed(0)} msg/s in one thread`);
  runtime.stop();
  process.exit(0);
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
