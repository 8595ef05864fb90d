/**
 * Configuration, from command-line flags first, then `PARLEY_*` environment variables,
 * then the configuration file (`parley.toml`), then defaults. Every setting is
 * documented in docs/operator-guide.md (Configuration). The flags are commander options made from SETTINGS
 * (`settingsOptions`), which `parley serve`, `parley config` and resolveConfig all parse.
 */
import { Command, CommanderError, Option } from 'commander';
import type { FsyncPolicy } from '../snapshots/log.js';
import { LOG_LEVELS, type LogLevel } from '../actors/core/logger.js';
import { configFilePath, fileKeyOf, readConfigFile, settingType } from './config_file.js';
import { formatRateLimit, parseRateLimit, type RateLimit } from './http/rate_limit.js';
import { defaultMemoryLimitMib, describeDefaultLimit, parseMemoryLimitMib } from './memory/limit.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** The host name the server is reached at; `sub.<externalHost>` selects organization `sub`. */
  externalHost: string;
  fsync: FsyncPolicy;
  fsyncBatchMs: number;
  segmentBytes: number;
  /**
   * Request bodies over this many bytes get 413 before they are buffered. Uploads (routes
   * that stream their body) are held to `maxFileUploadSizeMib` instead; the default is
   * Django's `DATA_UPLOAD_MAX_MEMORY_SIZE`, 2.5 MiB, for the forms of every other route.
   */
  maxBodyBytes: number;
  heartbeatMinMs: number;
  heartbeatMaxMs: number;
  queueLifespanMs: number;
  queueMaxEvents: number;
  skipCorrupt: boolean;
  /** Take a snapshot this often (0: never by time). */
  snapshotIntervalMs: number;
  /** Take a snapshot after this many facts since the last one (0: never by count). */
  snapshotEveryRecords: number;
  /** ... and after facts amounting to this percent of those the last snapshot covered (0: off). */
  snapshotGrowthPercent: number;
  /** Snapshots kept on disk. */
  keepSnapshots: number;
  /** Bound of the message body cache (bodies read from the body store and new ones), in MiB. */
  bodyCacheMib: number;
  /** Requests per window for each user (`N/S`, or `0` for none); the event queue endpoints are exempt. */
  rateLimit: RateLimit;
  /** Requests per window for each address without credentials. */
  rateLimitAnonymous: RateLimit;
  /** Login attempts per window for each username (Zulip's `authenticate_by_username`); a success clears the count. */
  rateLimitAuthenticate: RateLimit;
  /** Port of the message board's own listener (0: any free port). */
  boardPort: number;
  /** Host name that selects the board on the main port too (empty: never). */
  boardHost: string;
  /** Lifetime of a board write-challenge nonce, in seconds. */
  boardNonceTtlSecs: number;
  /** Per-address limit shared by the guestbook and the GET publication path. */
  boardRateLimit: RateLimit;
  /** Per-address limit of the board's POST /api/v1/messages. */
  boardMessageRateLimit: RateLimit;
  /**
   * Zulip's `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE` (default false): presence data and
   * events are limited to the users a guest may access under `can_access_all_users_group`.
   */
  canAccessAllUsersGroupLimitsPresence: boolean;
  /** SMTP server for outgoing mail (empty: mail goes to the outbox, `<data dir>/outbox`). */
  smtpHost: string;
  smtpPort: number;
  /** Connect with TLS from the start (port 465); otherwise STARTTLS when the server offers it. */
  smtpSecure: boolean;
  smtpUser: string;
  smtpPassword: string;
  /** The From address of outgoing mail (empty: `Parley <noreply@externalHost>`). */
  mailFrom: string;
  /** Largest uploaded file, in MiB (Zulip's `MAX_FILE_UPLOAD_SIZE`; `max_file_upload_size_mib`). */
  maxFileUploadSizeMib: number;
  /** Uploads no message links are deleted this many weeks after upload (0: never). */
  uploadRetentionWeeks: number;
  /** Jitsi server new calls' rooms are made on (Zulip's `JITSI_SERVER_URL`; empty: Jitsi is not offered). */
  jitsiServerUrl: string;
  /** BigBlueButton API base, ending in `/bigbluebutton/` (Zulip's `BIG_BLUE_BUTTON_URL`; empty: not offered). */
  bbbUrl: string;
  /** BigBlueButton shared secret, for API checksums (Zulip's `BIG_BLUE_BUTTON_SECRET`). */
  bbbSecret: string;
  /** Push notification relay (Zulip's `PUSH_NOTIFICATION_BOUNCER_URL`; empty: no push notifications). */
  pushBouncerUrl: string;
  /** Port of the metrics' own listener (0: any free port); null: `GET /metrics` is on the chat port. */
  metricsPort: number | null;
  /** Bearer token `GET /metrics` requires (empty: none). */
  metricsToken: string;
  /** Least severe level logged (`debug` adds one line per request). */
  logLevel: LogLevel;
  /** How long a SIGTERM may take to drain, flush and snapshot before the process exits non-zero. */
  shutdownTimeoutMs: number;
  /**
   * The V8 heap limit, in MiB (`--max-old-space-size`), which `parley serve` starts Node
   * with; above 75% of it, requests that grow state get 503 (`src/memory/`).
   */
  memoryLimitMib: number;
}

