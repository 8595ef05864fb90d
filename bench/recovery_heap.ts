/**
 * recovery_heap: the heap a recovered state takes per byte of log replayed and per byte
 * of snapshot loaded, the rates behind the start's memory check
 * (`snapshots/memory_budget.ts`). It writes a data directory of realistic channel
 * messages in-process, then recovers it twice in fresh child processes, once from the
 * log alone and once from a snapshot, and reads the live heap after a full GC.
 *
 *   node --expose-gc dist/bench/recovery_heap.js [--messages 100000]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { quietLogger } from '../actors/core/logger.js';
import { createOrganization, createStarterChannels } from '../src/bootstrap.js';
import { openStore, type Store } from '../src/store.js';
import { realisticMessage } from './realistic.js';

function open(dir: string): Store {
  return openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 64 * 1024 * 1024, skipCorrupt: false, keepSnapshots: 1, log: quietLogger, onFatal: (e) => { throw e; } });
}

function bytesOf(dir: string, pattern: RegExp): number {
  return readdirSync(dir).filter((f) => pattern.test(f)).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

/** In a child: recover `dir` (optionally with its snapshot set aside) and print the live heap. */
async function measureChild(dir: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  gc();
  const before = process.memoryUsage().heapUsed;
  const store = open(dir);
  gc();
  const after = process.memoryUsage().heapUsed;
  console.log(JSON.stringify({ before, after, seq: store.runtime.lastSeq }));
  await store.close();
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') return measureChild(args[1]);
  const count = Number(args[args.indexOf('--messages') + 1] || 100000);
  const dir = mkdtempSync(join(tmpdir(), 'parley-recovery-heap-'));
  try {
    const store = open(dir);
    const rt = store.runtime;
    const created = await createOrganization(rt, { name: 'Bench', subdomain: '', ownerEmail: 'o@bench.invalid', ownerPassword: 'pw', ownerName: 'O' });
    await createStarterChannels(rt, created);
    let seed = 1;
    const random = (): number => ((seed = (seed * 48271) % 0x7fffffff) / 0x7fffffff);
    for (let i = 0; i < count; i += 64) {
      const batch = [];
      for (let j = i; j < Math.min(count, i + 64); j++) {
        batch.push(rt.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: created.owner.user_id, to: { stream_id: 1, topic: `topic ${j % 50}` }, content: realisticMessage(random), client: 'bench', read_by_sender: true }));
      }
      await Promise.all(batch);
    }
    await store.close();
    const self = fileURLToPath(import.meta.url);
    const child = (): { before: number; after: number } => JSON.parse(execFileSync(process.execPath, ['--expose-gc', self, '--child', dir], { encoding: 'utf8' }).trim().split('\n').pop()!);
    const logBytes = bytesOf(dir, /\.plog$/);
    const fromLog = child();
    const snapshotter = open(dir);
    await snapshotter.snapshot();
    await snapshotter.close();
    const snapBytes = bytesOf(dir, /\.psnap$/);
    const fromSnapshot = child();
    const row = (what: string, bytes: number, r: { before: number; after: number }) => ({
      from: what,
      messages: count,
      bytes_read: bytes,
      heap_bytes: r.after - r.before,
      heap_per_byte: Math.round(((r.after - r.before) / bytes) * 100) / 100,
      base_heap_mib: Math.round(r.before / 2 ** 20),
    });
    console.table([row('log', logBytes, fromLog), row('snapshot', snapBytes, fromSnapshot)]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
