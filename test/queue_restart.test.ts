import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { createOrganization } from '../src/bootstrap.js';
import { storeClient } from './helpers.js';
import { quietLogger } from '../actors/core/logger.js';

function open(dir: string): Store {
  return openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 100, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });
}

for (const mode of ['graceful', 'crash'] as const) {
  t.test(`after a ${mode} restart a client resumes its queue with no gap`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-qr-'));
    const a = open(dir);
    const org = await createOrganization(a.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
    const owner = { email: org.owner.email, api_key: org.owner.api_key };
    let call = storeClient(a, owner);
    await call('POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }] });
    const reg = await call('POST', '/api/v1/register', { event_types: ['message'] });
    const queueId = reg.queue_id as string;
    for (let i = 0; i < 5; i++) await call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `m${i}` });
    const first = await call('GET', '/api/v1/events', { queue_id: queueId, last_event_id: -1, dont_block: true });
    t.same(first.events.map((e: any) => e.id), [0, 1, 2, 3, 4]);
    // The client acknowledges up to event 2, then the server goes away.
    await call('GET', '/api/v1/events', { queue_id: queueId, last_event_id: 2, dont_block: true });
    if (mode === 'graceful') {
      await a.snapshot();
      await a.close();
    } else {
      await a.writer.drain();
      a.crash();
    }
    const b = open(dir);
    t.teardown(() => b.close());
    await b.runtime.commitFacts([{ type: 'ServerRestarted' }]);
    call = storeClient(b, owner);
    const resumed = await call('GET', '/api/v1/events', { queue_id: queueId, last_event_id: 2, dont_block: true });
    t.equal(resumed.result, 'success', JSON.stringify(resumed));
    t.same(resumed.events.map((e: any) => e.id), [3, 4, 5]);
    t.same(resumed.events.slice(0, 2).map((e: any) => e.message.content), ['<p>m3</p>', '<p>m4</p>']);
    t.equal(resumed.events[2].type, 'restart');
    t.equal(resumed.events[2].zulip_feature_level, resumed.events[2].service_feature_level);
    // New events continue the same numbering.
    await call('POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'after' });
    const next = await call('GET', '/api/v1/events', { queue_id: queueId, last_event_id: 5, dont_block: true });
    t.same(next.events.map((e: any) => e.id), [6]);
    const unknown = await call('GET', '/api/v1/events', { queue_id: 'no-such-queue', dont_block: true });
    t.equal(unknown.code, 'BAD_EVENT_QUEUE_ID');
  });
}

t.test('a deleted queue stays deleted after a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-qr-'));
  const a = open(dir);
  const org = await createOrganization(a.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const owner = { email: org.owner.email, api_key: org.owner.api_key };
  let call = storeClient(a, owner);
  const reg = await call('POST', '/api/v1/register', {});
  const del = await call('DELETE', '/api/v1/events', { queue_id: reg.queue_id });
  t.equal(del.result, 'success');
  await a.close();
  const b = open(dir);
  t.teardown(() => b.close());
  call = storeClient(b, owner);
  const res = await call('GET', '/api/v1/events', { queue_id: reg.queue_id, dont_block: true });
  t.equal(res.code, 'BAD_EVENT_QUEUE_ID');
});
