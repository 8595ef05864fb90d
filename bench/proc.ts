/**
 * What the bench reads about processes from the outside: resident memory and CPU
 * time from `/proc` (Linux), the open-file limit, and whether a tool is installed.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Kernel clock ticks per second for `/proc/<pid>/stat`; 100 on every mainstream Linux. */
const CLOCK_TICKS = 100;

/** Resident set size of a process in KiB (`VmRSS`), or NaN where `/proc` is missing. */
export function rssKiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/**
 * User plus system CPU time of a process in seconds (`utime + stime`), or NaN. With
 * `mainThread`, of its main thread only (`/proc/<pid>/task/<pid>`): for Node, the event
 * loop, without the threadpool's file writes and syncs or V8's helper threads.
 */
export function cpuSeconds(pid: number, mainThread = false): number {
  try {
    const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `comm`.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** CPU seconds of this process plus its exited children (`utime+stime+cutime+cstime`). */
export function ownTreeCpuSeconds(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Busy CPU seconds of the whole machine, all cores (everything but idle and iowait). */
export function machineBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - v[3] - v[4]) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/**
 * Measures the CPU used by processes other than the bench and the servers it started,
 * in cores: a busy machine makes every figure unreliable.
 */
export class ForeignCpuMeter {
  private readonly machine = machineBusySeconds();
  private readonly own = ownTreeCpuSeconds();
  private readonly wall = Date.now();

  /** Average cores used by other processes; call once every child has exited. */
  read(): number {
    const wallS = (Date.now() - this.wall) / 1000;
    const foreign = machineBusySeconds() - this.machine - (ownTreeCpuSeconds() - this.own);
    return wallS > 0 ? Math.max(0, foreign / wallS) : NaN;
  }
}

/** Samples a process's CPU use over a window (or its main thread's, with `mainThread`), as a fraction of one core. */
export class ProcessCpuMeter {
  private cpu: number;
  private wall = Date.now();

  constructor(private readonly pid: number, private readonly mainThread = false) {
    this.cpu = cpuSeconds(pid, mainThread);
  }

  read(): number {
    const wallS = (Date.now() - this.wall) / 1000;
    return wallS > 0 ? (cpuSeconds(this.pid, this.mainThread) - this.cpu) / wallS : NaN;
  }
}

/** The soft open-file limit of a process (`self` by default), or Infinity if unknown. */
export function openFileLimit(pid: number | 'self' = 'self'): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
  } catch {
    return Infinity;
  }
}

/** The path of an executable on PATH, like `which`, or null. */
export function which(command: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  return null;
}
