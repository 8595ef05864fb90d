/**
 * The only module that touches uWebSockets.js. It follows uWS discipline in one place:
 * - copy everything needed out of `HttpRequest` synchronously (it dies after the handler);
 * - register `onAborted` before anything asynchronous;
 * - copy each `onData` chunk (uWS reuses its memory);
 * - refuse a body over the ceiling with 413 before buffering it;
 * - write every response inside one `cork`.
 *
 * What reaches this module at all is decided by uWS's C++ parser (uWS v20.43, inside
 * uWebSockets.js 20.30), which closes the connection without an answer, before any
 * JavaScript runs, for: a method other than GET POST HEAD PUT DELETE CONNECT OPTIONS
 * TRACE PATCH (case-sensitive); a request line other than `METHOD /target HTTP/1.1`
 * (HTTP/1.0, HTTP/0.9, a NUL or control byte in the target, an absolute URL, garbage);
 * more than 48 header fields; a bad field name or value; no Host; both Content-Length
 * and Transfer-Encoding; and a request head that does not fit the first read (about
 * 128 KB on loopback) or, arriving in pieces, the 4 KB it buffers across reads. A head
 * it cannot parse and that stays under 4 KB is held, unanswered, until its 10-second
 * idle timeout closes the connection. A Content-Length that is not 1 to 9 digits
 * reaches the handler, but uWS then closes the connection before any answer is sent.
 * The limits below are Parley's own, answered as nginx would, closing the connection.
 */
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
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
  /**
   * Answer to a request refused before the handler (400, 414 or 431, see `HTTP_LIMITS`),
   * in the API's own error shape; plain text, as nginx answers, when absent. The request
   * is given (its body unread) so that a port serving two APIs can choose by Host.
   */
  refuse?: (status: RefusalStatus, message: string, req: IncomingRequest) => OutgoingResponse;
  /**
   * Whether a request's body is handed to the handler as a stream as it arrives
   * (`IncomingRequest.bodyStream`) instead of being read whole first. Decided from the
   * request line and headers; the ceiling still applies to what arrives.
   */
  streamBody?: (req: IncomingRequest) => boolean;
}

/** Statuses of a request refused before it reaches the handler. */
export type RefusalStatus = 400 | 414 | 431;

/**
 * Parley's limits on a request head, checked before the handler, with nginx's default
 * sizes (`large_client_header_buffers 4 8k`). Lengths are in characters as uWS hands
 * them over. uWS's own, lower-level limits are listed at the top of this module.
 */
export const HTTP_LIMITS = {
  /** Path plus query string; longer is 414 URI Too Long. */
  maxUrlChars: 8192,
  /** One header field, name plus value; longer is 431 Request Header Fields Too Large. */
  maxHeaderFieldChars: 8192,
  /** All header fields together; more is 431. */
  maxHeaderChars: 32768,
} as const;

/** Headers that must not repeat: a second one is a 400, as nginx answers. */
const UNIQUE_HEADERS = new Set(['host', 'content-length', 'transfer-encoding']);

