/**
 * The parent side of the raw uWS baselines: starts `baseline_server.ts` as a child
 * process and exposes its endpoint. The measurements themselves reuse the same client
 * code as the Parley measurements, so that a ratio compares servers, not clients.
 */
import { onLines, spawnTracked, stopChild } from './children.js';
import type { Connection, Endpoint } from './client.js';
import { REPO_ROOT } from './target.js';

/** A running baseline server. */
export interface Baseline {
  endpoint: Endpoint;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the raw uWS baseline server on a free loopback port. */
export async function startBaseline(): Promise<Baseline> {
  const child = spawnTracked(process.execPath, ['dist/bench/baseline_server.js'], { cwd: REPO_ROOT, role: 'server' });
  const errors: string[] = [];
  onLines(child.stderr, (line) => errors.push(line));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the uWS baseline did not start within 20 s')), 20000);
    child.once('exit', (code) => reject(new Error(`the uWS baseline exited with ${code}: ${errors.join('\n')}`)));
    onLines(child.stdout, (line) => {
      clearTimeout(timer);
      try {
        resolve((JSON.parse(line) as { port: number }).port);
      } catch {
        reject(new Error(`unexpected output from the uWS baseline: ${line}`));
      }
    });
  }).catch(async (err: Error) => {
    await stopChild(child, 1000);
    throw err;
  });
  return {
    endpoint: { host: '127.0.0.1', port, hostHeader: `127.0.0.1:${port}` },
    pid: child.pid!,
    stop: async () => {
      await stopChild(child);
    },
  };
}

/** How many long-polls the baseline holds. */
export async function baselineParked(conn: Connection): Promise<number> {
  const res = await conn.request('GET', '/parked');
  return Number(res.body);
}
