/**
 * Where a durable send spends the server's CPU: `node dist/bench/profile.js [--seconds S]
 * [--keep FILE] [--alloc]`. Starts this build's server under `--cpu-prof`, parks the polls of 10
 * subscribers of one channel, runs 50 senders in a closed loop for S seconds (default 10,
 * after a 2 s warm-up that the profile also holds, so keep S well above it), stops the
 * server and reads its profile: self time in microseconds per message, by part of the
 * code (uWS and the kernel, Markdown, XState, the log, ...) and by function. This is the
 * breakdown docs/performance.md quotes. With `--alloc`, the server samples
 * its heap allocations instead (`bench/alloc_probe.ts`) and the report is bytes
 * allocated per message, by function: what the garbage collector has to clean up.
 *
 * The same load as `bench/ab.ts`, so the two figures agree: ab compares builds, this
 * explains one.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiRequest, createUsers, keepPolling, QueuePoller, registerQueues, subscribe } from './api.js';
import { closePool, openPool } from './client.js';
import { closedLoop } from './load.js';
import { startParley } from './target.js';

const SUBSCRIBERS = 10;
const SENDERS = 50;
const CONTENT = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

/** The part of the code a frame belongs to, by its file; the first rule that matches wins. */
const PARTS: Array<[string, (url: string, fn: string) => boolean]> = [
  ['idle', (u, f) => f === '(idle)'],
  ['GC', (u, f) => f === '(garbage collector)'],
  ['native, uWS and the kernel (program)', (u, f) => f === '(program)' || (u === '' && f !== '(root)')],
  ['markdown-it', (u) => u.includes('/markdown-it/') || u.includes('/linkify-it/') || u.includes('/mdurl/') || u.includes('/uc.micro/') || u.includes('/entities/')],
  ['Markdown plugins (actors/engines/markdown)', (u) => u.includes('/actors/engines/markdown/')],
  ['XState', (u) => u.includes('/xstate/')],
  ['msgpackr', (u) => u.includes('/msgpackr/')],
  ['the log and persistence', (u) => u.includes('/src/store') || u.includes('/actors/core/persistence') || u.includes('/src/log') || u.includes('/storage/')],
  ['actor runtime (actors/runtime, core, kinds)', (u) => u.includes('/actors/runtime/') || u.includes('/actors/core/') || u.includes('/actors/kinds/')],
  ['event queues and fan-out', (u) => u.includes('/actors/event_queues/') || u.includes('/actors/render/')],
  ['domain rules (actors/areas and rules)', (u) => u.includes('/actors/')],
  ['HTTP pipeline (src/http)', (u) => u.includes('/src/http/')],
  ['metrics and logging', (u) => u.includes('/src/observe/') || u.includes('/prom-client/') || u.includes('/pino')],
  ['rest of src/', (u) => u.includes('/src/')],
  ['Node internals', (u) => u.startsWith('node:')],
  ['other node_modules', (u) => u.includes('/node_modules/')],
  ['other', () => true],
];

function partOf(url: string, fn: string): string {
  for (const [name, test] of PARTS) if (test(url, fn)) return name;
  return 'other';
}

/**
 * The most time one sample may carry, in microseconds. V8 samples wall time: when the main
 * thread is descheduled, the next sample's delta holds the whole gap and charges it to
 * whatever function was running (one 154 ms gap once made a Markdown rule look like 5.8 us
 * per message). The sampling interval is 1 ms, so a longer gap is the machine, not the code.
 */
const MAX_SAMPLE_US = 5000;

/** Self time per node in microseconds (the sample's delta, capped, is charged to the sampled node). */
export function selfTimes(p: Profile): Map<number, number> {
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + Math.min(p.timeDeltas[i] ?? 0, MAX_SAMPLE_US));
  return self;
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('/node_modules/');
  if (i >= 0) return url.slice(i + '/node_modules/'.length);
  const d = url.indexOf('/dist/');
  return d >= 0 ? url.slice(d + '/dist/'.length) : url;
}