/** Plain-text refusals, as nginx answers malformed requests it cannot route. */
function plainRefusal(status: RefusalStatus, message: string): OutgoingResponse {
  return { status, headers: [['Content-Type', 'text/plain; charset=utf-8']], body: `${message}\n` };
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

/**
 * Writes a response in one corked batch, unless the client has gone or it was answered
 * already. The answer to HEAD has the Content-Length of the body but not the body: uWS
 * would send it, and the client would read it as the start of its next response. (This
 * uWS's `endWithoutBody(length)` leaves the response pending, and the next request on
 * the connection then closes it; so the header is written here and uWS writes none.)
 * On a connection about to close, stray body bytes are harmless, and `end` closes it.
 */
function write(res: uWS.HttpResponse, abort: Abortable, out: OutgoingResponse, close: boolean, head: boolean): void {
  if (abort.aborted || abort.answered) return;
  abort.answered = true;
  if (out.file && !head) {
    sendFile(res, abort, out).catch(() => {
      if (!abort.aborted) res.close();
    });
    return;
  }
  close ||= out.close === true;
  res.cork(() => {
    res.writeStatus(statusLine(out.status));
    const headers = out.headers;
    for (let i = 0; i < headers.length; i++) res.writeHeader(headers[i][0], headers[i][1]);
    if (close) res.end(out.body, true);
    else if (head) {
      res.writeHeader('Content-Length', String(out.file?.length ?? Buffer.byteLength(out.body)));
      res.endWithoutBody();
    } else res.end(out.body);
  });
}

/** Size of each piece of a file read and written. */
const FILE_PIECE_BYTES = 64 * 1024;

/**
 * Sends part of a file piece by piece with backpressure: each piece goes out with
 * `tryEnd`; when the socket's buffer is full, the rest of the piece waits for
 * `onWritable`, and no further piece is read until it is out. A file that cannot be
 * read after the status line has gone closes the connection.
 */
async function sendFile(res: uWS.HttpResponse, abort: Abortable, out: OutgoingResponse): Promise<void> {
  const { path, start, length } = out.file!;
  const handle = await open(path, 'r');
  try {
    if (abort.aborted) return;
    res.cork(() => {
      res.writeStatus(statusLine(out.status));
      for (const [k, v] of out.headers) res.writeHeader(k, v);
      if (length === 0) res.end();
    });
    // One abort hook for the whole file, not one per wait: a long download waits often.
    let wake: (() => void) | undefined;
    abort.onAbort(() => wake?.());
    let sent = 0;
    while (sent < length && !abort.aborted) {
      const piece = Buffer.allocUnsafe(Math.min(FILE_PIECE_BYTES, length - sent));
      const { bytesRead } = await handle.read(piece, 0, piece.length, start + sent);
      if (abort.aborted) return;
      if (bytesRead !== piece.length) throw new Error('file shorter than its record');
      const base = res.getWriteOffset();
      let result: [boolean, boolean] = [false, false];
      res.cork(() => {
        result = res.tryEnd(piece, length);
      });
      sent += piece.length;
      if (result[1] || result[0]) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        res.onWritable((offset) => {
          const [ok, done] = res.tryEnd(piece.subarray(offset - base), length);
          if (ok || done) resolve();
          return ok;
        });
      });
    }
  } finally {
    await handle.close();
  }
}

/** Hands the body to the handler as a stream (see `ListenOptions.streamBody`). */
function streamBody(res: uWS.HttpResponse, abort: Abortable, head: boolean, request: UwsRequest, maxBody: number, tooLarge: (req: IncomingRequest) => OutgoingResponse, handler: Handler): void {
  let paused = false;
  const stream = new Readable({
    highWaterMark: 256 * 1024,
    read() {
      if (paused && !abort.aborted) {
        paused = false;
        res.resume();
      }
    },
  });
  request.bodyStream = stream;
  abort.onAbort(() => stream.destroy(new Error('the client went away before the end of the body')));
  let size = 0;
  let ended = false;
  res.onData((chunk, isLast) => {
    if (isLast) ended = true;
    if (abort.aborted || stream.destroyed) return;
    size += chunk.byteLength;
    if (size > maxBody) {
      stream.destroy(new Error('body over the ceiling'));
      write(res, abort, tooLarge(request), true, head);
      return;
    }
    if (!stream.push(Buffer.from(new Uint8Array(chunk))) && !isLast) {
      paused = true;
      res.pause();
    }
    if (isLast) stream.push(null);
  });
  reply(res, abort, head, handler(request, abort), () => !ended);
}

const INTERNAL_ERROR: OutgoingResponse = { status: 500, headers: [['Content-Type', 'application/json']], body: '{"result":"error","msg":"Internal server error","code":"INTERNAL_SERVER_ERROR"}' };

