/**
 * The operator control channel: a Unix socket in the data directory through which CLI
 * commands reach the running server that owns that directory. One JSON request per
 * line, one JSON reply per line. Only local users with access to the data directory
 * can connect.
 */
import { existsSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '../actors/core/logger.js';
import { lockHolder } from './store.js';

/** A control request: a command name and its arguments. */
export interface ControlRequest {
  command: string;
  args?: Record<string, unknown>;
}

/** Handles one command; the value is returned to the CLI as `result`. */
export type ControlHandler = (args: Record<string, unknown>) => Promise<unknown> | unknown;

export function controlSocketPath(dataDir: string): string {
  return join(dataDir, 'control.sock');
}

/** Serves control commands on the data directory's socket until closed. */
export function startControl(dataDir: string, handlers: Record<string, ControlHandler>, log: Logger): Promise<Server> {
  const path = controlSocketPath(dataDir);
  // A socket file left by a process that died is stale: the caller holds the data directory lock.
  if (existsSync(path)) rmSync(path);
  const server = createServer((socket) => {
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      if (buffer.length > 1 << 20) {
        socket.destroy();
        return;
      }
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        void answer(line).then((reply) => socket.write(JSON.stringify(reply) + '\n'));
      }
    });
  });
  const answer = async (line: string): Promise<{ ok: boolean; result?: unknown; error?: string }> => {
    let request: ControlRequest;
    try {
      request = JSON.parse(line) as ControlRequest;
    } catch {
      return { ok: false, error: 'request is not JSON' };
    }
    const handler = typeof request?.command === 'string' ? handlers[request.command] : undefined;
    if (!handler) return { ok: false, error: `unknown command '${String(request?.command)}'` };
    try {
      return { ok: true, result: await handler(request.args ?? {}) };
    } catch (err) {
      log.warn({ event: 'control.command_failed', command: request.command, error: (err as Error).message }, `control: ${request.command} failed: ${(err as Error).message}`);
      return { ok: false, error: (err as Error).message };
    }
  };
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/**
 * Runs a command on the live server that holds `dataDir` and prints its result (with the
 * server's pid) as one JSON line. Returns false, having done nothing, when no server
 * holds the directory, so the caller can work offline instead.
 */
export async function printFromServer(dataDir: string, request: ControlRequest): Promise<boolean> {
  const pid = lockHolder(dataDir);
  if (pid === undefined) return false;
  const result = (await callControl(dataDir, request)) as Record<string, unknown>;
  console.log(JSON.stringify({ ...result, server_pid: pid }));
  return true;
}

/** Sends one command to the server owning `dataDir`; rejects with its error. */
export function callControl(dataDir: string, request: ControlRequest, timeoutMs = 10 * 60 * 1000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(controlSocketPath(dataDir));
    let buffer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not answer '${request.command}' within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(JSON.stringify(request) + '\n'));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      socket.end();
      try {
        const reply = JSON.parse(buffer.slice(0, nl)) as { ok: boolean; result?: unknown; error?: string };
        if (reply.ok) resolve(reply.result);
        else reject(new Error(reply.error ?? 'the server refused the command'));
      } catch {
        reject(new Error('the server sent an unreadable reply'));
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot reach the server's control socket: ${err.message}`));
    });
  });
}
