/**
 * Where the board is served. Both the board and the chat API define
 * `POST /api/v1/messages`, so they never share a base URL:
 * - the board has its own listener (`--board-port`, 9992 by default), which answers
 *   only board routes;
 * - optionally, on the main port, a request whose Host is `--board-host` goes to the
 *   board and to nothing else; every other Host goes to the chat API only.
 * The choice is made once per request, from its Host, before anything is parsed.
 */
import type { Config } from '../config.js';
import { listen, type Handler, type ListenOptions, type Listener } from '../http/uws.js';
import type { IncomingRequest, OutgoingResponse } from '../http/types.js';
import type { BoardApp } from './app.js';
import type { BoardSettings } from '../http/route.js';

/** The board's settings, from the configuration. */
export function boardSettings(config: Config): BoardSettings {
  return { nonceTtlSecs: config.boardNonceTtlSecs, publishLimit: config.boardRateLimit, messageLimit: config.boardMessageRateLimit };
}

/**
 * Whether a Host header names the board. Case-insensitive, and a fully qualified name
 * (one trailing dot) is the same name, as for organizations (`src/http/host.ts`); the
 * port is compared only when the configured name has one. An empty configured name
 * matches nothing.
 */
export function isBoardHost(host: string | undefined, boardHost: string): boolean {
  if (boardHost === '' || host === undefined) return false;
  const want = withoutTrailingDot(boardHost.trim().toLowerCase());
  let got = withoutTrailingDot(host.trim().toLowerCase());
  if (!/:\d+$/.test(want)) got = got.replace(/:\d+$/, '');
  return got === want;
}

/** A host name (with or without a port) without the one trailing dot of its fully qualified form. */
function withoutTrailingDot(host: string): string {
  return host.replace(/\.(?=(:\d+)?$)/, '');
}

/** The main port's options and handler: the board for its Host name, the chat API otherwise. */
export function mainPort(
  config: Config, board: BoardApp,
  chat: { handler: Handler; tooLarge: () => OutgoingResponse; bodyLimit?: (req: IncomingRequest) => number; streamsBody?: (req: IncomingRequest) => boolean },
): { options: ListenOptions; handler: Handler } {
  const forBoard = (req: IncomingRequest): boolean => isBoardHost(req.headers.host, config.boardHost);
  return {
    options: {
      host: config.host,
      port: config.port,
      maxBodyBytes: config.maxBodyBytes,
      maxBodyBytesFor: (req) => (forBoard(req) ? board.bodyLimit(req) : chat.bodyLimit?.(req) ?? config.maxBodyBytes),
      streamBody: (req) => !forBoard(req) && chat.streamsBody?.(req) === true,
      tooLarge: (req) => (forBoard(req) ? board.refuseBody(req) : chat.tooLarge()),
    },
    handler: (req, abort) => (forBoard(req) ? board.handle(req, abort) : chat.handler(req, abort)),
  };
}

/** Starts the board's own listener, which serves nothing but the board (through `wrap`, the server's lifecycle gate). */
export function listenBoard(config: Config, board: BoardApp, wrap: (handler: Handler) => Handler = (h) => h): Promise<Listener> {
  return listen(
    {
      host: config.host,
      port: config.boardPort,
      // The largest route ceiling; each request is held to its own route's by maxBodyBytesFor.
      maxBodyBytes: Math.max(0, ...board.routes.map((r) => r.body?.maxBytes ?? 0)),
      maxBodyBytesFor: (req) => board.bodyLimit(req),
      tooLarge: (req) => board.refuseBody(req),
    },
    wrap((req, abort) => board.handle(req, abort)),
  );
}
