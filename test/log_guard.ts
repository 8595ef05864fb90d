/**
 * The logs of a whole test run hold no credential (issue 15). Every in-process server a
 * test builds with `chatFixture` logs into `captureLogger`, at every level (so every
 * request is logged), and every server process a test spawns hands its stderr to
 * `checkProcessLog`. The credentials the fixtures hand out or send are noted with
 * `noteSecret`; when the test file's process exits, any log line that holds one is
 * printed and the file fails (exit code 1), whatever its assertions said.
 * `test/log_secrets.test.ts` goes further on one server: message content, nonces,
 * wrong passwords, at debug level.
 */
import type { LogFields, Logger } from '../actors/core/logger.js';

const lines: string[] = [];
const secrets = new Set<string>();
const leaks: string[] = [];

/** A credential that must never reach a log (too short a string would match by chance: refused). */
export function noteSecret(secret: string): void {
  if (secret.length < 6) throw new Error(`log guard: "${secret}" is too short to look for`);
  secrets.add(secret);
}

/** A logger that keeps every line, with its bindings and fields, for the check at exit. */
export function captureLogger(bindings: LogFields = {}): Logger {
  const write = (fields: LogFields, msg?: string): void => void lines.push(JSON.stringify({ ...bindings, ...fields, msg }));
  return { fatal: write, error: write, warn: write, info: write, debug: write, child: (more) => captureLogger({ ...bindings, ...more }), isLevelEnabled: () => true };
}

/** Every line captured so far, parsed (for tests that check a log event). */
export function capturedLines(): Array<Record<string, unknown>> {
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Checks what a server process wrote to stderr (its log) against the credentials it
 * printed on stdout at its first start and those noted.
 */
export function checkProcessLog(stdout: string, stderr: string): void {
  const printed = [/API key:\s+(\S+)/g, /password:\s+(\S+)/g].flatMap((re) => [...stdout.matchAll(re)].map((m) => m[1]));
  for (const secret of [...printed, ...secrets]) {
    if (secret.length >= 6 && stderr.includes(secret)) leaks.push(`a server process's log holds ${JSON.stringify(secret)}`);
  }
}

/** The log lines that hold a credential, and the process logs found to (for the exit check and its test). */
export function leakedLines(): string[] {
  const held = lines.filter((line) => [...secrets].some((s) => line.includes(s)));
  return [...held, ...leaks];
}

process.once('exit', () => {
  const leaked = leakedLines();
  if (leaked.length === 0) return;
  process.stderr.write(`log guard: ${leaked.length} log line(s) hold a credential:\n${leaked.slice(0, 5).join('\n')}\n`);
  process.exitCode = 1;
});
