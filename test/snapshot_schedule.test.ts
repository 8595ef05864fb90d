/**
 * When the server snapshots on its own: by time if anything changed, and by count
 * once the facts since the last snapshot reach both the fixed count and the growth
 * proportion of what that snapshot covered.
 */
import t from 'tap';
import { snapshotDue, type SnapshotPolicy } from '../snapshots/schedule.js';
import { loadConfig } from '../src/config.js';

const policy: SnapshotPolicy = { intervalMs: 300_000, everyRecords: 100_000, growthPercent: 100 };

t.test('by count: the fixed count while the state is small, then in proportion to it', async (t) => {
  t.notOk(snapshotDue({ seq: 99_999, lastSeq: 0, sinceMs: 0 }, policy));
  t.ok(snapshotDue({ seq: 100_000, lastSeq: 0, sinceMs: 0 }, policy), 'the first 100,000 facts');
  t.notOk(snapshotDue({ seq: 250_000, lastSeq: 200_000, sinceMs: 0 }, policy), '50,000 facts after a snapshot of 200,000: not yet');
  t.ok(snapshotDue({ seq: 400_000, lastSeq: 200_000, sinceMs: 0 }, policy), 'as many facts again as the snapshot covered');
  t.ok(snapshotDue({ seq: 1_600_000, lastSeq: 800_000, sinceMs: 0 }, policy));
  t.notOk(snapshotDue({ seq: 1_599_999, lastSeq: 800_000, sinceMs: 0 }, policy));
  t.ok(snapshotDue({ seq: 300_000, lastSeq: 200_000, sinceMs: 0 }, { ...policy, growthPercent: 0 }), 'growth 0: the fixed count alone');
  t.ok(snapshotDue({ seq: 300_000, lastSeq: 200_000, sinceMs: 0 }, { ...policy, growthPercent: 50 }), 'growth 50%: half of the covered facts');
  t.notOk(snapshotDue({ seq: 10_000_000, lastSeq: 0, sinceMs: 0 }, { ...policy, everyRecords: 0, intervalMs: 0 }), 'count 0: never by count');
});

t.test('by time, only when something changed', async (t) => {
  t.ok(snapshotDue({ seq: 11, lastSeq: 10, sinceMs: 300_000 }, policy));
  t.notOk(snapshotDue({ seq: 10, lastSeq: 10, sinceMs: 900_000 }, policy), 'nothing new: no snapshot');
  t.notOk(snapshotDue({ seq: 11, lastSeq: 10, sinceMs: 299_999 }, policy));
  t.notOk(snapshotDue({ seq: 11, lastSeq: 10, sinceMs: 900_000 }, { ...policy, intervalMs: 0 }), 'interval 0: never by time');
});

t.test('configuration', async (t) => {
  t.equal(loadConfig([], {}).snapshotGrowthPercent, 100, 'default 100%');
  t.equal(loadConfig(['--snapshot-growth-percent', '0'], {}).snapshotGrowthPercent, 0);
  t.equal(loadConfig([], { PARLEY_SNAPSHOT_GROWTH_PERCENT: '50' }).snapshotGrowthPercent, 50);
  t.throws(() => loadConfig(['--snapshot-growth-percent', '-5'], {}), /non-negative integer/);
});
