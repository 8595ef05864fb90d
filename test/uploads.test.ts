/**
 * Uploads and attachments through the chat API, in process: who may read a file,
 * ranges and safe headers, the size limit, an interrupted upload, and the life of an
 * attachment (claimed by a message, detached by an edit, deleted with its last
 * message, swept when never used), with its `attachment` events.
 */
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { basicAuth, chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, injectChecked } from './helpers.js';
import { applyEvent } from './client_model.js';
import { Role } from '../actors/shared/types.js';
import { createOrganization } from '../src/bootstrap.js';

const BOUNDARY = 'parley-test-boundary';

function multipart(filename: string, type: string, data: string | Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`),
    Buffer.from(data),
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

function upload(f: ChatFixture, who: Credentials, filename: string, type: string, data: string | Buffer) {
  return injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(who), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(filename, type, data) });
}

function get(f: ChatFixture, who: Credentials, url: string, headers: Record<string, string> = {}) {
  return injectChecked(f.app, { method: 'GET', url, headers: { authorization: basicAuth(who), ...headers } });
}

async function fixture(maxMib = 1) {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-uploads-'));
  const f = await chatFixture({ config: { dataDir, maxFileUploadSizeMib: maxMib } });
  return { f, dataDir };
}

function storedFiles(dataDir: string): string[] {
  const root = join(dataDir, 'uploads');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);
}

t.test('the uploader reads at once; others once a message they can see links it', async (t) => {
  const { f } = await fixture();
  t.teardown(() => f.stop());
  const alice = await f.createUser('alice@example.com');
  const bob = await f.createUser('bob@example.com');
  const admin = await withRole(f, 'admin@example.com', Role.ADMIN);
  const guest = await withRole(f, 'guest@example.com', Role.GUEST);
  const up = await upload(f, alice, 'notes.txt', 'text/plain', 'hello world');
  t.equal(up.status, 200, up.body);
  t.match(up.json, { result: 'success', filename: 'notes.txt', url: /^\/user_uploads\/1\/[^/]+\/[^/]+\/notes\.txt$/ });
  t.equal(up.json.uri, up.json.url);
  const url = up.json.url as string;
  t.equal((await get(f, alice, url)).body, 'hello world');
  for (const who of [bob, admin, guest, f.owner]) t.equal((await get(f, who, url)).status, 403, `${who.email} before sharing`);
  // A private channel of alice and bob: bob may read, the others (administrators included) not.
  await f.call(alice, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'secret' }], invite_only: true, principals: [alice.user_id, bob.user_id] });
  const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'secret', topic: 't', content: `see [notes.txt](${url})` });
  t.equal(sent.status, 200, sent.body);
  t.equal((await get(f, bob, url)).status, 200);
  for (const who of [admin, guest, f.owner]) t.equal((await get(f, who, url)).status, 403, `${who.email}, not a recipient`);
  // A direct message to the guest shares it with them.
  await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([guest.user_id]), content: `[x](${url})` });
  t.equal((await get(f, guest, url)).status, 200);
  // Unknown paths, other realms, traversal: not found.
  for (const bad of [url.replace('/user_uploads/1/', '/user_uploads/2/'), url + 'x', '/user_uploads/1/../../etc/passwd', url.replace('notes.txt', '..%2F..%2Fnotes.txt')]) {
    t.equal((await get(f, alice, bad)).status, 404, bad);
  }
  t.equal((await injectChecked(f.app, { method: 'GET', url })).status, 401);
});

t.test('ranges, and types never shown inline unless passive', async (t) => {
  const { f } = await fixture();
  t.teardown(() => f.stop());
  const up = await upload(f, f.owner, 'page.html', 'text/html', '<script>alert(1)</script>');
  const res = await get(f, f.owner, up.json.url);
  t.equal(res.headers['content-type'], 'application/octet-stream');
  t.equal(res.headers['content-disposition'], 'attachment; filename="page.html"');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
  const png = await upload(f, f.owner, 'pic.png', 'image/png', '0123456789');
  const inline = await get(f, f.owner, png.json.url);
  t.equal(inline.headers['content-type'], 'image/png');
  t.equal(inline.headers['content-disposition'], 'inline; filename="pic.png"');
  const part = await get(f, f.owner, png.json.url, { range: 'bytes=2-5' });
  t.same([part.status, part.body, part.headers['content-range']], [206, '2345', 'bytes 2-5/10']);
  const tail = await get(f, f.owner, png.json.url, { range: 'bytes=-3' });
  t.same([tail.status, tail.body], [206, '789']);
  const past = await get(f, f.owner, png.json.url, { range: 'bytes=10-' });
  t.same([past.status, past.headers['content-range']], [416, 'bytes */10']);
});

t.test('the size limit, bad bodies, and an interrupted upload leave nothing', async (t) => {
  const { f, dataDir } = await fixture(1);
  t.teardown(() => f.stop());
  const big = await upload(f, f.owner, 'big.bin', 'application/octet-stream', Buffer.alloc(1024 * 1024 + 1));
  t.same([big.status, big.json.msg], [400, 'Uploaded file is larger than the allowed limit of 1 MiB']);
  const none = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(f.owner), 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
  t.same([none.status, none.json.msg], [400, 'You must specify a file to upload']);
  const part = (name: string): string => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.txt"\r\nContent-Type: text/plain\r\n\r\n${name}\r\n`;
  const two = Buffer.from(`${part('a')}${part('b')}--${BOUNDARY}--\r\n`);
  const both = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(f.owner), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: two });
  t.same([both.status, both.json.msg], [400, 'You may only upload one file at a time']);
  // The client goes away in the middle of the file.
  const head = multipart('cut.bin', 'application/octet-stream', Buffer.alloc(50000, 7)).subarray(0, 30000);
  const body = new Readable({ read() {} });
  body.push(head);
  setTimeout(() => body.destroy(new Error('aborted')), 20);
  const cut = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(f.owner), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, bodyStream: body });
  t.equal(cut.status, 400);
  t.same(storedFiles(dataDir), [], 'no file, temp or final, is left');
  t.same((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments, []);
});

