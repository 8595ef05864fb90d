/**
 * Route tests of the HTTP pipeline itself: routing, authentication, organization by
 * Host, parameter decoding and checking, and that no input ever yields a 500.
 */
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { type InjectRequest } from '../src/http/inject.js';
import { Abortable } from '../src/http/types.js';
import { basicAuth, chatFixture, type ApiResult, type ChatFixture, type Credentials, injectChecked } from './helpers.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Sends a hand-built request through the app, without the fixture's encoding. */
function raw(f: ChatFixture, r: InjectRequest): Promise<ApiResult> {
  return injectChecked(f.app, r);
}

/** The Authorization header of a user. */
function authHeader(who: Credentials): Record<string, string> {
  return { authorization: basicAuth(who) };
}

/** A multipart/form-data body as form-data and browsers build it. */
function multipart(boundary: string, fields: Array<[string, string]>, files: Array<{ field: string; filename: string; type: string; data: string }> = []): Buffer {
  let s = '';
  for (const [name, value] of fields) s += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  for (const file of files) {
    s += `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\nContent-Type: ${file.type}\r\n\r\n${file.data}\r\n`;
  }
  s += `--${boundary}--\r\n`;
  return Buffer.from(s, 'utf8');
}

/** Asserts a Zulip-shaped error body with the given status and code. */
function isError(t: Tap, res: ApiResult, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: status (${res.body})`);
  t.equal(res.json?.result, 'error', `${what}: result`);
  t.equal(res.json?.code, code, `${what}: code`);
  t.type(res.json?.msg, 'string', `${what}: msg`);
  t.match(res.headers['content-type'], /^application\/json/, `${what}: JSON content type`);
}

/** The stored Markdown source of a message, as the owner reads it back. */
async function rawContent(f: ChatFixture, id: number): Promise<string> {
  const got = await f.call(f.owner, 'GET', `/api/v1/messages/${id}`);
  return got.json?.raw_content;
}

t.test('routing', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);

  await t.test('an unknown route is a JSON 404, with or without credentials', async (t) => {
    for (const who of [f.owner, null]) {
      const res = await f.call(who, 'GET', '/api/v1/no_such_endpoint');
      isError(t, res, 404, 'NOT_FOUND', `unknown route as ${who ? 'owner' : 'anonymous'}`);
    }
    isError(t, await f.call(f.owner, 'POST', '/api/v1/users/me/no_such_thing', { a: 1 }), 404, 'NOT_FOUND', 'unknown nested route');
    isError(t, await f.call(null, 'GET', '/not-the-api'), 404, 'NOT_FOUND', 'path outside /api/v1');
    isError(t, await f.call(null, 'GET', '/api/v2/users'), 404, 'NOT_FOUND', 'another API version');
  });

  /** The methods the route table has for a path pattern, sorted. */
  const methodsOf = (pattern: string): string[] => f.app.routes.filter((r) => r.path === pattern).map((r) => r.method).sort();

  await t.test('a wrong method is a 405 listing the allowed methods in the body and in Allow', async (t) => {
    // PUT is used by no Zulip endpoint on these paths, so these stay 405 as routes are added.
    const cases: Array<[string, string, string[]]> = [
      ['/api/v1/messages', '/api/v1/messages', ['GET', 'POST']],
      ['/api/v1/server_settings', '/api/v1/server_settings', ['GET']],
      ['/api/v1/messages/1', '/api/v1/messages/{message_id}', ['GET']],
      ['/api/v1/users/me/subscriptions', '/api/v1/users/me/subscriptions', ['DELETE', 'GET', 'POST']],
    ];
    for (const [url, pattern, atLeast] of cases) {
      const res = await f.call(f.owner, 'PUT', url);
      t.equal(res.status, 405, `PUT ${url}: ${res.body}`);
      t.equal(res.json?.result, 'error');
      t.type(res.json?.msg, 'string');
      t.match(res.headers['content-type'], /^application\/json/);
      const allowed = [...(res.json?.allowed_methods ?? [])].sort();
      t.same(allowed, methodsOf(pattern), `PUT ${url}: allowed_methods lists the route table's methods`);
      for (const m of atLeast) t.ok(allowed.includes(m), `PUT ${url}: ${m} is allowed`);
      t.ok(res.headers.allow, `PUT ${url}: Allow header present`);
      t.same((res.headers.allow ?? '').split(',').map((m: string) => m.trim()).sort(), allowed, `PUT ${url}: Allow matches the body`);
    }
  });

  await t.test('405 is decided before authentication', async (t) => {
    const res = await f.call(null, 'PUT', '/api/v1/users/me/subscriptions');
    t.equal(res.status, 405, res.body);
    t.same([...res.json.allowed_methods].sort(), methodsOf('/api/v1/users/me/subscriptions'));
  });
});