/** One setting: its flag, its environment variable, its default and how to parse it. */
export interface Setting {
  key: keyof Config;
  flag: string;
  env: string;
  parse: (v: string) => unknown;
  def: unknown;
  /** Masked wherever the configuration is shown (`parley config`). Without it, a key naming a password, secret or token is masked. */
  secret?: boolean;
  /** Its key in the configuration file, `section.key`, when the rule in config_file.ts would not give the right one. */
  file?: string;
  /** The value's type in the configuration file, when the default does not show it (a default of null: unset). */
  type?: 'integer' | 'boolean' | 'string';
  /** The default as `--help` shows it, for a default that depends on the machine (so the help does not). */
  shownDefault?: string;
  /** Where a machine-dependent default came from, as `parley config` says it (`half of the machine's 24106 MiB`). */
  explainDefault?: () => string;
}

/** Every setting, in the order `--help` and `parley config` show them. */
export const SETTINGS: Setting[] = [
  { key: 'host', flag: '--host', env: 'PARLEY_HOST', parse: String, def: '127.0.0.1' },
  { key: 'port', flag: '--port', env: 'PARLEY_PORT', parse: int, def: 9991 },
  { key: 'dataDir', flag: '--data-dir', env: 'PARLEY_DATA_DIR', parse: String, def: './data' },
  { key: 'externalHost', flag: '--external-host', env: 'PARLEY_EXTERNAL_HOST', parse: String, def: 'localhost' },
  { key: 'fsync', flag: '--fsync', env: 'PARLEY_FSYNC', parse: fsyncPolicy, def: 'always' },
  { key: 'fsyncBatchMs', flag: '--fsync-batch-ms', env: 'PARLEY_FSYNC_BATCH_MS', parse: int, def: 100 },
  { key: 'segmentBytes', flag: '--segment-bytes', env: 'PARLEY_SEGMENT_BYTES', parse: int, def: 64 * 1024 * 1024 },
  { key: 'maxBodyBytes', flag: '--max-body-bytes', env: 'PARLEY_MAX_BODY_BYTES', parse: int, def: 2621440 },
  { key: 'heartbeatMinMs', flag: '--heartbeat-min-ms', env: 'PARLEY_HEARTBEAT_MIN_MS', parse: int, def: 45000 },
  { key: 'heartbeatMaxMs', flag: '--heartbeat-max-ms', env: 'PARLEY_HEARTBEAT_MAX_MS', parse: int, def: 55000 },
  { key: 'queueLifespanMs', flag: '--queue-lifespan-ms', env: 'PARLEY_QUEUE_LIFESPAN_MS', parse: int, def: 600000 },
  { key: 'queueMaxEvents', flag: '--queue-max-events', env: 'PARLEY_QUEUE_MAX_EVENTS', parse: int, def: 20000 },
  { key: 'skipCorrupt', flag: '--skip-corrupt', env: 'PARLEY_SKIP_CORRUPT', parse: bool, def: false },
  { key: 'canAccessAllUsersGroupLimitsPresence', flag: '--can-access-all-users-group-limits-presence', env: 'PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE', parse: bool, def: false },
  { key: 'snapshotIntervalMs', flag: '--snapshot-interval-ms', env: 'PARLEY_SNAPSHOT_INTERVAL_MS', parse: int, def: 300000 },
  { key: 'snapshotEveryRecords', flag: '--snapshot-every-records', env: 'PARLEY_SNAPSHOT_EVERY_RECORDS', parse: int, def: 100000 },
  { key: 'snapshotGrowthPercent', flag: '--snapshot-growth-percent', env: 'PARLEY_SNAPSHOT_GROWTH_PERCENT', parse: int, def: 100 },
  { key: 'keepSnapshots', flag: '--keep-snapshots', env: 'PARLEY_KEEP_SNAPSHOTS', parse: positiveInt, def: 3, file: 'snapshots.keep' },
  { key: 'rateLimit', flag: '--rate-limit', env: 'PARLEY_RATE_LIMIT', parse: parseRateLimit, def: { requests: 200, windowSecs: 60 } },
  { key: 'rateLimitAnonymous', flag: '--rate-limit-anonymous', env: 'PARLEY_RATE_LIMIT_ANONYMOUS', parse: parseRateLimit, def: { requests: 100, windowSecs: 60 } },
  { key: 'rateLimitAuthenticate', flag: '--rate-limit-authenticate', env: 'PARLEY_RATE_LIMIT_AUTHENTICATE', parse: parseRateLimit, def: { requests: 5, windowSecs: 1800 } },
  { key: 'boardPort', flag: '--board-port', env: 'PARLEY_BOARD_PORT', parse: int, def: 9992 },
  { key: 'boardHost', flag: '--board-host', env: 'PARLEY_BOARD_HOST', parse: String, def: '' },
  { key: 'boardNonceTtlSecs', flag: '--board-nonce-ttl-secs', env: 'PARLEY_BOARD_NONCE_TTL_SECS', parse: positiveInt, def: 300 },
  { key: 'boardRateLimit', flag: '--board-rate-limit', env: 'PARLEY_BOARD_RATE_LIMIT', parse: parseRateLimit, def: { requests: 10, windowSecs: 60 } },
  { key: 'boardMessageRateLimit', flag: '--board-message-rate-limit', env: 'PARLEY_BOARD_MESSAGE_RATE_LIMIT', parse: parseRateLimit, def: { requests: 60, windowSecs: 60 } },
  { key: 'smtpHost', flag: '--smtp-host', env: 'PARLEY_SMTP_HOST', parse: String, def: '' },
  { key: 'smtpPort', flag: '--smtp-port', env: 'PARLEY_SMTP_PORT', parse: int, def: 587 },
  { key: 'smtpSecure', flag: '--smtp-secure', env: 'PARLEY_SMTP_SECURE', parse: bool, def: false },
  { key: 'smtpUser', flag: '--smtp-user', env: 'PARLEY_SMTP_USER', parse: String, def: '' },
  { key: 'smtpPassword', flag: '--smtp-password', env: 'PARLEY_SMTP_PASSWORD', parse: String, def: '', secret: true },
  { key: 'mailFrom', flag: '--mail-from', env: 'PARLEY_MAIL_FROM', parse: String, def: '' },
  { key: 'maxFileUploadSizeMib', flag: '--max-file-upload-size-mib', env: 'PARLEY_MAX_FILE_UPLOAD_SIZE_MIB', parse: int, def: 100, file: 'uploads.max_file_size_mib' },
  { key: 'uploadRetentionWeeks', flag: '--upload-retention-weeks', env: 'PARLEY_UPLOAD_RETENTION_WEEKS', parse: int, def: 3 },
  { key: 'jitsiServerUrl', flag: '--jitsi-server-url', env: 'PARLEY_JITSI_SERVER_URL', parse: httpUrl, def: '' },
  { key: 'bbbUrl', flag: '--bbb-url', env: 'PARLEY_BBB_URL', parse: httpUrl, def: '' },
  { key: 'bbbSecret', flag: '--bbb-secret', env: 'PARLEY_BBB_SECRET', parse: String, def: '', secret: true },
  { key: 'pushBouncerUrl', flag: '--push-bouncer-url', env: 'PARLEY_PUSH_BOUNCER_URL', parse: httpUrl, def: '' },
  { key: 'metricsPort', flag: '--metrics-port', env: 'PARLEY_METRICS_PORT', parse: optionalInt, def: null, type: 'integer' },
  { key: 'metricsToken', flag: '--metrics-token', env: 'PARLEY_METRICS_TOKEN', parse: String, def: '', secret: true },
  { key: 'logLevel', flag: '--log-level', env: 'PARLEY_LOG_LEVEL', parse: logLevel, def: 'info' },
  { key: 'shutdownTimeoutMs', flag: '--shutdown-timeout-ms', env: 'PARLEY_SHUTDOWN_TIMEOUT_MS', parse: positiveInt, def: 30000 },
  { key: 'bodyCacheMib', flag: '--body-cache-mib', env: 'PARLEY_BODY_CACHE_MIB', parse: positiveInt, def: 64 },
  { key: 'memoryLimitMib', flag: '--memory-limit-mib', env: 'PARLEY_MEMORY_LIMIT_MIB', parse: parseMemoryLimitMib, def: defaultMemoryLimitMib(), shownDefault: "half the machine's memory", explainDefault: describeDefaultLimit },
];

