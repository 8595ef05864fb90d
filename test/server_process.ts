/**
 * Spawns the real server as a child process on a free port, for tests that kill it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { built, root } from './built.js';
import { checkProcessLog } from './log_guard.js';
import { checkResponse } from './zulip_responses.js';

/** The heap a test server runs under, given from the start so that it need not start Node again (src/memory/relaunch.ts). */
const TEST_MEMORY_LIMIT_MIB = '1024';

export interface ServerProcess {
  /** The process the test started: signal it to stop the server. */
  child: ChildProcess;
  /**
   * The pid of the process that serves (and holds the data directory): the child's own,
   * or that of the Node it started again under the memory limit (src/memory/relaunch.ts).
   */
  pid: number;
  base: string;
  stderr: () => string;
  stdout: () => string;
  /** Resolves with the exit code or signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** What a start waits for on stderr: the chat API served (the default), or the listeners up, before recovery. */
export const SERVING = /serving the chat API on (http:\/\/[\d.]+:\d+)/;
export const LISTENING = /listening on (http:\/\/[\d.]+:\d+)/;

/**
 * Starts the built `src/main.ts` with the given environment (and Node arguments); resolves
 * once stderr shows `until` (its group 1 is the base URL). Unless the test sets
 * `PARLEY_MEMORY_LIMIT_MIB`, the server runs under 1 GiB, with Node's heap limit set to
 * match, so that no test pays for the relaunch.
 */
export function startServerProcess(env: Record<string, string>, timeoutMs = 30000, until = SERVING, nodeArgs: string[] = []): Promise<ServerProcess> {
  const ownLimit = env.PARLEY_MEMORY_LIMIT_MIB === undefined && !nodeArgs.some((a) => a.includes('old-space-size'));
  const limitArgs = ownLimit ? [`--max-old-space-size=${TEST_MEMORY_LIMIT_MIB}`] : [];
  const child = spawn(process.execPath, [...limitArgs, ...nodeArgs, built('src/main.ts')], {
    cwd: root,
    env: { ...process.env, PARLEY_HOST: '127.0.0.1', PARLEY_PORT: '0', ...(ownLimit ? { PARLEY_MEMORY_LIMIT_MIB: TEST_MEMORY_LIMIT_MIB } : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  // 'close', not 'exit': a test reads the output once the process is gone, and 'exit' can come before the last of it.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  // Its log must hold none of the credentials it printed, nor any a test noted (log_guard.ts).
  child.on('close', () => checkProcessLog(out, err));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${err}`));
    }, timeoutMs);
    child.stderr!.on('data', (d) => {
      err += d;
      const m = until.exec(err);
      if (m) {
        clearTimeout(timer);
        // Every log line names its process: the one that logged this serves.
        const line = err.slice(err.lastIndexOf('\n', m.index) + 1, m.index);
        const pid = Number(/"pid":(\d+)/.exec(line)?.[1] ?? child.pid);
        resolve({ child, pid, base: m[1], stderr: () => err, stdout: () => out, exited });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${err}`));
    });
  });
}

/**
 * `fetch` of a chat API URL of a server process, its answer checked against Zulip's
 * description as every API call of the tests is (zulip_responses.ts): for tests that need
 * the raw response (headers, a parked poll, a multipart body). The body is read here and
 * handed back in a new Response.
 */
export async function checkedFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  checkResponse(init.method ?? 'GET', new URL(url).pathname, { status: res.status, json });
  return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/** One form-encoded API call to a server process, answered as status and parsed JSON (10 s at most). */
export async function processApi(base: string, auth: string, method: string, path: string, params: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const body = new URLSearchParams(params).toString();
  const url = method === 'GET' ? `${base}${path}?${body}` : `${base}${path}`;
  const res = await fetch(url, {
    method,
    headers: { authorization: auth, ...(method === 'GET' ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    body: method === 'GET' ? undefined : body,
    signal: AbortSignal.timeout(10000),
  });
  const answer = { status: res.status, json: await res.json() };
  checkResponse(method, path, answer);
  return answer;
}

/**
 * Resolves once the server's `GET /metrics` shows `n` parked polls: a test that acts on
 * a parked poll waits for it rather than for a fixed time, which a loaded machine overruns.
 */
export async function parkedPolls(base: string, n = 1, timeoutMs = 15000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(timeoutMs) })).text();
    const m = /^parley_parked_polls (\d+)/m.exec(text);
    if (m && Number(m[1]) >= n) return;
    if (Date.now() > end) throw new Error(`${n} parked polls not reached in ${timeoutMs} ms (metrics: ${m?.[1] ?? 'none'})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
