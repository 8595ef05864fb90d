/**
 * Tests speak through the HTTP API or the areas' exported read functions, never through
 * actor contexts (issue 26 §2): a test that reads `runtime.org(…)` and follows it into its
 * fields ties itself to how the state is held, so that representation could never change.
 * Only a test of a kind's own persistence (snapshot, restore, log, recovery) may open a
 * context; each such file is listed below with its reason.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testDir } from './paths.js';

const dir = testDir;

/**
 * A read of an actor context: the runtime's context getters (as `runtime` or `rt`), any such
 * getter followed into a field (`next.channel(1, 2)!.subscribers`), or all contexts at once.
 */
const CONTEXT_READ = /\b(runtime|rt)\.(org|user|channel|server)\(|\.(org|user|channel|server)\([^()]*\)\s*[!?]?\.|\.contexts\(\)/;

/** Files that test a kind's own persistence, and so may open its context. */
const PERSISTENCE: Record<string, string> = {
  'state.ts': "the whole-state digest that replay, snapshot and recovery tests compare (it reads every context, by design)",
  'actor_replay.test.ts': 'replay of the recorded facts: every actor context, seqs included, equal live and replayed, and a channel actor\'s seq after its fact',
  'body_store_server.test.ts': "the body store under a server: each message's body locator in the channel and organization contexts, read back after restarts, repairs and damage",
  'log.test.ts': "the log's recovery: the server context's message id counter after torn and damaged segments",
  'log_tail.test.ts': "the log tail's recovery: the server counter and a channel's message after a skipped or torn tail",
  'presence_snapshot.test.ts': 'presence is kept only by snapshots: the organization context\'s presence row before and after a crash and a snapshot',
  'recovery_fuzz.test.ts': 'crash recovery under fuzzed faults: whether the recovered state holds the organization and its channel',
};

/**
 * Files that still read contexts for what the API could show: not yet converted (issue 26 §2).
 * This list only shrinks; a file taken off it must pass the rule.
 */
const NOT_YET_CONVERTED = new Set<string>([]);

/** Every test file and helper but this one, whose own check below names the reads it stops. */
const files = readdirSync(dir).filter((name) => name.endsWith('.ts') && name !== 'test_rules.test.ts').sort();
const reading = new Set(files.filter((name) => CONTEXT_READ.test(readFileSync(join(dir, name), 'utf8').replace(/^\s*(\/\/|\*).*$/gm, ''))));

t.test('no test reads an actor context unless it tests that kind’s persistence', async (t) => {
  const offenders = [...reading].filter((name) => !(name in PERSISTENCE) && !NOT_YET_CONVERTED.has(name));
  t.same(offenders, [], 'read through the API or an area read function instead (or, for a persistence test, list the file with its reason)');
});

t.test('the lists name only files that read contexts', async (t) => {
  for (const name of [...Object.keys(PERSISTENCE), ...NOT_YET_CONVERTED]) {
    t.ok(reading.has(name), `${name} reads no context any more: take it off the list`);
  }
  for (const name of NOT_YET_CONVERTED) t.notOk(name in PERSISTENCE, `${name} is on one list only`);
});

t.test('the rule sees the reads it is meant to stop', async (t) => {
  for (const read of ['f.runtime.org(1)!.users', 'store.runtime.user(org, 1)', 'runtime.channel(ORG, id)', 'a.runtime.server().maxMessageId', 'rt.contexts()', 'rt.org(org)', 'next.channel(ORG, 1)!.subscribers', 'rt().user(org, 1)!.personal', 'again.server().maxMessageId']) {
    t.ok(CONTEXT_READ.test(read), read);
  }
  for (const ok of ['f.runtime.execute({ kind: "org" })', 'f.runtime.channelIdsOf(1)', 'listDrafts(f.runtime, 1, 2)']) t.notOk(CONTEXT_READ.test(ok), ok);
});
