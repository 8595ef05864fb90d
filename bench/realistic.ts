/**
 * Realistic chat messages, for the scenarios that measure what messages cost: 40 to 80
 * words of prose, some with Markdown emphasis, a link, a mention-free list or a code
 * block, as people write them. Seeded: the same `random` gives the same messages.
 */

const WORDS = (
  'the a to and of in is it that for on with this we be are as at have not you from by can was will our but or ' +
  'deploy build test review merge branch release server client request queue event channel topic message user ' +
  'latency memory snapshot replay log disk cache index query schema migration config metric alert dashboard ' +
  'yesterday today tomorrow morning afternoon meeting plan idea question answer problem fix issue change update ' +
  'think maybe probably should could would really quite just still already again soon later first next last'
).split(' ');

const LINKS = ['https://example.com/docs/getting-started', 'https://example.org/issues/4821', 'https://example.net/blog/2026/11/notes'];
const CODE = ['```ts\nconst total = items.reduce((n, x) => n + x.size, 0);\nconsole.log(total);\n```', '```\n$ npm run build && npm test\n```', '`retry_after`'];

/** One message of 40 to 80 words. */
export function realisticMessage(random: () => number): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const words = 40 + Math.floor(random() * 41);
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    let w = pick(WORDS);
    if (i === 0 || out[out.length - 1]?.endsWith('.')) w = w[0].toUpperCase() + w.slice(1);
    if (random() < 0.04) w = `**${w}**`;
    else if (random() < 0.03) w = `_${w}_`;
    out.push(random() < 0.08 ? `${w}.` : w);
  }
  let text = `${out.join(' ')}.`;
  const extra = random();
  if (extra < 0.15) text += ` See ${pick(LINKS)} for more.`;
  else if (extra < 0.25) text += `\n\n${pick(CODE)}`;
  else if (extra < 0.32) text += '\n\n- first point\n- second point\n- third point';
  return text;
}
