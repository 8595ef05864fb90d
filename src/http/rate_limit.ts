/**
 * Zulip-style rate limiting: for each key (a user, an address, a username), at most
 * `requests` per fixed window of `windowSecs`, under one or more windows at once (Zulip
 * gives a domain several rules, such as 2 an hour and 5 a day). A refused request is
 * not counted, as in Zulip. Every response of a limited route carries
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (`rateLimitHeaders`).
 */

/** One window: `requests` per `windowSecs`. */
export interface RateWindow {
  requests: number;
  windowSecs: number;
}

/**
 * A limit as `requests` per `windowSecs`; `requests` 0 turns limiting off. `also`
 * holds further windows, each enforced too (`2/3600,5/86400`).
 */
export interface RateLimit extends RateWindow {
  also?: RateWindow[];
}

const WINDOW = /^(\d+)\/(\d+)$/;

/** Parses `N/S` (N requests per S seconds), several joined by commas, or `0` for no limit. */
export function parseRateLimit(text: string): RateLimit {
  if (text === '0') return { requests: 0, windowSecs: 1 };
  const windows = text.split(',').map((part) => {
    const m = WINDOW.exec(part.trim());
    if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) throw new Error(`expected REQUESTS/SECONDS such as 200/60 (several joined by commas), or 0, got '${text}'`);
    return { requests: Number(m[1]), windowSecs: Number(m[2]) };
  });
  const [first, ...also] = windows.sort((a, b) => a.windowSecs - b.windowSecs);
  return also.length > 0 ? { ...first, also } : first;
}

/** A limit as `parseRateLimit` reads it: `200/60`, `2/3600,5/86400` or `0`. */
export function formatRateLimit(limit: RateLimit): string {
  if (limit.requests === 0) return '0';
  return [limit, ...(limit.also ?? [])].map((w) => `${w.requests}/${w.windowSecs}`).join(',');
}

/** The outcome of counting one request. */
export interface RateDecision {
  allowed: boolean;
  /** Requests of the longest window (Zulip's `max_api_calls`). */
  limit: number;
  /** Requests left in the longest window; 0 when refused. */
  remaining: number;
  /** When the longest window resets, in seconds since the epoch. */
  reset: number;
  /** Seconds until a refused request may be retried. */
  retryAfter: number;
}

/**
 * The `X-RateLimit-*` headers of a request counted by several limiters, as Zulip
 * combines them: the lowest limit and remaining count, the latest reset.
 */
export function rateLimitHeaders(decisions: readonly RateDecision[]): Array<[string, string]> {
  let limit = Infinity;
  let remaining = Infinity;
  let reset = 0;
  for (const d of decisions) {
    limit = Math.min(limit, d.limit);
    remaining = Math.min(remaining, d.remaining);
    reset = Math.max(reset, d.reset);
  }
  return [
    ['X-RateLimit-Limit', String(limit)],
    ['X-RateLimit-Remaining', String(remaining)],
    ['X-RateLimit-Reset', String(reset)],
  ];
}

interface Count {
  start: number;
  count: number;
}

/** One window's counts per key. */
class Windows {
  private readonly counts = new Map<string, Count>();
  private lastSweep = 0;
  readonly windowMs: number;

  constructor(readonly requests: number, windowSecs: number) {
    this.windowMs = windowSecs * 1000;
  }

  /** The key's count in the window open at `now`. */
  current(key: string, now: number): Count {
    if (now - this.lastSweep > this.windowMs) this.sweep(now);
    let c = this.counts.get(key);
    if (!c || now - c.start >= this.windowMs) this.counts.set(key, (c = { start: now, count: 0 }));
    return c;
  }

  clear(key: string): void {
    this.counts.delete(key);
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, c] of this.counts) if (now - c.start >= this.windowMs) this.counts.delete(key);
  }
}

/** Counts requests per key under a `RateLimit`, on an injected clock. */
export class RateLimiter {
  /** Shortest window first; the last is the one the headers describe. */
  private readonly windows: Windows[];

  constructor(limit: RateLimit, private readonly now: () => number) {
    this.windows = [limit, ...(limit.also ?? [])].map((w) => new Windows(w.requests, w.windowSecs));
  }

  get enabled(): boolean {
    return this.windows[0].requests > 0;
  }

  /** Counts a request for `key`, unless a window is full, and says whether it may proceed. */
  hit(key: string): RateDecision {
    const now = this.now();
    const counts = this.windows.map((w) => w.current(key, now));
    const full = this.windows.findIndex((w, i) => counts[i].count >= w.requests);
    if (full < 0) for (const c of counts) c.count++;
    const last = this.windows.length - 1;
    const longest = this.windows[last];
    const end = (i: number): number => counts[i].start + this.windows[i].windowMs;
    return {
      allowed: full < 0,
      limit: longest.requests,
      remaining: full < 0 ? longest.requests - counts[last].count : 0,
      reset: Math.ceil(end(last) / 1000),
      retryAfter: full < 0 ? 0 : Math.max(1, Math.ceil((end(full) - now) / 1000)),
    };
  }

  /** Forgets the counts of `key` (Zulip clears a username's failed logins on success). */
  clear(key: string): void {
    for (const w of this.windows) w.clear(key);
  }
}
