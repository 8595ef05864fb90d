/**
 * Command-line options of `npm run bench`.
 */
import type { Mode, Options } from './scenario.js';

/** Parsed command line: the scenario options plus which scenarios to run. */
export interface Cli extends Options {
  scenarios: string[] | null;
  help: boolean;
  /** Pin the load and the servers to separate cores: always, never, or when there are 4 cores or more. */
  pin: 'auto' | 'yes' | 'no';
  /** What was done about placement, in words (set by run.ts). */
  placement?: string;
  /** `--compare A.json B.json`: print the change of every figure, run nothing. */
  compare?: [string, string];
  /** Noise band of `--compare`, in percent. */
  thresholdPct: number;
  /** `--report FILE.json`: render the HTML report of an existing record, run nothing. */
  report?: string;
  /** With `--report`: also write each chart as `<dir>/<chart>.svg`. */
  chartsDir?: string;
}

/** Default noise band of `--compare`: the machine's run-to-run spread is about this. */
export const DEFAULT_THRESHOLD_PCT = 10;

export const USAGE = `Usage: npm run bench -- [options]

  (no options)              every scenario in quick mode (a few minutes)
  --smoke                   every scenario at tiny sizes (CI; under a minute)
  --scenario NAME[,NAME]    only these scenarios, at full size unless --smoke/--quick
  --quick | --full          force a mode
  --n N                     size: fanout N polls, send senders, poll connections, idle-queues
                            queues, parked polls, heartbeat queues, correctness queues
  --duration S              measuring window of one run, in seconds
  --runs R                  measured runs per figure (default 3, smoke 1); the median is reported
  --seed S                  seed of the correctness scenario's random choices (default 1)
  --fsync always|batch|none fsync policy of the servers the bench starts
  --target URL --email E --api-key K
                            drive an existing Parley (the organization owner's credentials);
                            only the scenarios that need nothing but the API run
  --sources A,B,...         source addresses for large connection pools
  --server-node-args "ARGS" extra node flags for the servers the bench starts,
                            e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  --pin | --no-pin          pin the load (core 0) and the servers (the other cores)
                            apart with taskset, or not; by default they are pinned
                            when the machine has 4 cores or more
  --compare A.json B.json   print the change of every figure from A to B (value A, value B,
                            change %, improved/REGRESSION given the figure's direction);
                            runs nothing, needs no server
  --threshold PCT           noise band of --compare, in percent (default ${DEFAULT_THRESHOLD_PCT})
  --report FILE.json        write the HTML report of an existing result file next to it
  --charts DIR              with --report: also write each chart as DIR/<chart>.svg
  --help                    this text

Every run writes bench/results/<time>.json and, next to it, <time>.html: the figures,
the baselines that ran or were skipped, and charts (latency distribution, throughput
over time, memory against N) as inline SVG.
`;

/** Parses argv (without node and script). Throws with a clear message on bad input. */
export function parseArgs(argv: string[]): Cli {
  const flags = new Map<string, string>();
  const booleans = new Set(['--smoke', '--quick', '--full', '--help', '--pin', '--no-pin']);
  const valued = new Set(['--scenario', '--n', '--duration', '--runs', '--seed', '--fsync', '--target', '--email', '--api-key', '--sources', '--server-node-args', '--threshold', '--report', '--charts']);
  let compare: [string, string] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (booleans.has(flag)) flags.set(flag, 'true');
    else if (flag === '--compare') {
      const files = argv.slice(i + 1, i + 3);
      if (files.length < 2 || files.some((f) => f.startsWith('--'))) throw new Error('--compare needs two result files: --compare A.json B.json');
      compare = [files[0], files[1]];
      i += 2;
    }
    else if (valued.has(flag)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
      flags.set(flag, value);
    } else throw new Error(`unknown option ${flag}\n\n${USAGE}`);
  }
  const scenarios = flags.get('--scenario')?.split(',').map((s) => s.trim()).filter(Boolean) ?? null;
  const mode: Mode = flags.has('--smoke') ? 'smoke' : flags.has('--quick') ? 'quick' : flags.has('--full') || scenarios ? 'full' : 'quick';
  const fsync = flags.get('--fsync');
  if (fsync !== undefined && fsync !== 'always' && fsync !== 'batch' && fsync !== 'none') throw new Error('--fsync must be always, batch or none');
  const target = flags.get('--target');
  const email = flags.get('--email');
  const apiKey = flags.get('--api-key');
  if (target && (!email || !apiKey)) throw new Error('--target needs --email and --api-key (the organization owner)');
  if (flags.has('--charts') && !flags.has('--report')) throw new Error('--charts goes with --report FILE.json');
  return {
    mode,
    scenarios,
    help: flags.has('--help'),
    pin: flags.has('--no-pin') ? 'no' : flags.has('--pin') ? 'yes' : 'auto',
    n: positive(flags, '--n'),
    durationS: positive(flags, '--duration'),
    runs: positive(flags, '--runs') ?? (mode === 'smoke' ? 1 : 3),
    seed: positive(flags, '--seed') ?? 1,
    fsync: fsync as Options['fsync'],
    sources: flags.get('--sources')?.split(',').filter(Boolean),
    serverNodeArgs: flags.get('--server-node-args')?.split(/\s+/).filter(Boolean),
    remote: target ? { url: target, email: email!, apiKey: apiKey! } : undefined,
    compare,
    thresholdPct: positive(flags, '--threshold') ?? DEFAULT_THRESHOLD_PCT,
    report: flags.get('--report'),
    chartsDir: flags.get('--charts'),
  };
}

function positive(flags: Map<string, string>, name: string): number | undefined {
  const raw = flags.get(name);
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`);
  return v;
}
