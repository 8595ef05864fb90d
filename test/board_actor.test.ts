/**
 * The board actor at its own layer: commands in, facts out, and replaying those facts
 * into a fresh runtime gives exactly the same state (no clock or randomness in the
 * reducers).
 */
import t from 'tap';
import type { Stamped } from '../actors/areas/index.js';
import type { BoardCommand } from '../actors/areas/board.js';
import { MAX_OUTSTANDING_NONCES, nonceHash } from '../actors/kinds/board.js';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';

/** A sink that records every fact it is given. */
function recordingSink(into: Stamped[]): FactSink {
  return {
    append(records, onDurable) {
      into.push(...records);
      queueMicrotask(onDurable);
    },
  };
}

const state = (rt: Runtime): string => {
  const b = rt.board();
  return JSON.stringify({ seq: b.seq, messages: b.messages, guestbook: b.guestbook, switches: b.switches, nonces: [...b.nonces] });
};

t.test('commands produce facts, and replaying the facts rebuilds the same state', async (t) => {
  const log: Stamped[] = [];
  const clock = { t: 1_800_000_000_000 };
  let counter = 0;
  const rt = new Runtime({ ...defaultRuntimeOptions(recordingSink(log)), now: () => clock.t, randomBytes: (n) => Buffer.alloc(n, ++counter) });
  t.teardown(() => rt.stop());
  const run = (command: BoardCommand) => rt.execute(command);

  await t.rejects(run({ type: 'POST_GUESTBOOK_ENTRY', message: 'x', agent: null, visitContext: null, sourceUrl: null, model: null }), { code: 'publication_disabled' });
  await t.rejects(run({ type: 'ISSUE_NONCE', ttlSecs: 60 }), { code: 'compatibility_disabled' });
  t.equal(log.length, 0, 'a refused command writes nothing');
  t.same(await run({ type: 'SET_BOARD_SWITCH', name: 'guestbook', on: true }), { name: 'guestbook', on: true, changed: true });
  t.same(await run({ type: 'SET_BOARD_SWITCH', name: 'guestbook', on: true }), { name: 'guestbook', on: true, changed: false });
  await run({ type: 'SET_BOARD_SWITCH', name: 'compat', on: true });
  t.same(log.map((s) => s.fact.type), ['BoardSwitchChanged', 'BoardSwitchChanged'], 'no fact for a switch already in place');

  await run({ type: 'POST_MESSAGE', body: 'root', author: 'A', replyTo: null });
  clock.t += 1000;
  await run({ type: 'POST_MESSAGE', body: 'reply', author: null, replyTo: 'm1' });
  await run({ type: 'POST_GUESTBOOK_ENTRY', message: 'hi', agent: 'bot', visitContext: 'crawler', sourceUrl: 'https://example.com', model: null });
  const issued = (await run({ type: 'ISSUE_NONCE', ttlSecs: 60 })) as { nonce: string; expiresAt: number };
  const nonceFact = log[log.length - 1].fact;
  t.same(nonceFact, { type: 'NonceIssued', hash: nonceHash(issued.nonce), issuedAt: clock.t / 1000, expiresAt: clock.t / 1000 + 60 });
  await run({ type: 'PUBLISH_WITH_NONCE', nonce: issued.nonce, body: 'via nonce', author: null });
  const posted = log[log.length - 1].fact;
  t.same(posted.type === 'BoardMessagePosted' && [posted.message.id, posted.nonceHash], ['m3', nonceHash(issued.nonce)], 'message and consumed nonce in one fact');
  await t.rejects(run({ type: 'PUBLISH_WITH_NONCE', nonce: issued.nonce, body: 'again', author: null }), { code: 'challenge_invalid' });
  await t.rejects(run({ type: 'POST_MESSAGE', body: 'x', author: null, replyTo: 'm42' }), { code: 'validation_failed', field: 'replyTo' });
  await run({ type: 'ISSUE_NONCE', ttlSecs: 60 });
  t.notMatch(JSON.stringify(log), issued.nonce, 'the nonce never appears in a fact');

  const replayed = new Runtime(defaultRuntimeOptions(recordingSink([])));
  t.teardown(() => replayed.stop());
  for (const s of log) replayed.replay(s);
  t.equal(state(replayed), state(rt));
});

t.test('outstanding nonces are bounded, and expired ones pruned, by the facts alone', async (t) => {
  const clock = { t: 1_800_000_000_000 };
  const rt = new Runtime({ ...defaultRuntimeOptions(recordingSink([])), now: () => clock.t });
  t.teardown(() => rt.stop());
  await rt.execute({ type: 'SET_BOARD_SWITCH', name: 'compat', on: true });
  const first = (await rt.execute({ type: 'ISSUE_NONCE', ttlSecs: 3600 })) as { nonce: string };
  for (let i = 1; i < MAX_OUTSTANDING_NONCES + 10; i++) await rt.execute({ type: 'ISSUE_NONCE', ttlSecs: 3600 });
  t.equal(rt.board().nonces.size, MAX_OUTSTANDING_NONCES);
  await t.rejects(rt.execute({ type: 'PUBLISH_WITH_NONCE', nonce: first.nonce, body: 'x', author: null }), { code: 'challenge_invalid' }, 'the oldest went first');
  clock.t += 3600_000;
  await rt.execute({ type: 'ISSUE_NONCE', ttlSecs: 3600 });
  t.equal(rt.board().nonces.size, 1, 'expired nonces are pruned as a new one is issued');
});