t.test('attachment lifecycle: claimed, detached by an edit, deleted with its last message, swept', async (t) => {
  const { f, dataDir } = await fixture();
  t.teardown(() => f.stop());
  const reg = await f.call(f.owner, 'POST', '/api/v1/register', { event_types: JSON.stringify(['attachment']) });
  const before = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json;
  const up = await upload(f, f.owner, 'a.txt', 'text/plain', 'abc');
  const id = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments[0].id;
  await f.subscribe(f.owner, 'general');
  const m1 = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `[a](${up.json.url})` })).json.id;
  const m2 = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `again ${up.json.url}` })).json.id;
  let list = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json;
  t.same(list.attachments[0].messages.map((m: any) => m.id), [m1, m2]);
  t.equal(list.upload_space_used, 3);
  // Editing the link out of one message detaches nothing yet; out of both, it is detached.
  const e1 = await f.call(f.owner, 'PATCH', `/api/v1/messages/${m2}`, { content: 'no link' });
  t.same(e1.json.detached_uploads, []);
  const e2 = await f.call(f.owner, 'PATCH', `/api/v1/messages/${m1}`, { content: 'none here' });
  t.match(e2.json.detached_uploads, [{ id, name: 'a.txt', size: 3, messages: [] }]);
  // Relinked, then the last linking message is deleted: the file goes.
  const m3 = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `[a](${up.json.url})` })).json.id;
  t.equal(storedFiles(dataDir).length, 1);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/messages/${m3}`)).status, 200);
  t.same((await f.call(f.owner, 'GET', '/api/v1/attachments')).json, { result: 'success', msg: '', attachments: [], upload_space_used: 0 });
  t.same(storedFiles(dataDir), []);
  t.equal((await get(f, f.owner, up.json.url)).status, 404);
  // Convergence: the first listing plus the attachment events is the listing now (register
  // has no attachments, as in Zulip: the client model applies them to a listing).
  const events = await queueEvents(f, f.owner, reg.json.queue_id, 'attachment');
  const state = { attachments: before.attachments, upload_space_used: before.upload_space_used };
  for (const e of events) applyEvent(state, e, f.owner.user_id);
  const { attachments, upload_space_used } = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json;
  t.same(state, { attachments, upload_space_used });
  t.same(events.map((e) => e.op), ['add', 'update', 'update', 'update', 'update', 'update', 'remove']);
  // Never used: swept after the retention period, not before.
  const unused = await upload(f, f.owner, 'b.txt', 'text/plain', 'b');
  t.equal(unused.status, 200);
  await f.runtime.execute({ type: 'SWEEP_ATTACHMENTS', org: 1, weeks: 3 });
  t.equal((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments.length, 1);
  f.clock.t += 3 * 7 * 86400 * 1000 + 1000;
  const swept = await f.runtime.execute({ type: 'SWEEP_ATTACHMENTS', org: 1, weeks: 3 });
  t.equal(swept.removed, 1);
  t.same((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments, []);
  // Deleting: owners only.
  const c = await upload(f, f.owner, 'c.txt', 'text/plain', 'c');
  const cid = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments[0].id;
  const other = await f.createUser('zed@example.com');
  t.same((await f.call(other, 'DELETE', `/api/v1/attachments/${cid}`)).json.code, 'BAD_REQUEST');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/attachments/${cid}`)).status, 200);
  t.equal((await get(f, f.owner, c.json.url)).status, 404);
});

