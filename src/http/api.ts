/**
 * The two APIs as data: what differs between the chat API and the message board once
 * both are served from the same route records, router, compiled schemas and error
 * catalog. The pipeline (`app.ts`) reads these descriptors; it has no other notion of
 * which API it serves.
 */
import { ApiError, type ErrorExtra } from '../../actors/shared/errors.js';
import { BoardError } from '../board/errors.js';
import { MalformedBody } from './body.js';
import { errorBody, problemBody, statusOf } from './errors.js';
import type { RateDecision } from './rate_limit.js';
import type { Reply, RouteRecord } from './route.js';
import type { RouterOptions } from './router.js';
import type { IncomingRequest, OutgoingResponse } from './types.js';

/** An error of the catalog, ready to render in an API's shape. */
export interface Coded {
  code: string;
  message: string;
  /** Chat: extra body fields. */
  extra?: ErrorExtra;
  /** A status other than the code's own. */
  status?: number;
  /** Board: the input field at fault. */
  field?: string;
  headers?: Array<[string, string]>;
}

/** A success as the pipeline hands it to the renderer. */
export interface Success {
  reply: Exclude<Reply, null>;
  /** Chat: parameter names the route does not support. */
  ignored: string[];
  /** Rate limit headers of the request, if any. */
  limitHeaders: Array<[string, string]> | undefined;
}

export interface Api {
  name: RouteRecord['api'];
  router: RouterOptions;
  /** Prefix of the internal-error log line. */
  logPrefix: string;
  notFound: Coded;
  internalError: Coded;
  methodNotAllowed(allowed: string[]): Coded;
  /** The 429 of a full window; the pipeline adds the `X-RateLimit-*` headers to it as to every counted answer. */
  rateLimited(decision: RateDecision): Coded;
  /** The server is starting or shutting down: a 503 with Retry-After (see `lifecycle.ts`). */
  unavailable(message: string, retryAfterSecs: number): Coded;
  /** A thrown value as an error of this API; undefined for anything that is not the client's to see. */
  coded(err: unknown): Coded | undefined;
  renderError(e: Coded): OutgoingResponse;
  renderSuccess(s: Success, req: IncomingRequest): OutgoingResponse;
  /** Headers every response of this API carries for the request (security headers), added last. */
  commonHeaders?(route: RouteRecord | undefined, req: IncomingRequest): Array<[string, string]>;
}

// ---------------------------------------------------------------------------
// Chat: Zulip's shapes
// ---------------------------------------------------------------------------

const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];
const WWW_AUTHENTICATE: [string, string] = ['WWW-Authenticate', 'Basic realm="zulip"'];

function chatResponse(status: number, body: string, extra?: Array<[string, string]>): OutgoingResponse {
  return { status, headers: extra ? [JSON_TYPE, ...extra] : [JSON_TYPE], body };
}

export const CHAT_API: Api = {
  name: 'chat',
  router: { stripTrailingSlash: true, refuseReplacementChar: true },
  logPrefix: '',
  notFound: { code: 'NOT_FOUND', message: 'Endpoint not found' },
  internalError: { code: 'INTERNAL_SERVER_ERROR', message: 'Internal server error' },
  methodNotAllowed: (allowed) => ({ code: 'METHOD_NOT_ALLOWED', message: 'Method Not Allowed', extra: { allowed_methods: allowed }, headers: [['Allow', allowed.join(', ')]] }),
  rateLimited: (d) => ({
    code: 'RATE_LIMIT_HIT',
    message: 'API usage exceeded rate limit',
    extra: { 'retry-after': d.retryAfter },
    headers: [['Retry-After', String(d.retryAfter)]],
  }),
  unavailable: (message, retryAfterSecs) => ({ code: 'SERVER_NOT_READY', message, headers: [['Retry-After', String(retryAfterSecs)]] }),
  coded(err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message, extra: err.extra, ...(err.status !== undefined ? { status: err.status } : {}) };
    if (err instanceof MalformedBody) return { code: 'BAD_REQUEST', message: err.message };
    return undefined;
  },
  renderError(e) {
    const status = e.status ?? statusOf(e.code);
    const headers = status === 401 ? [WWW_AUTHENTICATE, ...(e.headers ?? [])] : e.headers;
    return chatResponse(status, errorBody(e.code, e.message, e.extra), headers && headers.length > 0 ? headers : undefined);
  },
  renderSuccess({ reply, ignored, limitHeaders }) {
    // A file, or an answer whose meaning is all in its status and headers (tus): no JSON envelope.
    if (reply.file) return { status: reply.status ?? 200, headers: [...(reply.headers ?? []), ...(limitHeaders ?? [])], body: '', file: reply.file };
    if (reply.empty) return { status: reply.status ?? 204, headers: [...(reply.headers ?? []), ...(limitHeaders ?? [])], body: '' };
    if (reply.raw !== undefined) return chatResponse(reply.status ?? 200, reply.raw, reply.headers || limitHeaders ? [...(reply.headers ?? []), ...(limitHeaders ?? [])] : undefined);
    const body: Record<string, unknown> = { result: 'success', msg: '', ...(reply.json as Record<string, unknown>) };
    if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
    return chatResponse(reply.status ?? 200, JSON.stringify(body), limitHeaders);
  },
  // Every answer under the tus endpoint, refusals included, says which tus version is spoken.
  commonHeaders: (_route, req) => (req.path.startsWith(TUS_PATH) ? TUS_HEADERS : NO_HEADERS),
};

