/**
 * Data exports: administrators only; Zulip's errors (export type, consent and email
 * visibility checks, 5 per 7 days); the archive really built off the request and
 * downloadable from its URL without credentials, holding public data only (public
 * export) or that plus consenting members' private data (full export), never
 * credentials; `realm_export` events (pending, then done) and `realm_export_consent`
 * events converging with the lists; the notification bot's message; other
 * organizations; durability, and an unfinished export built after a restart. Deleting
 * a built export (`DELETE /export/realm/{id}`): Zulip's errors, its archive removed,
 * the event, other organizations, and a restart. `realm_export_consent` also when a
 * human is created or reactivated, as in Zulip.
 */
import t from 'tap';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Runtime } from '../actors/runtime/runtime.js';
import { createOrganization } from '../src/bootstrap.js';
import { resumeExports } from '../src/exports/realm_export.js';
import { type Store } from '../src/store.js';
import { collectUploads } from '../src/uploads/collect.js';
import { queueEvents, settle, withRole, type ChatFixture, type Credentials, openTestStore, untar, injectChecked } from './helpers.js';
import { world } from './world.js';
import { exportProgress } from '../actors/areas/realm_exports.js';
import { Role } from '../actors/shared/types.js';

/** Waits until an export is no longer pending (the build runs off the request). */
async function finished(runtime: Runtime, org: number, id: number): Promise<void> {
  const status = () => exportProgress(runtime, org).find((e) => e.id === id)?.status;
  for (let i = 0; i < 2000 && status() === 'requested'; i++) await new Promise((r) => setTimeout(r, 5));
}

/** Alice and Bob in general and in the private secret plans, a message in each, and a direct message each. */
async function withMessages() {
  const { f, admin, alice, bob } = await world({
    config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-export-')) },
    users: { admin: 'admin', alice: 'Alice', bob: 'Bob' },
    roles: { admin: Role.ADMIN },
    channels: { general: ['owner', 'alice', 'bob'] },
  });
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'secret plans' }]), principals: JSON.stringify([f.owner.user_id, alice.user_id, bob.user_id]), invite_only: true });
  const send = async (who: Credentials, params: Record<string, unknown>) => {
    const r = await f.call(who, 'POST', '/api/v1/messages', params);
    if (r.status !== 200) throw new Error(r.body);
    return r.json.id as number;
  };
  const ids = {
    public: await send(alice, { type: 'stream', to: 'general', topic: 'hello', content: 'public words' }),
    private: await send(bob, { type: 'stream', to: 'secret plans', topic: 'plan', content: 'private channel words' }),
    aliceDm: await send(alice, { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'alice to bob' }),
    bobDm: await send(bob, { type: 'direct', to: JSON.stringify([f.owner.user_id]), content: 'bob to owner' }),
  };
  return { f, admin, alice, bob, ids };
}

/** A file response's bytes (the test transport hands files over as latin1 text). */
function readBody(res: { body: string }): Buffer {
  return Buffer.from(res.body, 'latin1');
}

async function download(f: ChatFixture, url: string, host?: string) {
  const u = new URL(url);
  return injectChecked(f.app, { method: 'GET', url: u.pathname, headers: host ? { host } : {} });
}

