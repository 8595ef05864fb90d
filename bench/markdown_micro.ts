/**
 * Microbenchmark of message rendering: the old regex subset (actors/markdown.ts as
 * on `main`, passed as a path) against actors/markdown/, on a mix of typical short
 * chat messages. Run: npx tsx bench/markdown_micro.ts [path-to-old-markdown.ts]
 * (e.g. after `git show main:actors/markdown.ts > /tmp/old_markdown.ts`).
 */
import { pathToFileURL } from 'node:url';
import { renderMarkdown, type MarkdownEnv } from '../actors/markdown/index.js';

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
function measure(label: string, messages: string[], render: (s: string) => unknown): void {
  const rounds = Math.ceil(240_000 / messages.length);
  for (let i = 0; i < 2_000; i++) render(messages[i % messages.length]);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) for (const m of messages) render(m);
  const ns = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  const n = rounds * messages.length;
  const cpuUs = (used.user + used.system) / n;
  console.log(`${label}: ${Math.round(n / (ns / 1e9)).toLocaleString('en')} messages/s (${(ns / n / 1000).toFixed(2)} µs/message wall, ${cpuUs.toFixed(2)} µs CPU)`);
}

const oldPath = process.argv[2];
if (oldPath) {
  const old = (await import(pathToFileURL(oldPath).href)) as { renderMarkdown(s: string, r: (name: string, id: number | null) => unknown): unknown };
  measure('old (regex subset)', MESSAGES, (s) => old.renderMarkdown(s, (name, id) => env.user(name, id)));
}
measure('new (actors/markdown, markdown-it)', MESSAGES, (s) => renderMarkdown(s, env));
measure('the send bench\'s message', [BENCH_MESSAGE], (s) => renderMarkdown(s, env));