/** `closeIf`: whether the connection must close after the answer (a streamed body left unread). */
function reply(res: uWS.HttpResponse, abort: Abortable, head: boolean, result: OutgoingResponse | Promise<OutgoingResponse> | null, closeIf: () => boolean = () => false): void {
  if (result === null) return;
  if (result instanceof Promise) {
    result.then(
      (out) => write(res, abort, out, closeIf(), head),
      () => write(res, abort, INTERNAL_ERROR, closeIf(), head),
    );
  } else write(res, abort, result, closeIf(), head);
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
  bodyStream?: Readable;
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
 * The exchange of one uWS request: its abort state, and its response to answer through.
 * It holds the response itself rather than a closure over it, so that a parked
 * long-poll keeps this object and one bound abort hook alive, not closures and their
 * contexts, and not the request with its headers: thousands of parked polls are young
 * objects that every scavenge during a fan-out would otherwise copy.
 */
class UwsExchange extends Abortable {
  constructor(
    private readonly res: uWS.HttpResponse,
    private readonly head: boolean,
  ) {
    super();
    res.onAborted(this.abort.bind(this));
  }

  override respond(out: OutgoingResponse): void {
    write(this.res, this, out, false, this.head);
  }
}

/** Reads the body chunk by chunk (each copied: uWS reuses its memory), then handles the request. */
function readBody(res: uWS.HttpResponse, abort: Abortable, head: boolean, request: UwsRequest, maxBody: number, tooLarge: (req: IncomingRequest) => OutgoingResponse, handler: Handler): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (abort.aborted) return;
    size += chunk.byteLength;
    if (size > maxBody) {
      write(res, abort, tooLarge(request), true, head);
      return;
    }
    // A small copy comes from Node's buffer pool, where chunk.slice(0) would allocate an ArrayBuffer per request.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast) return;
    request.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    reply(res, abort, head, handler(request, abort));
  });
}

/** Why a request head breaks Parley's limits (status and message), or undefined. */
function refusal(url: string, query: string, headerChars: number, longestField: number, duplicate: string | undefined): [RefusalStatus, string] | undefined {
  if (url.length + query.length > HTTP_LIMITS.maxUrlChars) return [414, `URI Too Long: the URL is over ${HTTP_LIMITS.maxUrlChars} characters`];
  if (longestField > HTTP_LIMITS.maxHeaderFieldChars) return [431, `Request Header Fields Too Large: a header field is over ${HTTP_LIMITS.maxHeaderFieldChars} characters`];
  if (headerChars > HTTP_LIMITS.maxHeaderChars) return [431, `Request Header Fields Too Large: the header fields are over ${HTTP_LIMITS.maxHeaderChars} characters`];
  if (duplicate !== undefined) return [400, `Bad Request: more than one ${duplicate} header`];
  return undefined;
}

/** Starts an HTTP listener that hands every request to `handler`. */
export function listen(opts: ListenOptions, handler: Handler): Promise<Listener> {
  const app = uWS.App();
  const refuse = opts.refuse ?? plainRefusal;
  // `any` is routed only the nine upper-case methods uWS knows (see the top of this
  // module): the method needs no case folding, and an unknown one never gets here.
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const head = method === 'HEAD';
    const abort = new UwsExchange(res, head);
    const headers: Record<string, string> = {};
    let headerChars = 0;
    let longestField = 0;
    let duplicate: string | undefined;
    req.forEach((k, v) => {
      const chars = k.length + v.length;
      headerChars += chars;
      if (chars > longestField) longestField = chars;
      if (headers[k] !== undefined && UNIQUE_HEADERS.has(k)) duplicate = k;
      headers[k] = v;
    });
    const url = req.getUrl();
    const query = req.getQuery() ?? '';
    const request = new UwsRequest(method, url, query, headers, res, abort);
    const refused = refusal(url, query, headerChars, longestField, duplicate);
    if (refused !== undefined) {
      write(res, abort, refuse(refused[0], refused[1], request), true, head);
      return;
    }
    const declared = headers['content-length'];
    const hasBody = (declared !== undefined && declared !== '0') || headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      reply(res, abort, head, handler(request, abort));
      return;
    }
    const maxBody = opts.maxBodyBytesFor?.(request) ?? opts.maxBodyBytes;
    if (declared !== undefined && Number(declared) > maxBody) {
      write(res, abort, opts.tooLarge(request), true, head);
      return;
    }
    if (opts.streamBody?.(request)) streamBody(res, abort, head, request, maxBody, opts.tooLarge, handler);
    else readBody(res, abort, head, request, maxBody, opts.tooLarge, handler);
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
