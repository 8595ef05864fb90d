/**
 * The memory limit Parley owns (`--memory-limit-mib`): the V8 heap limit the server runs
 * under. Everything Parley holds lives in one V8 heap, so the limit is set on Node
 * (`--max-old-space-size`, by `relaunch.ts`), and admission control (`pressure.ts`) and
 * recovery measure against the same figure.
 *
 * The default is half of the memory the process may use: the machine's (`os.totalmem()`),
 * or a lower cgroup limit (`process.constrainedMemory()`, as under a container's memory
 * limit). Half, because the heap is not the whole process: buffers outside the heap
 * (request bodies, snapshot encoding, socket buffers), uWebSockets.js and V8's own
 * overhead come on top of it, and the page cache of the log and snapshots wants room.
 */
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { YOUNG_GENERATION_MIB } from '../../snapshots/memory_budget.js';

export const MiB = 1024 * 1024;

/**
 * The smallest limit accepted. An empty server uses about 20 MiB of heap, and what the
 * requests in flight allocate does not shrink with the limit: at 64 MiB, eight sends of
 * 10,000 characters at a time filled the 15% above the high watermark and died of OOM in
 * one run of three; at 128 MiB none did.
 */
export const MIN_MEMORY_LIMIT_MIB = 128;

export { YOUNG_GENERATION_MIB };

/** Where the default comes from: the memory the process may use, and what bounds it. */
export function memoryBasis(): { bytes: number; source: 'machine' | 'cgroup' } {
  const machine = totalmem();
  // Node 20 returns 0 or undefined without a limit, and 2^64-ish for a cgroup's "max".
  const cgroup = typeof process.constrainedMemory === 'function' ? process.constrainedMemory() : 0;
  return cgroup > 0 && cgroup < machine ? { bytes: cgroup, source: 'cgroup' } : { bytes: machine, source: 'machine' };
}

/** The default limit: half the memory the process may use, in MiB, at least the minimum. */
export function defaultMemoryLimitMib(): number {
  return Math.max(MIN_MEMORY_LIMIT_MIB, Math.floor(memoryBasis().bytes / 2 / MiB));
}

/** The default as `parley config` explains it: `half of the machine's 24106 MiB`. */
export function describeDefaultLimit(): string {
  const { bytes, source } = memoryBasis();
  return `half of ${source === 'cgroup' ? 'the cgroup limit of' : "the machine's"} ${Math.floor(bytes / MiB)} MiB`;
}

/** Parses a limit in MiB: an integer, at least the minimum. */
export function parseMemoryLimitMib(v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`expected a whole number of MiB, got '${v}'`);
  const n = Number(v);
  if (n < MIN_MEMORY_LIMIT_MIB) throw new Error(`expected at least ${MIN_MEMORY_LIMIT_MIB} (MiB), got '${v}'`);
  return n;
}

/**
 * Whether this process already runs under `limitMib`. V8's `heap_size_limit` is the old
 * space plus the young generation, so the comparison allows the young generation's size
 * and a little more, for a V8 that sizes it differently.
 */
export function heapLimitMatches(limitMib: number): boolean {
  const extra = getHeapStatistics().heap_size_limit - limitMib * MiB;
  return extra >= 0 && extra <= (YOUNG_GENERATION_MIB + 16) * MiB;
}
