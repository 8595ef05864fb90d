/**
 * The operator CLI's help, pinned by snapshots (regenerate with
 * `npx tap --snapshot test/cli_help.test.ts` after a deliberate change), and the shell
 * completion generated from the same command tree.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { allCommands, buildProgram } from '../src/operator/program.js';
import { completionScript } from '../src/operator/completion.js';
import { built } from './built.js';

const root = join(import.meta.dirname, '..');

/** The CLI with its output captured, at a fixed width. */
function captured(): { program: ReturnType<typeof buildProgram>; take: () => string } {
  const program = buildProgram();
  let out = '';
  for (const cmd of allCommands(program)) {
    cmd.configureHelp({ ...cmd.configureHelp(), helpWidth: 80 });
    cmd.configureOutput({ writeOut: (s) => (out += s) });
  }
  return { program, take: () => [out, (out = '')][0] };
}

function run(script: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [built(script), ...args], { cwd: root, encoding: 'utf8', timeout: 60000 });
}

t.test('--help of the top level and of every command', async (t) => {
  const { program, take } = captured();
  for (const cmd of allCommands(program)) {
    cmd.outputHelp();
    let name = cmd.name();
    for (let p = cmd.parent; p; p = p.parent) name = `${p.name()} ${name}`;
    t.matchSnapshot(take(), name);
  }
});

t.test('the processes print the same help: parley --help, parley help, parley serve --help and npm start -- --help', async (t) => {
  const { program, take } = captured();
  program.outputHelp();
  const top = take();
  const serve = program.commands.find((c) => c.name() === 'serve')!;
  serve.outputHelp();
  const serveHelp = take();
  for (const args of [['--help'], ['help'], []]) {
    const r = run('src/cli.ts', args);
    t.same([r.status, r.stdout], [0, top], `parley ${args.join(' ')}`);
  }
  t.same(run('src/cli.ts', ['serve', '--help']).stdout, serveHelp);
  t.same(run('src/cli.ts', ['help', 'serve']).stdout, serveHelp);
  t.same(run('src/main.ts', ['--help']).stdout, serveHelp, 'npm start -- --help');
});

t.test('completion: bash walks the command tree; zsh uses it through bashcompinit', async (t) => {
  const program = buildProgram();
  const bash = completionScript(program, 'bash');
  const zsh = completionScript(program, 'zsh');
  t.match(zsh, /^#compdef parley\n.*bashcompinit/s);
  t.ok(zsh.endsWith(bash));
  t.equal(run('src/cli.ts', ['completion', 'bash']).stdout, bash);
  const complete = (line: string): string[] => {
    const words = line.split(' ');
    const script = `${bash}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _parley; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return spawnSync('bash', ['-c', script], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  };
  t.same(complete('parley sn'), ['snapshot', 'snapshots']);
  t.same(complete('parley board '), ['guestbook', 'compat', 'status', 'help', '--help']);
  t.same(complete('parley board guestbook o'), ['on', 'off']);
  t.same(complete('parley restore --to'), ['--to', '--to-seq']);
  t.same(complete('parley restore --from '), [], 'a value: the shell completes file names');
  t.ok(complete('parley serve --smtp-').includes('--smtp-password'), 'serve completes the settings');
  t.ok(complete('parley serve --skip-corrupt --por').includes('--port'), "a boolean's value is optional: the next option completes");
});

t.test('usage errors exit 2 with the command\'s help; help exits 0', async (t) => {
  const r = run('src/cli.ts', ['snapshots', '--frob']);
  t.equal(r.status, 2);
  t.match(r.stderr, /^parley: unknown option '--frob'\n\nUsage: parley snapshots \[options\]/);
  for (const [script, args] of [['src/cli.ts', ['serve', '--port', '0', '--typo']], ['src/main.ts', ['--port', '0', '--typo']]] as const) {
    const r = run(script, [...args]);
    t.equal(r.status, 2, `${script}: an unknown setting flag is a usage error`);
    t.match(r.stderr, /^parley: unknown option '--typo'\n\nUsage: parley serve \[options\]/);
    t.notMatch(r.stderr, /serving|cannot start/, 'the server is not started');
  }
  const value = run('src/main.ts', ['--port', 'abc']);
  t.equal(value.status, 1, 'a bad value is a failed start, as a bad file or environment variable is');
  t.match(value.stderr, "cannot start: --port: expected a non-negative integer, got 'abc'");
  const bad = run('src/cli.ts', ['completion', 'fish']);
  t.equal(bad.status, 2);
  t.match(bad.stderr, /Allowed choices are bash, zsh/);
});
