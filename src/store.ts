/**
 * A data directory opened as Parley's state: the runtime, recovered from the newest
 * snapshot and the log after it (`snapshots/store.ts` does the files; this is where
 * the two are put together).
 */
import { defaultRuntimeOptions, Runtime, type RuntimeOptions } from '../actors/runtime/runtime.js';
import type { FactSink } from '../actors/runtime/runtime.js';
import type { Bodies } from '../actors/core/bodies.js';
import { openStore as openDataDir, openStoreInSlices as openDataDirInSlices, type Pacing, type Store as DataStore, type StoreOptions as DataStoreOptions } from '../snapshots/store.js';

export { DataDirLocked, lockHolder, recover, type Pacing, type Recovery } from '../snapshots/store.js';

export interface StoreOptions extends DataStoreOptions {
  /** Overrides for the runtime (clock, queue timings). */
  runtime?: Partial<RuntimeOptions>;
}

/** An open data directory and the runtime recovered from it. */
export type Store = DataStore<Runtime>;

/** The empty runtime over a data directory's sink, with the caller's overrides. */
function buildRuntime(opts: StoreOptions): (sink: FactSink, bodies: Bodies) => Runtime {
  return (sink, bodies) => new Runtime({ ...defaultRuntimeOptions(sink), log: opts.log, bodies, ...opts.runtime } as RuntimeOptions);
}

/** Opens (creating if needed) a data directory and recovers the runtime from it. */
export function openStore(opts: StoreOptions): Store {
  return openDataDir(opts, buildRuntime(opts));
}

/** `openStore` in slices that let the event loop run (see `snapshots/store.ts`): the runtime now, the store once `recover` is done. */
export function openStoreInSlices(opts: StoreOptions, pacing: Pacing): { runtime: Runtime; recover(): Promise<Store> } {
  return openDataDirInSlices(opts, buildRuntime(opts), pacing);
}
