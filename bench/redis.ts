/**
 * The durable-write baseline: Redis `SET` under `appendonly yes, appendfsync always`,
 * when redis-server is installed (the bench never installs it). It runs on a loopback
 * port with a temporary directory, driven by a minimal RESP client below, closed-loop
 * like the Parley senders.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forgetTempDir, onLines, removeOnExit, spawnTracked, stopChild } from './children.js';
import type { LoadResult } from './load.js';
import { which } from './proc.js';
import { CpuMeter, nowMs, sleep, summarize, Timeline } from './stats.js';

/** A running redis-server. */
export interface Redis {
  port: number;
  stop(): Promise<void>;
}

/** Asks the kernel for a free loopback port. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Starts redis-server with every write fsynced, or returns null if it is not installed. */
export async function startRedis(): Promise<Redis | null> {
  const binary = which('redis-server');
  if (!binary) return null;
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-redis-'));
  removeOnExit(dir);
  const port = await freePort();
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--daemonize', 'no'];
  const child = spawnTracked(binary, args, { role: 'server' });
  const output: string[] = [];
  onLines(child.stdout, (l) => output.push(l));
  onLines(child.stderr, (l) => output.push(l));
  const stop = async (): Promise<void> => {
    await stopChild(child, 5000);
    rmSync(dir, { recursive: true, force: true });
    forgetTempDir(dir);
  };
  for (let i = 0; i < 100; i++) {
    try {
      const c = await RespConnection.open(port);
      c.close();
      return { port, stop };
    } catch {
      if (child.exitCode !== null) break;
      await sleep(100);
    }
  }
  await stop();
  throw new Error(`redis-server did not start:\n${output.slice(-20).join('\n')}`);
}

/** One RESP connection, one command in flight; replies must be simple strings or errors. */
class RespConnection {
  private buf = '';
  private waiting: ((line: string) => void) | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buf += chunk;
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return;
      const line = this.buf.slice(0, eol);
      this.buf = this.buf.slice(eol + 2);
      const w = this.waiting;
      this.waiting = null;
      w?.(line);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const w = this.waiting;
      this.waiting = null;
      w?.('-ERR connection closed');
    });
  }

  static open(port: number): Promise<RespConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, noDelay: true });
      socket.once('connect', () => resolve(new RespConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Sends one command and resolves with its one-line reply. */
  command(parts: string[]): Promise<string> {
    let out = `*${parts.length}\r\n`;
    for (const p of parts) out += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(out);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

/** `clients` connections doing SET in a closed loop for `durationMs`. */
export async function redisSetLoad(port: number, clients: number, durationMs: number, value: string): Promise<LoadResult> {
  const conns = await Promise.all(Array.from({ length: clients }, () => RespConnection.open(port)));
  const latencies: number[] = [];
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  const cpu = new CpuMeter();
  const start = nowMs();
  const end = start + durationMs;
  const timeline = new Timeline(start);
  try {
    await Promise.all(
      conns.map(async (c, i) => {
        for (let k = 0; nowMs() < end && k < 10_000_000; k++) {
          const sentAt = nowMs();
          const reply = await c.command(['SET', `bench:${i}:${k}`, value]);
          const doneAt = nowMs();
          latencies.push(doneAt - sentAt);
          timeline.count(doneAt);
          requests++;
          if (reply !== '+OK') {
            errors++;
            firstError ??= reply;
          }
        }
      }),
    );
  } finally {
    for (const c of conns) c.close();
  }
  const finished = nowMs();
  const seconds = (finished - start) / 1000;
  return { requests, errors, firstError, seconds, rps: (requests - errors) / seconds, latency: summarize(latencies), perSecond: timeline.rates(finished), clientCpu: cpu.read() };
}
