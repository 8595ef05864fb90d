/**
 * Recovery fuzz: random truncations and bit flips in snapshots and log segments never
 * crash or hang recovery. It either starts (possibly on an older snapshot or a shorter
 * log) or refuses with a message that names the damaged file.
 */
import t from 'tap';
import { prng } from './prng.js';
import { cpSync, mkdtempSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, DataDirLocked } from '../src/store.js';
import { LogCorruption } from '../snapshots/log.js';
import { createOrganization } from '../src/bootstrap.js';
import { quietLogger } from '../actors/core/logger.js';

const seed = Number(process.env.PARLEY_FUZZ_SEED ?? Date.now() % 100000);
const ROUNDS = 150;

function open(dir: string) {
  return openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 4096, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });
}

t.test(`random damage never crashes recovery (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_FUZZ_SEED=${seed}`);
  const random = prng(seed);
  const pristine = mkdtempSync(join(tmpdir(), 'parley-fuzz-src-'));
  const s = open(pristine);
  await createOrganization(s.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await s.runtime.execute({ type: 'SUBSCRIBE', org: 1, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  for (let i = 0; i < 120; i++) {
    await s.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: `t${i % 5}` }, content: `message ${i} ${'x'.repeat(i % 40)}`, client: 't', read_by_sender: false });
    if (i === 40 || i === 90) await s.snapshot();
  }
  await s.close();
  const outcomes = { started: 0, refused: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'parley-fuzz-'));
    cpSync(pristine, dir, { recursive: true });
    const files = readdirSync(dir).filter((n) => n.endsWith('.plog') || n.endsWith('.psnap'));
    const damages = 1 + Math.floor(random() * 3);
    const done: string[] = [];
    for (let d = 0; d < damages; d++) {
      const file = join(dir, files[Math.floor(random() * files.length)]);
      const size = statSync(file).size;
      if (size === 0) continue;
      if (random() < 0.4) {
        const at = Math.floor(random() * size);
        truncateSync(file, at);
        done.push(`truncate ${file} at ${at}`);
      } else {
        const buf = readFileSync(file);
        const at = Math.floor(random() * buf.length);
        buf[at] ^= 1 << Math.floor(random() * 8);
        writeFileSync(file, buf);
        done.push(`flip ${file} at ${at}`);
      }
    }
    try {
      const store = open(dir);
      outcomes.started++;
      // Whatever it recovered must still serve writes.
      const org = store.runtime.org(1);
      if (org && store.runtime.channel(1, 1)) {
        await store.runtime.execute({ type: 'SEND_MESSAGE', org: 1, sender_id: 1, to: { stream_id: 1, topic: 'after' }, content: 'still works', client: 't', read_by_sender: false });
      }
      await store.close();
    } catch (err) {
      outcomes.refused++;
      const message = (err as Error).message;
      if (process.env.PARLEY_FUZZ_VERBOSE) t.comment(`round ${round}: ${message}`);
      const clear = (err instanceof LogCorruption || /log|snapshot|seq/.test(message)) && !(err instanceof DataDirLocked) && !(err instanceof TypeError) && !(err instanceof RangeError);
      if (!clear) {
        t.fail(`round ${round} (${done.join('; ')}): unclear failure ${(err as Error).stack}`);
        return;
      }
    }
  }
  t.comment(`outcomes: ${JSON.stringify(outcomes)}`);
  t.equal(outcomes.started + outcomes.refused, ROUNDS, 'every round either started or refused clearly');
  t.ok(outcomes.started > 0, 'damage that recovery can survive is survived');
});
