/**
 * The message board as a function from request to response, with no socket: the
 * board listener, the main port (for the board's Host name) and the tests (`inject`)
 * all call `handle`. The pipeline, cheapest checks first, so that nothing expensive
 * runs for a request that will be refused:
 *
 *   route (404/405) -> runtime switch (404) -> raw size (413) -> rate limit (429)
 *   -> media type (415) -> query and body validation (400/422) -> handler -> render
 *
 * `bodyLimit` and `refuseBody` let the transport apply the same first steps before
 * a single body byte is buffered.
 */
import type { Runtime } from '../../actors/runtime/runtime.js';
import { RateLimiter } from '../http/rate_limit.js';
import type { AbortHook, IncomingRequest, OutgoingResponse } from '../http/types.js';
import { BoardError, problemResponse } from './errors.js';
import { convertQuery, isJsonMediaType, parseJsonBody, parseQuery } from './input.js';
import type { BoardReply, BoardRoute, BoardSettings } from './route.js';
import { BoardRouter, type BoardLookup } from './router.js';
import { compileChecker, type Checker } from './validate.js';

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

interface Compiled {
  query: Checker<Record<string, unknown>>;
  body?: Checker<unknown>;
}

/** The board's request pipeline over the board's route records. */
export class BoardApp {
  readonly router: BoardRouter;
  private readonly compiled = new Map<BoardRoute, Compiled>();
  private readonly limiters: Record<'publish' | 'messages', RateLimiter>;

  constructor(readonly routes: BoardRoute[], private readonly runtime: Runtime, readonly settings: BoardSettings, private readonly log: (line: string) => void = console.error) {
    this.router = new BoardRouter(routes);
    for (const r of routes) {
      const where = `Board route ${r.method} ${r.path}`;
      const params = r.query ?? {};
      const querySchema = {
        type: 'object',
        additionalProperties: false,
        required: Object.entries(params).filter(([, p]) => p.required).map(([n]) => n),
        properties: Object.fromEntries(Object.entries(params).map(([n, p]) => [n, p.schema])),
      };
      this.compiled.set(r, {
        query: compileChecker(where, querySchema, r.queryError ?? 'invalid_parameter'),
        body: r.body ? compileChecker(where, r.body.schema) : undefined,
      });
    }
    const now = (): number => runtime.nowMs();
    this.limiters = { publish: new RateLimiter(settings.publishLimit, now), messages: new RateLimiter(settings.messageLimit, now) };
  }

  /** The largest body the request's route takes, decided from the request line alone. */
  bodyLimit(req: IncomingRequest): number {
    const found = this.router.lookup(req.method, req.path);
    return found.kind === 'found' && found.route.body ? found.route.body.maxBytes : 0;
  }

  /** The answer to a request whose body is over `bodyLimit`: the route's own refusal, else 413. */
  refuseBody(req: IncomingRequest): OutgoingResponse {
    const found = this.router.lookup(req.method, req.path);
    try {
      const route = this.gate(found);
      throw new BoardError('payload_too_large', `the request body exceeds ${route.body?.maxBytes ?? 0} bytes`);
    } catch (err) {
      return this.failure(err, req, found);
    }
  }

  /** Answers one request. Never throws, and never answers 500 for anything a client sent. */
  handle(req: IncomingRequest, _abort: AbortHook): OutgoingResponse | Promise<OutgoingResponse> {
    const found = this.router.lookup(req.method, req.path);
    try {
      const result = this.run(req, found);
      if (result instanceof Promise) return result.then((reply) => this.render(reply, found, req)).catch((err: unknown) => this.failure(err, req, found));
      return this.render(result, found, req);
    } catch (err) {
      return this.failure(err, req, found);
    }
  }

