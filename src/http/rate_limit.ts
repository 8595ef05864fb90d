/**
 * Zulip-style rate limiting: a fixed window of `limit` requests per `windowSecs` for
 * each key (a user, or the client address for unauthenticated requests). Every limited
 * response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.
 */

/** A limit as `requests` per `windowSecs`; `requests` 0 turns limiting off. */
export interface RateLimit {
  requests: number;
  windowSecs: number;
}

/** Parses `N/S` (N requests per S seconds), or `0` for no limit. */
export function parseRateLimit(text: string): RateLimit {
  if (text === '0') return { requests: 0, windowSecs: 1 };
  const m = /^(\d+)\/(\d+)$/.exec(text);
  if (!m || Number(m[2]) === 0) throw new Error(`expected REQUESTS/SECONDS such as 200/60, or 0, got '${text}'`);
  return { requests: Number(m[1]), windowSecs: Number(m[2]) };
}

/** The outcome of counting one request. */
export interface RateDecision {
  allowed: boolean;
  headers: Array<[string, string]>;
  /** Seconds until the window resets, when refused. */
  retryAfter: number;
}

interface Window {
  start: number;
  count: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(private readonly limit: RateLimit, private readonly now: () => number) {}

  get enabled(): boolean {
    return this.limit.requests > 0;
  }

  /** Counts a request for `key` and says whether it may proceed. */
  hit(key: string): RateDecision {
    const now = this.now();
    const windowMs = this.limit.windowSecs * 1000;
    if (now - this.lastSweep > windowMs) this.sweep(now, windowMs);
    let w = this.windows.get(key);
    if (!w || now - w.start >= windowMs) this.windows.set(key, (w = { start: now, count: 0 }));
    w.count++;
    const reset = Math.ceil((w.start + windowMs) / 1000);
    const remaining = Math.max(0, this.limit.requests - w.count);
    const allowed = w.count <= this.limit.requests;
    return {
      allowed,
      retryAfter: Math.max(1, Math.ceil((w.start + windowMs - now) / 1000)),
      headers: [
        ['X-RateLimit-Limit', String(this.limit.requests)],
        ['X-RateLimit-Remaining', String(remaining)],
        ['X-RateLimit-Reset', String(reset)],
      ],
    };
  }

  private sweep(now: number, windowMs: number): void {
    this.lastSweep = now;
    for (const [key, w] of this.windows) if (now - w.start >= windowMs) this.windows.delete(key);
  }
}
