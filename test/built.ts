/**
 * The built program, for tests that run Parley as a child process: `node dist/...js`
 * starts in about a second, where `node --import tsx src/...ts` compiles every module
 * first (about four). `npm test` builds first (`pretest`); a test run alone with
 * `npx tap` finds out here when `dist/` is older than the sources, and says so rather
 * than test old code.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root } from './paths.js';

export { root };

let checked = false;

/** Throws when a source module has no build newer than itself. */
function checkFresh(): void {
  if (checked) return;
  const stale: string[] = [];
  for (const top of ['src', 'actors', 'snapshots', 'bench']) {
    for (const entry of readdirSync(join(root, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const source = join(entry.parentPath, entry.name);
      const output = join(root, 'dist', relative(root, source).replace(/\.ts$/, '.js'));
      let built: number;
      try {
        built = statSync(output).mtimeMs;
      } catch {
        built = -1;
      }
      if (built < statSync(source).mtimeMs) stale.push(relative(root, source));
    }
  }
  if (stale.length > 0) throw new Error(`dist/ is older than ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}: run \`npm run build\` (npm test does)`);
  checked = true;
}

/** The built module of a source file (`src/cli.ts` → `<root>/dist/src/cli.js`), checked fresh. */
export function built(source: string): string {
  checkFresh();
  return join(root, 'dist', source.replace(/\.ts$/, '.js'));
}

/** `node dist/src/cli.js`, as a command and its first arguments: how the tests run `npx parley`. */
export function parleyCommand(): [string, string[]] {
  return [process.execPath, [built('src/cli.ts')]];
}

/** What a child process left: its exit status and everything it wrote. */
export interface ProcessRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end without blocking this process's event loop (unlike
 * `spawnSync`): runs that do not depend on each other can start together
 * (`Promise.all`), and a test's servers and other tests go on meanwhile. Killed after
 * `timeoutMs`.
 */
export function runProcess(command: string, args: string[], timeoutMs = 120000): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    // 'close', not 'exit': 'exit' can come before the last of stdout has been read.
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** `parley ARGS` (the built CLI) run to its end without blocking: see `runProcess`. */
export function runParley(args: string[], timeoutMs?: number): Promise<ProcessRun> {
  return runProcess(process.execPath, [built('src/cli.ts'), ...args], timeoutMs);
}