t.test('a public export: events, the archive and its contents', async (t) => {
  const { f, admin, alice, ids } = await withMessages();
  t.teardown(f.stop);
  const reg = (await f.call(admin, 'POST', '/api/v1/register', { event_types: ['realm_export', 'message'] })).json;
  const memberReg = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['realm_export'] })).json;
  const initial = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports;
  t.same(initial, []);
  const res = await f.call(admin, 'POST', '/api/v1/export/realm');
  t.equal(res.status, 200, res.body);
  t.same(Object.keys(res.json).sort(), ['id', 'msg', 'result']);
  const pending = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports;
  t.same(pending, [{ id: res.json.id, export_time: Math.floor(f.clock.t / 1000), acting_user_id: admin.user_id, export_url: null, deleted_timestamp: null, failed_timestamp: null, pending: true, export_type: 1 }], 'pending at first');
  await finished(f.runtime, 1, res.json.id);
  const [done] = (await f.call(f.owner, 'GET', '/api/v1/export/realm')).json.exports;
  t.equal(done.pending, false);
  t.equal(done.failed_timestamp, null);
  t.match(done.export_url, /^http:\/\/127\.0\.0\.1\/user_avatars\/exports\/1\/[A-Za-z0-9_-]{24}\/zulip-export-realm-\d{8}T\d{6}\.tar\.gz$/);

  const events = await queueEvents(f, admin, reg.queue_id);
  const exportEvents = events.filter((e) => e.type === 'realm_export');
  t.same(exportEvents.map((e) => e.exports.map((x: { pending: boolean }) => x.pending)), [[true], [false]], 'pending, then done, as Zulip sends them');
  t.same(exportEvents[1].exports, [done], 'each event holds the whole list');
  const dm = events.find((e) => e.type === 'message');
  t.equal(dm?.message.sender_email, 'notification-bot@zulip.com', 'the notification bot tells the one who asked');
  t.equal(dm?.message.content, '<p>Your data export is complete. <a href="/#organization/data-exports-admin">View and download exports</a>.</p>');
  t.same(await queueEvents(f, alice, memberReg.queue_id, 'realm_export'), [], 'members get no export events');

  const got = await download(f, done.export_url);
  t.equal(got.status, 200, 'downloads without credentials');
  t.equal(got.headers['content-type'], 'application/gzip');
  const files = await untar(readBody(got));
  t.same([...files.keys()].sort(), ['channels.json', 'messages-000001.json', 'realm.json', 'subscriptions.json', 'users.json']);
  const realm = JSON.parse(files.get('realm.json')!.toString());
  t.equal(realm.name, 'Test Org');
  const users = JSON.parse(files.get('users.json')!.toString());
  t.same(users.map((u: { email: string }) => u.email).sort(), ['admin@example.com', 'alice@example.com', 'bob@example.com', 'owner@example.com']);
  const raw = [...files.values()].map((b) => b.toString()).join('\n');
  for (const secret of [f.owner.api_key, alice.api_key, 'scrypt$']) t.notOk(raw.includes(secret), 'no credentials in the archive');
  t.notOk(raw.includes('password_hash') || raw.includes('api_key'), 'no credential fields at all');
  t.same(JSON.parse(files.get('channels.json')!.toString()).map((c: { name: string }) => c.name), ['general'], 'public channels only');
  const messages = JSON.parse(files.get('messages-000001.json')!.toString()).messages;
  t.same(messages.map((m: { id: number }) => m.id), [ids.public], 'public messages only: no private channel, no direct message');
  t.equal(messages[0].content, 'public words');
});


