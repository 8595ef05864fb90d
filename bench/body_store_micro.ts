/**
 * Microbenchmark of the body store (snapshots/body_store.ts) against LMDB doing the
 * same: append N realistic bodies (content from bench/realistic.ts, rendered by the
 * project's Markdown renderer), then read random old ones cold, one by one and as runs
 * of 100 consecutive messages. Each engine runs in a child process of its own, so that
 * its heap and RSS are its own; the parent prints one table.
 *
 * Run: node --expose-gc --import tsx bench/body_store_micro.ts [--n=1000000] [--dir=/tmp/x]
 *        [--lmdb=/path/to/dir-with-node_modules/lmdb]
 *   or, built: node --expose-gc dist/bench/body_store_micro.js [same flags]
 * It stops by itself: N appends, a fixed number of reads, one verify and one compaction
 * per engine (about 1 to 2 minutes at the default N; 2 GB of scratch disk).
 * LMDB is not a dependency: install it beside the worktree (`npm i --no-save lmdb` in a
 * scratch directory) and name that directory with --lmdb; without it only the body store runs.
 *
 * The OS page cache is warm for both (the files were just written): "cold" means cold
 * for the process's own caches, not for the disk.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderMarkdown, type MarkdownEnv } from '../actors/engines/markdown/index.js';
import { BodyStore, type MessageBody } from '../snapshots/body_store.js';
import { realisticMessage } from './realistic.js';

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const N = Number(args.get('n') ?? 1_000_000);
/** Appends per simulated event-loop turn (one flush each). */
const PER_TURN = 100;
const COLD_READS = 20_000;
const RUNS = 1_000;
const RUN_LENGTH = 100;

/** A seeded PRNG (mulberry32), so runs compare. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const env: MarkdownEnv = { user: () => undefined, group: () => undefined, channel: () => undefined };
/** Distinct bodies cycled through: rendering a million messages would measure the renderer. */
function pool(size = 20_000): MessageBody[] {
  const random = prng(42);
  return Array.from({ length: size }, () => {
    const content = realisticMessage(random);
    return { content, rendered: renderMarkdown(content, env).html };
  });
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function memory(): { heapMiB: number; rssMiB: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { heapMiB: m.heapUsed / 2 ** 20, rssMiB: m.rss / 2 ** 20 };
}

/** CPU ms of this process since `from`. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
}

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

interface Result {
  engine: string;
  appendUs: number;
  /** This process's CPU time per append (the machine may be shared: wall time moves more). */
  appendCpuUs: number;
  syncMs: number;
  bytesPerMessage: number;
  heapMiB: number;
  rssMiB: number;
  openMs: number;
  openCpuMs: number;
  readP50: number;
  readP99: number;
  runP50: number;
  runP99: number;
  extra: string;
}

/** Times `op` once per sample; µs, sorted. */
async function timed(samples: number, op: (i: number) => unknown): Promise<Float64Array> {
  const out = new Float64Array(samples);
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await op(i);
    out[i] = (performance.now() - t0) * 1000;
  }
  return out.sort();
}

async function runBodies(dir: string, bodies: MessageBody[]): Promise<Result> {
  const before = memory();
  const store = BodyStore.open({ dir });
  const locs = new Float64Array(N);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let id = 0; id < N; id++) {
    locs[id] = store.append(id + 1, bodies[id % bodies.length]);
    if (id % PER_TURN === PER_TURN - 1) store.flush();
  }
  store.flush();
  const appendMs = performance.now() - t0;
  const appendCpuMs = cpuSince(c0);
  const s0 = performance.now();
  store.sync();
  const syncMs = performance.now() - s0;
  const after = memory();
  const bytes = store.stats().bytes;
  store.close();
  const oc = process.cpuUsage();
  const o0 = performance.now();
  const cold = BodyStore.open({ dir, cacheBytes: 0 });
  const openMs = performance.now() - o0;
  const openCpuMs = cpuSince(oc);
  const random = prng(7);
  const reads = await timed(COLD_READS, () => cold.read(locs[Math.floor(random() * N)]));
  const runs = await timed(RUNS, () => {
    const start = Math.floor(random() * (N - RUN_LENGTH));
    return cold.readMany(Array.from(locs.subarray(start, start + RUN_LENGTH)));
  });
  const vc = process.cpuUsage();
  let steps = cold.verify();
  while (!steps.next().done);
  const verifyMs = cpuSince(vc);
  // Compaction with one message in ten deleted and one in ten edited (its old version dead).
  const live = Array.from(locs).filter((_, i) => i % 10 !== 0);
  const cc = process.cpuUsage();
  const c1 = performance.now();
  const compact = cold.compact(() => live, () => {});
  let slices = 0;
  let compacted = compact.next();
  while (!compacted.done) {
    slices++;
    compacted = compact.next();
  }
  const compactMs = performance.now() - c1;
  const compactCpuMs = cpuSince(cc);
  cold.close();
  steps = undefined as never;
  return {
    engine: 'body store',
    appendUs: (appendMs * 1000) / N,
    appendCpuUs: (appendCpuMs * 1000) / N,
    syncMs,
    bytesPerMessage: bytes / N,
    heapMiB: after.heapMiB - before.heapMiB,
    rssMiB: after.rssMiB,
    openMs,
    openCpuMs,
    readP50: percentile(reads, 0.5),
    readP99: percentile(reads, 0.99),
    runP50: percentile(runs, 0.5),
    runP99: percentile(runs, 0.99),
    extra: `verify ${((bytes / 2 ** 20) / (verifyMs / 1000)).toFixed(0)} MiB per CPU second; compact of 90% live ${(compactMs / 1000).toFixed(1)} s wall (${(compactCpuMs / 1000).toFixed(1)} s CPU) in ${slices} slices (${compacted.value.bytesBefore} -> ${compacted.value.bytesAfter} bytes)`,
  };
}