t.test('authentication', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const me = '/api/v1/users/me';

  await t.test('no Authorization header: 401 UNAUTHORIZED with a Basic challenge', async (t) => {
    const res = await f.call(null, 'GET', me);
    isError(t, res, 401, 'UNAUTHORIZED', 'no credentials');
    t.equal(res.headers['www-authenticate'], 'Basic realm="zulip"');
    const empty = await raw(f, { method: 'GET', url: me, headers: { authorization: '' } });
    isError(t, empty, 401, 'UNAUTHORIZED', 'empty Authorization');
    t.equal(empty.headers['www-authenticate'], 'Basic realm="zulip"');
  });

  await t.test('the right credentials authenticate, the scheme case-insensitively', async (t) => {
    const res = await f.call(f.owner, 'GET', me);
    t.equal(res.status, 200, res.body);
    t.equal(res.json.user_id, f.owner.user_id);
    t.equal(res.json.email, f.owner.email);
    const lower = await raw(f, { method: 'GET', url: me, headers: { authorization: basicAuth(f.owner).replace('Basic', 'basic') } });
    t.equal(lower.status, 200, 'lower-case scheme');
    const upperEmail = await raw(f, { method: 'GET', url: me, headers: { authorization: basicAuth({ email: f.owner.email.toUpperCase(), api_key: f.owner.api_key }) } });
    t.equal(upperEmail.status, 200, 'the email is matched case-insensitively');
  });

  // As Zulip's authenticated_rest_api_view: every refusal of the key check is UNAUTHORIZED.
  await t.test('a wrong key or an unknown email: 401 UNAUTHORIZED "Invalid API key"', async (t) => {
    const wrongKey = await f.call({ ...f.owner, api_key: 'x'.repeat(f.owner.api_key.length) }, 'GET', me);
    isError(t, wrongKey, 401, 'UNAUTHORIZED', 'wrong key');
    t.equal(wrongKey.json.msg, 'Invalid API key');
    t.equal(wrongKey.headers['www-authenticate'], 'Basic realm="zulip"');
    t.equal(wrongKey.headers['www-authenticate'], 'Basic realm="zulip"');
    isError(t, await f.call({ ...f.owner, api_key: f.owner.api_key.slice(1) }, 'GET', me), 401, 'UNAUTHORIZED', 'key of another length');
    isError(t, await f.call({ ...f.owner, api_key: '' }, 'GET', me), 401, 'UNAUTHORIZED', 'empty key');
    const unknown = await f.call({ ...f.owner, email: 'nobody@example.com' }, 'GET', me);
    isError(t, unknown, 401, 'UNAUTHORIZED', 'unknown email');
    t.equal(unknown.json.msg, wrongKey.json.msg, 'an unknown email reads the same as a wrong key');
  });

  await t.test('a key belongs to one user', async (t) => {
    const bob = await f.createUser('bob@example.com', 'Bob');
    isError(t, await f.call({ ...f.owner, api_key: bob.api_key }, 'GET', me), 401, 'UNAUTHORIZED', "owner's email with bob's key");
    const asBob = await f.call(bob, 'GET', me);
    t.equal(asBob.json.user_id, bob.user_id);
  });

  // As Zulip's get_basic_credentials: another scheme is its JsonableError (400), a header that is not two words a 401.
  await t.test('a scheme other than Basic: 400 BAD_REQUEST; a Basic header without credentials: 401 UNAUTHORIZED', async (t) => {
    for (const header of [`Bearer ${f.owner.api_key}`, `Digest username="${f.owner.email}"`]) {
      const res = await raw(f, { method: 'GET', url: me, headers: { authorization: header } });
      isError(t, res, 400, 'BAD_REQUEST', `Authorization: ${header}`);
      t.equal(res.json.msg, 'This endpoint requires HTTP basic authentication.');
    }
    for (const header of ['Basic', 'Basic    ', `Basic ${Buffer.from(`${f.owner.email}:${f.owner.api_key}`).toString('base64')} extra`]) {
      const res = await raw(f, { method: 'GET', url: me, headers: { authorization: header } });
      isError(t, res, 401, 'UNAUTHORIZED', `Authorization: ${header}`);
      t.equal(res.json.msg, 'Invalid authorization header for basic auth');
      t.equal(res.headers['www-authenticate'], 'Basic realm="zulip"');
    }
  });

  await t.test('malformed Basic credentials: 401, never a 500', async (t) => {
    const noColon = 'Basic ' + Buffer.from(`${f.owner.email}${f.owner.api_key}`).toString('base64');
    isError(t, await raw(f, { method: 'GET', url: me, headers: { authorization: noColon } }), 401, 'UNAUTHORIZED', 'no colon');
    isError(t, await raw(f, { method: 'GET', url: me, headers: { authorization: 'Basic !!!not*base64###' } }), 401, 'UNAUTHORIZED', 'not base64');
    for (const creds of ['\u0000:\u0000', ':', `${f.owner.email}:`, `:${f.owner.api_key}`, `${f.owner.email}:${f.owner.api_key}:extra`]) {
      const header = 'Basic ' + Buffer.from(creds).toString('base64');
      const res = await raw(f, { method: 'GET', url: me, headers: { authorization: header } });
      t.equal(res.status, 401, `credentials ${JSON.stringify(creds)}: ${res.body}`);
      t.equal(res.json?.code, 'UNAUTHORIZED', `credentials ${JSON.stringify(creds)}: code`);
    }
    const binary = 'Basic ' + Buffer.from([0xff, 0xfe, 0x3a, 0xc3, 0x28]).toString('base64');
    const res = await raw(f, { method: 'GET', url: me, headers: { authorization: binary } });
    t.equal(res.status, 401, 'invalid UTF-8 in the credentials');
  });

  await t.test('a deactivated user: 401 UNAUTHORIZED "Account is deactivated", a wrong key still "Invalid API key"', async (t) => {
    const dan = await f.createUser('dan@example.com', 'Dan');
    const off = await f.call(f.owner, 'DELETE', `/api/v1/users/${dan.user_id}`);
    t.equal(off.status, 200, off.body);
    const res = await f.call(dan, 'GET', me);
    isError(t, res, 401, 'UNAUTHORIZED', 'deactivated user');
    t.equal(res.json.msg, 'Account is deactivated');
    t.equal(res.headers['www-authenticate'], 'Basic realm="zulip"');
    const wrong = await f.call({ ...dan, api_key: 'y'.repeat(dan.api_key.length) }, 'GET', me);
    isError(t, wrong, 401, 'UNAUTHORIZED', 'deactivated user, wrong key');
    t.equal(wrong.json.msg, 'Invalid API key');
    const on = await f.call(f.owner, 'POST', `/api/v1/users/${dan.user_id}/reactivate`);
    t.equal(on.status, 200, on.body);
    t.equal((await f.call(dan, 'GET', me)).status, 200, 'reactivated, the same key works again');
  });

  await t.test('every authenticated route refuses an anonymous request with 401', async (t) => {
    const open = f.app.routes.filter((r) => r.auth === 'none').map((r) => `${r.method} ${r.path}`);
    t.ok(open.includes('GET /api/v1/server_settings') && open.includes('POST /api/v1/fetch_api_key'), 'the pre-login endpoints need no credentials');
    for (const r of f.app.routes) {
      if (r.auth === 'none') continue;
      const res = await f.call(null, r.method, r.path.replace(/\{[^}]+\}/g, '1'));
      isError(t, res, 401, 'UNAUTHORIZED', `${r.method} ${r.path}`);
      t.equal(res.headers['www-authenticate'], 'Basic realm="zulip"', `${r.method} ${r.path}: challenge`);
    }
  });

  await t.test('routes without authentication ignore a bad Authorization header', async (t) => {
    const res = await raw(f, { method: 'GET', url: '/api/v1/server_settings', headers: { authorization: 'Bearer nonsense' } });
    t.equal(res.status, 200, res.body);
  });
});

