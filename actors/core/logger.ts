/**
 * The logger every layer writes to: structured records, each an `event` name (dotted,
 * e.g. `recovery.replayed`) with its fields and a human sentence, at a level. Child
 * loggers bind fields once (component, request id, organization, user). The server
 * backs it with pino (`src/logging.ts`); tests and the operator CLI pass `quietLogger`
 * or a `lineLogger`. The interface is the part of pino's that Parley uses, so a pino
 * logger is one as it is.
 *
 * Never log a secret or message content: no API key, password, nonce, Authorization
 * header, or message or topic text (test/log_secrets.test.ts greps a server's logs).
 */

/** A record's fields: `event` names what happened; the rest are plain JSON values. */
export type LogFields = { event?: string } & Record<string, unknown>;

/** Levels, most severe first (`silent`: none). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** One level's writer: the fields, then the human sentence. */
export type LogFn = (fields: LogFields, msg?: string) => void;

export interface Logger {
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  /** A logger whose records all carry `bindings`. */
  child(bindings: LogFields): Logger;
  /** Whether records at `level` are written (to skip building fields on a hot path). */
  isLevelEnabled(level: LogLevel): boolean;
}

const ignore: LogFn = () => {};

/** A logger that writes nothing. */
export const quietLogger: Logger = {
  fatal: ignore,
  error: ignore,
  warn: ignore,
  info: ignore,
  debug: ignore,
  child: () => quietLogger,
  isLevelEnabled: () => false,
};

/**
 * A logger that prints each record at `level` or more severe as one line: its
 * sentence, or its fields when it has none. For terminals (the operator CLI prints
 * recovery notes so) and for tests that read what was logged.
 */
export function lineLogger(print: (line: string) => void, level: LogLevel = 'debug', bindings: LogFields = {}): Logger {
  const enabled = (l: LogLevel): boolean => LOG_LEVELS.indexOf(l) <= LOG_LEVELS.indexOf(level) && level !== 'silent';
  const writer = (l: LogLevel): LogFn => (enabled(l) ? (fields, msg) => print(msg ?? JSON.stringify({ ...bindings, ...fields })) : ignore);
  return {
    fatal: writer('fatal'),
    error: writer('error'),
    warn: writer('warn'),
    info: writer('info'),
    debug: writer('debug'),
    child: (more) => lineLogger(print, level, { ...bindings, ...more }),
    isLevelEnabled: enabled,
  };
}
