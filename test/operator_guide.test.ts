/**
 * The procedures of the operator guide (docs/operator-guide.md), done as written against real server
 * processes: a backup taken with the guide's own script while writes continue,
 * restored and served; and an upgrade from a snapshot an older format wrote.
 * (Restore to a seq, compact, verify and torn copies: operator_guide_restore.test.ts.)
 */
import t from 'tap';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listSnapshots } from '../snapshots/snapshot.js';
import { api, backup, download, formatOf, history, parley, root, serve, snapshotName, stop, upload, waitFor, writers } from './operator_guide_helpers.js';
import { SNAPSHOT_FORMAT_VERSION } from '../snapshots/snapshot_format.js';

// The two procedures share nothing (each its own data directories and servers): they run side by side.
t.jobs = 2;

t.test('a backup taken by the guide while writes continue restores everything acknowledged before it began', async (t) => {
  const data = mkdtempSync(join(tmpdir(), 'parley-guide-data-'));
  // Small segments and frequent snapshots, so that segments roll and older ones are pruned while the backup copies.
  const env = { PARLEY_SEGMENT_BYTES: '16384', PARLEY_SNAPSHOT_EVERY_RECORDS: '150', PARLEY_SNAPSHOT_GROWTH_PERCENT: '0' };
  const { server, auth } = await serve(data, env);
  t.teardown(() => stop(server));
  const fileUrl = await upload(server.base, auth, 'before.txt', 'uploaded before the backup');
  const linked = await api(server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'files', content: `[before.txt](${fileUrl})` });
  t.equal(linked.status, 200);

  const load = writers(server.base, auth, 4, 'backup');
  await waitFor(() => load.acked.size >= 300, 60000, '300 acknowledged writes');
  const before = new Map(load.acked);
  before.set(linked.json.id, `[before.txt](${fileUrl})`);
  const dir = mkdtempSync(join(tmpdir(), 'parley-guide-backup-'));
  const bk = join(dir, 'backup');
  const taken = await backup(data, bk);
  const during = load.acked.size - before.size + 1;
  await load.stop();
  t.equal(taken.status, 0, `the backup script succeeds: ${taken.stderr}`);
  t.comment(taken.stdout);
  t.ok(during > 0, `writes were acknowledged while the backup ran (${during})`);
  t.match(taken.stdout, /all snapshots, log segments, message bodies and uploaded files verify/, 'the script verified the copy');
  t.ok(existsSync(join(data, 'parley.pid')) && !existsSync(join(bk, 'parley.pid')), 'the lock file is not copied');
  t.notOk(readdirSync(bk).includes('control.sock'), 'nor the control socket');
  const snap = snapshotName(taken.stdout);
  t.same(readdirSync(bk).filter((f) => f.endsWith('.psnap')), [snap], 'one snapshot, the one taken for the backup');

  // Restore, as the guide says, into a new directory, and serve it.
  const restored = join(dir, 'restored');
  const r = await parley(['restore', '--data-dir', bk, '--from', snap, '--to', restored]);
  t.equal(r.status, 0, `restore succeeds: ${r.stderr}`);
  t.match(JSON.parse(r.stdout), { files_copied: 1, files_failed: 0 });
  const v = await parley(['verify', '--data-dir', restored]);
  t.equal(v.status, 0, 'the restored directory verifies');
  const copy = await serve(restored, {}, auth);
  t.teardown(() => stop(copy.server));
  const got = await history(copy.server.base, auth);
  let missing = 0;
  for (const [id, content] of before) if (got.get(id) !== content) missing++;
  t.equal(missing, 0, `all ${before.size} messages acknowledged before the backup began are there, unchanged`);
  const ids = [...got.keys()];
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), 'ids strictly increase');
  const foreign = [...got.values()].filter((c) => c.startsWith('backup ') && !load.attempted.has(c));
  t.same(foreign, [], 'nothing that was never sent');
  t.same(await download(copy.server.base, auth, fileUrl), { status: 200, body: 'uploaded before the backup' }, 'the uploaded file is restored');
  const after = await api(copy.server.base, auth, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'x', content: 'after the restore' });
  t.equal(after.status, 200);
  t.ok(after.json.id > Math.max(...ids), 'new ids continue after the restored ones');
});

t.test('upgrade: a data directory whose snapshot an older format wrote is served, and the next snapshot is in the new format', async (t) => {
  const fixture = join(root, 'test', 'fixtures', 'format-v1');
  const data = mkdtempSync(join(tmpdir(), 'parley-guide-upgrade-'));
  cpSync(join(fixture, 'store'), data, { recursive: true });
  const [old] = listSnapshots(data);
  t.equal(await formatOf(old.path), 2, 'the fixture\'s snapshot is format 2, written by commit 748db87');
  t.equal(readFileSync(old.path).readUInt32LE(8), 2, 'od reads the header\'s version field');
  const creds = JSON.parse(readFileSync(join(fixture, 'credentials.json'), 'utf8'));
  const auth = 'Basic ' + Buffer.from(`${creds.owner.email}:${creds.owner.api_key}`).toString('base64');
  const expected = JSON.parse(readFileSync(join(fixture, 'views.json'), 'utf8'))[`${creds.owner.email} messages`].json.messages.map((m: any) => [m.id, m.content]);
  const messages = async (base: string): Promise<Array<[number, string]>> => {
    const res = await api(base, auth, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: '0', num_after: '1000', narrow: '[]', client_gravatar: 'false' });
    return res.json.messages.map((m: any) => [m.id, m.content]);
  };

  let { server } = await serve(data, {}, auth);
  t.teardown(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  t.match(server.stderr(), `store: recovered to seq`);
  t.match(server.stderr(), `(snapshot ${old.name},`, 'the start read the old snapshot');
  t.same(await messages(server.base), expected, 'the messages that commit served');
  const taken = await parley(['snapshot', '--data-dir', data]);
  t.equal(taken.status, 0);
  const fresh = JSON.parse(taken.stdout).snapshot;
  t.equal(await formatOf(fresh), SNAPSHOT_FORMAT_VERSION, 'the next snapshot is written in today\'s format');
  t.equal(await stop(server), 0);
  const formats = await Promise.all(listSnapshots(data).map((s) => formatOf(s.path)));
  t.equal(formats[0], SNAPSHOT_FORMAT_VERSION, 'the newest snapshot (the shutdown one) is in today\'s format too');
  t.ok(formats.includes(2), 'the old one stays until pruned');
  ({ server } = await serve(data, {}, auth));
  t.match(server.stderr(), `(snapshot ${listSnapshots(data)[0].name},`, 'the next start reads the new snapshot');
  t.same(await messages(server.base), expected, 'and serves the same messages');
  t.equal(await stop(server), 0);
});
