/**
 * Command-line options of `npm run bench`, parsed by commander; `--help` is generated
 * from the same options (`usage()`).
 */
import { Command, CommanderError } from 'commander';
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

/** What commander parsed: valued options hold their text; `--compare` its files (or `true` when none followed). */
interface Parsed {
  smoke?: boolean;
  quick?: boolean;
  full?: boolean;
  scenario?: string;
  n?: string;
  duration?: string;
  runs?: string;
  seed?: string;
  fsync?: string;
  target?: string;
  email?: string;
  apiKey?: string;
  sources?: string;
  serverNodeArgs?: string;
  pin?: boolean;
  compare?: string[] | true;
  threshold?: string;
  report?: string;
  charts?: string;
  interval?: string;
  maxSeconds?: string;
  memoryLimitMib?: string;
}

const RESULTS = `
Every run writes bench/results/<time>.json and, next to it, <time>.html: the figures,
the baselines that ran or were skipped, and charts (latency distribution, throughput
over time, memory against N) as inline SVG.`;

/** The bench's command: its options, their help, and the paragraph about results files. */
function benchCommand(): Command {
  return (
    new Command('npm run bench --')
      .usage('[options]')
      .description('Runs the load scenarios. With no options: every scenario in quick mode (a few minutes).')
      .option('--smoke', 'every scenario at tiny sizes (CI; under a minute)')
      .option('--scenario <NAME[,NAME]>', 'only these scenarios, at full size unless --smoke/--quick')
      .option('--quick', 'force quick mode')
      .option('--full', 'force full mode')
      .option('--n <N>', 'size: fanout N polls, send senders, poll connections, idle-queues queues, parked polls, heartbeat queues, correctness queues, stall bytes per unbounded value, capacity messages')
      .option('--interval <N>', 'capacity: read the server every N messages (default 1000000)')
      .option('--max-seconds <S>', 'capacity: stop sending after S seconds (default 21600)')
      .option('--memory-limit-mib <MIB>', "capacity: the server's heap limit (default 4096, as every bench server)")
      .option('--duration <S>', 'measuring window of one run, in seconds')
      .option('--runs <R>', 'measured runs per figure (default 3, smoke 1); the median is reported')
      .option('--seed <S>', "seed of the correctness scenario's random choices (default 1)")
      .option('--fsync <always|batch|none>', 'fsync policy of the servers the bench starts')
      .option('--target <URL>', "drive an existing Parley (with --email and --api-key, the organization owner's credentials); only the scenarios that need nothing but the API run")
      .option('--email <E>', "with --target: the organization owner's email")
      .option('--api-key <K>', "with --target: the organization owner's API key")
      .option('--sources <A,B,...>', 'source addresses for large connection pools')
      .option('--server-node-args <ARGS>', 'extra node flags for the servers the bench starts, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"')
      .option('--pin', 'pin the load (core 0) and the servers (the other cores) apart with taskset; by default they are pinned when the machine has 4 cores or more')
      .option('--no-pin', 'do not pin (wins over --pin)')
      // Optional and variadic, so that a missing file (`--compare A.json --smoke`) is reported as such below.
      .option('--compare [A.json B.json...]', 'print the change of every figure from A to B (value A, value B, change %, improved/REGRESSION given the figure\'s direction); runs nothing, needs no server')
      .option('--threshold <PCT>', `noise band of --compare, in percent (default ${DEFAULT_THRESHOLD_PCT})`)
      .option('--report <FILE.json>', 'write the HTML report of an existing result file next to it')
      .option('--charts <DIR>', 'with --report: also write each chart as DIR/<chart>.svg')
      .helpOption('--help', 'this text')
      // parseArgs names a stray argument itself (commander would only count them).
      .allowExcessArguments()
      .configureHelp({ optionTerm: (o) => (o.long === '--compare' ? '--compare <A.json> <B.json>' : o.flags) })
      .addHelpText('after', RESULTS)
  );
}

/** The `--help` text, as commander writes it (wrapped to the terminal's width). */
export function usage(): string {
  let text = '';
  benchCommand()
    .configureOutput({ writeOut: (s) => (text += s) })
    .outputHelp();
  return text;
}

/** Parses argv (without node and script). Throws with a clear message on bad input. */
export function parseArgs(argv: string[]): Cli {
  const cmd = benchCommand()
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
  // --no-pin wins over --pin whatever their order (commander keeps the last one given).
  let noPin = false;
  cmd.on('option:no-pin', () => (noPin = true));
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.helpDisplayed') return { ...fromParsed({}, false), help: true };
    if (err instanceof CommanderError) throw new Error(err.message.replace(/^error: /, ''));
    throw err;
  }
  if (cmd.args.length > 0) throw new Error(`unexpected argument '${cmd.args[0]}': every option starts with --`);
  return fromParsed(cmd.opts<Parsed>(), noPin);
}

/** The Cli of what commander parsed, each option checked as before. */
function fromParsed(o: Parsed, noPin: boolean): Cli {
  let compare: [string, string] | undefined;
  if (o.compare !== undefined) {
    if (o.compare === true || o.compare.length !== 2) throw new Error('--compare needs two result files: --compare A.json B.json');
    compare = [o.compare[0], o.compare[1]];
  }
  const scenarios = o.scenario?.split(',').map((s) => s.trim()).filter(Boolean) ?? null;
  const mode: Mode = o.smoke ? 'smoke' : o.quick ? 'quick' : o.full || scenarios ? 'full' : 'quick';
  const fsync = o.fsync;
  if (fsync !== undefined && fsync !== 'always' && fsync !== 'batch' && fsync !== 'none') throw new Error('--fsync must be always, batch or none');
  const { target, email, apiKey } = o;
  if (target && (!email || !apiKey)) throw new Error('--target needs --email and --api-key (the organization owner)');
  if (o.charts !== undefined && o.report === undefined) throw new Error('--charts goes with --report FILE.json');
  return {
    mode,
    scenarios,
    help: false,
    pin: noPin ? 'no' : o.pin ? 'yes' : 'auto',
    n: positive(o.n, '--n'),
    durationS: positive(o.duration, '--duration'),
    runs: positive(o.runs, '--runs') ?? (mode === 'smoke' ? 1 : 3),
    seed: positive(o.seed, '--seed') ?? 1,
    fsync: fsync as Options['fsync'],
    sources: o.sources?.split(',').filter(Boolean),
    serverNodeArgs: o.serverNodeArgs?.split(/\s+/).filter(Boolean),
    remote: target ? { url: target, email: email!, apiKey: apiKey! } : undefined,
    compare,
    thresholdPct: positive(o.threshold, '--threshold') ?? DEFAULT_THRESHOLD_PCT,
    report: o.report,
    chartsDir: o.charts,
    interval: positive(o.interval, '--interval'),
    maxSeconds: positive(o.maxSeconds, '--max-seconds'),
    memoryLimitMib: positive(o.memoryLimitMib, '--memory-limit-mib'),
  };
}

function positive(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`);
  return v;
}
