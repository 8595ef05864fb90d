/**
 * Whether recovering a data directory fits in the heap, decided before it starts and
 * watched while it runs, so that a start on data too large for the memory limit stops
 * with a message instead of dying of OOM (and, under a supervisor, dying again).
 *
 * The estimate is linear in what recovery reads: every byte of snapshot and of log
 * becomes heap at a measured rate (see the constants). The watch reads the live heap
 * after each major GC, the one figure that is not inflated by garbage.
 */
import { PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

/**
 * Heap taken per byte of snapshot loaded, and per byte of log replayed: the live heap
 * after recovery divided by the bytes read, measured with realistic messages (40–80
 * words, some Markdown) by `node --expose-gc dist/bench/recovery_heap.js --messages N`.
 *
 * A format 4 snapshot holds a message's metadata and its body's locator, about 40
 * bytes a message, and the actors hold messages in typed-array columns
 * (`actors/shared/message_table.ts`), outside the V8 heap: 0.08 heap bytes per snapshot
 * byte at 200,000 messages (it was 6.87 to 7.13 with a record object per message, which
 * refused to start a 20 M message server's 997 MB snapshot under 4 GiB). The constant
 * keeps a margin for data whose snapshot is mostly objects (users, subscriptions:
 * about what formats 1 to 3 took per byte), and the watch below stops a recovery that
 * outgrows the budget all the same. Formats 1 to 3 held whole
 * messages: 1.32 per byte at 150,000 (1.29 at 30,000 and 100,000). Replayed log
 * records carry whole messages, whose bodies go to the body store and stay in its
 * cache up to its bound (64 MiB by default): 1.25 per log byte at 50,000 messages (the
 * cache not yet full), 0.82 at 150,000, 0.18 at 200,000 with message columns. Each
 * with margin.
 */
export const HEAP_PER_SNAPSHOT_BYTE = 1.4;
export const HEAP_PER_WHOLE_MESSAGE_SNAPSHOT_BYTE = 1.4;
export const HEAP_PER_LOG_BYTE = 1.35;
/** The heap a started Parley takes before any data (code, tables, caches: about 20 MiB), with margin. */
export const BASE_HEAP_BYTES = 24 * 1024 * 1024;
/**
 * Recovery may fill this share of the heap limit at most, by its estimate. It is above
 * admission control's high watermark (75%, `src/memory/pressure.ts`), so that a server
 * that filled its heap up to the refusal of writes starts again under the same limit (and
 * refuses writes at once, serving reads): the estimate's rates are over the measured ones
 * by about 6%. The heap it leaves stays under the 80% at which V8 gives up on a heap that
 * its GC cannot free (see pressure.ts), replay being all allocation.
 */
export const RECOVERY_HEAP_SHARE = 0.8;

const MIB = 1024 * 1024;

/**
 * What V8 adds to `--max-old-space-size` in `heap_size_limit`: the young generation,
 * three semi-spaces of 16 MiB on 64-bit Node 20 whatever the old space's size.
 */
export const YOUNG_GENERATION_MIB = 48;

/**
 * The old generation's ceiling of this process, in bytes: what `--max-old-space-size`
 * (`--memory-limit-mib`) set, and what runs out at an OOM. Recovery and admission
 * control (`src/memory/pressure.ts`) measure against it.
 */
export function oldGenerationLimitBytes(): number {
  return getHeapStatistics().heap_size_limit - YOUNG_GENERATION_MIB * MIB;
}

/** The old generation in use, in bytes: every heap space but the young generation's (about 0.5 µs). */
export function oldGenerationUsedBytes(): number {
  let used = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name !== 'new_space' && space.space_name !== 'new_large_object_space') used += space.space_used_size;
  }
  return used;
}

/**
 * The heap recovering `snapshotBytes` of snapshot (in format `version`: before 4, with
 * whole messages) and `logBytes` of log is expected to take.
 */
export function recoveryHeapEstimate(snapshotBytes: number, logBytes: number, version = 4): number {
  const perSnapshotByte = version >= 4 ? HEAP_PER_SNAPSHOT_BYTE : HEAP_PER_WHOLE_MESSAGE_SNAPSHOT_BYTE;
  return BASE_HEAP_BYTES + snapshotBytes * perSnapshotByte + logBytes * HEAP_PER_LOG_BYTE;
}

/** The heap recovery may use, in bytes: its share of `limitBytes`. */
export function recoveryHeapBudget(limitBytes: number): number {
  return Math.floor(limitBytes * RECOVERY_HEAP_SHARE);
}

/** Bytes as MiB, rounded up, for messages. */
export function mib(bytes: number): number {
  return Math.ceil(bytes / MIB);
}

/** How an operator raises the limit, for messages. */
const RAISE = 'with --memory-limit-mib, PARLEY_MEMORY_LIMIT_MIB or server.memory_limit_mib (the machine must have that much memory to spare)';

/**
 * Thrown when recovering the data directory does not fit in the heap limit; its
 * message says what recovery needs, what the limit is, and how to raise it.
 */
export class RecoveryTooLarge extends Error {
  /** Recovery of `what` is expected to need `neededBytes`: refused before it starts. */
  static estimated(neededBytes: number, limitBytes: number, what: string): RecoveryTooLarge {
    return new RecoveryTooLarge(
      `recovery of ${what} needs about ${mib(neededBytes)} MiB of heap, more than the ${mib(recoveryHeapBudget(limitBytes))} MiB ` +
        `recovery may use (${Math.round(RECOVERY_HEAP_SHARE * 100)}% of the ${mib(limitBytes)} MiB memory limit). Raise the limit to at least ` +
        `${Math.ceil(mib(neededBytes) / RECOVERY_HEAP_SHARE)} MiB ${RAISE}, or restore an older state with 'parley restore'`,
    );
  }

  /** Recovery under way reached the budget at `seq` with `liveBytes` live: stopped before the heap ran out. */
  static reached(liveBytes: number, limitBytes: number, seq: number, lastSeq: number): RecoveryTooLarge {
    const share = lastSeq > 0 ? Math.min(1, seq / lastSeq) : 1;
    const needed = share > 0 ? liveBytes / share : liveBytes;
    return new RecoveryTooLarge(
      `recovery stopped at seq ${seq} of about ${lastSeq} with ${mib(liveBytes)} MiB of live heap, past the ${mib(recoveryHeapBudget(limitBytes))} MiB ` +
        `it may use (${Math.round(RECOVERY_HEAP_SHARE * 100)}% of the ${mib(limitBytes)} MiB memory limit); at this rate it needs about ${mib(needed)} MiB. ` +
        `Raise the limit to at least ${Math.ceil(mib(needed) / RECOVERY_HEAP_SHARE)} MiB ${RAISE}`,
    );
  }
}

/** The live heap (old generation) as the last major GC left it, watched while recovery runs. */
export interface LiveHeapWatch {
  /** The old generation in use after the last major GC, in bytes (0 before the first one). */
  liveBytes(): number;
  stop(): void;
}

/**
 * Watches major GCs (mark-compact) and records the heap they leave. The observer's
 * entries arrive between turns of the event loop, which sliced recovery gives them.
 */
export function watchLiveHeap(): LiveHeapWatch {
  let live = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perf.NODE_PERFORMANCE_GC_MAJOR) live = oldGenerationUsedBytes();
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return { liveBytes: () => live, stop: () => observer.disconnect() };
}
