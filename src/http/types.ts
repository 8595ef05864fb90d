/**
 * Transport-agnostic request and response. The uWS front end fills an `IncomingRequest`
 * synchronously from its short-lived `HttpRequest`; tests build one by hand (`inject`).
 */

/** A request copied out of the transport, with its whole body already read. */
export interface IncomingRequest {
  /** Upper-case method, e.g. `GET`. */
  method: string;
  /** Path without the query string, still percent-encoded. */
  path: string;
  /** Raw query string, without the leading `?`. */
  query: string;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body: Buffer;
  /**
   * The body as it arrives, for a route that streams it (`streamBody`); `body` is then
   * empty. The transport pauses the socket while the stream's buffer is full, and
   * destroys the stream with an error when the client goes away mid-body.
   */
  bodyStream?: import('node:stream').Readable;
  remoteAddress: string;
}

/** A byte range of a file to send as the body, read and written piece by piece. */
export interface FileBody {
  path: string;
  start: number;
  length: number;
}

/** What a request is answered with. */
export interface OutgoingResponse {
  status: number;
  headers: Array<[string, string]>;
  body: string | Buffer;
  /** When set, the body is this part of a file (and `body` is empty). */
  file?: FileBody;
  /** Close the connection after answering (a body left unread). */
  close?: boolean;
}

/**
 * Lets a handler learn that its client went away, so that a parked long-poll can be
 * dropped. `onAbort` handlers run at most once.
 */
export interface AbortHook {
  readonly aborted: boolean;
  onAbort(fn: () => void): void;
}

/**
 * The transport's side of one request: it tells when the client went away, and takes a
 * response given later (a parked long-poll answers through `respond`, with no promise
 * chain between the event and the socket write).
 */
export interface Exchange extends AbortHook {
  respond(out: OutgoingResponse): void;
}

/** A response that will be given later through `Exchange.respond`. */
export const LATER = null;

/** An `Exchange` whose responses go to `responder` (set by `inject`; the uWS transport overrides `respond`). */
export class Abortable implements Exchange {
  aborted = false;
  /** Set by the transport once a response has been written. */
  answered = false;
  responder: ((out: OutgoingResponse) => void) | undefined;
  /** The abort hooks: most requests have none, a parked long-poll one, so one is kept without an array. */
  private fns: (() => void) | Array<() => void> | undefined;
  onAbort(fn: () => void): void {
    if (this.aborted) fn();
    else if (this.fns === undefined) this.fns = fn;
    else if (typeof this.fns === 'function') this.fns = [this.fns, fn];
    else this.fns.push(fn);
  }
  respond(out: OutgoingResponse): void {
    this.responder?.(out);
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const fns = this.fns;
    this.fns = undefined;
    if (typeof fns === 'function') fns();
    else if (fns) for (const fn of fns) fn();
  }
}

const JSON_HEADERS: Array<[string, string]> = [['Content-Type', 'application/json']];

/** A JSON response with a body already serialized. */
export function jsonResponse(status: number, body: string): OutgoingResponse {
  return { status, headers: JSON_HEADERS, body };
}

/** HTTP reason phrases for the statuses Parley answers with. */
export const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed',
  206: 'Partial Content', 413: 'Payload Too Large', 416: 'Range Not Satisfiable', 414: 'URI Too Long', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error',
  502: 'Bad Gateway', 503: 'Service Unavailable', 507: 'Insufficient Storage',
};
