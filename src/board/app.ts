/**
 * The message board's entry point: the shared pipeline (`src/http/app.ts`) over the
 * board's route records, with the board's policy: runtime switches (404 while off),
 * each route's raw body ceiling (413), and per-address rate limits. The board listener,
 * the main port (for the board's Host name) and the tests (`inject`) all call `handle`.
 *
 * `bodyLimit` and `refuseBody` let the transport apply the same first steps before a
 * single body byte is buffered.
 */
import type { LogFields, Logger } from '../../actors/core/logger.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import { BOARD_API } from '../http/api.js';
import { App } from '../http/app.js';
import type { Checked } from '../http/params.js';
import { RateLimiter } from '../http/rate_limit.js';
import type { BoardContext, BoardSettings, Reply, RouteRecord } from '../http/route.js';
import type { AbortHook, Exchange, IncomingRequest, OutgoingResponse } from '../http/types.js';
import { BoardError } from './errors.js';

/** The board's request pipeline over the board's route records. */
export class BoardApp extends App<void> {
  constructor(routes: RouteRecord[], runtime: Runtime, readonly settings: BoardSettings, log: Logger) {
    super(BOARD_API, routes, runtime, log);
    const now = (): number => runtime.nowMs();
    const limiters = { publish: new RateLimiter(settings.publishLimit, now), messages: new RateLimiter(settings.messageLimit, now) };
    this.limits((r) => (r.limiter ? [{ limiter: limiters[r.limiter], key: (req) => req.remoteAddress }] : []));
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
      const route = this.routeOf(found);
      this.gate(route);
      throw new BoardError('payload_too_large', `the request body exceeds ${route.body?.maxBytes ?? 0} bytes`);
    } catch (err) {
      return this.failure(err, req, found);
    }
  }

  override handle(req: IncomingRequest, abort: AbortHook): OutgoingResponse | Promise<OutgoingResponse> {
    // Board handlers always answer, never later.
    return super.handle(req, abort as Exchange)!;
  }

  /** The runtime switch a route needs. */
  private gate(route: RouteRecord): void {
    if (route.switch === 'guestbook' && !this.runtime.board().switches.guestbook) throw new BoardError('publication_disabled', 'Guestbook publication is disabled');
    if (route.switch === 'compat' && !this.runtime.board().switches.compat) throw new BoardError('compatibility_disabled', 'GET compatibility publication is disabled');
  }

  protected describe(): LogFields {
    return {};
  }

  protected admit(route: RouteRecord, req: IncomingRequest): void {
    this.gate(route);
    if (route.body && req.body.length > route.body.maxBytes) throw new BoardError('payload_too_large', `the request body exceeds ${route.body.maxBytes} bytes`);
  }

  protected call(route: RouteRecord, req: IncomingRequest, exchange: Exchange, _who: void, input: Checked): Reply | Promise<Reply> {
    const ctx: BoardContext = { params: input.params, body: input.body, runtime: this.runtime, settings: this.settings, request: req, exchange, log: this.log };
    return (route as RouteRecord<any, any, 'board'>).handler(ctx);
  }
}
