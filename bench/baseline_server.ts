/**
 * The raw uWebSockets.js baselines, run as their own process (`bench/baselines.ts`
 * starts it) so that the server and the load generator never share a core's time:
 *
 *   GET /hello              "Hello World!", the ceiling for request throughput;
 *   GET /poll               parks the response, as a long-poll with nothing to say;
 *   GET /parked             how many responses are parked;
 *   GET /trigger?bytes=B    answers, then completes every parked response from one
 *                           setImmediate, each corked, with a body of about B bytes:
 *                           the ceiling for fan-out;
 *   POST /api/v1/messages   the durable-write floor: appends the request body to a log
 *                           file with group commit (one write and one fdatasync per
 *                           batch) and acknowledges once it is durable; each durable
 *                           message becomes an event of `event_bytes` bytes for the
 *                           queues below. A batch commits either through libuv's
 *                           threadpool while the loop goes on (as Parley's log does),
 *                           or on the loop itself, blocking it (as Redis does);
 *   GET /api/v1/events      a queue's long-poll (`queue_id`, `last_event_id`): answers
 *                           at once with the events after `last_event_id`, else parks
 *                           until the next commit or /trigger. The fan-out and send
 *                           scenarios send it the very requests Parley gets;
 *   GET /floor?event_bytes=B&commit=threadpool|loop
 *                           sets the event size (to match Parley's measured one) and
 *                           where batches commit.
 *
 * The floor does nothing else: no parsing of the body, no auth, no state. It is what
 * a Node process on uWS pays for durable sends and their delivery, and no more.
 * It prints `{"port":P}` on stdout once listening on 127.0.0.1, and exits on SIGTERM.
 */
import { fdatasync, fdatasyncSync, mkdtempSync, openSync, rmSync, write, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import uWS from 'uWebSockets.js';

/** A parked poll, and the event id it has seen (Infinity for a bare /poll, which only /trigger completes). */
const held = new Map<uWS.HttpResponse, number>();
let body = '';

function bodyOf(bytes: number): string {
  const shell = '{"result":"success","msg":"","events":[],"pad":""}';
  return shell.slice(0, -2) + 'x'.repeat(Math.max(0, bytes - shell.length)) + '"}';
}

function send(res: uWS.HttpResponse, text: string): void {
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('Content-Type', 'application/json');
    res.end(text);
  });
}

function completeAll(): void {
  const batch = [...held.keys()];
  held.clear();
  for (const res of batch) send(res, body);
}

// ---- the durable-write floor ----

/** Events by id: `events[i]` has id `firstEventId + i`. */
let events: string[] = [];
let firstEventId = 0;
let eventPad = 'x'.repeat(500);
/** Each queue's acknowledged event id, so that events every queue has seen can go. */
const acked = new Map<string, number>();

let logFd = -1;
let logDir = '';
let pending: Buffer[] = [];
let pendingAcks: Array<() => void> = [];
let committing = false;
let commitOnLoop = false;
let flushScheduled = false;
let nextMessageId = 1;

function openLog(): void {
  logDir = mkdtempSync(join(tmpdir(), 'parley-bench-floor-'));
  logFd = openSync(join(logDir, 'log'), 'a');
}

function commit(): void {
  flushScheduled = false;
  if (pending.length === 0) return;
  const buf = Buffer.concat(pending);
  const acks = pendingAcks;
  pending = [];
  pendingAcks = [];
  if (commitOnLoop) {
    for (let off = 0; off < buf.length; ) off += writeSync(logFd, buf, off);
    fdatasyncSync(logFd);
    committed(acks);
    return;
  }
  committing = true;
  write(logFd, buf, 0, buf.length, null, (err) => {
    if (err) throw err;
    fdatasync(logFd, (err2) => {
      if (err2) throw err2;
      committing = false;
      committed(acks);
      commit();
    });
  });
}

/** Acknowledges a durable batch; its events go out from the next setImmediate. */
function committed(acks: Array<() => void>): void {
  for (const ack of acks) ack();
  trim();
  setImmediate(deliver);
}

function eventsAfter(lastEventId: number): string {
  let out = '{"result":"success","msg":"","events":[';
  let sep = '';
  for (let i = Math.max(0, lastEventId + 1 - firstEventId); i < events.length; i++) {
    out += sep + events[i];
    sep = ',';
  }
  return out + ']}';
}

/** Answers every parked queue poll that has events, in one pass per loop turn. */
function deliver(): void {
  const lastId = firstEventId + events.length - 1;
  for (const [res, seen] of held) {
    if (seen >= lastId) continue;
    held.delete(res);
    send(res, eventsAfter(seen));
  }
}

/** Drops the events every queue has acknowledged, once there are many. */
function trim(): void {
  if (events.length < 65536) return;
  let min = Infinity;
  for (const id of acked.values()) min = Math.min(min, id);
  const drop = Math.min(events.length, min + 1 - firstEventId);
  if (drop <= 0) return;
  events = events.slice(drop);
  firstEventId += drop;
}

const app = uWS.App();
app.get('/hello', (res) => {
  res.end('Hello World!');
});
function park(res: uWS.HttpResponse, lastEventId: number): void {
  res.onAborted(() => held.delete(res));
  held.set(res, lastEventId);
}
app.get('/poll', (res) => park(res, Infinity));
app.get('/api/v1/events', (res, req) => {
  const query = new URLSearchParams(req.getQuery() ?? '');
  const lastEventId = Number(query.get('last_event_id') ?? -1);
  const queueId = query.get('queue_id') ?? '';
  acked.set(queueId, lastEventId);
  if (lastEventId < firstEventId + events.length - 1) send(res, eventsAfter(lastEventId));
  else park(res, lastEventId);
});
app.post('/api/v1/messages', (res) => {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const chunks: Buffer[] = [];
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!last) return;
    if (logFd < 0) openLog();
    const id = nextMessageId++;
    pending.push(Buffer.concat(chunks));
    pendingAcks.push(() => {
      events.push(`{"id":${id - 1},"type":"message","message":{"id":${id},"content":"${eventPad}"},"flags":[]}`);
      if (!aborted) send(res, `{"result":"success","msg":"","id":${id}}`);
    });
    if (!committing && !flushScheduled) {
      flushScheduled = true;
      setImmediate(commit);
    }
  });
});
app.get('/floor', (res, req) => {
  const query = new URLSearchParams(req.getQuery() ?? '');
  eventPad = 'x'.repeat(Math.max(0, Number(query.get('event_bytes') ?? '600') - 80));
  commitOnLoop = query.get('commit') === 'loop';
  res.end('{"result":"success"}');
});
app.get('/parked', (res) => {
  res.end(String(held.size));
});
app.get('/trigger', (res, req) => {
  const bytes = Number(new URLSearchParams(req.getQuery() ?? '').get('bytes') ?? '100');
  if (body.length !== bytes) body = bodyOf(bytes);
  res.end('{"result":"success"}');
  setImmediate(completeAll);
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    console.error('baseline: cannot listen on 127.0.0.1');
    process.exit(1);
  }
  console.log(JSON.stringify({ port: uWS.us_socket_local_port(socket) }));
});
process.once('SIGTERM', () => {
  if (logDir) rmSync(logDir, { recursive: true, force: true });
  process.exit(0);
});