t.test('organization by Host', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const acme = await createOrganization(f.runtime, { name: 'Acme Corp', subdomain: 'acme', ownerEmail: 'boss@acme.test', ownerPassword: 'acme-pass', ownerName: 'Ada Acme' });
  const acmeOwner: Credentials = { user_id: acme.owner.user_id, email: acme.owner.email, api_key: acme.owner.api_key };
  const settings = (host: string): Promise<ApiResult> => raw(f, { method: 'GET', url: '/api/v1/server_settings', headers: { host } });

  await t.test('a bare host name or an IP address is the default organization', async (t) => {
    for (const host of ['localhost', 'localhost:9991', 'LOCALHOST', '127.0.0.1', '127.0.0.1:9991', '10.1.2.3:80', '[::1]:9991', '[::1]']) {
      const res = await settings(host);
      t.equal(res.status, 200, `${host}: ${res.body}`);
      t.equal(res.json?.realm_name, 'Test Org', `${host} is the default organization`);
    }
    const me = await f.call(f.owner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'localhost:9991' } });
    t.equal(me.status, 200);
    t.equal(me.json.email, 'owner@example.com');
  });

  await t.test('a subdomain selects its organization', async (t) => {
    for (const host of ['acme.localhost', 'acme.localhost:9991', 'ACME.LocalHost']) {
      const res = await settings(host);
      t.equal(res.status, 200, `${host}: ${res.body}`);
      t.equal(res.json?.realm_name, 'Acme Corp', `${host} is Acme`);
    }
    const me = await f.call(acmeOwner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'acme.localhost:9991' } });
    t.equal(me.status, 200, me.body);
    t.equal(me.json.email, 'boss@acme.test');
    t.equal(me.json.full_name, 'Ada Acme');
    const users = await f.call(acmeOwner, 'GET', '/api/v1/users', {}, { headers: { host: 'acme.localhost' } });
    t.same(users.json.members.map((m: { email: string }) => m.email), ['boss@acme.test'], 'Acme lists only its own users');
  });

  await t.test('credentials of one organization do not work in another', async (t) => {
    isError(t, await f.call(acmeOwner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'localhost' } }), 401, 'UNAUTHORIZED', 'Acme owner on the default host');
    isError(t, await f.call(f.owner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'acme.localhost' } }), 401, 'UNAUTHORIZED', 'default owner on Acme');
    const login = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'owner@example.com', password: 'owner-pass' }, { headers: { host: 'acme.localhost' } });
    isError(t, login, 401, 'AUTHENTICATION_FAILED', 'a password of another organization');
    const acmeLogin = await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'boss@acme.test', password: 'acme-pass' }, { headers: { host: 'acme.localhost' } });
    t.equal(acmeLogin.status, 200, acmeLogin.body);
    t.equal(acmeLogin.json.api_key, acmeOwner.api_key);
  });

  await t.test('an unknown subdomain is 404 NONEXISTENT_SUBDOMAIN, before authentication', async (t) => {
    isError(t, await settings('sub.localhost'), 404, 'NONEXISTENT_SUBDOMAIN', 'server_settings on sub.localhost');
    isError(t, await settings('nope.localhost:9991'), 404, 'NONEXISTENT_SUBDOMAIN', 'with a port');
    isError(t, await settings('a.acme.localhost'), 404, 'NONEXISTENT_SUBDOMAIN', 'a nested subdomain');
    isError(t, await f.call(null, 'GET', '/api/v1/users/me', {}, { headers: { host: 'sub.localhost' } }), 404, 'NONEXISTENT_SUBDOMAIN', 'no credentials');
    isError(t, await f.call(f.owner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'sub.localhost' } }), 404, 'NONEXISTENT_SUBDOMAIN', 'with credentials');
    t.equal((await settings('sub.localhost')).json.msg, 'Invalid subdomain', "Zulip's InvalidSubdomainError message");
    isError(t, await settings('nope.localhost.'), 404, 'NONEXISTENT_SUBDOMAIN', 'an unknown subdomain with a trailing dot');
    isError(t, await settings('b..localhost'), 404, 'NONEXISTENT_SUBDOMAIN', 'an empty label');
  });

  await t.test('a trailing dot, a port and case are normalized: the fully qualified name is the same organization', async (t) => {
    for (const host of ['acme.localhost.', 'acme.localhost.:9991', 'ACME.LOCALHOST.', ' acme.localhost. ']) {
      const res = await settings(host);
      t.equal(res.status, 200, `${JSON.stringify(host)}: ${res.body}`);
      t.equal(res.json?.realm_name, 'Acme Corp', `${JSON.stringify(host)} is Acme`);
    }
    for (const host of ['localhost.', 'localhost.:9991']) t.equal((await settings(host)).json?.realm_name, 'Test Org', `${host} is the default organization`);
    const me = await f.call(acmeOwner, 'GET', '/api/v1/users/me', {}, { headers: { host: 'acme.localhost.' } });
    t.equal(me.status, 200, me.body);
    t.equal(me.json.email, 'boss@acme.test', 'credentials of Acme work on its fully qualified name');
  });

  await t.test("a malformed Host is 400 BAD_REQUEST in the API's shape (Django's DisallowedHost), never the default organization", async (t) => {
    const malformed = ['acme.localhost@localhost', 'localhost@acme.localhost', 'acme.localhost:', 'acme.localhost:99x', 'acme_x.localhost', 'acme localhost', '.', '.localhost', 'acme.localhost..', 'acme.localhost/x', 'user:pw@localhost', '[::1', 'acme.localhost:9991:1'];
    for (const host of malformed) {
      const res = await settings(host);
      isError(t, res, 400, 'BAD_REQUEST', `Host ${JSON.stringify(host)}`);
      t.equal(res.json?.msg, 'Invalid Host header', `Host ${JSON.stringify(host)}: msg`);
      isError(t, await f.call(f.owner, 'GET', '/api/v1/users/me', {}, { headers: { host } }), 400, 'BAD_REQUEST', `Host ${JSON.stringify(host)} with credentials`);
    }
  });

  await t.test('channels and messages stay in their organization', async (t) => {
    const acmeHost = { headers: { host: 'acme.localhost' } };
    const sub = await f.call(acmeOwner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'acme-only' }] }, acmeHost);
    t.equal(sub.status, 200, sub.body);
    const here = await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'acme-only' });
    t.equal(here.status, 400, 'the default organization does not see Acme channels');
    const there = await f.call(acmeOwner, 'GET', '/api/v1/get_stream_id', { stream: 'acme-only' }, acmeHost);
    t.equal(there.status, 200);
  });
});