function int(v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`expected a non-negative integer, got '${v}'`);
  return Number(v);
}

/** A non-negative integer, or null for empty. */
function optionalInt(v: string): number | null {
  return v === '' ? null : int(v);
}

function positiveInt(v: string): number {
  const n = int(v);
  if (n < 1) throw new Error(`expected at least 1, got '${v}'`);
  return n;
}

function bool(v: string): boolean {
  if (['1', 'true', 'yes', 'on', ''].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`expected true or false, got '${v}'`);
}

/** An http(s) URL without a trailing slash, or empty for none. */
function httpUrl(v: string): string {
  if (v === '') return '';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new Error(`expected an http or https URL, got '${v}'`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`expected an http or https URL, got '${v}'`);
  return v.replace(/\/+$/, '');
}

function logLevel(v: string): LogLevel {
  if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel;
  throw new Error(`expected one of ${LOG_LEVELS.join(', ')}, got '${v}'`);
}

function fsyncPolicy(v: string): FsyncPolicy {
  if (v === 'always' || v === 'batch' || v === 'none') return v;
  throw new Error(`expected always, batch or none, got '${v}'`);
}

/** Where a setting's value came from; `line` is the file's line, where known. */
export type SettingSource =
  | { kind: 'default' }
  | { kind: 'file'; path: string; line?: number }
  | { kind: 'env'; name: string }
  | { kind: 'flag'; name: string };

