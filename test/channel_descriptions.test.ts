/**
 * Channel and folder descriptions are Markdown, rendered by the message renderer (Zulip's
 * `render_stream_description`), in every payload and event; channels stored before with
 * the naive rendering get the Markdown one when loaded.
 */
import t from 'tap';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatFixture, openTestStore, queueEvents, storeClient } from './helpers.js';
import { fixturePath } from './paths.js';

const SOURCE = 'A **bold** *channel* for @**Bob**, see #**general** and `code`';

t.test('descriptions render as Markdown in payloads and events, whichever way the channel was made', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  const generalId = (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'general' })).json.stream_id;
  const want = `<p>A <strong>bold</strong> <em>channel</em> for <span class="user-mention" data-user-id="${bob.user_id}">@Bob</span>, see `
    + `<a class="stream" data-stream-id="${generalId}" href="/#narrow/channel/${generalId}-general">#general</a> and <code>code</code></p>`;
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: JSON.stringify(['stream', 'subscription', 'channel_folder']) });
  t.equal(reg.status, 200, reg.body);

  // Created by subscribing (the path that once stored `<p>` + escaped source).
  let r = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'subscribed', description: SOURCE }]) });
  t.equal(r.status, 200, r.body);
  // Created with POST /channels/create.
  r = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name: 'created', description: SOURCE, subscribers: JSON.stringify([f.owner.user_id]) });
  t.equal(r.status, 200, r.body);
  const streams = (await f.call(f.owner, 'GET', '/api/v1/streams')).json.streams as any[];
  for (const name of ['subscribed', 'created']) {
    t.equal(streams.find((s) => s.name === name)?.rendered_description, want, `GET /streams: ${name}`);
  }
  const subs = (await f.call(f.owner, 'GET', '/api/v1/users/me/subscriptions')).json.subscriptions as any[];
  t.equal(subs.find((s) => s.name === 'subscribed')?.rendered_description, want, 'GET /users/me/subscriptions');
  const state = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['subscription', 'stream']) })).json;
  t.equal(state.subscriptions.find((s: any) => s.name === 'subscribed')?.rendered_description, want, 'register: subscriptions');
  t.equal(state.streams.find((s: any) => s.name === 'created')?.rendered_description, want, 'register: streams');
  const created = (await queueEvents(f, bob, reg.json.queue_id, 'stream')).filter((e: any) => e.op === 'create').flatMap((e: any) => e.streams);
  t.same(created.map((s: any) => [s.name, s.rendered_description]), [['subscribed', want], ['created', want]], 'stream create events (bob sees public channels made)');

  // An update: the event and the state.
  const id = streams.find((s) => s.name === 'subscribed').stream_id;
  r = await f.call(f.owner, 'PATCH', `/api/v1/streams/${id}`, { description: 'Now *new*' });
  t.equal(r.status, 200, r.body);
  const update = (await queueEvents(f, bob, reg.json.queue_id, 'stream')).find((e: any) => e.op === 'update' && e.property === 'description');
  t.equal(update?.rendered_description, '<p>Now <em>new</em></p>', 'stream update event');

  // Folders.
  r = await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Eng', description: SOURCE });
  t.equal(r.status, 200, r.body);
  const folderId = r.json.channel_folder_id;
  t.equal((await f.call(f.owner, 'GET', '/api/v1/channel_folders')).json.channel_folders[0].rendered_description, want, 'GET /channel_folders');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['channel_folders']) })).json.channel_folders[0].rendered_description, want, 'register: channel_folders');
  await f.call(f.owner, 'PATCH', `/api/v1/channel_folders/${folderId}`, { description: '**Eng** only' });
  const folderEvents = await queueEvents(f, bob, reg.json.queue_id, 'channel_folder');
  t.equal(folderEvents.find((e: any) => e.op === 'add')?.channel_folder.rendered_description, want, 'channel_folder add event');
  t.equal(folderEvents.find((e: any) => e.op === 'update')?.data.rendered_description, '<p><strong>Eng</strong> only</p>', 'channel_folder update event');
});

t.test('channels stored with the naive rendering get the Markdown one when loaded', async (t) => {
  const fixture = fixturePath('description-v0');
  const dir = mkdtempSync(join(tmpdir(), 'parley-description-v0-'));
  cpSync(join(fixture, 'store'), dir, { recursive: true });
  const { owner } = JSON.parse(readFileSync(join(fixture, 'credentials.json'), 'utf8'));
  const want = {
    snapped: '<p>A <strong>bold</strong> <em>channel</em> with <code>code</code></p>',
    plain: '<p>nothing special</p>',
    logged: '<p>See <a href="https://example.com/docs">docs</a></p>',
  };
  const check = async (store: ReturnType<typeof openTestStore>, when: string) => {
    const streams = (await storeClient(store, owner)('GET', '/api/v1/streams')).streams as any[];
    t.same(Object.fromEntries(streams.map((s) => [s.name, s.rendered_description])), want, when);
  };
  let store = openTestStore(dir);
  await check(store, 'restored (snapped, plain) and replayed (logged)');
  await store.snapshot();
  await store.close();
  store = openTestStore(dir);
  t.teardown(() => store.close());
  await check(store, 'from a snapshot written since');
});
