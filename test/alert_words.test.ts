/**
 * Alert words: add, list, remove, with `alert_words` events and convergence; a
 * message containing one of a recipient's words (outside code) gets their
 * `has_alert_word` flag, in the `message` event and in storage; an edit
 * re-evaluates it; `is:alerted` finds them; durability.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, openTestStore, storeClient } from './helpers.js';
import { verifyState } from './client_model.js';

t.test('words, flags, edits and events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  const reg = (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['alert_words', 'message', 'update_message'], fetch_event_types: ['alert_words'] })).json;
  t.same(reg.alert_words, []);
  let res = await f.call(bob, 'POST', '/api/v1/users/me/alert_words', { alert_words: JSON.stringify(['Deploy', ' outage ', 'deploy']) });
  t.same(res.json.alert_words, ['Deploy', 'outage'], 'trimmed, and once whatever the case');
  const bad = async (words: unknown[], msg: string) => {
    const r = await f.call(bob, 'POST', '/api/v1/users/me/alert_words', { alert_words: JSON.stringify(words) });
    t.same([r.status, r.json.msg], [400, msg]);
  };
  await bad(['ok', '  '], 'alert_words[1] cannot be blank.');
  await bad(['w'.repeat(101)], 'alert_words[0] is too long (limit: 100 characters)');
  const send = async (content: string) => (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content })).json.id as number;
  const hit = await send('the deploy is done');
  const inCode = await send('run `deploy` now');
  const partial = await send('redeployment tomorrow');
  const flags = async (id: number) => (await f.call(bob, 'GET', `/api/v1/messages/${id}`)).json.message.flags;
  t.ok((await flags(hit)).includes('has_alert_word'));
  t.notOk((await flags(inCode)).includes('has_alert_word'), 'not inside code');
  t.notOk((await flags(partial)).includes('has_alert_word'), 'whole words only');
  t.notOk((await f.call(alice, 'GET', `/api/v1/messages/${hit}`)).json.message.flags.includes('has_alert_word'), 'only for the user who has the word');
  const events = await queueEvents(f, bob, reg.queue_id, 'message');
  t.same(events.map((e: any) => e.flags.includes('has_alert_word')), [true, false, false], 'the message event carries it');
  await f.call(alice, 'PATCH', `/api/v1/messages/${partial}`, { content: 'an OUTAGE tomorrow' });
  t.ok((await flags(partial)).includes('has_alert_word'), 'an edit adds it');
  await f.call(alice, 'PATCH', `/api/v1/messages/${hit}`, { content: 'done' });
  t.notOk((await flags(hit)).includes('has_alert_word'), 'and takes it away');
  const update = (await queueEvents(f, bob, reg.queue_id, 'update_message')).map((e: any) => e.flags.includes('has_alert_word'));
  t.same(update, [true, false]);
  const alerted = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: 'is', operand: 'alerted' }]) });
  t.same(alerted.json.messages.map((m: any) => m.id), [partial]);
  res = await f.call(bob, 'DELETE', '/api/v1/users/me/alert_words', { alert_words: JSON.stringify(['DEPLOY']) });
  t.same(res.json.alert_words, ['outage']);
  // Convergence: the list from register plus the events equals a fresh register.
  await verifyState(t, f, bob, reg, ['alert_words'], ['alert_words']);
  t.same((await f.call(bob, 'GET', '/api/v1/users/me/alert_words')).json.alert_words, ['outage']);
});

t.test('direct messages alert too; words survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-alert-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const words = async () => (await storeClient(store, owner)('GET', '/api/v1/users/me/alert_words')).alert_words;
  const flagged = async () => ((await storeClient(store, owner)('GET', `/api/v1/messages/${id}`)).message.flags as string[]).includes('has_alert_word');
  await store.runtime.execute({ type: 'CHANGE_ALERT_WORDS', org, user_id: 1, op: 'add', words: ['pager'] });
  const { id } = await store.runtime.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { user_ids: [1] }, content: 'pager duty', client: 't', read_by_sender: false });
  t.ok(await flagged());
  await store.close();
  store = open();
  t.same(await words(), ['pager']);
  t.ok(await flagged());
  await store.snapshot();
  await store.close();
  store = open();
  t.same(await words(), ['pager'], 'and from a snapshot');
  await store.close();
});
