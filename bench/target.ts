/**
 * The Parley server a scenario drives: either one this bench starts (a child process on
 * 127.0.0.1 with a fresh data directory, which bootstraps its own organization), or an
 * existing deployment given with `--target URL --email E --api-key K`.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { call, type Credentials } from './api.js';
import { forgetTempDir, onLines, removeOnExit, spawnTracked, stopChild } from './children.js';
import { Connection, type Endpoint } from './client.js';

/** What the bench probe (`bench/probe.ts`) reports from inside a local server. */
export interface ProbeReading {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  gc: boolean;
  /** Event-loop delay inside the server since the previous reading, in ms. */
  loop: { p50: number; p99: number; max: number };
}

/** A server under test. */
export interface Target {
  endpoint: Endpoint;
  owner: Credentials;
  /** The message board's listener (local servers only: a remote target's board port is not known). */
  board?: Endpoint;
  /** Set for a server this bench started; the remote case has no pid and no probe. */
  pid?: number;
  /** A local server's data directory. */
  dataDir?: string;
  /** The probe's reading; it fails after `timeoutMs` (10 s by default: two full GCs of a large heap take longer). */
  probe?(timeoutMs?: number): Promise<ProbeReading>;
  /** SIGTERM, then SIGKILL after `graceMs` (10 s by default): a final snapshot of a large state takes longer. */
  stop(graceMs?: number): Promise<void>;
}

/** Settings for a server the bench starts. */
export interface LocalOptions {
  fsync?: 'always' | 'batch' | 'none';
  /** Extra `PARLEY_*` variables, e.g. heartbeat timings. */
  env?: Record<string, string>;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: string[];
  /** Start without `--expose-gc`: the probe then reads the loop delay without forcing two full GCs each time. */
  noGc?: boolean;
  /**
   * Fills the fresh data directory before the server starts (an organization built in this
   * process, say) and returns its owner's credentials, which the server then does not print.
   */
  prepare?: (dataDir: string) => Promise<{ email: string; apiKey: string }>;
  /** Leave the data directory after `stop()` (it is still removed when the bench exits): to start again on it. */
  keepDataDir?: boolean;
}

/** The repository root: the nearest folder above this file with a package.json (works from bench/ and dist/bench/). */
export const REPO_ROOT = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();
/** The bench measures the server, not its rate limiter: every request must be served. */
const UNLIMITED = { PARLEY_RATE_LIMIT: '0', PARLEY_RATE_LIMIT_ANONYMOUS: '0' };
const SERVING = /is serving the chat API on http:\/\/[^:]+:(\d+)\//;
const SERVING_BOARD = /is serving the message board on http:\/\/[^:]+:(\d+)/;
const STARTUP_MS = 30000;

/** The heap limit a bench server runs under unless its node flags name one (Node 20's own default, about). */
const BENCH_HEAP_MIB = 4096;

/**
 * The server's node flags with its heap limit, and that limit: the one the flags name,
 * else BENCH_HEAP_MIB added. `--memory-limit-mib` is set to the same, so the server
 * serves in the process the bench started (no relaunch under another heap limit), whose
 * pid the CPU and memory readings follow.
 */
function serverHeap(nodeArgs: string[]): { args: string[]; mib: number } {
  for (let i = 0; i < nodeArgs.length; i++) {
    const m = /^--max[-_]old[-_]space[-_]size(?:=(\d+))?$/.exec(nodeArgs[i]);
    if (m) return { args: nodeArgs, mib: Number(m[1] ?? nodeArgs[i + 1]) };
  }
  return { args: [...nodeArgs, `--max-old-space-size=${BENCH_HEAP_MIB}`], mib: BENCH_HEAP_MIB };
}

/**
 * Spawns `node dist/src/main.js` on `dataDir` as the bench runs its servers: loopback,
 * free ports, no rate limits, the bench probe preloaded, the heap limit of `serverHeap`.
 */
export function spawnParley(dataDir: string, opts: LocalOptions = {}): ChildProcess {
  const heap = serverHeap(opts.nodeArgs ?? []);
  return spawnTracked(process.execPath, [...(opts.noGc ? [] : ['--expose-gc']), ...heap.args, '--import', './dist/bench/probe.js', 'dist/src/main.js'], {
    role: 'server',
    cwd: REPO_ROOT,
    env: { ...process.env, ...UNLIMITED, PARLEY_HOST: '127.0.0.1', PARLEY_PORT: '0', PARLEY_DATA_DIR: dataDir, PARLEY_BOARD_PORT: '0', PARLEY_FSYNC: opts.fsync ?? 'always', PARLEY_MEMORY_LIMIT_MIB: String(heap.mib), ...opts.env },
  });
}

