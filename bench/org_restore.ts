/**
 * org_restore: what `parley restore-org` costs. It writes a data directory of two
 * organizations with realistic channel messages in-process (half each), takes a
 * snapshot, sends 1,000 more to the first, and restores the first to the seq before
 * those, timing the restore and reading the process's RSS before and after.
 *
 *   node dist/bench/org_restore.js [--messages 200000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quietLogger } from '../actors/core/logger.js';
import { createOrganization, type CreatedOrg } from '../src/bootstrap.js';
import { restoreOrgCommand } from '../src/operator/organization_data.js';
import { openStore } from '../src/store.js';
import { realisticMessage } from './realistic.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const count = Number(args[args.indexOf('--messages') + 1] || 200000);
  const dir = mkdtempSync(join(tmpdir(), 'parley-org-restore-'));
  try {
    const store = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 64 * 1024 * 1024, skipCorrupt: false, keepSnapshots: 3, log: quietLogger, onFatal: (e) => { throw e; } });
    const rt = store.runtime;
    const orgs: CreatedOrg[] = [];
    for (const sub of ['one', 'two']) {
      const created = await createOrganization(rt, { name: sub, subdomain: sub, ownerEmail: `o@${sub}.invalid`, ownerPassword: 'pw', ownerName: 'O' });
      await rt.execute({ type: 'SUBSCRIBE', org: created.organization_id, actor_id: created.owner.user_id, channels: [{ name: 'general' }, { name: 'design' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
      orgs.push(created);
    }
    let seed = 1;
    const random = (): number => ((seed = (seed * 48271) % 0x7fffffff) / 0x7fffffff);
    const send = (i: number, topic: string) => {
      const o = orgs[i % 2];
      return rt.execute({ type: 'SEND_MESSAGE', org: o.organization_id, sender_id: o.owner.user_id, to: { stream_id: 1 + (i % 4 < 2 ? 0 : 1), topic }, content: realisticMessage(random), client: 'bench', read_by_sender: true });
    };
    for (let i = 0; i < count; i += 64) {
      const batch = [];
      for (let j = i; j < Math.min(count, i + 64); j++) batch.push(send(j, `topic ${j % 50}`));
      await Promise.all(batch);
    }
    await store.snapshot();
    const toSeq = rt.lastSeq;
    for (let i = 0; i < 1000; i++) await send(i * 2, 'later');
    await store.close();
    const rssBefore = process.memoryUsage().rss;
    const started = performance.now();
    const report = await restoreOrgCommand(dir, orgs[0].organization_id, { toSeq });
    const ms = performance.now() - started;
    console.table([{
      messages_in_directory: count + 1000,
      organization_messages_before: report.before.messages,
      organization_messages_after: report.after.messages,
      restore_ms: Math.round(ms),
      rss_mib_before: Math.round(rssBefore / 2 ** 20),
      rss_mib_after: Math.round(process.memoryUsage().rss / 2 ** 20),
    }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
