/**
 * The operator CLI's help, pinned by snapshots (regenerate with
 * `npx tap --snapshot test/cli_help.test.ts` after a deliberate change), and the shell
 * completion generated from the same command tree.
 */
import t from 'tap';
import { allCommands, buildProgram } from '../src/operator/program.js';
import { completionScript } from '../src/operator/completion.js';
import { built, runProcess, type ProcessRun } from './built.js';

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

/** A built script run to its end; the independent runs of a test start together (Promise.all). */
function run(script: string, args: string[]): Promise<ProcessRun> {
  return runProcess(process.execPath, [built(script), ...args], 60000);
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
  const tops = [['--help'], ['help'], []];
  const [topRuns, serveRuns] = await Promise.all([
    Promise.all(tops.map((args) => run('src/cli.ts', args))),
    Promise.all([run('src/cli.ts', ['serve', '--help']), run('src/cli.ts', ['help', 'serve']), run('src/main.ts', ['--help'])]),
  ]);
  for (const [i, args] of tops.entries()) t.same([topRuns[i].status, topRuns[i].stdout], [0, top], `parley ${args.join(' ')}`);
  t.same(serveRuns[0].stdout, serveHelp);
  t.same(serveRuns[1].stdout, serveHelp);
  t.same(serveRuns[2].stdout, serveHelp, 'npm start -- --help');
});

t.test('completion: bash walks the command tree; zsh uses it through bashcompinit', async (t) => {
  const program = buildProgram();
  const bash = completionScript(program, 'bash');
  const zsh = completionScript(program, 'zsh');
  t.match(zsh, /^#compdef parley\n.*bashcompinit/s);
  t.ok(zsh.endsWith(bash));
  const complete = async (line: string): Promise<string[]> => {
    const words = line.split(' ');
    const script = `${bash}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _parley; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return (await runProcess('bash', ['-c', script], 60000)).stdout.split('\n').filter(Boolean);
  };
  const lines = ['parley sn', 'parley board ', 'parley board guestbook o', 'parley restore --to', 'parley restore --from ', 'parley serve --smtp-', 'parley serve --skip-corrupt --por'];
  const [printed, ...completed] = await Promise.all([run('src/cli.ts', ['completion', 'bash']), ...lines.map(complete)]);
  t.equal(printed.stdout, bash);
  t.same(completed[0], ['snapshot', 'snapshots']);
  t.same(completed[1], ['guestbook', 'compat', 'status', 'help', '--help']);
  t.same(completed[2], ['on', 'off']);
  t.same(completed[3], ['--to', '--to-seq']);
  t.same(completed[4], [], 'a value: the shell completes file names');
  t.ok(completed[5].includes('--smtp-password'), 'serve completes the settings');
  t.ok(completed[6].includes('--port'), "a boolean's value is optional: the next option completes");
});

t.test('usage errors exit 2 with the command\'s help; help exits 0', async (t) => {
  const typos = [['src/cli.ts', ['serve', '--port', '0', '--typo']], ['src/main.ts', ['--port', '0', '--typo']]] as const;
  const [r, value, bad, ...typoRuns] = await Promise.all([
    run('src/cli.ts', ['snapshots', '--frob']),
    run('src/main.ts', ['--port', 'abc']),
    run('src/cli.ts', ['completion', 'fish']),
    ...typos.map(([script, args]) => run(script, [...args])),
  ]);
  t.equal(r.status, 2);
  t.match(r.stderr, /^parley: unknown option '--frob'\n\nUsage: parley snapshots \[options\]/);
  for (const [i, [script]] of typos.entries()) {
    const r = typoRuns[i];
    t.equal(r.status, 2, `${script}: an unknown setting flag is a usage error`);
    t.match(r.stderr, /^parley: unknown option '--typo'\n\nUsage: parley serve \[options\]/);
    t.notMatch(r.stderr, /serving|cannot start/, 'the server is not started');
  }
  t.equal(value.status, 1, 'a bad value is a failed start, as a bad file or environment variable is');
  t.match(value.stderr, "cannot start: --port: expected a non-negative integer, got 'abc'");
  t.equal(bad.status, 2);
  t.match(bad.stderr, /Allowed choices are bash, zsh/);
});
