/**
 * Presence and snapshots: presence is never logged, so a snapshot keeps it and a crash without
 * one loses it (as documented); a snapshot is due by time when only presence changed. A test of
 * the organization kind's own persistence: it reads and moves the presence row itself.
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { openTestStore } from './helpers.js';
import { snapshotDue } from '../snapshots/schedule.js';

t.test('snapshots keep presence; without one, a crash loses it (and replay never needs it)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-presence-'));
  const open = (): Store => openTestStore(dir);
  const logBytes = () => readdirSync(dir).filter((n) => n.endsWith('.plog') || n.startsWith('log')).reduce((n, name) => n + statSync(join(dir, name)).size, 0);
  let store = open();
  const { organization_id: org } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const report = (status: 'active' | 'idle') => store.runtime.execute({ type: 'UPDATE_PRESENCE', org, user_id: 1, status, now_precise: Date.now() / 1000, limited: false });
  await report('active');
  await store.snapshot();
  const bytes = logBytes();
  const before = { ...store.runtime.org(org)!.presence.get(1)! };
  // A report past the snapshot: idle, two minutes on (the clock is real here, so move the row back).
  store.runtime.org(org)!.presence.get(1)!.connected -= 120;
  await report('idle');
  t.equal(logBytes(), bytes, 'the report wrote nothing to the log');
  t.not(store.runtime.org(org)!.presence.get(1)!.update_id, before.update_id);
  // A crash: the process goes away without a final snapshot (the lock is left behind by a dead pid).
  await store.writer.close();
  store.crash();
  store = open();
  t.same(store.runtime.org(org)!.presence.get(1), before, 'back to what the snapshot held: the later report is lost');
  t.equal(store.runtime.org(org)!.presenceLastUpdateId, before.update_id);
  store.runtime.org(org)!.presence.get(1)!.connected -= 120;
  await report('idle');
  const kept = { ...store.runtime.org(org)!.presence.get(1)! };
  await store.snapshot();
  await store.close();
  store = open();
  t.same(store.runtime.org(org)!.presence.get(1), kept, 'taken by a snapshot: kept');
  t.equal(store.recovery.replayed, 0, 'nothing to replay');
  await store.close();
});

t.test('a snapshot is due by time when only presence changed', async (t) => {
  const policy = { intervalMs: 1000, everyRecords: 10, growthPercent: 0 };
  t.notOk(snapshotDue({ seq: 5, lastSeq: 5, sinceMs: 5000 }, policy));
  t.ok(snapshotDue({ seq: 5, lastSeq: 5, sinceMs: 5000, volatileChanged: true }, policy));
  t.notOk(snapshotDue({ seq: 5, lastSeq: 5, sinceMs: 500, volatileChanged: true }, policy), 'not before the interval');
});
