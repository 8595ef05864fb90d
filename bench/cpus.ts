/**
 * Where the bench runs: the load generators (this process and wrk) on one set of
 * cores, the servers it starts (Parley, the raw uWS baselines, redis-server) on the
 * others, so that a server and its load never share a core's time. Pinning uses
 * `taskset`; without it, or with a single core, everything shares the machine and the
 * results say so.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/** CPU lists in `taskset -c` syntax. */
export interface Placement {
  load: string;
  servers: string;
}

/** Below this many cores pinning is not the default (see `planPlacement`). */
export const AUTO_PIN_CORES = 4;

/**
 * Splits the cores: core 0 for the load, the rest for the servers. Returns why not
 * when pinning is impossible or, unless `force`, unwise: with 2 or 3 cores a server
 * pinned apart gets one or two, which its own GC and file-system threads share with
 * its event loop (measured on 2 cores: send 15k -> 9k msg/s).
 */
export function planPlacement(force: boolean, cores = availableParallelism()): Placement | string {
  if (cores < 2) return 'one core: the servers and the load share it';
  if (!force && cores < AUTO_PIN_CORES) return `not pinned: ${cores} cores (the default pins from ${AUTO_PIN_CORES}; --pin forces it), the servers and the load share them`;
  const probe = spawnSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return 'taskset is not available: the server and the load share every core';
  return { load: '0', servers: cores === 2 ? '1' : `1-${cores - 1}` };
}

/** Pins this process, every thread of it, to `cpus`; returns an error message or null. */
export function pinSelf(cpus: string): string | null {
  const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return `taskset failed: ${r.error?.message ?? r.stderr.trim()}`;
  return null;
}
