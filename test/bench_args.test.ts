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

t.test('--compare takes two files and a noise band; --report takes one, --charts a folder', async (t) => {
  const cli = parseArgs(['--compare', 'a.json', 'b.json', '--threshold', '5']);
  t.same(cli.compare, ['a.json', 'b.json']);
  t.equal(cli.thresholdPct, 5);
  t.equal(parseArgs([]).thresholdPct, 10, 'default band');
  t.throws(() => parseArgs(['--compare', 'a.json']), /--compare needs two result files/);
  t.throws(() => parseArgs(['--compare', 'a.json', '--smoke']), /--compare needs two result files/);
  t.same(parseArgs(['--report', 'x.json', '--charts', 'docs/bench']), { ...parseArgs([]), report: 'x.json', chartsDir: 'docs/bench' });
  t.throws(() => parseArgs(['--charts', 'docs/bench']), /--charts goes with --report/);
});
