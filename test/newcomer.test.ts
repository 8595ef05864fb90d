/**
 * The README's Quick start, followed as a newcomer would: a server process on an empty
 * data directory prints what the README shows, has the starter channels and welcome
 * message, and the zulip-js example (examples/send.mjs, which the README includes
 * verbatim) runs as printed.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STARTER_CHANNELS } from '../src/bootstrap.js';
import { checkedFetch, startServerProcess, type ServerProcess } from './server_process.js';
import { root } from './paths.js';

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const EXAMPLE = 'examples/send.mjs';

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The fenced block of the README between `<!-- begin FILE ... -->` and `<!-- end FILE -->`. */
function includedBlock(file: string): string | undefined {
  const f = escapeRegExp(file);
  return new RegExp(`<!-- begin ${f}\\b[^>]*-->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\`\\n<!-- end ${f} -->`).exec(readme)?.[1];
}

/** The first fenced block of the Quick start that starts with `first`. */
function quickStartBlock(first: string): string {
  const section = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1));
  const blocks = [...section.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.startsWith(first));
  if (!block) throw new Error(`no Quick start block starts with ${JSON.stringify(first)}`);
  return block;
}

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs a shell command line in the repository; resolves with its exit code and output. */
function sh(line: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', line], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

t.test(`the README's zulip-js example is ${EXAMPLE}, verbatim`, async (t) => {
  const block = includedBlock(EXAMPLE);
  t.ok(block, `README.md has a js block between the ${EXAMPLE} markers`);
  t.equal(block, readFileSync(join(root, EXAMPLE), 'utf8'), 'README block and file are identical');
  t.notMatch(block ?? '', /\brequire\(/, 'an ES module: no require');
});

t.test('Quick start on an empty data directory, as the README says', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-newcomer-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'none' };
  let server: ServerProcess | undefined = await startServerProcess(env);
  t.teardown(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor(() => /e\.g\. curl .*\n/.test(server!.stdout()), 10_000, 'the credentials on stdout');
  const out = server.stdout();

  // What the first start prints is what the README shows, secrets and port aside.
  const shown = quickStartBlock('Created the default organization');
  const pattern = shown
    .trimEnd()
    .split('\n')
    .map((line) => escapeRegExp(line).replace(/\\\.\\\.\\\./g, '\\S+').replace(/KEY/g, '\\S+').replace(/127\\\.0\\\.0\\\.1:9991/g, '127\\.0\\.0\\.1:\\d+'))
    .join('\n');
  t.match(out, new RegExp(pattern), 'the printed credentials look as the README shows them');
  const password = /password: (\S+)/.exec(out)![1];
  const apiKey = /API key: +(\S+)/.exec(out)![1];
  const auth = 'Basic ' + Buffer.from(`owner@localhost:${apiKey}`).toString('base64');
  const api = async (path: string, query: Record<string, string> = {}): Promise<any> => {
    const res = await checkedFetch(`${server!.base}/api/v1${path}?${new URLSearchParams(query)}`, { headers: { authorization: auth }, signal: AbortSignal.timeout(10_000) });
    const json = (await res.json()) as any;
    if (json.result !== 'success') throw new Error(`${path}: ${JSON.stringify(json)}`);
    return json;
  };
  const messagesIn = async (channel: string, topic?: string): Promise<any[]> => {
    const narrow = [{ operator: 'channel', operand: channel }, ...(topic === undefined ? [] : [{ operator: 'topic', operand: topic }])];
    return (await api('/messages', { anchor: 'oldest', num_before: '0', num_after: '100', apply_markdown: 'false', narrow: JSON.stringify(narrow) })).messages;
  };

  // The starter channels, as Zulip's realm creation makes them.
  const streams = (await api('/streams')).streams as Array<{ name: string; description: string; invite_only: boolean }>;
  t.same(streams.map((s) => s.name), ['general', 'welcome', 'sandbox'], 'general, welcome and sandbox exist');
  t.same(streams.map((s) => s.description), STARTER_CHANNELS.map((c) => c.description));
  t.equal(streams.find((s) => s.name === 'general')?.description, 'For team-wide conversations', "general's description is Zulip's");
  t.ok(streams.every((s) => !s.invite_only), 'all public');
  const subs = (await api('/users/me/subscriptions')).subscriptions as Array<{ name: string }>;
  t.same(subs.map((s) => s.name).sort(), ['general', 'sandbox', 'welcome'], 'the owner is subscribed to each');
  t.match(out, /channels: general, welcome, sandbox\n/);

  const welcome = await messagesIn('welcome');
  t.equal(welcome.length, 1, 'one welcome message');
  t.equal(welcome[0].subject, 'welcome to Parley!');
  t.match(welcome[0].content, /^Welcome to \*\*Parley\*\*!/);
  t.same(welcome[0].flags, [], 'unread, as Welcome Bot messages are for a new owner');
  t.equal(welcome[0].sender_email, 'welcome-bot@zulip.com', "sent by Welcome Bot, as Zulip's send_initial_realm_messages sends them");
  t.equal(welcome[0].client, 'Internal');
  t.equal((await messagesIn('sandbox')).length, 1, 'sandbox has a message to try things on');
  t.same(await messagesIn('general'), [], 'general starts empty');

  // The README's command, exactly as printed, with the printed password put in.
  const command = quickStartBlock('PARLEY_PASSWORD=');
  const [line, expected] = command.trimEnd().split('\n');
  t.match(line, /^PARLEY_PASSWORD='the password printed above' node examples\/send\.mjs$/);
  const run = await sh(line.replace('the password printed above', password), { PARLEY_URL: server.base });
  t.equal(run.code, 0, run.stderr);
  t.equal(`# ${run.stdout.trim()}`, expected, 'it prints what the README says it prints');
  const hello = await messagesIn('general', 'hello');
  t.equal(hello.length, 1, 'the message arrived in general > hello');
  t.equal(hello[0].content, 'Hi!');
  t.equal(hello[0].sender_email, 'owner@localhost');

  const wrong = await sh("PARLEY_PASSWORD='not the password' node examples/send.mjs", { PARLEY_URL: server.base });
  t.not(wrong.code, 0, 'a wrong password fails the example');
  t.match(wrong.stderr, /login failed/);

  // A second start on the same directory creates nothing again.
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
  server = await startServerProcess(env);
  await new Promise((r) => setTimeout(r, 200));
  t.notMatch(server.stdout(), /Created the default organization/, 'no second bootstrap');
  t.same(((await api('/streams')).streams as Array<{ name: string }>).map((s) => s.name), ['general', 'welcome', 'sandbox']);
  t.equal((await messagesIn('welcome')).length, 1, 'still one welcome message');
});
