/**
 * The bench's command line and its placement plan: how load and servers are put on
 * cores, and that bad options are refused with a message.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { parseArgs, usage } from '../bench/args.js';
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

t.test('usage errors name what is wrong', async (t) => {
  t.throws(() => parseArgs(['--bogus']), /unknown option '--bogus'/);
  t.throws(() => parseArgs(['--smoke', '--smok']), /unknown option '--smok'/);
  t.throws(() => parseArgs(['--n']), /--n <N>' argument missing/);
  t.throws(() => parseArgs(['--duration', 'soon']), /--duration must be a positive number, got 'soon'/);
  t.throws(() => parseArgs(['--fsync', 'sometimes']), /--fsync must be always, batch or none/);
  t.throws(() => parseArgs(['fanout']), /unexpected argument 'fanout'/);
});

t.test('values: --flag value and --flag=value; modes; --no-pin wins', async (t) => {
  t.equal(parseArgs(['--n=5000']).n, 5000);
  t.same(parseArgs(['--server-node-args', '--cpu-prof --cpu-prof-dir=/tmp/prof']).serverNodeArgs, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'], 'a value may start with --');
  t.same(parseArgs(['--scenario', 'fanout, send']).scenarios, ['fanout', 'send']);
  t.equal(parseArgs(['--scenario', 'fanout']).mode, 'full', 'a chosen scenario runs at full size');
  t.equal(parseArgs(['--scenario', 'fanout', '--quick']).mode, 'quick');
  t.equal(parseArgs(['--full', '--smoke']).mode, 'smoke');
  t.equal(parseArgs(['--smoke']).runs, 1);
  t.equal(parseArgs(['--no-pin', '--pin']).pin, 'no');
  t.same(parseArgs(['--target', 'http://h', '--email', 'o@x', '--api-key', 'k']).remote, { url: 'http://h', email: 'o@x', apiKey: 'k' });
});

t.test('--help: commander lists every option and the results files', async (t) => {
  t.equal(parseArgs(['--help']).help, true);
  t.equal(parseArgs([]).help, false);
  const text = usage();
  t.match(text, /^Usage: npm run bench -- \[options\]/);
  for (const flag of ['--smoke', '--scenario', '--quick', '--full', '--n', '--duration', '--runs', '--seed', '--fsync', '--target', '--email', '--api-key', '--sources', '--server-node-args', '--pin', '--no-pin', '--compare', '--threshold', '--report', '--charts', '--help']) {
    t.match(text, new RegExp(`^  ${flag}\\b`, 'm'), flag);
  }
  t.match(text, /--compare <A\.json> <B\.json>/);
  t.match(text, /noise band of --compare, in percent \(default 10\)/);
  t.match(text, /Every run writes bench\/results\/<time>\.json and, next to it, <time>\.html/);
});