/** The configuration with the source of each value, and the file read (if any). */
export interface ResolvedConfig {
  config: Config;
  sources: Record<keyof Config, SettingSource>;
  file: string | undefined;
}

/** Whether a setting's value is masked when shown: its `secret` marker, else a name that says password, secret or token. */
export function isSecret(s: Pick<Setting, 'key' | 'secret'>): boolean {
  return s.secret ?? /password|secret|token/i.test(s.key);
}

/** A setting's default as the help and `parley config` show it (a rate limit as `200/60`, or `2/3600,5/86400`). */
export function showValue(v: unknown): string {
  if (v !== null && typeof v === 'object' && 'windowSecs' in v) return JSON.stringify(formatRateLimit(v as RateLimit));
  // Unset (a default of null) shows as empty, as the environment and flags take it.
  return v === null ? '""' : JSON.stringify(v);
}

/**
 * A setting's option, shown in the group of its file section. A boolean's value is
 * optional (`--skip-corrupt` is true, `--skip-corrupt=false` false). The option keeps
 * the flag's text: the setting's `parse` reads it in resolveOptions, as it reads the
 * environment's and the file's.
 */
function settingOption(s: Setting): Option {
  const key = fileKeyOf(s);
  const dot = key.lastIndexOf('.');
  const value = { boolean: ' [bool]', integer: ' <n>', rate: ' <n/secs>', string: ' <value>' }[settingType(s)];
  return new Option(`${s.flag}${value}`, `${key.slice(dot + 1)}${isSecret(s) ? ' (secret)' : ''}`)
    .default(s.def, s.shownDefault ?? showValue(s.def))
    .env(s.env)
    .helpGroup(`Settings in [${key.slice(0, dot)}] (file key, default, environment variable):`);
}

