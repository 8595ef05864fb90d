/**
 * Channel folders: create, list, reorder, rename, describe, archive and unarchive;
 * administrators only; `channel_folder` events; `/register` plus the events equals
 * a fresh `/register`; folders survive a restart.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { verifyAction } from './client_model.js';

const create = (f: ChatFixture, who: Credentials, name: string, description = '') => f.call(who, 'POST', '/api/v1/channel_folders/create', { name, description });
const list = async (f: ChatFixture, who: Credentials, includeArchived = false) => (await f.call(who, 'GET', '/api/v1/channel_folders', { include_archived: includeArchived })).json.channel_folders;

t.test('create, list, change, reorder', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const made = await create(f, f.owner, 'Engineering', 'For **builders**');
  t.same([made.status, made.json.channel_folder_id], [200, 1], made.body);
  t.equal((await create(f, f.owner, 'Sales')).json.channel_folder_id, 2);
  const folders = await list(f, alice);
  t.same(folders.map((x: any) => [x.id, x.name, x.order, x.is_archived, x.creator_id]), [[1, 'Engineering', 1, false, f.owner.user_id], [2, 'Sales', 2, false, f.owner.user_id]]);
  t.equal(folders[0].rendered_description, '<p>For <strong>builders</strong></p>');
  t.equal(typeof folders[0].date_created, 'number');

  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/channel_folders/1', { name: 'Eng', description: 'new' })).status, 200);
  t.same((await list(f, alice)).map((x: any) => [x.name, x.description, x.rendered_description]), [['Eng', 'new', '<p>new</p>'], ['Sales', '', '']]);
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/channel_folders', { order: JSON.stringify([2, 1]) })).status, 200);
  t.same((await list(f, alice)).map((x: any) => x.id), [2, 1], 'listed by order');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/channel_folders/2', { is_archived: true })).status, 200);
  t.same((await list(f, alice)).map((x: any) => x.id), [1], 'archived folders are left out');
  t.same((await list(f, alice, true)).map((x: any) => [x.id, x.is_archived]), [[2, true], [1, false]], 'unless asked for');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/channel_folders/2', { is_archived: false })).status, 200);
  t.equal((await list(f, alice)).length, 2);
});

t.test('errors and permissions', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await create(f, f.owner, 'Engineering');
  const cases: Array<[Credentials, string, string, Record<string, unknown>, number, string, string?]> = [
    [alice, 'POST', '/api/v1/channel_folders/create', { name: 'Mine', description: '' }, 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    [alice, 'PATCH', '/api/v1/channel_folders/1', { name: 'Mine' }, 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    [alice, 'PATCH', '/api/v1/channel_folders', { order: '[1]' }, 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: '  ', description: '' }, 400, "Channel folder name can't be empty."],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'ENGINEERING', description: '' }, 400, "Channel folder 'ENGINEERING' already exists"],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'a\u0007b', description: '' }, 400, 'Invalid character in channel folder name, at position 2.'],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'x'.repeat(61), description: '' }, 400, 'name is too long (limit: 60 characters)'],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Long', description: 'd'.repeat(1025) }, 400, 'description is too long (limit: 1024 characters)'],
    [f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'No description' }, 400, "Missing 'description' argument"],
    [f.owner, 'PATCH', '/api/v1/channel_folders/99', { name: 'x' }, 400, 'Invalid channel folder ID'],
    [f.owner, 'PATCH', '/api/v1/channel_folders', { order: '[]' }, 400, 'Invalid order mapping.'],
    [f.owner, 'PATCH', '/api/v1/channel_folders/1', { name: 'engineering' }, 400, "Channel folder 'engineering' already exists"],
  ];
  for (const [who, method, path, params, status, msg, code] of cases) {
    const r = await f.call(who, method, path, params);
    t.same([r.status, r.json.msg, ...(code ? [r.json.code] : [])], [status, msg, ...(code ? [code] : [])], `${method} ${path} ${JSON.stringify(params).slice(0, 60)}`);
  }
  t.same((await list(f, alice)).map((x: any) => x.name), ['Engineering'], 'nothing refused changed anything');
});

t.test('convergence: register plus the channel_folder events equals a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await create(f, f.owner, 'Before');
  const events = await verifyAction(t, f, alice, ['channel_folder'], ['channel_folders'], async () => {
    await create(f, f.owner, 'Second', 'two');
    await create(f, f.owner, 'Third');
    await f.call(f.owner, 'PATCH', '/api/v1/channel_folders/1', { name: 'First', description: 'one' });
    await f.call(f.owner, 'PATCH', '/api/v1/channel_folders/3', { is_archived: true });
    await f.call(f.owner, 'PATCH', '/api/v1/channel_folders', { order: JSON.stringify([3, 1, 2]) });
  });
  t.same(events.map((e: any) => e.op), ['add', 'add', 'update', 'update', 'update', 'reorder']);
});

t.test('folders survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-folders-'));
  const open = () => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await store.runtime.execute({ type: 'CREATE_CHANNEL_FOLDER', org, actor_id: 1, name: 'A', description: '' });
  await store.snapshot();
  await store.runtime.execute({ type: 'CREATE_CHANNEL_FOLDER', org, actor_id: 1, name: 'B', description: '' });
  await store.runtime.execute({ type: 'UPDATE_CHANNEL_FOLDER', org, actor_id: 1, folder_id: 1, is_archived: true });
  await store.close();
  store = open();
  t.teardown(() => store.close());
  const { channel_folders } = await storeClient(store, owner)('GET', '/api/v1/channel_folders', { include_archived: true });
  t.same(channel_folders.map((x: any) => [x.id, x.name, x.is_archived]), [[1, 'A', true], [2, 'B', false]], 'from the snapshot and the log');
});
