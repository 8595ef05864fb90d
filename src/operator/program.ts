/**
 * The operator CLI's command tree (commander): every command with its options, its help
 * and its action. src/cli.ts runs it; the help snapshots and shell completion read it.
 */
import { Argument, Command, CommanderError, Option } from 'commander';
import type { BoardSwitch } from '../../actors/shared/board_types.js';
import { resolveConfig } from '../config.js';
import { completionScript, SHELLS } from './completion.js';
import { configCommand } from './config_command.js';
import { serveCommand, settingsCommand } from './settings_command.js';

// The commands that open a data directory load the runtime (most of the CLI's start-up); each
// action imports its module when it runs, so `--help`, `config`, `completion` and a usage error
// do without it.
const boardCommandsModule = () => import('./board_commands.js');
const dataCommandsModule = () => import('./data_commands.js');
const inviteCommandsModule = () => import('./invite_commands.js');
const orgCommandsModule = () => import('./org_commands.js');
const organizationDataModule = () => import('./organization_data.js');

/** The options of a command that works on a data directory. */
interface DataDirOptions {
  dataDir?: string;
  config?: string;
}

const EXAMPLES = `
Examples:
  parley serve --config /etc/parley/parley.toml
  parley config --port 8080                 the settings, and where each came from
  parley board guestbook on|off             turn guestbook publication on or off
  parley snapshots                          pick a snapshot, then restore it:
  parley restore --from snap-0000000000120004.psnap --to ./restored --to-seq 125000
  parley history --org 3 --limit 20         organization 3's newest facts, with seqs
  parley restore-org --org 3 --to-seq 118000   organization 3 back to seq 118000, in place
  source <(parley completion bash)          shell completion (bash or zsh)

--data-dir defaults to $PARLEY_DATA_DIR, then data_dir in the configuration file
(--config, $PARLEY_CONFIG or ./parley.toml), then ./data.
`;

const BOARD_SWITCH_HELP: Record<BoardSwitch, string> = {
  guestbook: 'turn guestbook publication on or off',
  compat: 'turn GET compatibility publication on or off',
};

/** A command's value for a flag it cannot do without (commander's `requiredOption` words its error differently). */
function need(value: string | undefined, flag: string): string {
  if (value === undefined) throw new Error(`${flag} is required`);
  return value;
}

/** A restore's point from `--to-seq` or `--at` (one of them at most); undefined when neither is given. */
function restorePoint(toSeq: string | undefined, at: string | undefined): { toSeq: number } | { atMs: number } | undefined {
  if (toSeq !== undefined && at !== undefined) throw new Error('give --to-seq or --at, not both');
  if (toSeq !== undefined) {
    if (!/^\d+$/.test(toSeq)) throw new Error('--to-seq must be a non-negative integer');
    return { toSeq: Number(toSeq) };
  }
  if (at === undefined) return undefined;
  const atMs = /^\d{4}-\d\d-\d\d/.test(at) ? Date.parse(at) : NaN;
  if (!Number.isFinite(atMs)) throw new Error(`--at must be a time such as 2026-11-28T10:42:00Z (ISO 8601; without a zone, local time), not ${JSON.stringify(at)}`);
  return { atMs };
}

/** The data directory: --data-dir, else the configuration's (environment, then file, then default). */
function dataDirOf(opts: DataDirOptions): string {
  return opts.dataDir ?? resolveConfig(opts.config === undefined ? [] : ['--config', opts.config], process.env).config.dataDir;
}

/** Adds --data-dir (required, or defaulted through the configuration) and --config. */
function withDataDir(cmd: Command, required = false): Command {
  if (required) return cmd.option('--data-dir <dir>', 'the data directory (required)');
  return cmd.option('--data-dir <dir>', 'the data directory').addOption(new Option('--config <path>', 'the configuration file to take data_dir from').env('PARLEY_CONFIG'));
}