t.test('parameter decoding', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const sub = await f.subscribe(f.owner, 'general');
  t.equal(sub.status, 200);
  const owner = authHeader(f.owner);

  await t.test('multipart/form-data bodies, boundary bare, quoted, and without a space', async (t) => {
    const content = 'multi\r\nline ✓ content with -- dashes\nand = & + % signs';
    const cases: Array<[string, string]> = [
      ['----WebKitFormBoundary7MA4YWxkTrZu0gW', 'multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW'],
      ['--------------------------123456789012345678901234', 'multipart/form-data;boundary=--------------------------123456789012345678901234'],
      ['quoted-boundary-42', 'multipart/form-data; boundary="quoted-boundary-42"'],
      ['case-boundary', 'Multipart/Form-Data; charset=utf-8; Boundary=case-boundary'],
    ];
    for (const [boundary, type] of cases) {
      const body = multipart(boundary, [['type', 'stream'], ['to', 'general'], ['topic', `mp ${boundary.length}`], ['content', content]]);
      const res = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': type }, body });
      t.equal(res.status, 200, `${type}: ${res.body}`);
      t.equal(await rawContent(f, res.json.id), content, `${type}: content survives byte for byte`);
    }
  });

  await t.test('multipart: JSON-encoded lists, empty values, and file parts beside fields', async (t) => {
    const boundary = '----formdata-boundary';
    const body = multipart(boundary, [['subscriptions', JSON.stringify([{ name: 'from multipart' }])], ['principals', JSON.stringify([f.owner.user_id])]]);
    const res = await raw(f, { method: 'POST', url: '/api/v1/users/me/subscriptions', headers: { ...owner, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    t.equal(res.status, 200, res.body);
    t.same(res.json.subscribed, { [String(f.owner.user_id)]: ['from multipart'] });

    const withFile = multipart(boundary, [['type', 'stream'], ['to', 'general'], ['topic', 'files'], ['content', 'with a file']], [{ field: 'file', filename: 'a.txt', type: 'text/plain', data: 'file body' }]);
    const sent = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: withFile });
    t.equal(sent.status, 200, sent.body);
    t.equal(await rawContent(f, sent.json.id), 'with a file');
    t.notOk((sent.json.ignored_parameters_unsupported ?? []).includes('content'), 'text fields are parameters');

    const empty = multipart(boundary, [['type', 'stream'], ['to', 'general'], ['topic', ''], ['content', 'empty topic']]);
    const emptyRes = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: empty });
    t.equal(emptyRes.status, 200, `an empty field is an empty string: ${emptyRes.body}`);
  });

  await t.test('malformed multipart bodies are 400 BAD_REQUEST', async (t) => {
    const good = multipart('bnd', [['type', 'stream'], ['to', 'general'], ['topic', 'x'], ['content', 'y']]);
    const bad: Array<[string, string, Buffer]> = [
      ['no boundary parameter', 'multipart/form-data', good],
      ['empty boundary', 'multipart/form-data; boundary=', good],
      ['boundary not in the body', 'multipart/form-data; boundary=other', good],
      ['truncated body', 'multipart/form-data; boundary=bnd', good.subarray(0, good.length - 30)],
      ['part without a name', 'multipart/form-data; boundary=bnd', Buffer.from('--bnd\r\nContent-Disposition: form-data\r\n\r\nvalue\r\n--bnd--\r\n')],
      ['part without headers end', 'multipart/form-data; boundary=bnd', Buffer.from('--bnd\r\nContent-Disposition: form-data; name="a"')],
      ['garbage', 'multipart/form-data; boundary=bnd', Buffer.from('not a multipart body at all')],
    ];
    for (const [what, type, body] of bad) {
      isError(t, await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': type }, body }), 400, 'BAD_REQUEST', what);
    }
  });

  await t.test('urlencoded bodies: plus, percent escapes, charset parameter', async (t) => {
    const body = 'type=stream&to=general&topic=url+encoded&content=a+b%20c%26d%3De%2Bf%E2%9C%93';
    for (const type of ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=UTF-8']) {
      const res = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': type }, body });
      t.equal(res.status, 200, `${type}: ${res.body}`);
      t.equal(await rawContent(f, res.json.id), 'a b c&d=e+f✓');
    }
    const noType = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: owner, body: 'type=stream&to=general&topic=t&content=no%20content%20type' });
    t.equal(noType.status, 200, `a body without Content-Type is read as a form: ${noType.body}`);
  });

  await t.test('GET reads the query string, with JSON-encoded lists', async (t) => {
    const bob = await f.createUser('bob@example.com', 'Bob');
    const res = await raw(f, { method: 'GET', url: `/api/v1/users?user_ids=${encodeURIComponent(JSON.stringify([bob.user_id]))}`, headers: owner });
    t.equal(res.status, 200, res.body);
    t.same(res.json.members.map((m: { user_id: number }) => m.user_id), [bob.user_id]);
    const spaces = await raw(f, { method: 'GET', url: `/api/v1/users?user_ids=${encodeURIComponent(`[ ${f.owner.user_id} , ${bob.user_id} ]`)}`, headers: owner });
    t.same(spaces.json.members.map((m: { user_id: number }) => m.user_id).sort(), [f.owner.user_id, bob.user_id].sort(), 'whitespace in JSON is fine');
  });

  await t.test('DELETE reads the query string or the body', async (t) => {
    await f.subscribe(f.owner, 'del-query');
    await f.subscribe(f.owner, 'del-body');
    const q = await raw(f, { method: 'DELETE', url: `/api/v1/users/me/subscriptions?subscriptions=${encodeURIComponent('["del-query"]')}`, headers: owner });
    t.equal(q.status, 200, q.body);
    t.same(q.json.removed, ['del-query']);
    const b = await raw(f, {
      method: 'DELETE',
      url: '/api/v1/users/me/subscriptions',
      headers: { ...owner, 'content-type': 'application/x-www-form-urlencoded' },
      body: `subscriptions=${encodeURIComponent('["del-body"]')}`,
    });
    t.equal(b.status, 200, b.body);
    t.same(b.json.removed, ['del-body']);
  });

  await t.test('POST reads the query string too, and the body wins over it', async (t) => {
    const inQuery = await raw(f, { method: 'POST', url: '/api/v1/messages?type=stream&to=general&topic=q&content=from%20query', headers: owner });
    t.equal(inQuery.status, 200, inQuery.body);
    t.equal(await rawContent(f, inQuery.json.id), 'from query');
    const both = await raw(f, {
      method: 'POST',
      url: '/api/v1/messages?content=from%20query&topic=query%20topic',
      headers: { ...owner, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'type=stream&to=general&content=from%20body',
    });
    t.equal(both.status, 200, both.body);
    t.equal(await rawContent(f, both.json.id), 'from body', 'the body value wins');
    const got = await f.call(f.owner, 'GET', `/api/v1/messages/${both.json.id}`);
    t.equal(got.json.message.subject, 'query topic', 'a name only in the query is still read');
    const mp = await raw(f, {
      method: 'POST',
      url: '/api/v1/messages?content=from%20query',
      headers: { ...owner, 'content-type': 'multipart/form-data; boundary=xyz' },
      body: multipart('xyz', [['type', 'stream'], ['to', 'general'], ['topic', 'mp'], ['content', 'from multipart']]),
    });
    t.equal(await rawContent(f, mp.json.id), 'from multipart', 'a multipart value wins over the query');
  });

  await t.test('event_types=null is the literal JSON null', async (t) => {
    const reg = await f.call(f.owner, 'POST', '/api/v1/register', { event_types: 'null' });
    t.equal(reg.status, 200, reg.body);
    t.ok(Array.isArray(reg.json.realm_users), 'every section is fetched');
    t.ok(Array.isArray(reg.json.subscriptions));
    t.type(reg.json.max_message_id, 'number');
    const onTheFly = await f.call(f.owner, 'GET', '/api/v1/events', { dont_block: true, event_types: 'null' });
    t.equal(onTheFly.status, 200, onTheFly.body);
    t.type(onTheFly.json.queue_id, 'string');
    t.same(onTheFly.json.events, []);
  });

  await t.test('a value of the wrong type is 400 BAD_REQUEST naming the parameter', async (t) => {
    const notInt = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 'abc', num_after: 0 });
    isError(t, notInt, 400, 'BAD_REQUEST', 'num_before=abc');
    t.match(notInt.json.msg, /num_before/);
    t.match(notInt.json.msg, /integer/i);
    t.equal(notInt.json.var_name, 'num_before');

    for (const value of ['1.5', '', ' 3', '0x10', 'true']) {
      const res = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 0, num_after: value });
      isError(t, res, 400, 'BAD_REQUEST', `num_after=${JSON.stringify(value)}`);
      t.match(res.json.msg, /num_after/);
    }

    const negative = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: -1, num_after: 0 });
    isError(t, negative, 400, 'BAD_REQUEST', 'num_before=-1');

    const notBool = await f.call(f.owner, 'GET', '/api/v1/users/me/subscriptions', { include_subscribers: 'maybe' });
    isError(t, notBool, 400, 'BAD_REQUEST', 'include_subscribers=maybe');
    t.match(notBool.json.msg, /include_subscribers/);

    for (const segment of ['abc', '1.5', '-1', '1e3']) {
      // Zulip's URL pattern is messages/<int:message_id>: another shape matches no route.
      isError(t, await f.call(f.owner, 'GET', `/api/v1/messages/${segment}`), 404, 'NOT_FOUND', `message_id=${segment} in the path`);
    }
  });

  await t.test('malformed or mistyped JSON is 400 BAD_REQUEST naming the parameter', async (t) => {
    for (const value of ['[1,2', 'abc', '{"a":1}', '["x"]', '[1.5]', '[[1]]']) {
      const res = await f.call(f.owner, 'GET', '/api/v1/users', { user_ids: value });
      isError(t, res, 400, 'BAD_REQUEST', `user_ids=${value}`);
      t.match(res.json.msg, /user_ids/, `user_ids=${value}: msg names the parameter`);
    }
    const subs = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: '[{"name": "x"' });
    isError(t, subs, 400, 'BAD_REQUEST', 'truncated subscriptions JSON');
    t.match(subs.json.msg, /subscriptions/);
  });

  await t.test('a missing required parameter is REQUEST_VARIABLE_MISSING', async (t) => {
    const res = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'no content' });
    isError(t, res, 400, 'REQUEST_VARIABLE_MISSING', 'no content');
    t.equal(res.json.msg, "Missing 'content' argument");
    t.equal(res.json.var_name, 'content');
  });

  await t.test('malformed percent-encoding is 400 BAD_REQUEST', async (t) => {
    const bodies = ['type=stream&to=general&topic=t&content=%E0%A4%A', 'type=stream&to=general&topic=t&content=%ZZ', 'type=stream&to=general&topic=t&cont%ent=x', 'type=stream&to=general&topic=%&content=x'];
    for (const body of bodies) {
      const res = await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': 'application/x-www-form-urlencoded' }, body });
      isError(t, res, 400, 'BAD_REQUEST', `body ${body}`);
    }
    isError(t, await raw(f, { method: 'GET', url: '/api/v1/users?user_ids=%5B1%ZZ', headers: owner }), 400, 'BAD_REQUEST', 'query string');
    isError(t, await raw(f, { method: 'GET', url: '/api/v1/users?%FF=1', headers: owner }), 400, 'BAD_REQUEST', 'invalid UTF-8 in a name');
  });

  await t.test('an unsupported content type is 400 BAD_REQUEST', async (t) => {
    for (const type of ['application/json', 'text/plain', 'application/xml']) {
      const body = type === 'application/json' ? JSON.stringify({ type: 'stream', to: 'general', topic: 't', content: 'json' }) : 'type=stream&to=general&topic=t&content=x';
      isError(t, await raw(f, { method: 'POST', url: '/api/v1/messages', headers: { ...owner, 'content-type': type }, body }), 400, 'BAD_REQUEST', type);
    }
  });

  await t.test('unknown parameters are reported in ignored_parameters_unsupported', async (t) => {
    const plain = await f.call(f.owner, 'GET', '/api/v1/users/me');
    t.equal(plain.status, 200);
    t.notOk('ignored_parameters_unsupported' in plain.json, 'absent when every parameter is known');
    const get = await f.call(f.owner, 'GET', '/api/v1/users/me', { frobnicate: 1, wibble: 'x' });
    t.equal(get.status, 200);
    t.same([...get.json.ignored_parameters_unsupported].sort(), ['frobnicate', 'wibble']);
    const post = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', subject: 'alias', content: 'hi', frobnicate: true });
    t.equal(post.status, 200, post.body);
    t.same(post.json.ignored_parameters_unsupported, ['frobnicate'], 'an alias (subject) is not reported');
    const got = await f.call(f.owner, 'GET', `/api/v1/messages/${post.json.id}`);
    t.equal(got.json.message.subject, 'alias');
    const known = await f.call(f.owner, 'GET', '/api/v1/users', { client_gravatar: false, include_custom_profile_fields: false });
    t.notOk('ignored_parameters_unsupported' in known.json, 'accepted no-op parameters are not reported');
    const failing = await f.call(f.owner, 'GET', '/api/v1/users/999', { frobnicate: 1 });
    t.equal(failing.status, 400);
    t.notOk('ignored_parameters_unsupported' in failing.json, 'errors do not report ignored parameters');
  });
});

