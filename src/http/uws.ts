/**
 * The only module that touches uWebSockets.js. It follows uWS discipline in one place:
 * - copy everything needed out of `HttpRequest` synchronously (it dies after the handler);
 * - register `onAborted` before anything asynchronous;
 * - copy each `onData` chunk (uWS reuses its memory);
 * - refuse a body over the ceiling with 413 before buffering it;
 * - write every response inside one `cork`.
 */
import uWS from 'uWebSockets.js';
import { Abortable, STATUS_TEXT, type Exchange, type IncomingRequest, type OutgoingResponse } from './types.js';

/**
 * Anything that answers requests: the chat API, the board. A null result means the
 * handler answers later through `exchange.respond`.
 */
export type Handler = (req: IncomingRequest, exchange: Exchange) => OutgoingResponse | Promise<OutgoingResponse> | null;

export interface ListenOptions {
  host: string;
  port: number;
  /** Largest request body accepted; larger ones get 413. */
  maxBodyBytes: number;
  /**
   * A per-request ceiling, decided from the request line and headers (the body is
   * still empty) before any body byte is read; `maxBodyBytes` when absent.
   */
  maxBodyBytesFor?: (req: IncomingRequest) => number;
  /** Answer to a body over the ceiling (a 413 in the API's own error shape). */
  tooLarge: (req: IncomingRequest) => OutgoingResponse;
}

/** A listening server. */
export interface Listener {
  port: number;
  /** Stops accepting connections; open ones finish on their own. */
  close(): void;
}

const decoder = new TextDecoder();

/** Status lines, built once: a fan-out writes thousands of them in one pass. */
const STATUS_LINES = new Map(Object.entries(STATUS_TEXT).map(([code, text]) => [Number(code), `${code} ${text}`]));

function statusLine(status: number): string {
  return STATUS_LINES.get(status) ?? `${status} Unknown`;
}

/** Writes a response in one corked batch, unless the client has gone or it was answered already. */
function write(res: uWS.HttpResponse, abort: Abortable, out: OutgoingResponse, close = false): void {
  if (abort.aborted || abort.answered) return;
  abort.answered = true;
  res.cork(() => {
    res.writeStatus(statusLine(out.status));
    const headers = out.headers;
    for (let i = 0; i < headers.length; i++) res.writeHeader(headers[i][0], headers[i][1]);
    if (close) res.end(out.body, true);
    else res.end(out.body);
  });
}

function reply(res: uWS.HttpResponse, abort: Abortable, result: OutgoingResponse | Promise<OutgoingResponse> | null): void {
  if (result === null) return;
  if (result instanceof Promise) {
    result.then(
      (out) => write(res, abort, out),
      () => write(res, abort, { status: 500, headers: [['Content-Type', 'application/json']], body: '{"result":"error","msg":"Internal server error","code":"INTERNAL_SERVER_ERROR"}' }),
    );
  } else write(res, abort, result);
}

/**
 * A request copied out of uWS. Its peer address is read from the socket only when
 * asked for (a rate limiter keyed by address): reading it allocates an ArrayBuffer per
 * request, which cost about a tenth of `GET /events` throughput in Parley's heap.
 * Handlers read it synchronously, while the exchange is open; once it is closed the
 * socket is gone and the address reads as ''.
 */
class UwsRequest implements IncomingRequest {
  body: Buffer = EMPTY;
  private address: string | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Record<string, string>,
    private readonly res: uWS.HttpResponse,
    private readonly abort: Abortable,
  ) {}

  get remoteAddress(): string {
    if (this.address === undefined) this.address = this.abort.aborted || this.abort.answered ? '' : decoder.decode(this.res.getRemoteAddressAsText());
    return this.address;
  }
}

/**
 * Hooks a response's abort and answer to its `Abortable`. The closures are made here,
 * not in the request callback, so that a parked long-poll keeps only the response and
 * its abort state alive, not the request with its headers: thousands of parked polls
 * are young objects that every scavenge during a fan-out would otherwise copy.
 */
function watch(res: uWS.HttpResponse, abort: Abortable): void {
  res.onAborted(() => abort.abort());
  abort.responder = (out) => write(res, abort, out);
}

/** Reads the body chunk by chunk (each copied: uWS reuses its memory), then handles the request. */
function readBody(res: uWS.HttpResponse, abort: Abortable, request: UwsRequest, maxBody: number, tooLarge: (req: IncomingRequest) => OutgoingResponse, handler: Handler): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (abort.aborted) return;
    size += chunk.byteLength;
    if (size > maxBody) {
      write(res, abort, tooLarge(request), true);
      return;
    }
    // A small copy comes from Node's buffer pool, where chunk.slice(0) would allocate an ArrayBuffer per request.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast) return;
    request.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    reply(res, abort, handler(request, abort));
  });
}

/** Starts an HTTP listener that hands every request to `handler`. */
export function listen(opts: ListenOptions, handler: Handler): Promise<Listener> {
  const app = uWS.App();
  app.any('/*', (res, req) => {
    const abort = new Abortable();
    watch(res, abort);
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const request = new UwsRequest(method, req.getUrl(), req.getQuery() ?? '', headers, res, abort);
    const declared = headers['content-length'];
    const hasBody = (declared !== undefined && declared !== '0') || headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      reply(res, abort, handler(request, abort));
      return;
    }
    const maxBody = opts.maxBodyBytesFor?.(request) ?? opts.maxBodyBytes;
    if (declared !== undefined && Number(declared) > maxBody) {
      write(res, abort, opts.tooLarge(request), true);
      return;
    }
    readBody(res, abort, request, maxBody, opts.tooLarge, handler);
  });
  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${opts.host}:${opts.port}`));
        return;
      }
      resolve({ port: uWS.us_socket_local_port(socket), close: () => uWS.us_listen_socket_close(socket) });
    });
  });
}

const EMPTY = Buffer.alloc(0);
