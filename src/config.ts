/**
 * Configuration, from command-line flags first, then `PARLEY_*` environment variables,
 * then defaults. Every setting is documented in the README.
 */
import type { FsyncPolicy } from '../snapshots/log.js';
import { LOG_LEVELS, type LogLevel } from '../actors/core/logger.js';
import { parseRateLimit, type RateLimit } from './http/rate_limit.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** The host name the server is reached at; `sub.<externalHost>` selects organization `sub`. */
  externalHost: string;
  fsync: FsyncPolicy;
  fsyncBatchMs: number;
  segmentBytes: number;
  /** Request bodies over this many bytes get 413 before they are buffered. */
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
  /** Requests per window for each user (`N/S`, or `0` for none); the event queue endpoints are exempt. */
  rateLimit: RateLimit;
  /** Requests per window for each address without credentials. */
  rateLimitAnonymous: RateLimit;
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
  /** Least severe level logged (`debug` adds one line per request). */
  logLevel: LogLevel;
  /** How long a SIGTERM may take to drain, flush and snapshot before the process exits non-zero. */
  shutdownTimeoutMs: number;
}

/** Each setting: its flag, its environment variable, its default and how to parse it. */
const SETTINGS: Array<{ key: keyof Config; flag: string; env: string; parse: (v: string) => unknown; def: unknown }> = [
  { key: 'host', flag: '--host', env: 'PARLEY_HOST', parse: String, def: '127.0.0.1' },
  { key: 'port', flag: '--port', env: 'PARLEY_PORT', parse: int, def: 9991 },
  { key: 'dataDir', flag: '--data-dir', env: 'PARLEY_DATA_DIR', parse: String, def: './data' },
  { key: 'externalHost', flag: '--external-host', env: 'PARLEY_EXTERNAL_HOST', parse: String, def: 'localhost' },
  { key: 'fsync', flag: '--fsync', env: 'PARLEY_FSYNC', parse: fsyncPolicy, def: 'always' },
  { key: 'fsyncBatchMs', flag: '--fsync-batch-ms', env: 'PARLEY_FSYNC_BATCH_MS', parse: int, def: 100 },
  { key: 'segmentBytes', flag: '--segment-bytes', env: 'PARLEY_SEGMENT_BYTES', parse: int, def: 64 * 1024 * 1024 },
  { key: 'maxBodyBytes', flag: '--max-body-bytes', env: 'PARLEY_MAX_BODY_BYTES', parse: int, def: 25 * 1024 * 1024 },
  { key: 'heartbeatMinMs', flag: '--heartbeat-min-ms', env: 'PARLEY_HEARTBEAT_MIN_MS', parse: int, def: 45000 },
  { key: 'heartbeatMaxMs', flag: '--heartbeat-max-ms', env: 'PARLEY_HEARTBEAT_MAX_MS', parse: int, def: 55000 },
  { key: 'queueLifespanMs', flag: '--queue-lifespan-ms', env: 'PARLEY_QUEUE_LIFESPAN_MS', parse: int, def: 600000 },
  { key: 'queueMaxEvents', flag: '--queue-max-events', env: 'PARLEY_QUEUE_MAX_EVENTS', parse: int, def: 20000 },
  { key: 'skipCorrupt', flag: '--skip-corrupt', env: 'PARLEY_SKIP_CORRUPT', parse: bool, def: false },
  { key: 'canAccessAllUsersGroupLimitsPresence', flag: '--can-access-all-users-group-limits-presence', env: 'PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE', parse: bool, def: false },
  { key: 'snapshotIntervalMs', flag: '--snapshot-interval-ms', env: 'PARLEY_SNAPSHOT_INTERVAL_MS', parse: int, def: 300000 },
  { key: 'snapshotEveryRecords', flag: '--snapshot-every-records', env: 'PARLEY_SNAPSHOT_EVERY_RECORDS', parse: int, def: 100000 },
  { key: 'snapshotGrowthPercent', flag: '--snapshot-growth-percent', env: 'PARLEY_SNAPSHOT_GROWTH_PERCENT', parse: int, def: 100 },
  { key: 'keepSnapshots', flag: '--keep-snapshots', env: 'PARLEY_KEEP_SNAPSHOTS', parse: positiveInt, def: 3 },
  { key: 'rateLimit', flag: '--rate-limit', env: 'PARLEY_RATE_LIMIT', parse: parseRateLimit, def: { requests: 200, windowSecs: 60 } },
  { key: 'rateLimitAnonymous', flag: '--rate-limit-anonymous', env: 'PARLEY_RATE_LIMIT_ANONYMOUS', parse: parseRateLimit, def: { requests: 100, windowSecs: 60 } },
  { key: 'boardPort', flag: '--board-port', env: 'PARLEY_BOARD_PORT', parse: int, def: 9992 },
  { key: 'boardHost', flag: '--board-host', env: 'PARLEY_BOARD_HOST', parse: String, def: '' },
  { key: 'boardNonceTtlSecs', flag: '--board-nonce-ttl-secs', env: 'PARLEY_BOARD_NONCE_TTL_SECS', parse: positiveInt, def: 300 },
  { key: 'boardRateLimit', flag: '--board-rate-limit', env: 'PARLEY_BOARD_RATE_LIMIT', parse: parseRateLimit, def: { requests: 10, windowSecs: 60 } },
  { key: 'boardMessageRateLimit', flag: '--board-message-rate-limit', env: 'PARLEY_BOARD_MESSAGE_RATE_LIMIT', parse: parseRateLimit, def: { requests: 60, windowSecs: 60 } },
  { key: 'smtpHost', flag: '--smtp-host', env: 'PARLEY_SMTP_HOST', parse: String, def: '' },
  { key: 'smtpPort', flag: '--smtp-port', env: 'PARLEY_SMTP_PORT', parse: int, def: 587 },
  { key: 'smtpSecure', flag: '--smtp-secure', env: 'PARLEY_SMTP_SECURE', parse: bool, def: false },
  { key: 'smtpUser', flag: '--smtp-user', env: 'PARLEY_SMTP_USER', parse: String, def: '' },
  { key: 'smtpPassword', flag: '--smtp-password', env: 'PARLEY_SMTP_PASSWORD', parse: String, def: '' },
  { key: 'mailFrom', flag: '--mail-from', env: 'PARLEY_MAIL_FROM', parse: String, def: '' },
  { key: 'maxFileUploadSizeMib', flag: '--max-file-upload-size-mib', env: 'PARLEY_MAX_FILE_UPLOAD_SIZE_MIB', parse: int, def: 100 },
  { key: 'uploadRetentionWeeks', flag: '--upload-retention-weeks', env: 'PARLEY_UPLOAD_RETENTION_WEEKS', parse: int, def: 3 },
  { key: 'jitsiServerUrl', flag: '--jitsi-server-url', env: 'PARLEY_JITSI_SERVER_URL', parse: httpUrl, def: '' },
  { key: 'bbbUrl', flag: '--bbb-url', env: 'PARLEY_BBB_URL', parse: httpUrl, def: '' },
  { key: 'bbbSecret', flag: '--bbb-secret', env: 'PARLEY_BBB_SECRET', parse: String, def: '' },
  { key: 'pushBouncerUrl', flag: '--push-bouncer-url', env: 'PARLEY_PUSH_BOUNCER_URL', parse: httpUrl, def: '' },
  { key: 'logLevel', flag: '--log-level', env: 'PARLEY_LOG_LEVEL', parse: logLevel, def: 'info' },
  { key: 'shutdownTimeoutMs', flag: '--shutdown-timeout-ms', env: 'PARLEY_SHUTDOWN_TIMEOUT_MS', parse: positiveInt, def: 30000 },
];