t.test('a full export with consent: consenting members\' private data, consents and their events', async (t) => {
  const { f, admin, alice, bob, ids } = await withMessages();
  t.teardown(f.stop);
  const full = () => f.call(admin, 'POST', '/api/v1/export/realm', { export_type: 2 });
  const noConsent = await full();
  t.same([noConsent.status, noConsent.json.code, noConsent.json.msg], [400, 'BAD_REQUEST', 'Make sure at least one Organization Owner is consenting to the export or contact support@localhost for help.']);
  const reg = (await f.call(admin, 'POST', '/api/v1/register', { event_types: ['realm_export_consent'] })).json;
  let consents = (await f.call(admin, 'GET', '/api/v1/export/realm/consents')).json.export_consents;
  t.same(consents, [[1, false], [2, false], [3, false], [4, false]].map(([user_id, consented]) => ({ user_id, consented })));
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/settings', { allow_private_data_export: true })).status, 200);
  t.equal((await f.call(alice, 'PATCH', '/api/v1/settings', { allow_private_data_export: true })).status, 200);
  t.equal((await f.call(bob, 'PATCH', '/api/v1/settings', { allow_private_data_export: true })).status, 200);
  t.equal((await f.call(bob, 'PATCH', '/api/v1/settings', { allow_private_data_export: false })).status, 200);
  const events = await queueEvents(f, admin, reg.queue_id, 'realm_export_consent');
  t.same(events, [
    { type: 'realm_export_consent', user_id: f.owner.user_id, consented: true }, { type: 'realm_export_consent', user_id: alice.user_id, consented: true },
    { type: 'realm_export_consent', user_id: bob.user_id, consented: true }, { type: 'realm_export_consent', user_id: bob.user_id, consented: false },
  ]);
  for (const e of events) consents = consents.map((c: { user_id: number }) => (c.user_id === e.user_id ? { user_id: e.user_id, consented: e.consented } : c));
  t.same(consents, (await f.call(admin, 'GET', '/api/v1/export/realm/consents')).json.export_consents, 'the consents plus the events equal a fresh list');

  const res = await full();
  t.equal(res.status, 200, res.body);
  await finished(f.runtime, 1, res.json.id);
  const [done] = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports;
  t.equal(done.export_type, 2);
  const files = await untar(readBody(await download(f, done.export_url)));
  t.same(JSON.parse(files.get('channels.json')!.toString()).map((c: { name: string }) => c.name), ['general', 'secret plans'], 'private channels too');
  const messages = JSON.parse(files.get('messages-000001.json')!.toString()).messages;
  t.same(messages.map((m: { id: number }) => m.id), [ids.public, ids.private, ids.aliceDm, ids.bobDm], 'private data of the consenting owner and Alice');
  t.same(messages.find((m: { id: number }) => m.id === ids.aliceDm).dm_user_ids, [alice.user_id, bob.user_id].sort((a, b) => a - b));

  // Only Bob's private data, with Bob not consenting: not exported.
  await f.call(f.owner, 'PATCH', '/api/v1/settings', { allow_private_data_export: false });
  await f.call(alice, 'PATCH', '/api/v1/settings', { allow_private_data_export: false });
  await f.call(admin, 'PATCH', '/api/v1/settings', { allow_private_data_export: true });
  const carol = await f.createUser('carol@example.com');
  const carolDm = (await f.call(carol, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'carol to bob' })).json.id;
  t.equal((await full()).json.msg, 'Make sure at least one Organization Owner is consenting to the export or contact support@localhost for help.', 'an administrator consenting is not enough');
  await f.call(f.owner, 'PATCH', '/api/v1/settings', { allow_private_data_export: true });
  const again = await full();
  await finished(f.runtime, 1, again.json.id);
  const url = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports[1].export_url;
  const later = JSON.parse((await untar(readBody(await download(f, url)))).get('messages-000001.json')!.toString()).messages.map((m: { id: number }) => m.id);
  t.ok(later.includes(ids.bobDm), "the owner's direct message");
  t.notOk(later.includes(carolDm), 'nobody consenting took part: not exported');
});

t.test('who may, the rate limit, bad input', async (t) => {
  const { f, admin } = await withMessages();
  t.teardown(f.stop);
  for (const [role, who] of [['moderator', await withRole(f, 'mod@example.com', 300)], ['member', await withRole(f, 'member@example.com', 400)], ['guest', await withRole(f, 'guest@example.com', 600)]] as Array<[string, Credentials]>) {
    for (const [method, path] of [['POST', '/api/v1/export/realm'], ['GET', '/api/v1/export/realm'], ['GET', '/api/v1/export/realm/consents']]) {
      const r = await f.call(who, method, path);
      t.same([r.status, r.json.code, r.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], `${role}: ${method} ${path}`);
    }
  }
  t.same((await f.call(f.owner, 'GET', '/api/v1/export/realm')).json.exports, [], 'nothing asked for');
  const bad = await f.call(admin, 'POST', '/api/v1/export/realm', { export_type: 3 });
  t.same([bad.status, bad.json.msg], [400, 'Invalid export_type']);
  // Five in any seven days.
  for (let i = 0; i < 5; i++) {
    const r = await f.call(i % 2 ? admin : f.owner, 'POST', '/api/v1/export/realm');
    t.equal(r.status, 200, r.body);
    await finished(f.runtime, 1, r.json.id);
    f.clock.t += 3600_000;
  }
  const limited = await f.call(admin, 'POST', '/api/v1/export/realm');
  t.same([limited.status, limited.json.code, limited.json.msg], [400, 'BAD_REQUEST', 'Exceeded rate limit.']);
  f.clock.t += 7 * 86_400_000 - 4 * 3600_000;
  t.equal((await f.call(admin, 'POST', '/api/v1/export/realm')).status, 200, 'a week after the first, one more');
  // The public export needs an owner whose email administrators may see.
  await f.call(f.owner, 'PATCH', '/api/v1/settings', { email_address_visibility: 4 });
  f.clock.t += 8 * 86_400_000;
  t.equal((await f.call(admin, 'POST', '/api/v1/export/realm')).json.msg, 'Make sure at least one Organization Owner allows other Administrators to see their email address or contact support@localhost for help');
});

