/** Shard 2 of 3 of the route fuzz (see `route_fuzz.test.ts`). */
process.env.PARLEY_FUZZ_SHARD = '2/3';
await import('./route_fuzz.test.js');
