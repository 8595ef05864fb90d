/**
 * The message deletion job of `DELETE /users/{id}` with `actions` (actors/areas/deletion_jobs.ts):
 * recorded with the deactivation, one channel per step, each step done once; a job a
 * restart cut short, found again from the log or from a snapshot, is resumed when the
 * runner starts and finished; a message moved into a channel already gone through is not
 * missed; and the deletions are told as `DELETE /messages/{id}` tells them.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '../src/store.js';
import { ChatApp } from '../src/http/chat_app.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { loadConfig } from '../src/config.js';
import { createOrganization } from '../src/bootstrap.js';
import { quietLogger } from '../actors/core/logger.js';
import { basicAuth, chatFixture, encodeParams, injectChecked } from './helpers.js';

interface Who { user_id: number; email: string; api_key: string }

t.test('a job cut short by a restart is resumed and finished, found again from the log or from a snapshot', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-deletion-jobs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const clock = { t: 1_800_000_000_000 };
  const open = (): Store => openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 10, segmentBytes: 1 << 20, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; }, runtime: { now: () => clock.t } });
  const config = { ...loadConfig([], {}), rateLimit: { requests: 0, windowSecs: 60 }, rateLimitAnonymous: { requests: 0, windowSecs: 60 }, rateLimitAuthenticate: { requests: 0, windowSecs: 60 } };
  let store = open();
  let app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  const call = async (who: Who | null, method: string, path: string, params: Record<string, unknown> = {}): Promise<any> => {
    const inQuery = method === 'GET' || method === 'DELETE';
    const encoded = encodeParams(params);
    const res = await injectChecked(app, {
      method, url: inQuery && encoded ? `${path}?${encoded}` : path, body: inQuery ? undefined : encoded,
      headers: { ...(who ? { authorization: basicAuth(who) } : {}), ...(inQuery ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
    });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.body}`);
    return res.json;
  };
  const created = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'owner-pass', ownerName: 'O' });
  const org = created.organization_id;
  const owner: Who = { user_id: created.owner.user_id, email: created.owner.email, api_key: created.owner.api_key };
  const member = async (name: string): Promise<Who> => {
    const email = `${name}@example.com`;
    const { user_id } = await call(owner, 'POST', '/api/v1/users', { email, password: `pw-${name}-1`, full_name: name });
    const { api_key } = await call(null, 'POST', '/api/v1/fetch_api_key', { username: email, password: `pw-${name}-1` });
    return { user_id, email, api_key };
  };
  const [bob, dave, carol] = [await member('bob'), await member('dave'), await member('carol')];
  const everyone = [owner.user_id, bob.user_id, dave.user_id, carol.user_id];
  await call(owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'one' }, { name: 'two' }]), principals: JSON.stringify(everyone) });
  await call(owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'three' }]), principals: JSON.stringify(everyone), invite_only: true });
  const sent = new Map<number, string>();
  const send = async (who: Who, label: string, params: Record<string, unknown>): Promise<void> => {
    sent.set((await call(who, 'POST', '/api/v1/messages', params)).id, label);
  };
  for (const who of [bob, dave, carol]) {
    for (const to of ['one', 'two', 'three']) await send(who, `${who.email.split('@')[0]} ${to}`, { type: 'stream', to, topic: 't', content: `${who.email} in ${to}` });
    if (who !== carol) await send(who, `${who.email.split('@')[0]} dm`, { type: 'direct', to: JSON.stringify([carol.user_id]), content: `${who.email} to carol` });
  }
  /** The labels of the messages still there, as Carol reads them. */
  const left = async (): Promise<string[]> => {
    const got = await call(carol, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1000, num_after: 0 });
    return (got.messages as Array<{ id: number }>).map((m) => sent.get(m.id)!).filter((l) => l !== undefined).sort();
  };
  const all = (await left()).length;
  t.equal(all, 11);

  // The decision of the request, then one step of its job, and the process stops (the runner never started here).
  const deactivate = (who: Who) => store.runtime.execute({ type: 'DEACTIVATE_USER', org, actor_id: owner.user_id, user_id: who.user_id, delete_profile: false, delete_public_channel_messages: true, delete_private_channel_messages: true, delete_direct_messages: true });
  const channelOne = (await call(owner, 'GET', '/api/v1/get_stream_id', { stream: 'one' })).stream_id as number;
  const step = (job: number) => store.runtime.execute({ type: 'DELETE_MESSAGES_BY_SENDERS', org, stream_id: channelOne, job_id: job });
  const bobJob = (await deactivate(bob)).job!;
  t.equal((await step(bobJob)).deleted, 1, "the step deletes Bob's message in #one");
  t.equal((await step(bobJob)).deleted, 0, 'and done again, it does nothing');
  t.notOk((await left()).includes('bob one'));
  t.equal((await left()).length, all - 1, 'the rest waits for the job');
  // Bob's message in #two moved into #one, which the job has gone through: #one comes back on it.
  const bobTwo = [...sent].find(([, l]) => l === 'bob two')![0];
  await call(owner, 'PATCH', `/api/v1/messages/${bobTwo}`, { stream_id: channelOne, propagate_mode: 'change_one' });
  await store.close();

  // From the log: the job, one channel crossed off, is resumed and finished.
  store = open();
  app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  t.equal((await left()).length, all - 1, 'nothing deleted by recovery itself');
  store.runtime.deletionJobs.start();
  await store.runtime.deletionJobs.settled(org, bobJob);
  t.same((await left()).filter((l) => l.startsWith('bob')), [], "every one of Bob's messages is gone, the one moved into #one too");
  t.equal((await left()).length, all - 4);

  // From a snapshot: the same for Dave.
  store.runtime.deletionJobs.stop();
  const daveJob = (await deactivate(dave)).job!;
  t.not(daveJob, bobJob, 'a job of its own');
  await step(daveJob);
  await store.snapshot();
  await store.close();
  store = open();
  app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  t.same((await left()).filter((l) => l.startsWith('dave')), ['dave dm', 'dave three', 'dave two'], 'restored with the snapshot, one channel done');
  store.runtime.deletionJobs.start();
  await store.runtime.deletionJobs.settled(org, daveJob);
  t.same(await left(), ['carol one', 'carol three', 'carol two'], "only Carol's messages are left");
  t.equal(store.runtime.deletionJobs.size, 0, 'no run left');
  await store.close();

  // And after another restart there is nothing to resume: the finished jobs left the state.
  store = open();
  app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  store.runtime.deletionJobs.start();
  t.equal(store.runtime.deletionJobs.size, 0, 'nothing resumed');
  t.same(await left(), ['carol one', 'carol three', 'carol two']);
  await store.close();
});