t.test('other organizations: their exports are not this one\'s', async (t) => {
  const { f, admin } = await withMessages();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const host = { headers: { host: 'beta.localhost' } };
  const mine = await f.call(admin, 'POST', '/api/v1/export/realm');
  await finished(f.runtime, 1, mine.json.id);
  const url = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports[0].export_url as string;
  t.same((await f.call(beta.owner, 'GET', '/api/v1/export/realm', {}, host)).json.exports, [], 'their list does not hold mine');
  t.same((await f.call(beta.owner, 'GET', '/api/v1/export/realm/consents', {}, host)).json.export_consents, [{ user_id: 1, consented: false }], 'their consents are their users');
  t.equal((await download(f, url, 'beta.localhost')).status, 404, 'my archive is no file at their host');
  const path = new URL(url).pathname;
  t.equal((await download(f, `http://x${path.replace('/exports/1/', `/exports/${beta.organization_id}/`)}`, 'beta.localhost')).status, 404);
  t.equal((await download(f, `http://x${path.replace(/\/[^/]+\/([^/]+)$/, '/wrongkey/$1')}`)).status, 404, 'a wrong key is no file');
  const theirs = await f.call(beta.owner, 'POST', '/api/v1/export/realm', {}, host);
  t.equal(theirs.json.id, 1, 'ids count per organization');
  await finished(f.runtime, beta.organization_id, 1);
  const theirUrl = (await f.call(beta.owner, 'GET', '/api/v1/export/realm', {}, host)).json.exports[0].export_url as string;
  t.match(theirUrl, /^http:\/\/beta\.localhost\/user_avatars\/exports\/2\//);
  const files = await untar(readBody(await download(f, theirUrl, 'beta.localhost')));
  t.same(JSON.parse(files.get('users.json')!.toString()).map((u: { email: string }) => u.email), ['boss@beta.example'], 'their archive holds their users only');
});

t.test('a 63-character subdomain: names past ustar\'s 100 bytes are whole in the archive', async (t) => {
  const { f } = await withMessages();
  t.teardown(f.stop);
  const subdomain = `l${'o'.repeat(61)}g`;
  const long = await createOrganization(f.runtime, { name: 'Long', subdomain, ownerEmail: 'boss@long.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const host = { headers: { host: `${subdomain}.localhost` } };
  t.equal((await f.call(long.owner, 'POST', '/api/v1/export/realm', {}, host)).status, 200);
  await finished(f.runtime, long.organization_id, 1);
  const url = (await f.call(long.owner, 'GET', '/api/v1/export/realm', {}, host)).json.exports[0].export_url as string;
  const files = await untar(readBody(await download(f, url, `${subdomain}.localhost`)));
  t.same([...files.keys()], ['realm.json', 'users.json', 'channels.json', 'subscriptions.json', 'messages-000001.json']);
  t.equal(JSON.parse(files.get('realm.json')!.toString()).string_id, subdomain);
});

t.test('exports survive a restart; one left unfinished is built after it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-export-store-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const ask = () => store.runtime.execute({ type: 'REQUEST_EXPORT', org, actor_id: 1, export_type: 1, support: 's@x', messages: 0, upload_bytes: 0 });
  const first = await ask();
  await store.runtime.execute({ type: 'FINISH_EXPORT', org, id: first.id, file: { sha256: 'ab'.repeat(32), size: 5, name: 'a.tar.gz', key: 'k', url: 'http://x/a' } });
  await store.snapshot();
  const second = await ask();
  await store.close();
  store = open();
  t.same(exportProgress(store.runtime, org).map((e) => [e.id, e.status]), [[first.id, 'succeeded'], [second.id, 'requested']]);
  resumeExports(store.runtime, { dataDir: dir, externalHost: 'example.test' });
  await finished(store.runtime, org, second.id);
  const e = exportProgress(store.runtime, org).find((x) => x.id === second.id)!;
  t.equal(e.status, 'succeeded', 'built after the restart');
  t.match(e.url, /^http:\/\/example\.test\/user_avatars\/exports\/1\//);
  t.ok((await ask()).id > second.id, 'ids are never reused');
  await store.close();
});

/** An export asked for through the runtime: not built, so it stays pending until `FINISH_EXPORT`. */
async function pendingExport(runtime: Runtime, org: number, actor_id: number): Promise<number> {
  return (await runtime.execute({ type: 'REQUEST_EXPORT', org, actor_id, export_type: 1, support: 's@x', messages: 0, upload_bytes: 0 })).id;
}

t.test('DELETE /export/realm/{id}: the archive goes, deleted_timestamp is set, administrators are told', async (t) => {
  const { f, admin, alice } = await withMessages();
  t.teardown(f.stop);
  const res = await f.call(admin, 'POST', '/api/v1/export/realm');
  await finished(f.runtime, 1, res.json.id);
  const [built] = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports;
  const { sha256 } = exportProgress(f.runtime, 1).find((e) => e.id === res.json.id)!;
  const archive = join(f.config.dataDir, 'uploads', '1', sha256!);
  t.ok(existsSync(archive), 'the archive is in the upload store');
  const reg = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['realm_export'] })).json.queue_id as string;
  const [qAdmin, qOwner, qAlice] = [await reg(admin), await reg(f.owner), await reg(alice)];
  f.clock.t += 60_000;
  const del = await f.call(f.owner, 'DELETE', `/api/v1/export/realm/${res.json.id}`);
  t.same([del.status, del.json.result], [200, 'success'], del.body);
  const listed = (await f.call(admin, 'GET', '/api/v1/export/realm')).json.exports;
  t.same(listed, [{ ...built, export_url: null, deleted_timestamp: Math.floor(f.clock.t / 1000) }], 'listed with deleted_timestamp and no URL');
  t.notOk(existsSync(archive), 'the archive file is deleted from the upload store');
  t.equal((await download(f, built.export_url)).status, 404, 'its URL no longer serves it');
  for (const q of [[admin, qAdmin], [f.owner, qOwner]] as Array<[Credentials, string]>) {
    t.same(await queueEvents(f, q[0], q[1]), [{ type: 'realm_export', exports: listed }], 'one realm_export event with the updated list');
  }
  t.same(await queueEvents(f, alice, qAlice), [], 'members are not told');
  // Convergence: the list from register plus the events equals a fresh list.
  const again = await f.call(admin, 'DELETE', `/api/v1/export/realm/${res.json.id}`);
  t.same([again.status, again.json.code, again.json.msg], [400, 'BAD_REQUEST', 'Export already deleted']);
  t.same(await queueEvents(f, admin, qAdmin), [{ type: 'realm_export', exports: listed }], 'a refused request tells no one');
});