/**
 * The options of the commands that take the settings: `--config PATH` and one per
 * SETTINGS row. Their `env` is for the help: commander reads process.env into them too,
 * but resolveOptions takes only what came from the command line, and the environment
 * from its caller.
 */
export function settingsOptions(): Option[] {
  return [new Option('--config <path>', 'the configuration file (default: ./parley.toml if it exists)').env('PARLEY_CONFIG'), ...SETTINGS.map(settingOption)];
}

/**
 * Resolves the configuration: defaults, then the file (`--config PATH`, `PARLEY_CONFIG`,
 * or `./parley.toml` in `cwd` if it exists), then the environment, then flags. Throws
 * with a clear message for a bad value, an unknown flag or a bad file.
 */
export function resolveConfig(argv: string[], env: NodeJS.ProcessEnv, cwd = process.cwd()): ResolvedConfig {
  const cmd = new Command()
    .helpOption(false)
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
  for (const option of settingsOptions()) cmd.addOption(option);
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) throw new Error(err.message.replace(/^error: /, ''));
    throw err;
  }
  return resolveOptions(cmd, env, cwd);
}

/** resolveConfig for a command that has parsed `settingsOptions()` (`parley serve`, `parley config`). */
export function resolveOptions(cmd: Command, env: NodeJS.ProcessEnv, cwd = process.cwd()): ResolvedConfig {
  const flag = (long: string): string | undefined => {
    const option = cmd.options.find((o) => o.long === long)!;
    // A bare boolean flag is `true`; any other flag holds its text.
    return cmd.getOptionValueSource(option.attributeName()) === 'cli' ? String(cmd.getOptionValue(option.attributeName())) : undefined;
  };
  const path = configFilePath(flag('--config'), env, cwd);
  const config = {} as Record<string, unknown>;
  const sources = {} as Record<keyof Config, SettingSource>;
  const set = (s: Setting, source: SettingSource, name: string, raw: string): void => {
    config[s.key] = wrap(name, () => s.parse(raw));
    sources[s.key] = source;
  };
  for (const s of SETTINGS) {
    config[s.key] = s.def;
    sources[s.key] = { kind: 'default' };
  }
  const fromFile = path === undefined ? new Map() : readConfigFile(path, SETTINGS);
  for (const [s, v] of fromFile) set(s, { kind: 'file', path: path!, line: v.line }, v.where, v.text);
  for (const s of SETTINGS) {
    const raw = env[s.env];
    if (raw !== undefined) set(s, { kind: 'env', name: s.env }, s.env, raw);
  }
  for (const s of SETTINGS) {
    const raw = flag(s.flag);
    if (raw !== undefined) set(s, { kind: 'flag', name: s.flag }, s.flag, raw);
  }
  const c = config as unknown as Config;
  // A main port of 0 (any free port, as tests use) means the same for the board unless it is set.
  if (c.port === 0 && sources.boardPort.kind === 'default') c.boardPort = 0;
  if (c.heartbeatMaxMs < c.heartbeatMinMs) throw new Error('heartbeat max must not be below heartbeat min');
  return { config: c, sources, file: path };
}

/** Reads the configuration. Throws with a clear message for a bad value or unknown flag. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  return resolveConfig(argv, env).config;
}

function wrap<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`);
  }
}