function orgCommands(program: Command): void {
  withDataDir(program.command('create-org').description("create an organization, its owner and its starter channels on a stopped server's data directory"), true)
    .option('--name <name>', 'the organization name (required)')
    .option('--subdomain <sub>', "its subdomain ('' for the default organization) (required)")
    .option('--owner-email <email>', "the owner's email (required)")
    .option('--owner-password <password>', "the owner's password (required)")
    .option('--owner-name <name>', "the owner's full name (default: the email's local part)")
    .action(async (o: DataDirOptions & { name?: string; subdomain?: string; ownerEmail?: string; ownerPassword?: string; ownerName?: string }) => {
      const dataDir = need(o.dataDir, '--data-dir');
      const org = { name: need(o.name, '--name'), subdomain: need(o.subdomain, '--subdomain'), ownerEmail: need(o.ownerEmail, '--owner-email'), ownerPassword: need(o.ownerPassword, '--owner-password') };
      await (await orgCommandsModule()).createOrgCommand(dataDir, { ...org, ownerName: o.ownerName ?? org.ownerEmail.split('@')[0] });
    });
  for (const [name, active] of [['deactivate-org', false], ['reactivate-org', true]] as const) {
    withDataDir(program.command(name).description(`${name.split('-')[0]} an organization (stopped server)`), true)
      .option('--subdomain <sub>', 'the organization (required)')
      .action(async (o: DataDirOptions & { subdomain?: string }) => (await orgCommandsModule()).setOrgActiveCommand(need(o.dataDir, '--data-dir'), need(o.subdomain, '--subdomain'), active));
  }
  withDataDir(program.command('grant-email-changes').description("let an owner change other users' emails (stopped server)"))
    .option('--subdomain <sub>', 'the organization', '')
    .option('--email <email>', "the owner's email (required)")
    .option('--revoke', 'take the permission back')
    .action(async (o: DataDirOptions & { subdomain: string; email?: string; revoke?: boolean }) => (await orgCommandsModule()).grantEmailChangesCommand(dataDirOf(o), o.subdomain, need(o.email, '--email'), !o.revoke));
}

function inviteCommands(program: Command): void {
  withDataDir(program.command('accept-invite').description("accept an invitation: make its account (stopped server)"))
    .option('--subdomain <sub>', 'the organization', '')
    .option('--key <key>', 'the invitation key, or its /join/ link (required)')
    .option('--full-name <name>', "the new user's full name (required)")
    .option('--password <password>', "the new user's password (required)")
    .option('--email <email>', 'the email, for a reusable invitation link')
    .action(async (o: DataDirOptions & { subdomain: string; key?: string; fullName?: string; password?: string; email?: string }) =>
      (await inviteCommandsModule()).acceptInviteCommand(dataDirOf(o), { subdomain: o.subdomain, key: need(o.key, '--key'), fullName: need(o.fullName, '--full-name'), password: need(o.password, '--password'), email: o.email }),
    );
  withDataDir(program.command('outbox').description('list the mail in the outbox (DIR/outbox), or print one message'))
    .option('--show <file>', 'print this message, headers decoded')
    .action(async (o: DataDirOptions & { show?: string }) => (await inviteCommandsModule()).outboxCommand(dataDirOf(o), o.show));
}

