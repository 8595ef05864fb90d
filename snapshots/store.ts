/**
 * Opening a data directory: take its lock, recover state by replaying the log through
 * the runtime's reducers, and attach a log writer for new facts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRuntimeOptions, Runtime, type RuntimeOptions } from '../actors/runtime.js';
import { LogWriter, readLog, truncateTorn, type FsyncPolicy } from './log.js';

export interface StoreOptions {
  dataDir: string;
  fsync: FsyncPolicy;
  fsyncBatchMs: number;
  segmentBytes: number;
  /** Start even if a record in the middle of the log is corrupt, skipping past it. */
  skipCorrupt: boolean;
  log(line: string): void;
  onFatal(error: Error): void;
  /** Overrides for the runtime (clock, queue timings). */
  runtime?: Partial<RuntimeOptions>;
}

/** A recovered data directory, ready to serve. */
export interface Store {
  runtime: Runtime;
  writer: LogWriter;
  /** Flushes the log and releases the lock. */
  close(): Promise<void>;
}

const LOCK = 'parley.pid';

/** Thrown when another live process owns the data directory. */
export class DataDirLocked extends Error {}

/** The pid of the live process that holds `dataDir`, if any. */
export function lockHolder(dataDir: string): number | undefined {
  const path = join(dataDir, LOCK);
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Opens (creating if needed) a data directory and recovers its state. */
export function openStore(opts: StoreOptions): Store {
  mkdirSync(opts.dataDir, { recursive: true });
  const holder = lockHolder(opts.dataDir);
  if (holder !== undefined) throw new DataDirLocked(`${opts.dataDir} is in use by process ${holder}`);
  writeFileSync(join(opts.dataDir, LOCK), `${process.pid}\n`);
  for (const name of readdirSync(opts.dataDir)) {
    if (name.endsWith('.tmp')) {
      rmSync(join(opts.dataDir, name));
      opts.log(`store: removed leftover temporary file ${name}`);
    }
  }
  let writer: LogWriter | undefined;
  const runtime = new Runtime({
    ...defaultRuntimeOptions({ append: (records, onDurable) => writer!.append(records, onDurable) }),
    ...opts.runtime,
  } as RuntimeOptions);
  const started = Date.now();
  const result = readLog(opts.dataDir, { afterSeq: 0, skipCorrupt: opts.skipCorrupt, log: opts.log }, (s) => runtime.replay(s));
  if (result.tornAt) truncateTorn(result.tornAt, opts.log);
  if (result.records > 0) opts.log(`store: replayed ${result.records} facts up to seq ${result.lastSeq} in ${Date.now() - started} ms`);
  writer = new LogWriter(opts.dataDir, { fsync: opts.fsync, batchMs: opts.fsyncBatchMs, segmentBytes: opts.segmentBytes, onFatal: opts.onFatal }, result.lastSeq + 1);
  return {
    runtime,
    writer,
    async close() {
      await writer!.close();
      runtime.stop();
      rmSync(join(opts.dataDir, LOCK), { force: true });
    },
  };
}
