/**
 * An fsync error stops the server: it is never ignored or retried, and the write it
 * covered is never acknowledged.
 */
import t from 'tap';
import * as fs from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stamped } from '../actors/areas/index.js';
import { compiled } from './paths.js';

t.test('a failed fdatasync calls onFatal once, acknowledges nothing, and refuses further appends', async (t) => {
  let syncs = 0;
  // Compiled, as a URL beside this module: tap resolves a relative name from the caller's
  // source-mapped file, which is test/ and not dist/test/.
  const { LogWriter } = await t.mockImport<typeof import('../snapshots/log.js')>(compiled ? new URL('../snapshots/log.js', import.meta.url).href : '../snapshots/log.js', {
    'node:fs': {
      ...fs,
      fdatasync: (_fd: number, cb: (err: Error | null) => void) => {
        syncs++;
        cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      },
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'parley-fsync-'));
  const fatal: Error[] = [];
  const writer = new LogWriter(dir, { fsync: 'always', batchMs: 100, segmentBytes: 1 << 20, onFatal: (e) => fatal.push(e) }, 1);
  const record: Stamped = { seq: 1, fact: { type: 'ServerRestarted' } };
  let acknowledged = false;
  writer.append([record], () => {
    acknowledged = true;
  });
  // Wait for the failure (a loaded machine may take a while to write), then a little longer for any retry.
  for (const end = Date.now() + 10000; fatal.length === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  t.equal(syncs, 1, 'fsync was tried once and not retried');
  t.equal(fatal.length, 1, 'the failure reached onFatal');
  t.match(fatal[0].message, /EIO/);
  t.notOk(acknowledged, 'the write was never acknowledged');
  t.throws(() => writer.append([{ seq: 2, fact: { type: 'ServerRestarted' } }], () => {}), /EIO/, 'later appends are refused');
});
