/**
 * ceiling: how many realistic messages a server holds under a memory limit before it
 * refuses writes, for the operator guide's Sizing section (docs/operator-guide.md). It starts a real server
 * (`dist/src/main.js`, as `npm start` does) with `--memory-limit-mib`, a fresh data
 * directory and no rate limit, and sends realistic channel messages (`realistic.ts`: 40
 * to 80 words, some Markdown, links and code blocks; seeded) 64 at a time until the
 * first 503, then reads what an operator sees: the log event, the metrics, `/readyz`,
 * a read and the server's RSS. Then it keeps sending for `--hold-seconds` more, as
 * clients that retry would, and checks that the process is alive and still refusing.
 * With `--restart-limits A,B,...` it then stops the server (SIGTERM: a final snapshot)
 * and starts it again on the same data under each limit in turn, until one starts:
 * what a restart of a full server needs. Bounded in messages and time; 127.0.0.1 only.
 *
 *   npm run build && node dist/bench/ceiling.js [--limit-mib 256] [--max-messages 2000000] [--max-seconds 1200] [--hold-seconds 30] [--restart-limits 320,384,448]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { apiRequest, type Credentials } from './api.js';
import { closePool, openPool, type Connection } from './client.js';
import { realisticMessage } from './realistic.js';
import { seededRandom } from './stats.js';

const { values } = parseArgs({ options: { 'limit-mib': { type: 'string', default: '256' }, 'max-messages': { type: 'string', default: '2000000' }, 'max-seconds': { type: 'string', default: '1200' }, 'hold-seconds': { type: 'string', default: '30' }, 'restart-limits': { type: 'string', default: '' }, seed: { type: 'string', default: '1' } } });
const limitMib = Number(values['limit-mib']);
const maxMessages = Number(values['max-messages']);
const maxSeconds = Number(values['max-seconds']);
const holdSeconds = Number(values['hold-seconds']);
const restartLimits = values['restart-limits'] ? values['restart-limits'].split(',').map(Number) : [];
const CONCURRENCY = 64;
const TOPICS = 50;
const MiB = 2 ** 20;

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'parley-ceiling-'));
const server = spawn(process.execPath, [join(root, 'dist/src/main.js'), '--host', '127.0.0.1', '--port', '0', '--data-dir', dir, '--fsync', 'none', '--rate-limit', '0', '--memory-limit-mib', String(limitMib)], { stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
let err = '';
server.stdout.on('data', (d) => (out += d));
server.stderr.on('data', (d) => (err += d));

async function until<T>(read: () => T | undefined, what: string, ms = 60000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = read();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`no ${what} in ${ms} ms:\n${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

try {
  const port = Number(await until(() => /serving the chat API on http:\/\/[\d.]+:(\d+)/.exec(err)?.[1], 'server'));
  const apiKey = await until(() => /API key:\s+(\S+)/.exec(out)?.[1], 'owner credentials');
  const owner: Credentials = { email: 'owner@localhost', api_key: apiKey } as Credentials;
  const base = `http://127.0.0.1:${port}`;
  const metric = async (name: string): Promise<number> => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await (await fetch(`${base}/metrics`)).text())![1]);
  const rssMib = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${readFileSync(join(dir, 'parley.pid'), 'utf8').trim()}/status`, 'utf8'))![1]) / 1024;
  const baseline = { usedMib: (await metric('parley_memory_used_bytes')) / MiB, rssMib: rssMib() };

  const conns: Connection[] = await openPool({ host: '127.0.0.1', port, hostHeader: `127.0.0.1:${port}` }, CONCURRENCY);
  const random = seededRandom(Number(values.seed));
  let sent = 0;
  let bytes = 0;
  let refusal: { status: number; body: string } | undefined;
  const started = Date.now();
  let lastReport = started;
  const worker = async (conn: Connection): Promise<void> => {
    while (!refusal && sent < maxMessages && Date.now() - started < maxSeconds * 1000) {
      const content = realisticMessage(random);
      const res = await conn.send(apiRequest(conn, owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: `topic ${Math.floor(random() * TOPICS)}`, content }));
      if (res.status === 200) {
        sent++;
        bytes += Buffer.byteLength(content);
      } else refusal ??= { status: res.status, body: res.body };
      if (Date.now() - lastReport > 10000) {
        lastReport = Date.now();
        console.error(`${Math.round((lastReport - started) / 1000)} s: ${sent} messages, heap ${((await metric('parley_memory_used_bytes')) / MiB).toFixed(0)} MiB`);
      }
    }
  };
  await Promise.all(conns.map(worker));
  const seconds = (Date.now() - started) / 1000;
  closePool(conns);
  const atPressure = { usedMib: (await metric('parley_memory_used_bytes')) / MiB, rssMib: rssMib() };
  const ready = await (await fetch(`${base}/readyz`)).text();
  const read = await fetch(`${base}/api/v1/messages?anchor=newest&num_before=100&num_after=0`, { headers: { authorization: `Basic ${Buffer.from(`${owner.email}:${apiKey}`).toString('base64')}` } });
  // Clients retrying their sends: the process must refuse them, not die.
  const hold = { accepted: 0, refused: 0, failed: 0 };
  const holdConns = await openPool({ host: '127.0.0.1', port, hostHeader: `127.0.0.1:${port}` }, CONCURRENCY);
  const holdEnd = Date.now() + holdSeconds * 1000;
  await Promise.all(
    holdConns.map(async (conn) => {
      while (Date.now() < holdEnd) {
        const res = await conn.send(apiRequest(conn, owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'hold', content: realisticMessage(random) }));
        if (res.status === 200) hold.accepted++;
        else if (res.status === 503) hold.refused++;
        else hold.failed++;
      }
    }),
  );
  closePool(holdConns);
  const alive = server.exitCode === null && (await fetch(`${base}/healthz`)).status === 200;
  const perMessageKib = ((atPressure.usedMib - baseline.usedMib) * 1024) / sent;
  const rows: Array<[string, string]> = [
    ['limit (--memory-limit-mib)', `${limitMib} MiB`],
    ['messages accepted before the first 503', `${sent} (${seconds.toFixed(0)} s, ${(sent / seconds).toFixed(0)}/s)`],
    ['messages per GiB of limit', `${Math.round((sent * 1024) / limitMib)}`],
    ['mean content size', `${(bytes / Math.max(sent, 1)).toFixed(0)} bytes`],
    ['heap (old generation) empty / at the refusal', `${baseline.usedMib.toFixed(1)} / ${atPressure.usedMib.toFixed(1)} MiB`],
    ['heap per message', `${perMessageKib.toFixed(2)} KiB`],
    ['RSS empty / at the refusal', `${baseline.rssMib.toFixed(0)} / ${atPressure.rssMib.toFixed(0)} MiB`],
    ['the refusal', refusal ? `${refusal.status} ${refusal.body}` : 'none (bound reached)'],
    ['/readyz', ready],
    ['a read (100 messages)', String(read.status)],
    ['parley_memory_pressure / parley_memory_refused_total', `${await metric('parley_memory_pressure')} / ${await metric('parley_memory_refused_total')}`],
    [`${holdSeconds} s more of sends at ${CONCURRENCY} at a time`, `${hold.refused} refused, ${hold.accepted} accepted, ${hold.failed} other; process alive: ${alive}, heap ${((await metric('parley_memory_used_bytes')) / MiB).toFixed(1)} MiB, RSS ${rssMib().toFixed(0)} MiB`],
    ['log', /"event":"memory\.pressure_started"[^\n]*"msg":"([^"]*)"/.exec(err)?.[1] ?? 'no memory.pressure_started'],
  ];
  if (restartLimits.length > 0) {
    const stopped = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    await stopped;
    for (const limit of restartLimits) {
      const again = spawn(process.execPath, [join(root, 'dist/src/main.js'), '--host', '127.0.0.1', '--port', '0', '--board-port', '0', '--data-dir', dir, '--fsync', 'none', '--memory-limit-mib', String(limit)], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      again.stderr.on('data', (d) => (log += d));
      let exitCode: number | string | undefined;
      const exit = new Promise<void>((resolve) => again.on('exit', (code, signal) => resolve(void (exitCode = code ?? signal ?? 'unknown'))));
      const began = Date.now();
      const failed = (): string | undefined => (exitCode === undefined ? undefined : `failed (exit ${exitCode}${/heap out of memory/.test(log) ? ', out of heap' : ''})`);
      const outcome = await until(() => failed() ?? /serving the chat API on http:\/\/[\d.]+:(\d+)/.exec(log)?.[1], 'restart', 600000);
      if (outcome.startsWith('failed')) {
        rows.push([`restart under ${limit} MiB`, outcome]);
        continue;
      }
      const used = Number(/^parley_memory_used_bytes (\S+)$/m.exec(await (await fetch(`http://127.0.0.1:${outcome}/metrics`)).text())![1]) / MiB;
      rows.push([`restart under ${limit} MiB`, `started in ${((Date.now() - began) / 1000).toFixed(0)} s; heap ${used.toFixed(0)} MiB`]);
      again.kill('SIGTERM');
      await exit;
      break;
    }
  }
  console.log(`| ceiling, seed ${values.seed} | |\n|---|---|\n${rows.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, '\\|')} |`).join('\n')}`);
} finally {
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
