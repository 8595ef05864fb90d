/**
 * The log guard (`log_guard.ts`) fails a test process whose logs hold a credential it
 * noted, and lets a clean one pass. Each case runs in a process of its own, since the
 * guard acts when its process exits.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { compiled } from './paths.js';

// Beside this file: compiled (`dist/test/log_guard.js`, run by plain node) or the source under tsx.
const guard = join(import.meta.dirname, compiled ? 'log_guard.js' : 'log_guard.ts');
const loader = compiled ? [] : ['--import', 'tsx'];

function run(body: string): { status: number | null; stderr: string } {
  const script = `const g = await import(${JSON.stringify(guard)});\n${body}`;
  const r = spawnSync(process.execPath, [...loader, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30000 });
  return { status: r.status, stderr: r.stderr };
}

t.test('a log line holding a noted credential fails the process, naming the line', async (t) => {
  const r = run(`g.noteSecret('key-7f3a9c1e'); g.captureLogger({ component: 'chat' }).info({ auth: 'Basic key-7f3a9c1e' }, 'request');`);
  t.equal(r.status, 1, 'exit code 1');
  t.match(r.stderr, /log guard: 1 log line\(s\) hold a credential/);
  t.match(r.stderr, /key-7f3a9c1e/, 'the line is shown');
});

t.test('a credential noted after the line was logged is still found', async (t) => {
  const r = run(`g.captureLogger().debug({ body: 'api_key=late-secret-42' }); g.noteSecret('late-secret-42');`);
  t.equal(r.status, 1);
});

t.test('a server process log holding the key it printed is caught', async (t) => {
  const r = run(`g.checkProcessLog('  API key:  pk-0123456789\\n', '{"msg":"auth pk-0123456789"}');`);
  t.equal(r.status, 1);
  t.match(r.stderr, /server process's log holds/);
});

t.test('clean logs pass', async (t) => {
  const r = run(`g.noteSecret('key-7f3a9c1e'); g.captureLogger().info({ user: 3, route: '/api/v1/users/me' }, 'request'); g.checkProcessLog('  API key:  pk-0123456789\\n', '{"msg":"served"}');`);
  t.equal(r.status, 0, r.stderr);
});

t.test('too short a secret is refused rather than matched by chance', async (t) => {
  const r = run(`try { g.noteSecret('abc'); } catch (e) { console.error('refused: ' + e.message); process.exit(3); }`);
  t.equal(r.status, 3);
  t.match(r.stderr, /too short/);
});