interface Lmdb {
  open(opts: object): {
    put(key: unknown, value: unknown): Promise<boolean>;
    get(key: unknown): unknown;
    getRange(opts: object): Iterable<{ key: unknown; value: unknown }>;
    flushed: Promise<void>;
    close(): Promise<void>;
  };
}

async function runLmdb(dir: string, bodies: MessageBody[], from: string): Promise<Result> {
  const lmdb = createRequire(join(from, 'x.js'))('lmdb') as Lmdb;
  const before = memory();
  // noSync: each turn's writes reach the OS, not the disk, as the body store's flush does.
  let db = lmdb.open({ path: dir, noSync: true, compression: false });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let last: Promise<boolean> | undefined;
  for (let id = 0; id < N; id++) {
    last = db.put([id + 1, 0], bodies[id % bodies.length]);
    // A turn ends: let the write batch commit now and then, as the event loop would.
    if (id % (PER_TURN * 100) === PER_TURN * 100 - 1) await last;
  }
  await last;
  await db.flushed;
  const appendMs = performance.now() - t0;
  const appendCpuMs = cpuSince(c0);
  const after = memory();
  await db.close();
  const s0 = performance.now();
  // Durability as one sync: a reopen with sync on and one empty transaction committed.
  db = lmdb.open({ path: dir, compression: false });
  await db.put([0, 0], { content: '', rendered: '' });
  const syncMs = performance.now() - s0;
  await db.close();
  const oc = process.cpuUsage();
  const o0 = performance.now();
  db = lmdb.open({ path: dir, compression: false });
  const openMs = performance.now() - o0;
  const openCpuMs = cpuSince(oc);
  const random = prng(7);
  const reads = await timed(COLD_READS, () => db.get([1 + Math.floor(random() * N), 0]));
  const runs = await timed(RUNS, () => {
    const start = 1 + Math.floor(random() * (N - RUN_LENGTH));
    return Array.from(db.getRange({ start: [start, 0], end: [start + RUN_LENGTH, 0] }));
  });
  await db.close();
  return {
    engine: 'LMDB (lmdb-js)',
    appendUs: (appendMs * 1000) / N,
    appendCpuUs: (appendCpuMs * 1000) / N,
    syncMs,
    bytesPerMessage: dirBytes(dir) / N,
    heapMiB: after.heapMiB - before.heapMiB,
    rssMiB: after.rssMiB,
    openMs,
    openCpuMs,
    readP50: percentile(reads, 0.5),
    readP99: percentile(reads, 0.99),
    runP50: percentile(runs, 0.5),
    runP99: percentile(runs, 0.99),
    extra: 'data.mdb size (B+tree pages, free pages included)',
  };
}

const engine = args.get('engine');
if (engine) {
  const dir = args.get('dir')!;
  const bodies = pool();
  const result = engine === 'lmdb' ? await runLmdb(dir, bodies, args.get('lmdb')!) : await runBodies(dir, bodies);
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
} else {
  const root = args.get('dir') ?? mkdtempSync(join(tmpdir(), 'parley-body-bench-'));
  const results: Result[] = [];
  const engines = args.has('lmdb') ? ['bodies', 'lmdb'] : ['bodies'];
  for (const e of engines) {
    const dir = join(root, e);
    const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1], `--engine=${e}`, `--dir=${dir}`, `--n=${N}`, ...(args.has('lmdb') ? [`--lmdb=${args.get('lmdb')}`] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 30 * 60 * 1000 });
    const line = child.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    if (!line) {
      console.error(`${e}: no result (exit ${child.status}, signal ${child.signal})`);
      continue;
    }
    results.push(JSON.parse(line.slice('RESULT '.length)) as Result);
    rmSync(dir, { recursive: true, force: true });
  }
  const load = loadavg()[0].toFixed(1);
  console.log(`load average (1 min) at the end of the run: ${load} on ${cpus().length} CPUs`);
  console.log(`${N.toLocaleString('en')} realistic bodies, ${PER_TURN} appends per flush; cold reads: ${COLD_READS.toLocaleString('en')} random, ${RUNS.toLocaleString('en')} runs of ${RUN_LENGTH} consecutive`);
  console.log('| engine | append µs/body wall (CPU) | sync ms | bytes/msg | heap Δ MiB | RSS MiB | open ms wall (CPU) | read p50/p99 µs | 100-run p50/p99 µs |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  const f = (x: number, d = 1): string => x.toFixed(d);
  for (const r of results) console.log(`| ${r.engine} | ${f(r.appendUs, 2)} (${f(r.appendCpuUs, 2)}) | ${f(r.syncMs)} | ${f(r.bytesPerMessage, 0)} | ${f(r.heapMiB)} | ${f(r.rssMiB, 0)} | ${f(r.openMs)} (${f(r.openCpuMs)}) | ${f(r.readP50)} / ${f(r.readP99)} | ${f(r.runP50)} / ${f(r.runP99)} |`);
  for (const r of results) console.log(`${r.engine}: ${r.extra}`);
}