/** Resolves with the response, or with null if the request is still parked after `ms`. */
async function settleOrPark(f: ChatFixture, r: InjectRequest, ms: number): Promise<ApiResult | null> {
  const abort = new Abortable();
  const pending = raw(f, { ...r, abort });
  let timer: NodeJS.Timeout | undefined;
  const parked = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  const res = await Promise.race([pending, parked]);
  clearTimeout(timer);
  if (res === null) abort.abort();
  return res;
}

const HOSTILE_VALUES = [
  '', ' ', 'abc', '-1', '0', '1', '1.5', '-0', '1e400', '99999999999999999999', '9007199254740993', 'NaN', 'Infinity',
  'null', 'true', 'false', '[]', '{}', '[null]', '[[]]', '[{}]', '[[[[[[[[[[[]]]]]]]]]]]', '["a",1,null]', '[1,"x",{"a":[]}]',
  '"quoted"', '{"__proto__":{"polluted":1}}', '[{"name":null}]', '[{"name":{}}]', '[{"name":"__proto__"}]', '[{"name":"x","description":7}]',
  '[["stream","nope"]]', '[{"operator":"sender","operand":"nobody@example.com"}]', '[["is","constructor"]]', '[{"operator":"stream"}]',
  '[-1]', '[1e400]', '[99999999999999999999]', '["toString"]', 'constructor', '__proto__', 'hasOwnProperty',
  '\u0000', '\u0000\u0001\u001f', '%', '😀', '\ud800', 'a'.repeat(20000), '['.repeat(5000), '<script>alert(1)</script>',
];

