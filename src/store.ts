/**
 * A data directory opened as Parley's state: the runtime, recovered from the newest
 * snapshot and the log after it (`snapshots/store.ts` does the files; this is where
 * the two are put together).
 */
import { defaultRuntimeOptions, Runtime, type RuntimeOptions } from '../actors/runtime/runtime.js';
import { openStore as openDataDir, type Store as DataStore, type StoreOptions as DataStoreOptions } from '../snapshots/store.js';

export { DataDirLocked, lockHolder, recover, type Recovery } from '../snapshots/store.js';

export interface StoreOptions extends DataStoreOptions {
  /** Overrides for the runtime (clock, queue timings). */
  runtime?: Partial<RuntimeOptions>;
}

/** An open data directory and the runtime recovered from it. */
export type Store = DataStore<Runtime>;

/** Opens (creating if needed) a data directory and recovers the runtime from it. */
export function openStore(opts: StoreOptions): Store {
  return openDataDir(opts, (sink) => new Runtime({ ...defaultRuntimeOptions(sink), ...opts.runtime } as RuntimeOptions));
}