t.test('the deletions of a deactivation are told as one-by-one deletions are: one delete_message event per message', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.subscribe(f.owner, 'open', [bob.user_id, carol.user_id]);
  const ids: number[] = [];
  for (const content of ['a', 'b']) ids.push((await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'open', topic: 't', content })).json.id);
  ids.push((await f.call(bob, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([carol.user_id]), content: 'dm' })).json.id);
  const q = (await f.call(carol, 'POST', '/api/v1/register', { event_types: ['delete_message'] })).json.queue_id;
  const bulk = (await f.call(carol, 'POST', '/api/v1/register', { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) })).json.queue_id;
  const r = await f.call(f.owner, 'DELETE', `/api/v1/users/${bob.user_id}`, { actions: JSON.stringify({ delete_public_channel_messages: true, delete_direct_messages: true }) });
  t.equal(r.status, 200, r.body);
  const events = async (queue: string) => (await f.call(carol, 'GET', '/api/v1/events', { queue_id: queue, last_event_id: -1, dont_block: true })).json.events;
  t.same((await events(q)).map((e: any) => [e.message_id, e.message_type]), [[ids[0], 'stream'], [ids[1], 'stream'], [ids[2], 'private']]);
  t.same((await events(bulk)).map((e: any) => e.message_ids), [[ids[0]], [ids[1]], [ids[2]]]);
  for (const id of ids) t.equal((await f.call(carol, 'GET', `/api/v1/messages/${id}`)).status, 400, `message ${id} is gone`);
});
