/**
 * Progress of long operator commands: a cli-progress bar on a terminal, plain lines
 * (every tenth of the way) on a pipe or a file.
 */
import t from 'tap';
import { PassThrough } from 'node:stream';
import { progress } from '../src/operator/progress.js';

/** A stream that records what is written, and says it is a terminal or not. */
function stream(isTTY: boolean): { out: NodeJS.WriteStream; text: () => string } {
  const s = new PassThrough();
  let text = '';
  s.on('data', (chunk: Buffer) => (text += chunk.toString()));
  Object.assign(s, { isTTY, columns: 100 });
  return { out: s as unknown as NodeJS.WriteStream, text: () => text };
}

t.test('plain lines on a pipe, each tenth once, following a growing total', async (t) => {
  const s = stream(false);
  const bar = progress('verifying', 4, s.out);
  bar.update(1);
  bar.update(2);
  bar.setTotal(8);
  bar.update(3);
  bar.update(6);
  bar.finish('done');
  await new Promise((r) => setImmediate(r));
  t.equal(s.text(), ['verifying: 20% (1/4)', 'verifying: 50% (2/4)', 'verifying: 70% (6/8)', 'verifying: 100% (8/8)', 'verifying: done', ''].join('\n'));
});

t.test('a bar redrawn in place on a terminal', async (t) => {
  const s = stream(true);
  const bar = progress('replaying', 10, s.out);
  bar.update(5);
  bar.finish('at seq 10');
  await new Promise((r) => setImmediate(r));
  t.match(s.text(), /replaying \[[█░]{30}\] 0% \(0\/10\)/);
  t.match(s.text(), /replaying \[█{30}\] 100% \(10\/10\)/);
  t.match(s.text(), /\nreplaying: at seq 10\n$/);
  t.notMatch(s.text(), /replaying: \d+%/, 'no plain lines');
});
