/**
 * Temporary file URLs (`GET /api/v1/user_uploads/{realm_id_str}/{filename}`): only to
 * those who may read the file; the URL downloads without credentials for 60 seconds;
 * a forged, expired or foreign token, a wrong file name or a deleted file is refused;
 * another organization's file is answered as one that does not exist.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { basicAuth, chatFixture, type ChatFixture, type Credentials, injectChecked } from './helpers.js';

const BOUNDARY = 'tmp-url-boundary';

async function upload(f: ChatFixture, who: Credentials, filename: string, data: string, host = '127.0.0.1'): Promise<string> {
  const body = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n${data}\r\n--${BOUNDARY}--\r\n`);
  const res = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { host, authorization: basicAuth(who), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.url as string;
}

const anonymous = (f: ChatFixture, url: string, headers: Record<string, string> = {}) => injectChecked(f.app, { method: 'GET', url, headers });

t.test('a temporary URL downloads without credentials for 60 seconds', async (t) => {
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-tmpurl-')) } });
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com');
  const bob = await f.createUser('bob@example.com');
  const url = await upload(f, alice, 'notes.txt', 'hello world');
  const apiPath = `/api/v1${url}`;
  const res = await f.call(alice, 'GET', apiPath);
  t.equal(res.status, 200, res.body);
  t.same(Object.keys(res.json).sort(), ['msg', 'result', 'url']);
  const temporary = res.json.url as string;
  t.match(temporary, /^\/user_uploads\/temporary\/[0-9A-F]+\/notes\.txt$/);
  const got = await anonymous(f, temporary);
  t.equal(got.status, 200);
  t.equal(got.body, 'hello world');
  t.equal(got.headers['content-disposition'], 'attachment; filename="notes.txt"');
  t.equal(got.headers['x-content-type-options'], 'nosniff');
  const part = await anonymous(f, temporary, { range: 'bytes=0-4' });
  t.same([part.status, part.body], [206, 'hello'], 'ranges too');

  // Bob may not read it until a message he can see links it.
  const denied = await f.call(bob, 'GET', apiPath);
  t.same([denied.status, denied.json.code, denied.json.msg], [403, 'ACCESS_DENIED', 'You are not authorized to view this file.']);
  await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: `[notes](${url})` });
  t.equal((await f.call(bob, 'GET', apiPath)).status, 200, 'shared: now he may');

  // Tampered, misnamed and expired URLs.
  const [, , , token] = temporary.split('/');
  const flipped = token.slice(0, -2) + (token.endsWith('41') ? '42' : '41');
  for (const bad of [`/user_uploads/temporary/${flipped}/notes.txt`, '/user_uploads/temporary/ZZ/notes.txt', '/user_uploads/temporary/00/notes.txt']) {
    const r = await anonymous(f, bad);
    t.same([r.status, r.json?.msg], [400, 'Invalid token'], bad.slice(0, 60));
  }
  const misnamed = await anonymous(f, temporary.replace(/notes\.txt$/, 'other.txt'));
  t.same([misnamed.status, misnamed.json.msg], [400, 'Invalid filename']);
  f.clock.t += 59_000;
  t.equal((await anonymous(f, temporary)).status, 200, 'still good at 59 seconds');
  f.clock.t += 2_000;
  const expired = await anonymous(f, temporary);
  t.same([expired.status, expired.json.msg], [400, 'Invalid token'], 'expired after 60 seconds');

  // A deleted file: no URL, and a fresh URL made before the deletion stops working.
  const fresh = (await f.call(alice, 'GET', apiPath)).json.url as string;
  const second = await upload(f, alice, 'gone.txt', 'bye');
  const secondUrl = (await f.call(alice, 'GET', `/api/v1${second}`)).json.url as string;
  const attachment = (await f.call(alice, 'GET', '/api/v1/attachments')).json.attachments.find((a: any) => a.name === 'gone.txt');
  t.equal((await f.call(alice, 'DELETE', `/api/v1/attachments/${attachment.id}`)).status, 200);
  const missing = await f.call(alice, 'GET', `/api/v1${second}`);
  t.same([missing.status, missing.json.code, missing.json.msg], [404, 'NOT_FOUND', 'File not found.']);
  t.same([(await anonymous(f, secondUrl)).status, (await anonymous(f, secondUrl)).json.msg], [404, 'File not found.']);
  t.equal((await anonymous(f, fresh)).status, 200, 'the other file still downloads');
  t.equal((await f.call(null, 'GET', apiPath)).status, 401, 'asking for a URL needs credentials');
});

t.test('other organizations: their files are files that do not exist, their tokens are no tokens', async (t) => {
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-tmpurl-')) } });
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const host = { headers: { host: 'beta.localhost' } };
  const theirs = await upload(f, beta.owner, 'secret.txt', 'beta secret', 'beta.localhost');
  const mine = await upload(f, f.owner, 'mine.txt', 'mine');
  const nowhere = `/api/v1/user_uploads/${beta.organization_id}/aa/bb/secret.txt`;
  const expected = await f.call(f.owner, 'GET', nowhere);
  t.same([expected.status, expected.json.msg], [404, 'File not found.']);
  const foreign = await f.call(f.owner, 'GET', `/api/v1${theirs}`);
  t.same([foreign.status, foreign.json.code, foreign.json.msg], [expected.status, expected.json.code, expected.json.msg], "another organization's file: the answer of a file that does not exist");
  // Their path with this organization's id names nothing here either.
  const [, , , a, b, name] = theirs.split('/');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/user_uploads/1/${a}/${b}/${name}`)).status, 404);
  // A token made for their organization does not download at this organization's host, nor the reverse.
  const theirUrl = (await f.call(beta.owner, 'GET', `/api/v1${theirs}`, {}, host)).json.url as string;
  t.same([(await anonymous(f, theirUrl)).status, (await anonymous(f, theirUrl)).json.msg], [400, 'Invalid token']);
  t.equal((await anonymous(f, theirUrl, { host: 'beta.localhost' })).body, 'beta secret', 'at its own host it does');
  const myUrl = (await f.call(f.owner, 'GET', `/api/v1${mine}`)).json.url as string;
  t.equal((await anonymous(f, myUrl, { host: 'beta.localhost' })).status, 400);
});
