/**
 * Helpers for the tests of the operator guide (docs/operator-guide.md): the CLI and the guide's backup
 * script run as child processes (so that writers in the test process keep going
 * meanwhile), server processes, and API calls.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkedFetch, processApi as api, startServerProcess, type ServerProcess } from './server_process.js';
import { built } from './built.js';
import { root } from './paths.js';

export { api };

export { root };
const GUIDE = join(root, 'docs', 'operator-guide.md');
/** How the tests run `npx parley`: the same CLI, built. */
const PARLEY = `${process.execPath} ${built('src/cli.ts')}`;

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking this process's event loop (writers keep going meanwhile). */
export function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120000);
    child.on('error', reject);
    // 'close', not 'exit': 'exit' can come before the last of stdout has been read.
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** `npx parley ARGS`. */
export function parley(args: string[]): Promise<Run> {
  return run(process.execPath, [built('src/cli.ts'), ...args]);
}

/** The guide's fenced block between `<!-- begin NAME` and `<!-- end NAME -->`. */
export function guideBlock(name: string): string {
  const text = readFileSync(GUIDE, 'utf8');
  const m = new RegExp(`<!-- begin ${name.replace('.', '\\.')}[^\\n]*-->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\n<!-- end ${name.replace('.', '\\.')} -->`).exec(text);
  if (!m) throw new Error(`no block ${name} in ${GUIDE}`);
  return m[1];
}

/** Runs the guide's backup script: `backup.sh DATA_DIR BACKUP_DIR`. */
export function backup(data: string, to: string): Promise<Run> {
  return run('bash', ['-c', guideBlock('backup.sh'), 'backup.sh', data, to], { PARLEY });
}

export async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A server process on `dir`, and the owner's credentials (printed at the first start, or given). */
export async function serve(dir: string, env: Record<string, string> = {}, auth?: string): Promise<{ server: ServerProcess; auth: string }> {
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', ...env });
  if (auth) return { server, auth };
  await waitFor(() => /API key:\s+\S+/.test(server.stdout()), 10000, 'the owner API key');
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  return { server, auth: 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64') };
}

export async function stop(server: ServerProcess): Promise<number | null> {
  server.child.kill('SIGTERM');
  return (await server.exited).code;
}

/** Channel messages sent in a loop by `n` concurrent writers until `stop()`; what was acknowledged. */
export function writers(base: string, auth: string, n: number, tag: string) {
  const acked = new Map<number, string>();
  const attempted = new Set<string>();
  let stopped = false;
  let counter = 0;
  const loops = Array.from({ length: n }, async (_, w) => {
    while (!stopped) {
      const content = `${tag} writer ${w} n ${counter++}`;
      attempted.add(content);
      const res = await api(base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: `w${w}`, content });
      if (res.status === 200) acked.set(res.json.id, content);
    }
  });
  return {
    acked,
    attempted,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** Every message of the channel general, oldest first: id to content. */
export async function history(base: string, auth: string): Promise<Map<number, string>> {
  const res = await api(base, auth, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: '0', num_after: '5000', narrow: JSON.stringify([{ operator: 'channel', operand: 'general' }]), apply_markdown: 'false' });
  if (res.status !== 200) throw new Error(JSON.stringify(res.json));
  return new Map(res.json.messages.map((m: any) => [m.id, m.content]));
}

export async function upload(base: string, auth: string, name: string, content: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([content], { type: 'text/plain' }), name);
  const res = await checkedFetch(`${base}/api/v1/user_uploads`, { method: 'POST', headers: { authorization: auth }, body: form });
  const json: any = await res.json();
  if (res.status !== 200) throw new Error(JSON.stringify(json));
  return json.url;
}

export async function download(base: string, auth: string, url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${base}${url}`, { headers: { authorization: auth } });
  return { status: res.status, body: await res.text() };
}

export function snapshotName(out: string): string {
  return /snap-\d{16}\.psnap/.exec(out)![0];
}

/** Sends `n` messages one after the other; their ids and contents. */
export async function send(base: string, auth: string, n: number, tag: string): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (let i = 0; i < n; i++) {
    const content = `${tag} ${i}`;
    const res = await api(base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: tag, content });
    if (res.status !== 200) throw new Error(JSON.stringify(res.json));
    out.set(res.json.id, content);
  }
  return out;
}

/** How many of `expected` are in `got` with the same content. */
export function present(got: Map<number, string>, expected: Map<number, string>): number {
  let n = 0;
  for (const [id, content] of expected) if (got.get(id) === content) n++;
  return n;
}

/** The format version in a snapshot's header, read as the guide reads it: `od -An -tu4 -j8 -N4 FILE`. */
export async function formatOf(path: string): Promise<number> {
  const r = await run('od', ['-An', '-tu4', '-j8', '-N4', path]);
  return Number(r.stdout.trim());
}