/** Prints the breakdown of a profile, per message. */
export function report(p: Profile, messages: number, top = 30): void {
  const self = selfTimes(p);
  const byPart = new Map<string, number>();
  const byFn = new Map<string, number>();
  let busy = 0;
  for (const n of p.nodes) {
    const t = self.get(n.id) ?? 0;
    if (t === 0) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const part = partOf(url, functionName);
    byPart.set(part, (byPart.get(part) ?? 0) + t);
    if (part !== 'idle') busy += t;
    const key = `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) ?? 0) + t);
  }
  const per = (t: number): string => (t / messages).toFixed(2).padStart(7);
  console.log(`\n${messages} messages; main thread busy ${per(busy)} us per message (idle excluded)\n`);
  console.log('us/msg   part');
  for (const [part, t] of [...byPart].sort((a, b) => b[1] - a[1])) if (part !== 'idle') console.log(`${per(t)}  ${part}`);
  console.log(`\nus/msg   function (top ${top} by self time)`);
  for (const [fn, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${per(t)}  ${fn}`);
}

interface AllocNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocNode[];
}

/** Prints bytes allocated per message, in all and by function. */
export function reportAllocations(head: AllocNode, messages: number, top = 30): void {
  const byFn = new Map<string, number>();
  let total = 0;
  const walk = (n: AllocNode): void => {
    const { functionName, url, lineNumber } = n.callFrame;
    const key = `${functionName || '(anonymous)'} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
    total += n.selfSize;
    if (n.selfSize > 0) byFn.set(key, (byFn.get(key) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk(head);
  console.log(`\n${messages} messages; ${Math.round(total / messages)} bytes of heap allocated per message (sampled)\n`);
  console.log(`B/msg    function (top ${top})`);
  for (const [fn, b] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${String(Math.round(b / messages)).padStart(6)}   ${fn}`);
}

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv[i + 1];
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const seconds = Number(option(argv, '--seconds') ?? 10);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error('--seconds must be a positive number');
  const keep = option(argv, '--keep');
  const alloc = argv.includes('--alloc');
  const profDir = mkdtempSync(join(tmpdir(), 'parley-prof-'));
  const target = alloc
    ? await startParley({ fsync: 'always', nodeArgs: ['--import', './dist/bench/alloc_probe.js'], env: { PARLEY_ALLOC_OUT: profDir } })
    : await startParley({ fsync: 'always', nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir] });
  let polling = true;
  let messages = 0;
  const pollConns = await openPool(target.endpoint, SUBSCRIBERS);
  try {
    const setup = await openPool(target.endpoint, SUBSCRIBERS);
    const users = await createUsers(setup, target.owner, SUBSCRIBERS, 'prof');
    await subscribe(setup[0], target.owner, 'prof', users.map((u) => u.user_id));
    const queues = await registerQueues(setup, users, SUBSCRIBERS);
    closePool(setup);
    queues.forEach((q, i) => void keepPolling(new QueuePoller(pollConns[i], q), () => {}, () => polling));
    for (const durationMs of [2000, seconds * 1000]) {
      const conns = await openPool(target.endpoint, SENDERS);
      const request = (i: number): string => apiRequest(conns[i], users[i % users.length], 'POST', '/api/v1/messages', { type: 'stream', to: 'prof', topic: `topic ${i % 5}`, content: CONTENT });
      const r = await closedLoop(conns, request, { durationMs });
      closePool(conns);
      if (r.errors > 0) throw new Error(`${r.errors} sends failed; first: ${r.firstError}`);
      messages += r.requests;
      console.log(`${durationMs === 2000 ? 'warm-up' : 'measured'}: ${r.rps.toFixed(0)} msg/s, p99 ${r.latency.p99.toFixed(2)} ms`);
    }
  } finally {
    polling = false;
    closePool(pollConns);
    await target.stop();
  }
  const file = readdirSync(profDir).find((f) => f.endsWith(alloc ? '.json' : '.cpuprofile'));
  if (!file) throw new Error(`the server wrote no profile into ${profDir}`);
  if (keep) cpSync(join(profDir, file), keep);
  const profile: unknown = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
  if (alloc) reportAllocations((profile as { head: AllocNode }).head, messages);
  else report(profile as Profile, messages);
  rmSync(profDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