  /** Route and switch: the checks that hold whatever the request carries. */
  private gate(found: BoardLookup): BoardRoute {
    if (found.kind === 'none') throw new BoardError('not_found', 'No such board resource');
    if (found.kind === 'method') throw new BoardError('method_not_allowed', `Allowed: ${found.allowed.join(', ')}`, undefined, [['Allow', found.allowed.join(', ')]]);
    const route = found.route;
    if (route.switch === 'guestbook' && !this.runtime.board().switches.guestbook) throw new BoardError('publication_disabled', 'Guestbook publication is disabled');
    if (route.switch === 'compat' && !this.runtime.board().switches.compat) throw new BoardError('compatibility_disabled', 'GET compatibility publication is disabled');
    return route;
  }

  private run(req: IncomingRequest, found: BoardLookup): BoardReply | Promise<BoardReply> {
    const route = this.gate(found);
    const pathParams = found.kind === 'found' ? found.pathParams : {};
    if (route.body && req.body.length > route.body.maxBytes) throw new BoardError('payload_too_large', `the request body exceeds ${route.body.maxBytes} bytes`);
    if (route.limiter) this.limit(route.limiter, req);
    const compiled = this.compiled.get(route)!;
    const query = this.checkQuery(compiled, route, req.query);
    let body: unknown;
    if (route.body) {
      if (!isJsonMediaType(req.headers['content-type'])) throw new BoardError('unsupported_media_type', 'the request body must be application/json (UTF-8)');
      body = compiled.body!(parseJsonBody(req.body));
    }
    return route.handler({ runtime: this.runtime, settings: this.settings, request: req, pathParams, query, body });
  }

  /** Parses, converts and validates the query; a parameter's own hint replaces the validator's wording. */
  private checkQuery(compiled: Compiled, route: BoardRoute, raw: string): Record<string, unknown> {
    const code = route.queryError ?? 'invalid_parameter';
    const params = route.query ?? {};
    try {
      return compiled.query(convertQuery(parseQuery(raw, code), params, code));
    } catch (err) {
      if (!(err instanceof BoardError) || err.field === undefined) throw err;
      const hint = Object.hasOwn(params, err.field) ? params[err.field].hint : undefined;
      throw hint === undefined ? err : new BoardError(code, `${err.field}: ${hint}`, err.field);
    }
  }

  /** Counts the request against its limiter; refuses with 429 and Retry-After past the limit. */
  private limit(which: 'publish' | 'messages', req: IncomingRequest): void {
    const limiter = this.limiters[which];
    if (!limiter.enabled) return;
    const decision = limiter.hit(req.remoteAddress);
    if (!decision.allowed) {
      throw new BoardError('rate_limited', `too many requests from this address; retry after ${decision.retryAfter} s`, undefined, [
        ['Retry-After', String(decision.retryAfter)],
        ...decision.headers,
      ]);
    }
  }

  private extraHeaders(found: BoardLookup, req: IncomingRequest): Array<[string, string]> {
    const noStore = (found.kind === 'found' && found.route.noStore) || req.path.startsWith('/compat/');
    return noStore ? [...COMMON, ...NO_STORE] : COMMON;
  }

  private render(reply: BoardReply, found: BoardLookup, req: IncomingRequest): OutgoingResponse {
    const headers: Array<[string, string]> = reply.markdown !== undefined ? [['Content-Type', 'text/markdown; charset=utf-8']] : [['Content-Type', 'application/json']];
    // Several links travel as one comma-separated Link header (RFC 8288).
    const links = (reply.headers ?? []).filter(([k]) => k === 'Link').map(([, v]) => v);
    if (links.length > 0) headers.push(['Link', links.join(', ')]);
    headers.push(...(reply.headers ?? []).filter(([k]) => k !== 'Link'), ...this.extraHeaders(found, req));
    const body = reply.markdown ?? JSON.stringify(reply.json);
    return { status: reply.status ?? 200, headers, body: req.method === 'HEAD' ? '' : body };
  }

  private failure(err: unknown, req: IncomingRequest, found: BoardLookup): OutgoingResponse {
    let error: BoardError;
    if (err instanceof BoardError) error = err;
    else {
      this.log(`board: internal error on ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`);
      error = new BoardError('internal_error', 'Internal server error');
    }
    const out = problemResponse(error);
    out.headers.push(...this.extraHeaders(found, req));
    return out;
  }
}
