/**
 * Microbenchmark of message rendering: the old regex subset (actors/markdown.ts as
 * on an old `main`, passed as a path) against actors/engines/markdown/, on a mix of typical short
 * chat messages, then messages with code blocks (highlighted, `actors/engines/markdown/highlight/`).
 * Run: npx tsx bench/markdown_micro.ts [path-to-old-markdown.ts] [--base=DIR]
 * (e.g. after `git show <old commit>:actors/markdown.ts > /tmp/old_markdown.ts`). `--base` names
 * another build's `dist` (e.g. main's) whose renderer is measured on the same messages
 * in the same run, after this one's.
 */
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { renderMarkdown, type MarkdownEnv } from '../actors/engines/markdown/index.js';

const MESSAGES = [
  'hi',
  'sounds good, thanks!',
  'Can you take a look at this when you get a chance?',
  'hey @**Alice Anders** did the deploy finish?',
  'I think **this** is the *right* approach, see https://example.com/docs/page',
  '`npm test` fails on main for me :thinking:',
  'lunch?\nI am thinking tacos',
  '```\nconst x = 1;\n```',
  '> quoted reply\n\nagreed 👍',
  'steps:\n1. pull\n2. build\n3. run',
  'ok @**all** the meeting moved to 3pm',
  'see #**general>release plan** for details',
];

const users = [{ user_id: 1, full_name: 'Alice Anders' }];
const env: MarkdownEnv = {
  user: (name, id) => users.find((u) => (id !== null ? u.user_id === id : u.full_name.toLowerCase() === name.toLowerCase())),
  group: () => undefined,
  channel: (name) => (name === 'general' ? { stream_id: 1, name } : undefined),
};

/** The send bench's message (bench/profile.ts, bench/ab.ts): one line with some bold. */
const BENCH_MESSAGE = 'A benchmark message of a typical length: a sentence or two, with **some** markdown.';

/**
 * Renders `messages` round after round; reports wall and this process's CPU time per
 * message (on a machine shared with other work, CPU time moves less than wall time).
 */
function measure(label: string, messages: string[], render: (s: string) => unknown, renders = 240_000): void {
  const rounds = Math.ceil(renders / messages.length);
  for (let i = 0; i < Math.min(2_000, renders); i++) render(messages[i % messages.length]);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) for (const m of messages) render(m);
  const ns = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  const n = rounds * messages.length;
  const cpuUs = (used.user + used.system) / n;
  console.log(`${label}: ${Math.round(n / (ns / 1e9)).toLocaleString('en')} messages/s (${(ns / n / 1000).toFixed(2)} µs/message wall, ${cpuUs.toFixed(2)} µs CPU)`);
}

/** Chat messages with code: a short Python, JavaScript and shell block, and about 2,000 characters of Python. */
const PY_SNIPPET = 'def speak(self, name: str) -> str:\n    if not name:\n        return "nobody"  # fallback\n    return f"hello {name}!"';
const CODE_MESSAGES = [
  'this fails for me:\n```python\n' + PY_SNIPPET + '\n```',
  '```js\nconst res = await fetch(`/api/v1/users/${id}`);\nif (!res.ok) throw new Error("failed: " + res.status);\n```',
  'run\n```bash\nnpm install --save-exact foo@1.2.3 && npx tap test/a.test.ts | grep -v ok\n```\nthen retry',
];
const LONG_CODE = '```python\n' + Array.from({ length: 15 }, () => PY_SNIPPET).join('\n\n') + '\n```';

const args = process.argv.slice(2);
const base = args.find((a) => a.startsWith('--base='))?.slice('--base='.length);
const oldPath = args.find((a) => !a.startsWith('--'));
if (oldPath) {
  const old = (await import(pathToFileURL(oldPath).href)) as { renderMarkdown(s: string, r: (name: string, id: number | null) => unknown): unknown };
  measure('old (regex subset)', MESSAGES, (s) => old.renderMarkdown(s, (name, id) => env.user(name, id)));
}
measure('new (actors/engines/markdown, markdown-it)', MESSAGES, (s) => renderMarkdown(s, env));
measure('the send bench\'s message', [BENCH_MESSAGE], (s) => renderMarkdown(s, env));

type Render = (s: string, env: MarkdownEnv) => unknown;
const builds: [string, Render][] = [['this build', renderMarkdown]];
if (base) {
  // Builds before the engines/ folder kept the renderer at actors/markdown/.
  const at = existsSync(`${base}/actors/engines/markdown/index.js`) ? `${base}/actors/engines/markdown/index.js` : `${base}/actors/markdown/index.js`;
  const other = (await import(pathToFileURL(at).href)) as { renderMarkdown: Render };
  builds.push([`base (${base})`, other.renderMarkdown]);
}
for (const [label, render] of builds) {
  measure(`${label}: 3 messages with a short code block`, CODE_MESSAGES, (s) => render(s, env), 30_000);
  measure(`${label}: a ${LONG_CODE.length}-character Python block`, [LONG_CODE], (s) => render(s, env), 3_000);
}
