/**
 * Preloaded (`--import`) into a Parley server the bench starts locally, never into a
 * deployment. It reads what a `GET /metrics` scrape cannot (the heap right after a forced
 * full GC, the loop delay since the previous reading): on SIGUSR2 it reports, on one
 * stderr line starting with `parley-bench-probe `, the event-loop delay seen inside the
 * server since the last report (beyond the 10 ms sampling interval), then the memory
 * after a full GC (when the server runs with --expose-gc). The GC runs after the delay is read and before the histogram
 * is reset, so its pause is not counted as loop delay.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const RESOLUTION_MS = 10;
const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
delay.enable();

process.on('SIGUSR2', () => {
  // The histogram records whole timer intervals; the delay is what exceeds the interval.
  const toMs = (ns: number): number => Math.max(0, Math.round(ns / 1e3 - RESOLUTION_MS * 1e3) / 1e3);
  const loop = { p50: toMs(delay.percentile(50)), p99: toMs(delay.percentile(99)), max: toMs(delay.max) };
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  const m = process.memoryUsage();
  delay.reset();
  const reading = { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, gc: gc !== undefined, loop };
  process.stderr.write(`parley-bench-probe ${JSON.stringify(reading)}\n`);
});