/** Route paths with their parameters filled by `segment`. */
function pathsOf(f: ChatFixture, segment: string): Array<{ method: string; path: string; params: string[] }> {
  return f.app.routes.map((r) => ({
    method: r.method,
    path: r.path.replace(/\{[^}]+\}/g, segment),
    params: Object.entries(r.params).filter(([, spec]) => spec.in !== 'path').map(([name]) => name),
  }));
}

t.test('no input yields a 500', async (t) => {
  const f = await chatFixture({ queues: { maxEvents: 1_000_000 } });
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const owner = authHeader(f.owner);
  const failures: string[] = [];
  const check = async (what: string, r: InjectRequest): Promise<void> => {
    // Only a long poll may stay parked; any other request is waited for and checked, however
    // slow (a password hash, a relay that cannot be reached), up to 30 s.
    const parks = r.method === 'GET' && r.url.split('?')[0] === '/api/v1/events';
    let res: ApiResult | null;
    try {
      res = await settleOrPark(f, r, parks ? 200 : 30000);
    } catch (err) {
      failures.push(`${what}: threw ${(err as Error).message}`);
      return;
    }
    if (res === null) {
      if (!parks) failures.push(`${what}: no answer in 30 s`);
      return;
    }
    if (res.status >= 500) failures.push(`${what}: ${res.status} ${res.body}`);
    // The tus endpoint's own answers are plain statuses, as tus clients expect.
    else if (res.json === undefined && !(r.url.startsWith('/api/v1/tus') && res.headers['tus-resumable'] === '1.0.0' && res.body === '')) failures.push(`${what}: not JSON: ${res.body.slice(0, 100)}`);
  };
  const send = (method: string, path: string, params: Record<string, string>, headers: Record<string, string> = owner): InjectRequest => {
    const q = new URLSearchParams(params).toString();
    if (method === 'GET' || method === 'DELETE') return { method, url: q ? `${path}?${q}` : path, headers };
    return { method, url: path, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: q };
  };

  // Every parameter of every route, one at a time and all together, with hostile values.
  // Routes that hash a password see every other short value, concurrently, to keep this fast.
  const hashing: Array<Promise<void>> = [];
  for (const [i, value] of HOSTILE_VALUES.entries()) {
    for (const r of pathsOf(f, '1')) {
      const all = send(r.method, r.path, Object.fromEntries([...r.params, 'unknown_param'].map((p) => [p, value])));
      const what = `${r.method} ${r.path} all=${JSON.stringify(value.slice(0, 40))}`;
      if (r.path.endsWith('/fetch_api_key') || (r.method === 'POST' && r.path.endsWith('/users'))) {
        if (value.length <= 64 && i % 2 === 0) hashing.push(check(what, all));
        continue;
      }
      await check(what, all);
      for (const p of r.params) await check(`${r.method} ${r.path} ${p}=${JSON.stringify(value.slice(0, 40))}`, send(r.method, r.path, { [p]: value }));
    }
  }
  await Promise.all(hashing);

  // Hostile path segments.
  for (const segment of ['0', '-1', 'abc', '1.5', '99999999999999999999', '%', '%ZZ', '%E0%A4%A', '%00', '__proto__', 'constructor', '..', encodeURIComponent('😀'), 'a'.repeat(5000)]) {
    for (const r of pathsOf(f, segment)) await check(`${r.method} ${r.path.slice(0, 80)}`, { method: r.method, url: r.path, headers: owner });
  }

  // Hostile methods, paths, headers and bodies.
  for (const method of ['HEAD', 'OPTIONS', 'TRACE', 'CONNECT', 'FOO', '']) await check(`method ${method}`, { method, url: '/api/v1/users/me', headers: owner });
  for (const url of ['', '/', '//', '/api/v1', '/api/v1/', '/api/v1//users', '/api/v1/users//1', '/api/v1/users/me/', '/api/v1/users/me?', '/api/v1/users/me?&&=&=x&x=', '/api/v1/%', '/api/v1/users/%2e%2e/me', '*']) {
    await check(`url ${JSON.stringify(url)}`, { method: 'GET', url, headers: owner });
  }
  for (const host of ['', ' ', '.', '..', '.localhost', 'localhost.', 'a..localhost', ':', ':99999', '[', '[::1', '999.999.999.999', 'x'.repeat(5000), 'ü.localhost', '__proto__.localhost', 'constructor.localhost']) {
    await check(`host ${JSON.stringify(host.slice(0, 40))}`, { method: 'GET', url: '/api/v1/server_settings', headers: { host } });
    await check(`host ${JSON.stringify(host.slice(0, 40))} with auth`, { method: 'GET', url: '/api/v1/users/me', headers: { ...owner, host } });
  }
  for (const authorization of ['Basic', 'Basic =', 'Basic ====', 'Basic ' + 'A'.repeat(10000), 'Basic ' + Buffer.from(':'.repeat(1000)).toString('base64'), '\u0000', 'Basic\tabc', ' Basic  x ']) {
    await check(`authorization ${JSON.stringify(authorization.slice(0, 30))}`, { method: 'GET', url: '/api/v1/users/me', headers: { authorization } });
  }
  const bodies: Array<[string, string | Buffer]> = [
    ['multipart/form-data; boundary=' + 'b'.repeat(500), 'x'],
    ['multipart/form-data; boundary="', 'x'],
    ['multipart/form-data; boundary=b', '--b--'],
    ['multipart/form-data; boundary=b', '--b\r\n\r\n\r\n--b--'],
    ['multipart/form-data; boundary=b', '--b\r\nContent-Disposition: form-data; name=""\r\n\r\nx\r\n--b--'],
    ['multipart/form-data; boundary=b', '--b\r\nContent-Disposition: form-data; name="content"; filename=""\r\n\r\nx\r\n--b--'],
    ['multipart/form-data; boundary=b', '--b' + '\r\n'.repeat(1000)],
    ['application/x-www-form-urlencoded', '&&&===&=&'],
    ['application/x-www-form-urlencoded', 'a='.repeat(10000)],
    ['application/x-www-form-urlencoded', Buffer.from([0xff, 0xfe, 0x3d, 0xc3, 0x28])],
    ['application/x-www-form-urlencoded; charset=latin1', 'content=%E9'],
    ['', 'content'],
    ['text/plain', ''],
    [';;;', 'a=b'],
  ];
  for (const [type, body] of bodies) {
    for (const url of ['/api/v1/messages', '/api/v1/users/me/subscriptions', '/api/v1/register']) {
      await check(`POST ${url} ${JSON.stringify(type.slice(0, 40))}`, { method: 'POST', url, headers: { ...owner, 'content-type': type }, body });
    }
  }

  // After all that, the server still works for everyone.
  const sent = await f.call(bob, 'POST', '/api/v1/messages', { type: 'private', to: [f.owner.user_id], content: 'still alive' });
  t.equal(sent.status, 200, `the server still serves requests: ${sent.body}`);
  // Every route was called with the ids '1' and others: DELETE /streams/1 may well have archived
  // channel 1, which is a valid request. A fresh channel shows channel sends still work.
  await f.subscribe(f.owner, 'fresh after the storm');
  const channelSend = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'fresh after the storm', topic: 'after', content: 'still alive' });
  t.equal(channelSend.status, 200, `channel sends still work: ${channelSend.body}`);
  t.same(failures, [], 'no request answered 5xx or non-JSON');
});
