/** The seeded PRNG of randomized tests (mulberry32, shared with the bench), so a run can be replayed from its seed. */
export { seededRandom as prng } from '../bench/stats.js';