/** Where resumable uploads are served (`src/routes/chat/tus.ts`). */
const TUS_PATH = '/api/v1/tus';
const TUS_HEADERS: Array<[string, string]> = [['Tus-Resumable', '1.0.0']];
const NO_HEADERS: Array<[string, string]> = [];

// ---------------------------------------------------------------------------
// Board: RFC 9457 problem details, JSON or Markdown renditions, security headers
// ---------------------------------------------------------------------------

/** Headers on every board response: nothing is sniffed, nothing in a rendition is active. */
const COMMON: Array<[string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Content-Security-Policy', "default-src 'none'; sandbox"],
];
/** Headers of the GET publication path: never cached, never leaked by Referer, never indexed. */
const NO_STORE: Array<[string, string]> = [
  ['Cache-Control', 'no-store'],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Robots-Tag', 'noindex'],
];

export const BOARD_API: Api = {
  name: 'board',
  router: { stripTrailingSlash: false, refuseReplacementChar: false },
  logPrefix: 'board: ',
  notFound: { code: 'not_found', message: 'No such board resource' },
  internalError: { code: 'internal_error', message: 'Internal server error' },
  methodNotAllowed: (allowed) => ({ code: 'method_not_allowed', message: `Allowed: ${allowed.join(', ')}`, headers: [['Allow', allowed.join(', ')]] }),
  rateLimited: (d) => ({
    code: 'rate_limited',
    message: `too many requests from this address; retry after ${d.retryAfter} s`,
    headers: [['Retry-After', String(d.retryAfter)]],
  }),
  unavailable: (message, retryAfterSecs) => ({ code: 'unavailable', message, headers: [['Retry-After', String(retryAfterSecs)]] }),
  coded(err) {
    if (err instanceof BoardError) return { code: err.code, message: err.message, field: err.field, headers: err.headers };
    return undefined;
  },
  renderError(e) {
    return {
      status: statusOf(e.code),
      headers: [['Content-Type', 'application/problem+json'], ...(e.headers ?? [])],
      body: JSON.stringify(problemBody(e.code, e.message, e.field)),
    };
  },
  renderSuccess({ reply, limitHeaders }, req) {
    const headers: Array<[string, string]> = reply.markdown !== undefined ? [['Content-Type', 'text/markdown; charset=utf-8']] : [['Content-Type', 'application/json']];
    // Several links travel as one comma-separated Link header (RFC 8288).
    const links = (reply.headers ?? []).filter(([k]) => k === 'Link').map(([, v]) => v);
    if (links.length > 0) headers.push(['Link', links.join(', ')]);
    headers.push(...(reply.headers ?? []).filter(([k]) => k !== 'Link'), ...(limitHeaders ?? []));
    const body = reply.markdown ?? JSON.stringify(reply.json);
    return { status: reply.status ?? 200, headers, body: req.method === 'HEAD' ? '' : body };
  },
  commonHeaders(route, req) {
    const noStore = route?.noStore || req.path.startsWith('/compat/');
    return noStore ? [...COMMON, ...NO_STORE] : COMMON;
  },
};
