/**
 * The one request pipeline of both APIs, over route records. It never touches a
 * socket: the uWS front end and the tests (`inject`) call `handle` with a plain
 * `IncomingRequest`. The steps, cheapest first, so that nothing expensive runs for a
 * request that will be refused; each applies where the API or the record asks for it:
 *
 *   route (404/405) -> admission: runtime switch (board, 404), raw body size (board,
 *   413), organization by Host and authentication (chat) -> rate limit (429)
 *   -> parameters and body (400/404/415/422) -> handler -> render
 *
 * Errors are rendered in the shape of the API (`api.ts`), with the status the one
 * catalog gives their code (`errors.ts`).
 */
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { Api, Coded } from './api.js';
import { compileParams, type Checked, type ParamChecker } from './params.js';
import type { RateLimiter } from './rate_limit.js';
import type { Reply, RouteRecord } from './route.js';
import { Router, type Lookup } from './router.js';
import type { Exchange, IncomingRequest, OutgoingResponse } from './types.js';

/** Thrown inside the pipeline for an error that is already coded. */
export class CodedError extends Error {
  constructor(readonly coded: Coded) {
    super(coded.message);
  }
}

/** A route's rate limiter, and the key a request counts under. */
export interface Limit<W> {
  limiter: RateLimiter;
  key(req: IncomingRequest, who: W): string;
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
  limit: Limit<W> | undefined;
  observer: RouteObserver;
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

  constructor(readonly api: Api, readonly routes: RouteRecord[], protected readonly runtime: Runtime, protected readonly log: (line: string) => void) {
    this.router = new Router(routes, api.router);
    for (const r of routes) {
      if (r.api !== api.name) throw new Error(`Route ${r.method} ${r.path} is a ${r.api} route, not a ${api.name} one`);
      this.compiled.set(r, { checker: compileParams(r), limit: undefined, observer: NO_ROUTE_OBSERVER });
    }
  }

  /** Attaches rate limits once the subclass has built its limiters. */
  protected limits(limitOf: (r: RouteRecord) => Limit<W> | undefined): void {
    for (const [r, c] of this.compiled) c.limit = limitOf(r);
  }

  /** Binds every route's observer once, so that a request looks nothing up to be counted. */
  observeRoutes(observerOf: RouteObserverOf): void {
    for (const [r, c] of this.compiled) c.observer = observerOf(this.api.name, r);
    this.unmatched = observerOf(this.api.name, null);
  }

  /** Admission: what holds whatever the parameters are. Throws to refuse. */
  protected abstract admit(route: RouteRecord, req: IncomingRequest): W;
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
    try {
      const result = this.run(req, exchange, found, compiled);
      if (result instanceof Promise) {
        return result.then(
          (out) => answered(observer, started, out),
          (err: unknown) => answered(observer, started, this.failure(err, req, found)),
        );
      }
      return answered(observer, started, result);
    } catch (err) {
      return answered(observer, started, this.failure(err, req, found));
    }
  }

  /** The route a lookup found; throws the API's 404 or 405. */
  protected routeOf(found: Lookup): RouteRecord {
    if (found.kind === 'found') return found.route;
    throw new CodedError(found.kind === 'none' ? this.api.notFound : this.api.methodNotAllowed(found.allowed));
  }

  private run(req: IncomingRequest, exchange: Exchange, found: Lookup, compiled: Compiled<W> | undefined): OutgoingResponse | Promise<OutgoingResponse> | null {
    const route = this.routeOf(found);
    const pathParams = (found as Extract<Lookup, { kind: 'found' }>).pathParams;
    const who = this.admit(route, req);
    const { checker, limit, observer } = compiled!;
    let limitHeaders: Array<[string, string]> | undefined;
    if (limit && limit.limiter.enabled) {
      const decision = limit.limiter.hit(limit.key(req, who));
      if (!decision.allowed) {
        observer.rateLimited();
        throw new CodedError(this.api.rateLimited(decision));
      }
      limitHeaders = decision.headers;
    }
    const input = checker.check(req, pathParams);
    const reply = this.call(route, req, exchange, who, input);
    if (reply === null) return null;
    if (reply instanceof Promise) {
      return reply.then((r) => {
        if (r === null) throw new Error(`${route.method} ${route.path}: an asynchronous handler cannot answer later`);
        return this.finish(this.api.renderSuccess({ reply: r, ignored: input.ignored, limitHeaders }, req), route, req);
      });
    }
    return this.finish(this.api.renderSuccess({ reply, ignored: input.ignored, limitHeaders }, req), route, req);
  }

  /** Adds the API's common headers. */
  private finish(out: OutgoingResponse, route: RouteRecord | undefined, req: IncomingRequest): OutgoingResponse {
    if (this.api.commonHeaders) out.headers.push(...this.api.commonHeaders(route, req));
    return out;
  }

  /** Renders a thrown value: the client's error in the API's shape, anything else a logged 500. */
  protected failure(err: unknown, req: IncomingRequest, found: Lookup): OutgoingResponse {
    let coded = err instanceof CodedError ? err.coded : this.api.coded(err);
    if (!coded) {
      this.log(`${this.api.logPrefix}internal error on ${req.method} ${req.path}: ${(err as Error)?.stack ?? String(err)}`);
      coded = this.api.internalError;
    }
    return this.finish(this.api.renderError(coded), found.kind === 'found' ? found.route : undefined, req);
  }
}

/** Tells `observer` how long a request took since `started` (`performance.now()`), and passes its answer on. */
function answered<T>(observer: RouteObserver, started: number, out: T): T {
  observer.answered((performance.now() - started) / 1000);
  return out;
}
