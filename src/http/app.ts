/**
 * The one request pipeline of both APIs, over route records. It never touches a
 * socket: the uWS front end and the tests (`inject`) call `handle` with a plain
 * `IncomingRequest`. The steps, cheapest first, so that nothing expensive runs for a
 * request that will be refused; each applies where the API or the record asks for it:
 *
 *   route (404/405) -> memory pressure, for routes that grow state (503) -> admission:
 *   runtime switch (board, 404), raw body size (board, 413), organization by Host and
 *   authentication (chat) -> rate limit (429)
 *   -> parameters and body (400/404/415/422) -> per-endpoint rate limit, whose key may
 *   be a parameter (429) -> handler -> render
 *
 * Once a request has been counted by a rate limiter, its answer carries the
 * `X-RateLimit-*` headers, whatever it is: a success, a 4xx, the 429 itself.
 *
 * Errors are rendered in the shape of the API (`api.ts`), with the status the one
 * catalog gives their code (`errors.ts`).
 *
 * The request log: one line per answered request, with its id, route (the record's
 * path, never the request's, which may carry an email or a search), organization,
 * user, status and time. Errors are always logged (5xx at `error`, 4xx at `info`);
 * successes only at `debug`, since a line per request costs the hot path (see
 * "Logging, health and shutdown" in docs/operator-guide.md). A parked long-poll is logged when it parks.
 */
import type { LogFields, Logger } from '../../actors/core/logger.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import { NO_PRESSURE, PRESSURE_RETRY_AFTER_SECS, type PressureSource } from '../memory/pressure.js';
import type { Api, Coded } from './api.js';
import { compileParams, type Checked, type ParamChecker } from './params.js';
import { rateLimitHeaders, type RateDecision, type RateLimiter } from './rate_limit.js';
import { growsState, type Reply, type RouteRecord } from './route.js';
import { Router, type Lookup } from './router.js';
import type { Exchange, IncomingRequest, OutgoingResponse } from './types.js';

/** Thrown inside the pipeline for an error that is already coded. */
export class CodedError extends Error {
  constructor(readonly coded: Coded) {
    super(coded.message);
  }
}

/**
 * A rate limiter a route counts against, and the key a request counts under. The key
 * may read the checked parameters (a username) only for a limit counted `afterParams`.
 */
export interface Limit<W> {
  limiter: RateLimiter;
  key(req: IncomingRequest, who: W, params: Record<string, unknown>): string;
  /** Counted once the parameters are checked, not before (Zulip's per-endpoint domains). */
  afterParams?: boolean;
  /** A successful answer clears the key's count, so that only failures count (failed logins). */
  clearOnSuccess?: boolean;
}

/** What the pipeline reports of one route's requests (metrics), bound once per route. */
export interface RouteObserver {
  /** A request took `seconds` from the pipeline's start to its answer (or to parking, for a long poll). */
  answered(seconds: number): void;
  /** A request was refused by the rate limit. */
  rateLimited(): void;
}

/** An observer that records nothing. */
export const NO_ROUTE_OBSERVER: RouteObserver = { answered() {}, rateLimited() {} };

/** The observer of one API's route, or (null) of the requests no route matches. */
export type RouteObserverOf = (api: string, route: RouteRecord | null) => RouteObserver;

interface Compiled<W> {
  checker: ParamChecker;
  limits: Array<Limit<W>>;
  observer: RouteObserver;
  /** Refused under memory pressure (`growsState`). */
  grows: boolean;
}

/** Why a request that grows state is refused under memory pressure. */
export const PRESSURE_MESSAGE = 'The server is low on memory and accepts no new data for now; reads still work. Try again later';

/** The rate limits a request was counted against, and the keys it counted under. */
type Counted<W> = Array<{ limit: Limit<W>; key: string; decision: RateDecision }>;

/** What the pipeline learns of one request on its way: for the rate limit headers and the request log. */
interface Trace<W> {
  started: number;
  route: RouteRecord | undefined;
  who: W | undefined;
  counted: Counted<W>;
  /** An exception no error code describes (a 500). */
  failure?: unknown;
}

const NO_PARAMS: Record<string, unknown> = {};

/** A client's own request id, when it sends a sensible one. */
const REQUEST_ID = /^[\w.:-]{1,64}$/;
/** Requests logged without a client's id so far: the next one's id. */
let requestsLogged = 0;

function requestId(req: IncomingRequest): string {
  const given = req.headers['x-request-id'];
  return given !== undefined && REQUEST_ID.test(given) ? given : (++requestsLogged).toString(36);
}

/**
 * The pipeline over one API's records. `W` is what admission learns about the request
 * (the organization and user, for the chat API). Subclasses give the API's policy:
 * admission, rate limits, and the handler's context.
 */
export abstract class App<W> {
  readonly router: Router;
  private readonly compiled = new Map<RouteRecord, Compiled<W>>();
  /** Observes requests that match no route (404, 405). */
  private unmatched = NO_ROUTE_OBSERVER;
  /** Whether every request is logged (`debug`), read once: the level does not change while serving. */
  private readonly logEvery: boolean;
  /** The memory pressure that refuses requests which grow state. */
  private pressure: PressureSource = NO_PRESSURE;

