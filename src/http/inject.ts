/**
 * Requests run through an app without a socket, as Fastify's `inject` does: how the
 * tests and the in-process bench call the APIs.
 */
import { readFileSync } from 'node:fs';
import { Abortable, type Exchange, type IncomingRequest, type OutgoingResponse } from './types.js';

/** A request for `inject`: only method and url are required. */
export interface InjectRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  remoteAddress?: string;
  abort?: Abortable;
  /** A body that arrives as a stream (for routes with `streamBody`). */
  bodyStream?: import('node:stream').Readable;
}

/** Runs a request through an app without a socket, as Fastify's `inject` does. */
export async function inject(app: { handle(req: IncomingRequest, exchange: Exchange): OutgoingResponse | Promise<OutgoingResponse> | null }, r: InjectRequest): Promise<{ status: number; headers: Record<string, string>; body: string; json: any }> {
  const q = r.url.indexOf('?');
  const headers: Record<string, string> = { host: '127.0.0.1', ...Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])) };
  const req: IncomingRequest = {
    method: r.method.toUpperCase(),
    path: q < 0 ? r.url : r.url.slice(0, q),
    query: q < 0 ? '' : r.url.slice(q + 1),
    headers,
    body: typeof r.body === 'string' ? Buffer.from(r.body) : (r.body ?? Buffer.alloc(0)),
    remoteAddress: r.remoteAddress ?? '127.0.0.1',
    ...(r.bodyStream ? { bodyStream: r.bodyStream } : {}),
  };
  const exchange = r.abort ?? new Abortable();
  const later = new Promise<OutgoingResponse>((resolve) => {
    exchange.responder = resolve;
  });
  const res = (await app.handle(req, exchange)) ?? (await later);
  // A real client reads the response and sends its next request on a later loop turn;
  // resolving on the next turn keeps in-process tests as faithful as a socket.
  await new Promise((resolve) => setImmediate(resolve));
  const body = res.file ? readFileSync(res.file.path).subarray(res.file.start, res.file.start + res.file.length).toString('latin1') : res.body.toString();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: Object.fromEntries(res.headers.map(([k, v]) => [k.toLowerCase(), v])), body, json };
}
