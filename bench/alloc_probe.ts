/**
 * Preloaded (`--import`) into a server by `bench/profile.ts --alloc`: samples the V8
 * heap's allocations (every ~4 KB allocated, including objects already collected, so
 * short-lived garbage counts) from start to SIGTERM, then writes the sampling profile
 * to `$PARLEY_ALLOC_OUT/alloc-<pid>.json` and exits.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const out = process.env.PARLEY_ALLOC_OUT;
if (out) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  process.prependListener('SIGTERM', () => {
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (!err) writeFileSync(`${out}/alloc-${process.pid}.json`, JSON.stringify(result.profile));
      process.exit(0);
    });
  });
}