  constructor(readonly api: Api, readonly routes: RouteRecord[], protected readonly runtime: Runtime, protected readonly log: Logger) {
    this.logEvery = log.isLevelEnabled('debug');
    this.router = new Router(routes, api.router);
    for (const r of routes) {
      if (r.api !== api.name) throw new Error(`Route ${r.method} ${r.path} is a ${r.api} route, not a ${api.name} one`);
      this.compiled.set(r, { checker: compileParams(r), limits: [], observer: NO_ROUTE_OBSERVER, grows: growsState(r) });
    }
  }

  /** Attaches rate limits once the subclass has built its limiters; disabled limiters are left out. */
  protected limits(limitsOf: (r: RouteRecord) => Array<Limit<W>>): void {
    for (const [r, c] of this.compiled) c.limits = limitsOf(r).filter((l) => l.limiter.enabled);
  }

  /** Binds every route's observer once, so that a request looks nothing up to be counted. */
  observeRoutes(observerOf: RouteObserverOf): void {
    for (const [r, c] of this.compiled) c.observer = observerOf(this.api.name, r);
    this.unmatched = observerOf(this.api.name, null);
  }

  /** Refuses requests to routes that grow state (`RouteRecord.grows`) while `pressure` is active. */
  admitUnder(pressure: PressureSource): void {
    this.pressure = pressure;
  }

  /** Admission: what holds whatever the parameters are. Throws to refuse. */
  protected abstract admit(route: RouteRecord, req: IncomingRequest): W;
  /** Who a request is from, as request log fields (organization and user ids). */
  protected abstract describe(who: W): LogFields;
  /** Calls the route's handler with the API's context. */
  protected abstract call(route: RouteRecord, req: IncomingRequest, exchange: Exchange, who: W, input: Checked): Reply | Promise<Reply>;

  /**
   * Answers one request: at once, through a promise, or (null) later through
   * `exchange.respond`, as a parked long-poll does. Never throws.
   */
  handle(req: IncomingRequest, exchange: Exchange): OutgoingResponse | Promise<OutgoingResponse> | null {
    const started = performance.now();
    const found = this.router.lookup(req.method, req.path);
    const compiled = found.kind === 'found' ? this.compiled.get(found.route)! : undefined;
    const observer = compiled?.observer ?? this.unmatched;
    const trace: Trace<W> = { started, route: found.kind === 'found' ? found.route : undefined, who: undefined, counted: [] };
    try {
      const result = this.run(req, exchange, found, compiled, trace);
      if (result instanceof Promise) {
        return result.then(
          (out) => answered(observer, started, out),
          (err: unknown) => answered(observer, started, this.failure(err, req, found, trace)),
        );
      }
      if (result === null && this.logEvery) this.logRequest('debug', req, trace, null);
      return answered(observer, started, result);
    } catch (err) {
      return answered(observer, started, this.failure(err, req, found, trace));
    }
  }

  /** The route a lookup found; throws the API's 404 or 405. */
  protected routeOf(found: Lookup): RouteRecord {
    if (found.kind === 'found') return found.route;
    throw new CodedError(found.kind === 'none' ? this.api.notFound : this.api.methodNotAllowed(found.allowed));
  }

  private run(req: IncomingRequest, exchange: Exchange, found: Lookup, compiled: Compiled<W> | undefined, trace: Trace<W>): OutgoingResponse | Promise<OutgoingResponse> | null {
    const route = this.routeOf(found);
    const pathParams = (found as Extract<Lookup, { kind: 'found' }>).pathParams;
    const c = compiled!;
    if (c.grows && this.pressure.active) {
      this.pressure.refused++;
      throw new CodedError(this.api.unavailable(PRESSURE_MESSAGE, PRESSURE_RETRY_AFTER_SECS));
    }
    const who = (trace.who = this.admit(route, req));
    if (c.limits.length > 0) this.count(c, false, req, who, NO_PARAMS, trace.counted);
    const input = c.checker.check(req, pathParams);
    if (input instanceof Promise) return input.then((checked) => this.serveDecoded(route, req, exchange, who, checked, c, trace));
    return this.serve(route, req, exchange, who, input, c, trace);
  }

  /** Counts the request against the route's limits of one phase; throws the API's 429 when one is full. */
  private count({ limits, observer }: Compiled<W>, afterParams: boolean, req: IncomingRequest, who: W, params: Record<string, unknown>, counted: Counted<W>): void {
    for (const limit of limits) {
      if ((limit.afterParams === true) !== afterParams) continue;
      const key = limit.key(req, who, params);
      const decision = limit.limiter.hit(key);
      counted.push({ limit, key, decision });
      if (!decision.allowed) {
        observer.rateLimited();
        throw new CodedError(this.api.rateLimited(decision));
      }
    }
  }

