/**
 * The server's logger, backed by pino: JSON lines on stderr (stdout is the terminal's,
 * for the first start's credentials), or pino-pretty's coloured lines when stderr is a
 * terminal. The level comes from `--log-level`. See `actors/core/logger.ts` for what
 * every layer sees of it.
 */
import { pino, type Logger as Pino } from 'pino';
import pretty from 'pino-pretty';
import { lineLogger, type LogLevel } from '../actors/core/logger.js';

/**
 * Field names whose values never reach the output, whatever a caller passes: a second
 * line of defence behind not logging them at all (see `actors/core/logger.ts`).
 */
const REDACTED = ['password', 'api_key', 'nonce', 'authorization', 'content', '*.password', '*.api_key', '*.nonce', '*.authorization', '*.content'];

/** A pino logger writing to stderr at `level`. */
export function createLogger(level: LogLevel): Pino {
  const destination = process.stderr.isTTY
    ? pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
    : pino.destination({ dest: 2, sync: false });
  return pino(
    {
      level,
      base: { pid: process.pid },
      // Level names and ISO times: lines an operator can grep without a decoder.
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    destination,
  );
}

/** The operator CLI's logger: recovery notes as plain lines on the terminal's stderr. */
export const terminalLog = lineLogger((line) => console.error(line), 'info');
