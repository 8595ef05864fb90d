/**
 * Child processes the bench starts (Parley servers, baseline servers, redis-server):
 * spawned through here, so that each is stopped by its own pid when it is done, and
 * every one still running is killed when the bench exits, however it exits. Their
 * temporary data directories are removed then too.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { rmSync } from 'node:fs';

const running = new Set<ChildProcess>();
/** CPUs the servers run on (`taskset -c` syntax), when the load and the servers are pinned apart. */
let serverCpus: string | undefined;

/** From now on, servers start pinned to `cpus` (see bench/cpus.ts). */
export function pinServersTo(cpus: string | undefined): void {
  serverCpus = cpus;
}
const tempDirs = new Set<string>();

/** Removes `dir` at exit unless `forgetTempDir` was called first (it was removed already). */
export function removeOnExit(dir: string): void {
  tempDirs.add(dir);
}

export function forgetTempDir(dir: string): void {
  tempDirs.delete(dir);
}

/**
 * Spawns a child with piped stdout/stderr and tracks it until it exits. A server is
 * started through `taskset` on the server CPUs when those are set (taskset execs it,
 * so the pid is the server's own); load generators inherit this process's CPUs.
 */
export function spawnTracked(command: string, args: string[], opts: SpawnOptions & { role?: 'server' | 'load' } = {}): ChildProcess {
  const { role = 'load', ...spawnOpts } = opts;
  const pinned = role === 'server' && serverCpus !== undefined;
  const child = pinned
    ? spawn('taskset', ['-c', serverCpus!, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOpts })
    : spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOpts });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Calls `onLine` for each line a stream emits. */
export function onLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
}

/** Sends SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export function stopChild(child: ChildProcess, graceMs = 10000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

/** Kills every child still running (by pid, synchronously) and removes temp dirs: for exit paths. */
export function killAllChildren(): void {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
  running.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}
