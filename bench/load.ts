/**
 * Closed-loop load: every connection sends its next request as soon as the previous
 * response arrives, for a fixed window (and never more than a fixed count), recording
 * each latency. Used for request throughput against Parley and the raw baseline alike.
 */
import type { Connection, HttpResponse } from './client.js';
import { CpuMeter, nowMs, summarize, Timeline, type Summary } from './stats.js';

/** The outcome of one closed-loop window. */
export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  seconds: number;
  rps: number;
  latency: Summary;
  /** Requests completed in each second of the window, as requests/s (see `Timeline`). */
  perSecond: number[];
  /** This process's CPU over the window, as a fraction of one core. */
  clientCpu: number;
}

/** Options for `closedLoop`. */
export interface LoadOptions {
  durationMs: number;
  /** Hard cap on requests, so the loop ends even if the clock misbehaves. */
  maxRequests?: number;
  /** Decides whether a response counts as a success (default: status 200). */
  ok?(res: HttpResponse): boolean;
}

/** Drives `conns` in a closed loop; `request(i)` is the raw request for connection i. */
export async function closedLoop(conns: Connection[], request: (i: number) => string, opts: LoadOptions): Promise<LoadResult> {
  const ok = opts.ok ?? ((res) => res.status === 200);
  const maxRequests = opts.maxRequests ?? 50_000_000;
  const latencies: number[] = [];
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  const cpu = new CpuMeter();
  const start = nowMs();
  const end = start + opts.durationMs;
  const timeline = new Timeline(start);
  await Promise.all(
    conns.map(async (conn, i) => {
      const raw = request(i);
      while (nowMs() < end && requests < maxRequests) {
        requests++;
        try {
          const res = await conn.send(raw);
          latencies.push(res.doneAt - res.sentAt);
          timeline.count(res.doneAt);
          if (!ok(res)) {
            errors++;
            firstError ??= `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
          }
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          return;
        }
      }
    }),
  );
  const finished = nowMs();
  const seconds = (finished - start) / 1000;
  return { requests, errors, firstError, seconds, rps: (requests - errors) / seconds, latency: summarize(latencies), perSecond: timeline.rates(finished), clientCpu: cpu.read() };
}