t.test('DELETE /export/realm/{id}: Zulip\'s errors, in its order, and who may', async (t) => {
  const { f, admin } = await withMessages();
  t.teardown(f.stop);
  const del = (who: Credentials, id: number | string) => f.call(who, 'DELETE', `/api/v1/export/realm/${id}`);
  const err = async (who: Credentials, id: number | string, msg: string, what: string) => {
    const r = await del(who, id);
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', msg], what);
  };
  await err(admin, 1, 'Invalid data export ID', 'no export yet');
  const pending = await pendingExport(f.runtime, 1, admin.user_id);
  await err(admin, pending, 'Export still in progress', 'a pending export');
  await f.runtime.execute({ type: 'FINISH_EXPORT', org: 1, id: pending });
  await err(admin, pending, 'Export failed, nothing to delete', 'a failed export');
  await err(admin, 99999, 'Invalid data export ID', 'a missing id');
  // Zulip's URL pattern takes digits only: anything else is no route at all.
  t.equal((await del(admin, 'abc')).status, 404, 'not an integer');
  t.equal((await del(admin, -1)).status, 404, 'negative');
  const built = await f.call(admin, 'POST', '/api/v1/export/realm');
  await finished(f.runtime, 1, built.json.id);
  for (const [role, who] of [['moderator', await withRole(f, 'mod@example.com', 300)], ['member', await withRole(f, 'member@example.com', 400)], ['guest', await withRole(f, 'guest@example.com', 600)]] as Array<[string, Credentials]>) {
    for (const id of [built.json.id, 99999]) {
      const r = await del(who, id);
      t.same([r.json.code, r.json.msg], ['UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], `${role}, export ${id}: the role is checked first`);
    }
  }
  t.equal(exportProgress(f.runtime, 1).find((e) => e.id === built.json.id)!.status, 'succeeded', 'nothing deleted');
  t.equal((await del(admin, built.json.id)).status, 200, 'an administrator (not the owner) deletes it');
  t.same(exportProgress(f.runtime, 1).map((e) => e.status), ['failed', 'deleted']);
});

t.test('DELETE /export/realm/{id}: an export of another organization is a missing one', async (t) => {
  const { f, admin } = await withMessages();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const host = { headers: { host: 'beta.localhost' } };
  // Theirs has id 1 and 2; ours only 1, so 2 is theirs alone.
  for (let i = 0; i < 2; i++) {
    const r = await f.call(beta.owner, 'POST', '/api/v1/export/realm', {}, host);
    await finished(f.runtime, beta.organization_id, r.json.id);
  }
  const ours = await f.call(admin, 'POST', '/api/v1/export/realm');
  await finished(f.runtime, 1, ours.json.id);
  const [theirs, missing] = [await f.call(admin, 'DELETE', '/api/v1/export/realm/2'), await f.call(admin, 'DELETE', '/api/v1/export/realm/99999')];
  t.same([theirs.status, theirs.json], [missing.status, missing.json], 'the same answer as a nonexistent id');
  t.equal(theirs.json.msg, 'Invalid data export ID');
  t.equal((await f.call(admin, 'DELETE', '/api/v1/export/realm/1')).status, 200, 'our export 1');
  t.same(exportProgress(f.runtime, beta.organization_id).map((e) => e.status), ['succeeded', 'succeeded'], 'theirs, of the same id too, untouched');
  t.equal((await download(f, (await f.call(beta.owner, 'GET', '/api/v1/export/realm', {}, host)).json.exports[0].export_url, 'beta.localhost')).status, 200, 'and still served');
});

t.test('DELETE /export/realm/{id}: a deletion survives a restart; a snapshot naming the archive keeps it until it is gone', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-export-delete-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const [a, b] = [await pendingExport(store.runtime, org, 1), await pendingExport(store.runtime, org, 1)];
  resumeExports(store.runtime, { dataDir: dir, externalHost: 'example.test' });
  await finished(store.runtime, org, a);
  await finished(store.runtime, org, b);
  const fileOf = (id: number) => join(dir, 'uploads', String(org), exportProgress(store.runtime, org).find((e) => e.id === id)!.sha256!);
  const [fileA, fileB] = [fileOf(a), fileOf(b)];
  await store.runtime.execute({ type: 'DELETE_EXPORT', org, actor_id: 1, id: a });
  await store.snapshot();
  await store.runtime.execute({ type: 'DELETE_EXPORT', org, actor_id: 1, id: b });
  await collectUploads(store.runtime, dir);
  t.ok(existsSync(fileB), 'an archive a kept snapshot names stays, so restoring that snapshot finds it');
  await store.close();
  store = open();
  t.teardown(() => store.close());
  const exports = exportProgress(store.runtime, org);
  t.same(exports.map((e) => [e.id, e.status, e.sha256 === null, typeof e.deleted]), [[a, 'deleted', true, 'number'], [b, 'deleted', true, 'number']], 'both deleted after the restart (one from the snapshot, one from the log)');
  t.equal((await store.runtime.execute({ type: 'DELETE_EXPORT', org, actor_id: 1, id: a }).catch((e: Error) => e.message)), 'Export already deleted');
  await store.snapshot();
  await collectUploads(store.runtime, dir);
  t.notOk(existsSync(fileA), 'no snapshot names the first');
});

t.test('realm_export_consent on creation and reactivation of a human, as Zulip sends it; consents plus events equal a fresh list', async (t) => {
  const { f, admin, alice } = await withMessages();
  t.teardown(f.stop);
  const reg = async (who: Credentials) => (await f.call(who, 'POST', '/api/v1/register', { event_types: ['realm_export_consent', 'realm_user'] })).json.queue_id as string;
  const [qAdmin, qOwner, qAlice] = [await reg(admin), await reg(f.owner), await reg(alice)];
  let consents = (await f.call(admin, 'GET', '/api/v1/export/realm/consents')).json.export_consents as Array<{ user_id: number; consented: boolean }>;
  const carol = await f.createUser('carol@example.com', 'Carol');
  await f.call(carol, 'PATCH', '/api/v1/settings', { allow_private_data_export: true });
  const bot = await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Helper', short_name: 'helper' });
  t.equal(bot.status, 200, bot.body);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${carol.user_id}`)).status, 200);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/users/${bot.json.user_id}`)).status, 200);
  t.equal((await f.call(f.owner, 'POST', `/api/v1/users/${carol.user_id}/reactivate`)).status, 200);
  t.equal((await f.call(f.owner, 'POST', `/api/v1/users/${bot.json.user_id}/reactivate`)).status, 200);
  const moderator = await withRole(f, 'mod@example.com', 300);
  await settle();
  const events = await queueEvents(f, admin, qAdmin, 'realm_export_consent');
  t.same(events, [
    { type: 'realm_export_consent', user_id: carol.user_id, consented: false },
    { type: 'realm_export_consent', user_id: carol.user_id, consented: true },
    { type: 'realm_export_consent', user_id: carol.user_id, consented: true },
    { type: 'realm_export_consent', user_id: moderator.user_id, consented: false },
  ], 'created, changed, reactivated (with the consent kept), created; none for a bot, none on deactivation');
  t.same(await queueEvents(f, f.owner, qOwner, 'realm_export_consent'), events, 'every human administrator');
  t.same(await queueEvents(f, alice, qAlice, 'realm_export_consent'), [], 'members are not told');
  // Zulip's web app: a consent event sets the user's row (adding it), a deactivation removes it.
  for (const e of await queueEvents(f, admin, qAdmin)) {
    if (e.type === 'realm_export_consent') consents = [...consents.filter((c) => c.user_id !== e.user_id), { user_id: e.user_id, consented: e.consented }];
    if (e.type === 'realm_user' && e.op === 'update' && e.person.is_active === false) consents = consents.filter((c) => c.user_id !== e.person.user_id);
  }
  const fresh = (await f.call(admin, 'GET', '/api/v1/export/realm/consents')).json.export_consents;
  const byId = (list: Array<{ user_id: number }>) => [...list].sort((a, b) => a.user_id - b.user_id);
  t.same(byId(consents), byId(fresh), 'the consents plus the events equal a fresh list');
  t.ok(fresh.some((c: { user_id: number; consented: boolean }) => c.user_id === carol.user_id && c.consented), 'and it holds the reactivated user');
});

t.test('realm_export_consent: a user created in another organization tells no administrator here', async (t) => {
  const { f, admin } = await withMessages();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const q = (await f.call(admin, 'POST', '/api/v1/register', { event_types: ['realm_export_consent'] })).json.queue_id as string;
  const qBeta = (await f.call(beta.owner, 'POST', '/api/v1/register', { event_types: ['realm_export_consent'] }, { headers: { host: 'beta.localhost' } })).json.queue_id as string;
  const created = await f.call(beta.owner, 'POST', '/api/v1/users', { email: 'new@beta.example', password: 'pw-new-beta', full_name: 'New' }, { headers: { host: 'beta.localhost' } });
  t.equal(created.status, 200, created.body);
  t.same(await queueEvents(f, admin, q), []);
  const theirs = await f.call(beta.owner, 'GET', '/api/v1/events', { queue_id: qBeta, last_event_id: -1, dont_block: true }, { headers: { host: 'beta.localhost' } });
  t.same(theirs.json.events.map(({ id: _id, ...e }: any) => e), [{ type: 'realm_export_consent', user_id: created.json.user_id, consented: false }], 'their owner is told');
});