/** Starts Parley as a child process on a free loopback port and logs in as its owner. */
export async function startParley(opts: LocalOptions = {}): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  removeOnExit(dataDir);
  const removeDataDir = (): void => {
    rmSync(dataDir, { recursive: true, force: true });
    forgetTempDir(dataDir);
  };
  const prepared = opts.prepare ? await opts.prepare(dataDir).catch((err: Error) => (removeDataDir(), Promise.reject(err))) : undefined;
  const child = spawnParley(dataDir, opts);
  const probes: Array<(r: ProbeReading) => void> = [];
  const tail: string[] = [];
  let port = 0;
  let boardPort = 0;
  let email = prepared?.email ?? '';
  let apiKey = prepared?.apiKey ?? '';
  let timer: NodeJS.Timeout | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (port && email && apiKey) resolve();
    };
    timer = setTimeout(() => reject(new Error(`Parley did not start within ${STARTUP_MS} ms:\n${tail.join('\n')}`)), STARTUP_MS);
    child.once('exit', (code) => reject(new Error(`Parley exited with ${code} during startup:\n${tail.join('\n')}`)));
    onLines(child.stdout, (line) => {
      const m = /^\s+(email|API key):\s+(\S+)/.exec(line);
      if (m && m[1] === 'email') email = m[2];
      if (m && m[1] === 'API key') apiKey = m[2];
      check();
    });
    onLines(child.stderr, (line) => {
      if (line.startsWith('parley-bench-probe ')) {
        probes.shift()?.(JSON.parse(line.slice('parley-bench-probe '.length)) as ProbeReading);
        return;
      }
      tail.push(line);
      if (tail.length > 40) tail.shift();
      const m = SERVING.exec(line);
      if (m) port = Number(m[1]);
      const b = SERVING_BOARD.exec(line);
      if (b) boardPort = Number(b[1]);
      check();
    });
  });
  try {
    await ready;
  } catch (err) {
    clearTimeout(timer);
    await stopChild(child, 2000);
    removeDataDir();
    throw err;
  }
  clearTimeout(timer);
  const endpoint: Endpoint = { host: '127.0.0.1', port, hostHeader: `127.0.0.1:${port}` };
  const owner = await whoAmI(endpoint, email, apiKey);
  return {
    endpoint,
    owner,
    board: boardPort ? { host: '127.0.0.1', port: boardPort, hostHeader: `127.0.0.1:${boardPort}` } : undefined,
    pid: child.pid,
    dataDir,
    probe: (timeoutMs?: number) => probeOnce(child, probes, timeoutMs),
    async stop(graceMs?: number) {
      const code = await stopChild(child, graceMs);
      if (!opts.keepDataDir) removeDataDir();
      if (code !== 0 && code !== null) throw new Error(`Parley exited with ${code} on SIGTERM:\n${tail.join('\n')}`);
    },
  };
}

/** Asks the bench probe in `child` for a reading (SIGUSR2); the stderr reader answers `probes` in order. */
export function probeOnce(child: ChildProcess, probes: Array<(r: ProbeReading) => void>, timeoutMs = 10000): Promise<ProbeReading> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the bench probe in the server did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
    probes.push((r) => {
      clearTimeout(timer);
      resolve(r);
    });
    child.kill('SIGUSR2');
  });
}

/** An existing deployment; the bench only uses its API. */
export async function remoteTarget(url: string, email: string, apiKey: string): Promise<Target> {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new Error(`--target must be an http:// URL (the bench client does not speak TLS): ${url}`);
  const endpoint: Endpoint = { host: u.hostname, port: Number(u.port || 80), hostHeader: u.host };
  const owner = await whoAmI(endpoint, email, apiKey);
  return { endpoint, owner, stop: async () => undefined };
}

async function whoAmI(endpoint: Endpoint, email: string, apiKey: string): Promise<Credentials> {
  const conn = await Connection.open(endpoint);
  try {
    const me = await call(conn, { user_id: 0, email, api_key: apiKey }, 'GET', '/api/v1/users/me');
    return { user_id: me.user_id as number, email, api_key: apiKey };
  } finally {
    conn.close();
  }
}
