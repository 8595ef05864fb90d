/**
 * The bench's command line and its placement plan: how load and servers are put on
 * cores, and that bad options are refused with a message.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { parseArgs } from '../bench/args.js';
import { planPlacement } from '../bench/cpus.js';

t.test('pinning: automatic by default, forced or refused by flag', async (t) => {
  t.equal(parseArgs([]).pin, 'auto');
  t.equal(parseArgs(['--pin']).pin, 'yes');
  t.equal(parseArgs(['--no-pin']).pin, 'no');
  t.throws(() => parseArgs(['--runs', '0']), /--runs must be a positive number/);
  t.throws(() => parseArgs(['--target', 'http://127.0.0.1:1']), /--target needs --email and --api-key/);
});

t.test('placement plan', async (t) => {
  t.match(planPlacement(true, 1), /one core/, 'nothing to split on one core');
  t.match(planPlacement(false, 2), /not pinned: 2 cores/, 'two cores are shared unless forced');
  const hasTaskset = !spawnSync('taskset', ['-p', String(process.pid)]).error;
  if (hasTaskset) {
    t.same(planPlacement(true, 2), { load: '0', servers: '1' }, 'forced on two cores: one each');
    t.same(planPlacement(false, 8), { load: '0', servers: '1-7' }, 'from four cores: load on core 0, servers on the rest');
  } else {
    t.match(planPlacement(false, 8), /taskset is not available/);
  }
});
