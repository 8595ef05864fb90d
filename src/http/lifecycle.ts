/**
 * The server's phases as its listeners see them: `starting` while the data directory
 * is recovered, `ready`, and `draining` once a SIGTERM arrives. The listeners come up
 * before recovery, so that an orchestrator can tell a live process (`/healthz`) from
 * one that serves (`/readyz`); until ready, and while draining, every other request is
 * refused with a 503 and Retry-After in its API's error shape. While ready, requests
 * answered through a promise are counted, so that a drain can wait for them.
 */
import { NO_PRESSURE, type PressureSource } from '../memory/pressure.js';
import type { Api } from './api.js';
import { jsonResponse, type IncomingRequest, type OutgoingResponse } from './types.js';
import type { Handler } from './uws.js';

export type Phase = 'starting' | 'ready' | 'draining';

/** What a refused client is told to wait, in seconds, before it tries again. */
export const RETRY_AFTER_SECS = 5;

const WHY: Record<Exclude<Phase, 'ready'>, string> = {
  starting: 'The server is starting; try again shortly',
  draining: 'The server is shutting down; try again shortly',
};

export class Lifecycle {
  phase: Phase = 'starting';

  /**
   * `memory`: the heap's pressure, which `/readyz` reports while ready. It stays 200 then
   * (reads are served; only requests that grow state are refused), with
   * `"memory_pressure": true`.
   */
  constructor(private readonly memory: PressureSource = NO_PRESSURE) {}

  /** Admitted requests not yet answered (those answered through a promise). */
  private inflight = 0;
  private idle: Array<() => void> = [];

  /**
   * `handler` behind the health endpoints and the phase: `/healthz` and `/readyz` are
   * answered here, on every Host; outside `ready` anything else gets the 503 of the
   * API `apiOf` names for the request.
   */
  gate(handler: Handler, apiOf: (req: IncomingRequest) => Api): Handler {
    return (req, exchange) => {
      if (req.path === '/healthz') return jsonResponse(200, '{"status":"ok"}');
      if (req.path === '/readyz') return this.readiness();
      if (this.phase !== 'ready') return this.refusal(apiOf(req), this.phase, req);
      const result = handler(req, exchange);
      if (result instanceof Promise) {
        this.inflight++;
        const done = (): void => this.settle();
        result.then(done, done);
      }
      return result;
    };
  }

  /** Resolves once every admitted request has been answered (parked polls aside). */
  settled(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private settle(): void {
    if (--this.inflight > 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }

  private readiness(): OutgoingResponse {
    if (this.phase === 'ready') return jsonResponse(200, this.memory.active ? '{"status":"ready","memory_pressure":true}' : '{"status":"ready","memory_pressure":false}');
    const out = jsonResponse(503, JSON.stringify({ status: this.phase }));
    return { ...out, headers: [...out.headers, ['Retry-After', String(RETRY_AFTER_SECS)]] };
  }

  private refusal(api: Api, phase: Exclude<Phase, 'ready'>, req: IncomingRequest): OutgoingResponse {
    const out = api.renderError(api.unavailable(WHY[phase], RETRY_AFTER_SECS));
    if (api.commonHeaders) out.headers.push(...api.commonHeaders(undefined, req));
    return out;
  }
}
