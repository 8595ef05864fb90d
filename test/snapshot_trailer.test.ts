/**
 * Snapshot format 3 checks the trailer too: a snapshot whose end seq or chunk count
 * was changed no longer verifies (formats 1 and 2 left the end seq unchecked, and a
 * flipped bit there made recovery skip or repeat facts). Older snapshots still verify.
 */
import t from 'tap';
import { openTestStore } from './helpers.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { HEADER_BYTES, SNAPSHOT_FORMAT_VERSION, TRAILER_BYTES, verifySnapshot } from '../snapshots/snapshot_format.js';
import { fixturePath } from './paths.js';

t.test('a changed end seq or chunk count in the trailer is refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-trailer-'));
  const store = openTestStore(dir);
  await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const info = await store.snapshot();
  await store.close();
  const bytes = readFileSync(info.path);
  t.equal(bytes.readUInt32LE(8), SNAPSHOT_FORMAT_VERSION, 'written in the current format');
  const good = verifySnapshot(bytes);
  t.not(typeof good, 'string', 'the snapshot as written verifies');
  if (typeof good !== 'string') t.equal(good.endSeq, info.endSeq);
  const trailerAt = bytes.length - TRAILER_BYTES;
  for (const [what, offset] of [['end seq', trailerAt + 8], ['end seq, high byte', trailerAt + 15], ['chunk count', trailerAt + 16]] as const) {
    const damaged = Buffer.from(bytes);
    damaged[offset] ^= 0x01;
    t.match(verifySnapshot(damaged), /checksum mismatch/, `a flipped bit in the ${what} is caught`);
  }
  t.ok(bytes.length > HEADER_BYTES + TRAILER_BYTES);
});

t.test('a format 2 snapshot written by an older build still verifies', async (t) => {
  const bytes = readFileSync(fixturePath('format-v1', 'store', 'snap-0000000000000030.psnap'));
  t.equal(bytes.readUInt32LE(8), 2, 'the fixture is format 2');
  const snap = verifySnapshot(bytes);
  t.not(typeof snap, 'string', String(snap));
});