  private serve(route: RouteRecord, req: IncomingRequest, exchange: Exchange, who: W, input: Checked, compiled: Compiled<W>, trace: Trace<W>): OutgoingResponse | Promise<OutgoingResponse> | null {
    if (compiled.limits.length > 0) this.count(compiled, true, req, who, input.params, trace.counted);
    const reply = this.call(route, req, exchange, who, input);
    if (reply === null) return null;
    if (reply instanceof Promise) {
      return reply.then((r) => {
        if (r === null) throw new Error(`${route.method} ${route.path}: an asynchronous handler cannot answer later`);
        return this.success(r, req, input, trace);
      });
    }
    return this.success(reply, req, input, trace);
  }

  /**
   * Serves a request whose parameters were decoded asynchronously (a multipart body).
   * The transport already holds a promise for it, so an answer left for later (a parked
   * long-poll) resolves that promise instead of going to the transport directly.
   */
  private serveDecoded(route: RouteRecord, req: IncomingRequest, exchange: Exchange, who: W, input: Checked, compiled: Compiled<W>, trace: Trace<W>): Promise<OutgoingResponse> {
    return new Promise((resolve, reject) => {
      const relay: Exchange = {
        get aborted() {
          return exchange.aborted;
        },
        onAbort: (fn) => exchange.onAbort(fn),
        respond: resolve,
      };
      const out = this.serve(route, req, relay, who, input, compiled, trace);
      if (out instanceof Promise) out.then(resolve, reject);
      else if (out !== null) resolve(out);
    });
  }

  /** Renders a handler's answer; a success clears the counts of limits that only count failures. */
  private success(reply: Exclude<Reply, null>, req: IncomingRequest, input: Checked, trace: Trace<W>): OutgoingResponse {
    const { counted } = trace;
    const out = this.api.renderSuccess({ reply, ignored: input.ignored, limitHeaders: counted.length > 0 ? headersOf(counted) : undefined }, req);
    if (out.status < 400) for (const c of counted) if (c.limit.clearOnSuccess) c.limit.limiter.clear(c.key);
    return this.finish(out, req, trace);
  }

  /** Adds the API's common headers, and logs the request (see the top of this module). */
  private finish(out: OutgoingResponse, req: IncomingRequest, trace: Trace<W>): OutgoingResponse {
    if (this.api.commonHeaders) out.headers.push(...this.api.commonHeaders(trace.route, req));
    // A 503 is the server saying "not now" (memory pressure), never a failure of its own. It
    // is logged at debug, like a success: under pressure every write is refused, a line each
    // would flood the log (and grow the heap while the log's pipe is slow), and the pressure's
    // start and end are logged, its refusals counted (parley_memory_refused_total).
    if (out.status >= 400 || this.logEvery) this.logRequest(out.status === 503 ? 'debug' : out.status >= 500 ? 'error' : out.status >= 400 ? 'info' : 'debug', req, trace, out.status);
    return out;
  }

  /** One request log line (`status` null: a long-poll parked). */
  private logRequest(level: 'error' | 'info' | 'debug', req: IncomingRequest, trace: Trace<W>, status: number | null): void {
    const route = trace.route?.path ?? null;
    const fields: LogFields = {
      event: 'http.request',
      req_id: requestId(req),
      api: this.api.name,
      method: req.method,
      route,
      ...(trace.who === undefined ? {} : this.describe(trace.who)),
      status,
      ms: Math.round((performance.now() - trace.started) * 100) / 100,
    };
    if (trace.failure !== undefined) fields.err = { message: (trace.failure as Error)?.message ?? String(trace.failure), stack: (trace.failure as Error)?.stack };
    const what = trace.failure !== undefined ? 'internal error on ' : '';
    this.log[level](fields, `${this.api.logPrefix}${what}${req.method} ${route ?? '(no route)'} ${status ?? 'parked'}`);
  }

  /**
   * Renders a thrown value: the client's error in the API's shape, anything else a 500
   * (logged with its stack).
   */
  protected failure(err: unknown, req: IncomingRequest, found: Lookup, trace?: Trace<W>): OutgoingResponse {
    const t = trace ?? { started: performance.now(), route: found.kind === 'found' ? found.route : undefined, who: undefined, counted: [] };
    let coded = err instanceof CodedError ? err.coded : this.api.coded(err);
    if (!coded) {
      t.failure = err;
      coded = this.api.internalError;
    }
    const out = this.api.renderError(coded);
    // As Zulip's RateLimitMiddleware: every answer of a request that was counted says so, refusals too.
    if (t.counted.length > 0) out.headers.push(...headersOf(t.counted));
    return this.finish(out, req, t);
  }
}

function headersOf<W>(counted: Counted<W>): Array<[string, string]> {
  return rateLimitHeaders(counted.map((c) => c.decision));
}

/** Tells `observer` how long a request took since `started` (`performance.now()`), and passes its answer on. */
function answered<T>(observer: RouteObserver, started: number, out: T): T {
  observer.answered((performance.now() - started) / 1000);
  return out;
}