function int(v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`expected a non-negative integer, got '${v}'`);
  return Number(v);
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

/** Reads the configuration. Throws with a clear message for a bad value or unknown flag. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  const config = {} as Record<string, unknown>;
  for (const s of SETTINGS) {
    const raw = env[s.env];
    config[s.key] = raw === undefined ? s.def : wrap(s.env, () => s.parse(raw));
  }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const s = SETTINGS.find((x) => x.flag === flag);
    if (!s) throw new Error(`unknown option ${flag}`);
    const value = inline ?? (s.parse === bool ? 'true' : argv[++i]);
    if (value === undefined) throw new Error(`${flag} needs a value`);
    config[s.key] = wrap(flag, () => s.parse(value));
  }
  const c = config as unknown as Config;
  // A main port of 0 (any free port, as tests use) means the same for the board unless it is set.
  if (c.port === 0 && env.PARLEY_BOARD_PORT === undefined && !argv.some((a) => a.split('=')[0] === '--board-port')) c.boardPort = 0;
  if (c.heartbeatMaxMs < c.heartbeatMinMs) throw new Error('heartbeat max must not be below heartbeat min');
  return c;
}

function wrap<T>(name: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`);
  }
}

/** The settings table, for `--help` and the README. */
export function describeSettings(): string {
  const show = (v: unknown): string => (v && typeof v === 'object' && 'windowSecs' in v ? `${(v as RateLimit).requests}/${(v as RateLimit).windowSecs}` : JSON.stringify(v));
  return SETTINGS.map((s) => `  ${s.flag.padEnd(24)} ${s.env.padEnd(30)} default ${show(s.def)}`).join('\n');
}