function dataCommands(program: Command): void {
  withDataDir(program.command('snapshot').description('take a snapshot now (asks the running server, or works offline)')).action(async (o: DataDirOptions) => (await dataCommandsModule()).snapshotCommand(dataDirOf(o)));
  withDataDir(program.command('snapshots').description('list snapshots: time, seq, size, verified or not')).action(async (o: DataDirOptions) => (await dataCommandsModule()).listSnapshotsCommand(dataDirOf(o)));
  withDataDir(program.command('verify').description('verify every snapshot, log segment and uploaded file a snapshot names (exit 1 if any is corrupt or missing)'))
    .option('--org <id>', "that organization alone: its chunks in the newest snapshot, and its own sequence in the log with no gap")
    .action(async (o: DataDirOptions & { org?: string }) => {
      if (o.org !== undefined && !/^\d+$/.test(o.org)) throw new Error('--org must be an organization id');
      const ok = o.org === undefined ? (await dataCommandsModule()).verifyCommand(dataDirOf(o)) : (await organizationDataModule()).verifyOrgCommand(dataDirOf(o), Number(o.org));
      if (!ok) process.exitCode = 1;
    });
  withDataDir(program.command('inspect').description('counts per organization: users, channels, messages, queues'))
    .option('--org <id>', 'that organization alone, with each of its channels')
    .action(async (o: DataDirOptions & { org?: string }) => {
      if (o.org !== undefined && !/^\d+$/.test(o.org)) throw new Error('--org must be an organization id');
      (await dataCommandsModule()).inspectCommand(dataDirOf(o), o.org === undefined ? undefined : Number(o.org));
    });
  withDataDir(program.command('history').description("one organization's newest facts in the log, one JSON line each (seq, type, ids; never message text): to find the seq before a mistake"))
    .option('--org <id>', 'the organization (required)')
    .option('--limit <n>', 'how many of the newest to print', '50')
    .option('--after-seq <n>', 'only facts after this seq', '0')
    .action(async (o: DataDirOptions & { org?: string; limit: string; afterSeq: string }) => {
      const org = need(o.org, '--org');
      if (!/^\d+$/.test(org)) throw new Error('--org must be an organization id');
      if (!/^[1-9]\d*$/.test(o.limit)) throw new Error('--limit must be a positive integer');
      if (!/^\d+$/.test(o.afterSeq)) throw new Error('--after-seq must be a non-negative integer');
      (await organizationDataModule()).historyCommand(dataDirOf(o), Number(org), Number(o.limit), Number(o.afterSeq));
    });
  withDataDir(program.command('restore').description('rebuild a snapshot (plus the log up to a seq) into a fresh directory, with the uploaded files it names (exit 1 if one is missing or corrupt)'))
    .option('--from <snapshot>', 'the snapshot: a file name in the data directory, or a path (required)')
    .option('--to <dir>', 'the new data directory, absent or empty (required)')
    .option('--to-seq <n>', 'replay the log up to this seq (default: all of it)')
    .option('--at <time>', 'or up to this moment, ISO 8601 (2026-11-28T10:42:00Z; without a zone, local time): the last record committed at or before it')
    .action(async (o: DataDirOptions & { from?: string; to?: string; toSeq?: string; at?: string }) => {
      const point = restorePoint(o.toSeq, o.at);
      if (!(await (await dataCommandsModule()).restoreCommand(dataDirOf(o), need(o.from, '--from'), need(o.to, '--to'), point))) process.exitCode = 1;
    });
  withDataDir(program.command('restore-org').description('put one organization back as it was at an earlier seq, in place, leaving every other one as it is (stopped server; its event queues are dropped)'))
    .option('--org <id>', 'the organization (required; `parley inspect` lists them)')
    .option('--to-seq <n>', 'the seq to go back to (`parley history --org` lists the organization\'s facts with their seqs and times)')
    .option('--at <time>', 'or the moment to go back to, ISO 8601 (2026-11-28T10:42:00Z; without a zone, local time): the last record committed at or before it')
    .action(async (o: DataDirOptions & { org?: string; toSeq?: string; at?: string }) => {
      const org = need(o.org, '--org');
      if (!/^\d+$/.test(org)) throw new Error('--org must be an organization id');
      const point = restorePoint(o.toSeq, o.at);
      if (!point) throw new Error('--to-seq or --at is required');
      const report = await (await organizationDataModule()).restoreOrgCommand(dataDirOf(o), Number(org), point);
      console.log(JSON.stringify(report));
    });
  withDataDir(program.command('compact').description('snapshot, then delete older snapshots and the log they alone cover'))
    .option('--keep <k>', 'snapshots to keep', '3')
    .action(async (o: DataDirOptions & { keep: string }) => {
      const keep = Number(o.keep);
      if (!Number.isInteger(keep) || keep < 1) throw new Error('--keep must be a positive integer');
      await (await dataCommandsModule()).compactCommand(dataDirOf(o), keep);
    });
}

function boardCommands(program: Command): void {
  const board = program.command('board').description("the message board's switches: a running server applies them at once, a stopped one at its next start");
  for (const name of Object.keys(BOARD_SWITCH_HELP) as BoardSwitch[]) {
    withDataDir(board.command(name).description(BOARD_SWITCH_HELP[name]))
      .addArgument(new Argument('<state>').choices(['on', 'off']))
      .action(async (state: string, o: DataDirOptions) => (await boardCommandsModule()).boardSwitchCommand(dataDirOf(o), name, state === 'on'));
  }
  withDataDir(board.command('status').description('show both board switches')).action(async (o: DataDirOptions) => (await boardCommandsModule()).boardStatusCommand(dataDirOf(o)));
}

/** Every command below `cmd`, and `cmd` itself, parents first. */
export function allCommands(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(allCommands)];
}

/** The whole CLI. Usage errors exit 2 (as the commands' own errors do), help exits 0. */
export function buildProgram(): Command {
  const program = new Command('parley').description('Run and operate a Parley server.').addHelpText('after', EXAMPLES);
  program.addCommand(serveCommand());
  program.addCommand(settingsCommand('config', 'print the effective configuration, as a parley.toml with where each value came from (secrets masked)', configCommand));
  orgCommands(program);
  inviteCommands(program);
  dataCommands(program);
  boardCommands(program);
  program
    .command('completion')
    .description('print a shell completion script')
    .addArgument(new Argument('<shell>').choices(SHELLS))
    .action((shell: (typeof SHELLS)[number]) => {
      process.stdout.write(completionScript(program, shell));
    });
  for (const cmd of allCommands(program)) {
    cmd
      .showHelpAfterError()
      .configureOutput({ outputError: (str, write) => write(str.replace(/^error: /, 'parley: ')) })
      .exitOverride((err: CommanderError) => process.exit(err.exitCode === 0 ? 0 : 2));
  }
  return program;
}