t.test('DELETE /attachments/{id}: the owner only, whatever the role of anyone else', async (t) => {
  const { f, dataDir } = await fixture();
  t.teardown(() => f.stop());
  const member = await f.createUser('member@example.com');
  const other = await f.createUser('other@example.com');
  const admin = await withRole(f, 'admin@example.com', Role.ADMIN);
  const guest = await withRole(f, 'guest@example.com', Role.GUEST);
  const idOf = async (who: Credentials): Promise<number> => (await f.call(who, 'GET', '/api/v1/attachments')).json.attachments[0].id;
  const mine = await upload(f, member, 'm.txt', 'text/plain', 'member file');
  const memberId = await idOf(member);
  for (const who of [other, admin, guest, f.owner]) {
    const res = await f.call(who, 'DELETE', `/api/v1/attachments/${memberId}`);
    t.same([res.status, res.json.code, res.json.msg], [400, 'BAD_REQUEST', 'Invalid attachment'], `${who.email} may not delete a member's file`);
  }
  t.equal((await get(f, member, mine.json.url)).status, 200, 'the file is still served');
  // A guest uploads and deletes their own; an administrator likewise.
  for (const who of [guest, admin]) {
    const up = await upload(f, who, 'own.txt', 'text/plain', `own ${who.email}`);
    t.equal(up.status, 200);
    const id = await idOf(who);
    t.equal((await f.call(member, 'DELETE', `/api/v1/attachments/${id}`)).status, 400, `a member may not delete ${who.email}'s file`);
    t.equal((await f.call(who, 'DELETE', `/api/v1/attachments/${id}`)).status, 200, `${who.email} deletes their own`);
    t.equal((await get(f, who, up.json.url)).status, 404);
  }
  t.equal((await f.call(member, 'DELETE', `/api/v1/attachments/${memberId}`)).status, 200, 'the owner deletes it');
  t.equal((await f.call(member, 'DELETE', `/api/v1/attachments/${memberId}`)).status, 400, 'once');
  t.same(storedFiles(dataDir), [], 'every file is gone');
});

t.test('uploads never reach across organizations', async (t) => {
  const { f, dataDir } = await fixture();
  t.teardown(() => f.stop());
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss: Credentials = { ...beta.owner };
  const betaHost = { host: `beta.${f.config.externalHost}` };
  const betaUpload = (data: string) =>
    injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { ...betaHost, authorization: basicAuth(boss), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart('same.txt', 'text/plain', data) });
  const betaCall = (method: string, url: string, headers: Record<string, string> = {}) => injectChecked(f.app, { method, url, headers: { ...betaHost, authorization: basicAuth(boss), ...headers } });
  // The same bytes in both organizations: two files, one per organization.
  const here = await upload(f, f.owner, 'same.txt', 'text/plain', 'identical bytes');
  await upload(f, f.owner, 'second.txt', 'text/plain', 'only here');
  const there = await betaUpload('identical bytes');
  t.equal(there.status, 200, there.body);
  t.match(there.json.url, new RegExp(`^/user_uploads/${beta.organization_id}/`));
  t.equal(storedFiles(dataDir).length, 3);
  // Each organization's credentials are unknown to the other; each file URL is unknown to the other.
  t.equal((await get(f, boss, here.json.url)).status, 401, "beta's owner is no user here");
  t.equal((await betaCall('GET', here.json.url)).status, 404, "this organization's file is not found from beta");
  t.equal((await get(f, f.owner, there.json.url)).status, 404, "beta's file is not found here");
  t.equal((await betaCall('GET', there.json.url)).body, 'identical bytes');
  // Listing and deleting see only the caller's organization; attachment ids are per organization.
  const betaList = (await betaCall('GET', '/api/v1/attachments')).json;
  t.same(betaList.attachments.map((a: any) => a.name), ['same.txt']);
  t.equal(betaList.upload_space_used, 'identical bytes'.length);
  const secondId = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments[0].id;
  t.equal((await betaCall('DELETE', `/api/v1/attachments/${secondId}`)).status, 400, 'an id of the other organization is no attachment');
  t.equal((await betaCall('DELETE', `/api/v1/attachments/${betaList.attachments[0].id}`)).status, 200);
  t.equal((await get(f, f.owner, here.json.url)).body, 'identical bytes', 'the other organization keeps its copy');
  t.equal((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments.length, 2);
  t.equal(storedFiles(dataDir).length, 2);
});

t.test('a filename is UTF-8, as Django reads it: raw UTF-8 is taken, invalid UTF-8 is a 400', async (t) => {
  const { f, dataDir } = await fixture(1);
  t.teardown(() => f.stop());
  const named = await upload(f, f.owner, 'caf\u00e9 \u2615.txt', 'text/plain', 'x');
  t.equal(named.status, 200, named.body);
  t.equal(named.json.filename, 'caf\u00e9-.txt', 'sanitized as Zulip does, the accent kept (latin1 made it cafÃ©)');
  const body = Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bad\xff.txt"\r\n\r\n`, 'latin1'), Buffer.from('x'), Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
  const bad = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(f.owner), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
  t.strictSame([bad.status, bad.json], [400, { result: 'error', msg: 'Invalid UTF-8 in request', code: 'BAD_REQUEST' }]);
  t.equal(storedFiles(dataDir).length, 1, 'only the first file is stored');
});
