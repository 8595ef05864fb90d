/**
 * Realistic chat messages for memory measurements: 40 to 80 words of everyday prose,
 * about half with some Markdown (bold, emphasis, inline code), one in four with a link,
 * one in eight with a fenced code block and one in eight with a short list. Seeded, so
 * that runs compare.
 */
const WORDS = (
  'the a we it is to and of in that for on this with as be at have will can from our you they not but what all were when there your which their if do more about would up out so them some could time than then now only its also into other how two over after first well way even new want because any these give day most us deploy build release review merge branch test failed passed server client queue latency memory snapshot message thread topic channel meeting tomorrow today yesterday morning afternoon update issue ticket customer feedback design draft plan roadmap sprint estimate bug fix patch config setting metric dashboard alert incident rollback logs trace error warning database index query cache migration schema backup restore'
).split(' ');
const LINKS = ['https://example.com/docs/getting-started', 'https://github.com/example/project/pull/1234', 'https://status.example.org/incidents/42', 'https://wiki.example.net/Team/Roadmap#q3'];
const CODE = ['```python\ndef handler(event):\n    return {"ok": True, "id": event["id"]}\n```', '```sh\nnpm run build && npm test -- --grep memory\n```', '```json\n{"queue": "events", "retries": 3, "timeout_ms": 5000}\n```'];

/** One message from `random` (a seeded PRNG returning [0, 1)). */
export function realisticMessage(random: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
  const count = 40 + Math.floor(random() * 41);
  const words: string[] = [];
  for (let i = 0; i < count; i++) {
    let w = pick(WORDS);
    const r = random();
    if (r < 0.03) w = `**${w}**`;
    else if (r < 0.05) w = `_${w}_`;
    else if (r < 0.07) w = `\`${w}\``;
    if (i === 0 || (i > 0 && words[i - 1].endsWith('.'))) w = w[0].toUpperCase() + w.slice(1);
    if (random() < 0.08 || i === count - 1) w += '.';
    else if (random() < 0.06) w += ',';
    words.push(w);
  }
  let text = words.join(' ');
  if (random() < 0.25) text += ` See ${pick(LINKS)} for details.`;
  if (random() < 0.125) text += `\n\n${pick(CODE)}`;
  if (random() < 0.125) text += `\n\n- ${pick(WORDS)} ${pick(WORDS)}\n- ${pick(WORDS)} ${pick(WORDS)}\n- ${pick(WORDS)}`;
  return text;
}
