/**
 * Applying the memory limit: V8 fixes its heap limit when the process starts, so a
 * `parley serve` (or `npm start`) whose Node runs under another limit starts the same
 * command again under `--max-old-space-size=<limit>` and stands in for it:
 *
 * - the child shares the parent's stdin, stdout and stderr (nothing is piped through);
 * - SIGTERM, SIGINT and SIGHUP sent to the parent go to the child, once each: the child
 *   is the leader of a process group of its own, so a terminal's Ctrl-C reaches it only
 *   through the parent (never twice, which would skip the drain);
 * - the parent exits with the child's code, or dies of the child's signal;
 * - the child dies at once (SIGKILL, as its parent did) when the parent dies, whatever
 *   killed it: it watches its IPC channel to the parent (`watchParent`). So a `kill -9`
 *   of the pid an operator or a test holds never leaves a server holding the data
 *   directory.
 *
 * A process already under the limit (compared with `heapLimitMatches`) runs the server
 * itself. The child is told, in its environment, that it was relaunched, so that it runs
 * the server whatever its limit turned out to be instead of relaunching again.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../../actors/core/logger.js';
import { heapLimitMatches } from './limit.js';

/** In the environment of a relaunched server: the limit, in MiB, it was started under. */
export const RELAUNCHED_ENV = 'PARLEY_RELAUNCHED_MEMORY_LIMIT_MIB';

/** The signals the parent passes on to the child. */
const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** A V8 heap size flag in Node's own arguments (`--max-old-space-size=N`, `--max_old_space_size N`). */
const HEAP_FLAG = /^--max[-_]old[-_]space[-_]size(=|$)/;

/**
 * Whether this process must start again to run under `limitMib`: not when its heap
 * limit already matches, and never twice (a relaunched child that still does not match
 * logs it and serves).
 */
export function needsRelaunch(limitMib: number, env: NodeJS.ProcessEnv, log: Logger): boolean {
  if (heapLimitMatches(limitMib)) return false;
  if (env[RELAUNCHED_ENV] === undefined) return true;
  log.warn({ event: 'memory.limit_not_applied', limit_mib: limitMib }, `--max-old-space-size=${limitMib} did not give this Node a heap limit of ${limitMib} MiB; serving under its own`);
  return false;
}

/** Node's arguments with any heap size flag taken out, and `--max-old-space-size=<limitMib>` added. */
export function nodeArgs(execArgv: readonly string[], limitMib: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const m = HEAP_FLAG.exec(execArgv[i]);
    if (!m) out.push(execArgv[i]);
    else if (m[1] === '') i++; // the value is the next argument
  }
  return [...out, `--max-old-space-size=${limitMib}`];
}

/**
 * Runs this command again under `--max-old-space-size=<limitMib>` and stands in for it
 * until it exits (see the top of this module): the process ends with the child, or
 * through `exit` if the child cannot be started.
 */
export function relaunch(limitMib: number, log: Logger, exit: (code: number) => void): void {
  const args = [...nodeArgs(process.execArgv, limitMib), ...process.argv.slice(1)];
  const child = spawn(process.execPath, args, {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [RELAUNCHED_ENV]: String(limitMib) },
    detached: true,
  });
  log.debug({ event: 'memory.relaunched', limit_mib: limitMib, child_pid: child.pid }, `starting Node again with --max-old-space-size=${limitMib} (pid ${child.pid})`);
  for (const signal of FORWARDED) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    log.fatal({ event: 'server.start_failed', error: err.message }, `cannot start: could not start Node with --max-old-space-size=${limitMib}: ${err.message}`);
    exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // Die of the same signal, so that whoever waits for this process sees what happened.
    for (const s of FORWARDED) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  });
}

/**
 * In a relaunched server: dies at once, as by SIGKILL, when the parent that stands in
 * for it is gone (its IPC channel closes), and keeps the channel from holding the event
 * loop open. Does nothing in a server that was not relaunched.
 */
export function watchParent(env: NodeJS.ProcessEnv): void {
  if (env[RELAUNCHED_ENV] === undefined || !process.channel) return;
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  process.channel.unref();
}
