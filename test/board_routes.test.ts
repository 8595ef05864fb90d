/**
 * Every row of the board spec's endpoint and error tables, in process, with both
 * runtime switches off and on; plus pagination, threading, headers and the OpenAPI
 * document.
 */
import t, { type Test } from 'tap';
import { boardFixture, challenge, publishUrl, type BoardFixture } from './board_helpers.js';

const isProblem = (t: Test, res: { status: number; headers: Record<string, string>; json: any }, status: number, code: string): void => {
  t.equal(res.status, status, `status ${status} (${code})`);
  t.equal(res.headers['content-type'], 'application/problem+json');
  t.equal(res.json?.code, code);
  t.equal(res.json?.status, status);
  t.equal(res.json?.type, `urn:parley:board:error:${code}`);
  t.type(res.json?.detail, 'string');
};

async function seed(f: BoardFixture, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const res = await f.call('POST', '/api/v1/messages', { json: { body: `message ${i}` } });
    if (res.status !== 201) throw new Error(res.body);
  }
}

t.test('messages: list, read and post, as JSON and Markdown', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const created = await f.call('POST', '/api/v1/messages', { json: { body: 'Hello board', author: 'Ada' } });
  t.equal(created.status, 201);
  t.same(created.json, { id: 'm1', createdAt: new Date(f.clock.t).toISOString().replace(/\.\d+Z$/, '.000Z'), identity: 'declared', author: 'Ada', body: 'Hello board', replyTo: null, threadId: 'm1', contentTrust: 'untrusted' });
  t.equal(created.headers.location, '/messages/m1.json');
  t.equal(created.headers.link, '</messages/m1.md>; rel="alternate"; type="text/markdown"');
  const anon = await f.call('POST', '/api/v1/messages', { json: { body: 'anon', replyTo: null } });
  t.equal(anon.json.identity, 'anonymous');
  t.equal(anon.json.author, null);

  const list = await f.call('GET', '/messages.json');
  t.equal(list.status, 200);
  t.equal(list.headers['content-type'], 'application/json');
  t.same(list.json.items.map((m: any) => m.id), ['m2', 'm1'], 'newest first');
  t.same(Object.keys(list.json).sort(), ['contentTrust', 'items', 'limit', 'nextCursor', 'order']);
  t.equal(list.json.nextCursor, null);
  t.equal(list.json.limit, 50);
  t.match(list.headers.link, /<\/messages\.md>; rel="alternate"; type="text\/markdown"/);

  const md = await f.call('GET', '/messages.md');
  t.equal(md.status, 200);
  t.equal(md.headers['content-type'], 'text/markdown; charset=utf-8');
  t.match(md.body, /## Message m2[\s\S]*## Message m1/);
  t.match(md.body, /Untrusted content/);
  t.match(md.headers.link, /<\/messages\.json>; rel="alternate"; type="application\/json"/);

  const one = await f.call('GET', '/messages/m1.json');
  t.equal(one.status, 200);
  t.same(one.json, created.json);
  t.equal(one.headers.link, '</messages/m1.md>; rel="alternate"; type="text/markdown"');
  const oneMd = await f.call('GET', '/messages/m1.md');
  t.equal(oneMd.status, 200);
  t.equal(oneMd.headers['content-type'], 'text/markdown; charset=utf-8');
  t.match(oneMd.body, /```untrusted-body\nHello board\n```/);
  t.equal(oneMd.headers.link, '</messages/m1.json>; rel="alternate"; type="application/json"');

  for (const path of ['/messages/m3.json', '/messages/m3.md', '/messages/m0.json', '/messages/x.md', '/messages/%E0%A4%A.json', '/messages/m01.json']) {
    isProblem(t, await f.call('GET', path), 404, 'not_found');
  }
  t.same(f.logs, []);
});

t.test('threading: replyTo must exist, threadId is the root', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await seed(f, 1);
  const reply = await f.call('POST', '/api/v1/messages', { json: { body: 'r1', replyTo: 'm1' } });
  t.same([reply.json.replyTo, reply.json.threadId], ['m1', 'm1']);
  const deeper = await f.call('POST', '/api/v1/messages', { json: { body: 'r2', replyTo: reply.json.id } });
  t.same([deeper.json.replyTo, deeper.json.threadId], ['m2', 'm1'], 'a reply to a reply joins the root thread');
  const missing = await f.call('POST', '/api/v1/messages', { json: { body: 'x', replyTo: 'm99' } });
  isProblem(t, missing, 422, 'validation_failed');
  t.equal(missing.json.field, 'replyTo');
  isProblem(t, await f.call('POST', '/api/v1/messages', { json: { body: 'x', replyTo: 5 } }), 422, 'validation_failed');
  t.equal((await f.call('GET', '/messages.json')).json.items.length, 3, 'refused writes left nothing behind');
});

t.test('POST /api/v1/messages: 422 for validation and malformed JSON, 415, 413', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const post = (body: string | Buffer, type = 'application/json') => f.call('POST', '/api/v1/messages', { body, headers: { 'content-type': type } });
  isProblem(t, await post('{"body":'), 422, 'malformed_json');
  isProblem(t, await post(''), 422, 'malformed_json');
  isProblem(t, await post(Buffer.from([0x7b, 0xff, 0x7d])), 422, 'malformed_json');
  isProblem(t, await post('[]'), 422, 'validation_failed');
  isProblem(t, await post('"body"'), 422, 'validation_failed');
  isProblem(t, await post('{}'), 422, 'validation_failed');
  isProblem(t, await post('{"body":1}'), 422, 'validation_failed');
  isProblem(t, await post('{"body":"x","author":null}'), 422, 'validation_failed');
  isProblem(t, await post('{"body":"x","__proto__":{"author":"admin"}}'), 422, 'validation_failed');
  isProblem(t, await post('['.repeat(60000)), 422, 'malformed_json');
  const extra = await post('{"body":"x","contentTrust":"trusted"}');
  isProblem(t, extra, 422, 'validation_failed');
  t.equal(extra.json.field, 'contentTrust');
  isProblem(t, await post('{"body":"x"}', 'text/plain'), 415, 'unsupported_media_type');
  isProblem(t, await post('{"body":"x"}', 'application/json; charset=latin1'), 415, 'unsupported_media_type');
  isProblem(t, await f.call('POST', '/api/v1/messages', { body: '{"body":"x"}' }), 415, 'unsupported_media_type');
  t.equal((await post('{"body":"x"}', 'Application/JSON; charset="UTF-8"')).status, 201);
  isProblem(t, await post('{"body":"' + 'a'.repeat(64 * 1024) + '"}'), 413, 'payload_too_large');
  t.same(f.logs, []);
});

t.test('guestbook: 404 while publication is off, 201 when on, and every error row', async (t) => {
  const f = boardFixture({ settings: { publishLimit: { requests: 50, windowSecs: 60 } } });
  t.teardown(f.stop);
  const entry = { message: 'Hi from a crawler', agent: 'ExampleBot/1.0', visitContext: 'crawler', sourceUrl: 'https://example.com/page', model: 'none' };
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { json: entry }), 404, 'publication_disabled');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { body: 'x'.repeat(9000), headers: { 'content-type': 'application/json' } }), 404, 'publication_disabled');
  t.equal((await f.call('GET', '/guestbook.json')).status, 200, 'reading stays available while publication is off');
  await f.setSwitch('guestbook', true);
  const created = await f.call('POST', '/api/v1/guestbook', { json: entry });
  t.equal(created.status, 201);
  t.same(created.json, { id: 'g1', createdAt: created.json.createdAt, identity: 'declared', message: entry.message, agent: entry.agent, model: 'none', visitContext: 'crawler', sourceUrl: entry.sourceUrl, contentTrust: 'untrusted' });
  const bare = await f.call('POST', '/api/v1/guestbook', { json: { message: 'anon' } });
  t.same([bare.json.identity, bare.json.agent, bare.json.model, bare.json.visitContext, bare.json.sourceUrl], ['anonymous', null, null, null, null]);

  isProblem(t, await f.call('POST', '/api/v1/guestbook', { body: JSON.stringify({ message: 'x' }) + ' '.repeat(8200), headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { body: 'message=hi', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { body: '{"message":"hi"', headers: { 'content-type': 'application/json' } }), 422, 'malformed_json');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { json: { message: 'hi', visitContext: 'human' } }), 422, 'validation_failed');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { json: { message: 'hi', sourceUrl: 'ftp://example.com/' } }), 422, 'validation_failed');
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { json: { message: 'hi', email: 'a@b.c' } }), 422, 'validation_failed');

  const list = await f.call('GET', '/guestbook.json');
  t.same(list.json.items.map((e: any) => e.id), ['g2', 'g1']);
  const md = await f.call('GET', '/guestbook.md');
  t.equal(md.headers['content-type'], 'text/markdown; charset=utf-8');
  t.match(md.body, /```untrusted-source-url\nhttps:\/\/example.com\/page\n```/);
  t.match(md.body, /visit context \(self-declared, unverified\): `crawler`/);
  t.match(list.headers.link, /<\/guestbook\.md>; rel="alternate"/);

  await f.setSwitch('guestbook', false);
  isProblem(t, await f.call('POST', '/api/v1/guestbook', { json: entry }), 404, 'publication_disabled');
  t.same(f.logs, []);
});

t.test('guestbook rate limit: 429 with Retry-After', async (t) => {
  const f = boardFixture({ settings: { publishLimit: { requests: 1, windowSecs: 30 } } });
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  t.equal((await f.call('POST', '/api/v1/guestbook', { json: { message: 'a' } })).status, 201);
  const limited = await f.call('POST', '/api/v1/guestbook', { json: { message: 'b' } });
  isProblem(t, limited, 429, 'rate_limited');
  t.equal(limited.headers['retry-after'], '30');
});

t.test('compat: 404 while off; challenge and publish when on; headers on every response', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const noStore = (res: { headers: Record<string, string> }): void => {
    t.equal(res.headers['cache-control'], 'no-store');
    t.equal(res.headers['referrer-policy'], 'no-referrer');
    t.equal(res.headers['x-robots-tag'], 'noindex');
  };
  const offChallenge = await f.call('GET', '/compat/v1/write-challenge');
  isProblem(t, offChallenge, 404, 'compatibility_disabled');
  noStore(offChallenge);
  const offPublish = await f.call('GET', publishUrl('A'.repeat(43), { message: 'hi', confirm: 'publish' }));
  isProblem(t, offPublish, 404, 'compatibility_disabled');
  noStore(offPublish);
  noStore(await f.call('GET', '/compat/v1/unknown'));

  await f.setSwitch('compat', true);
  const ch = await f.call('GET', '/compat/v1/write-challenge');
  t.equal(ch.status, 200);
  noStore(ch);
  t.same(Object.keys(ch.json).sort(), ['challenge', 'expiresAt', 'method', 'note', 'pathTemplate', 'query']);
  t.equal(ch.json.pathTemplate, '/compat/v1/publish/{challenge}');
  t.notMatch(ch.body, /publish\/[A-Za-z0-9_-]{43}/, 'no ready-to-follow mutation URL anywhere in the response');
  t.notOk(ch.headers.location);
  t.notOk(ch.headers.link);
  t.equal(ch.json.expiresAt, new Date(f.clock.t + 300000).toISOString());

  const published = await f.call('GET', publishUrl(ch.json.challenge, { message: 'via GET', author: 'Bo', confirm: 'publish' }));
  t.equal(published.status, 201);
  noStore(published);
  t.same(published.json, { id: 'm1', createdAt: published.json.createdAt, identity: 'declared', author: 'Bo', body: 'via GET', replyTo: null, threadId: 'm1', contentTrust: 'untrusted' });
  t.equal((await f.call('GET', '/messages/m1.json')).json.body, 'via GET');

  await f.setSwitch('compat', false);
  isProblem(t, await f.call('GET', '/compat/v1/write-challenge'), 404, 'compatibility_disabled');
  t.same(f.logs, []);
});

t.test('compat publish: confirm must be exactly publish, and a refused request does not consume the nonce', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('compat', true);
  const nonce = await challenge(f);
  for (const confirm of [undefined, '', 'Publish', 'publish ', 'yes', 'publish\u200b']) {
    const q: Record<string, string> = { message: 'hi' };
    if (confirm !== undefined) q.confirm = confirm;
    const res = await f.call('GET', publishUrl(nonce, q));
    isProblem(t, res, 422, 'validation_failed');
    t.equal(res.json.field, 'confirm');
  }
  isProblem(t, await f.call('GET', `/compat/v1/publish/${nonce}?message=a&message=b&confirm=publish`), 422, 'validation_failed');
  isProblem(t, await f.call('GET', `/compat/v1/publish/${nonce}?confirm=publish`), 422, 'validation_failed');
  isProblem(t, await f.call('GET', `/compat/v1/publish/${nonce}?message=hi&confirm=publish&x=1`), 422, 'validation_failed');
  isProblem(t, await f.call('GET', `/compat/v1/publish/${nonce}?message=%FF&confirm=publish`), 422, 'validation_failed');
  const ok = await f.call('GET', `/compat/v1/publish/${nonce}?message=a+b%2Bc&confirm=publish`);
  t.equal(ok.status, 201, 'the nonce survived the refused attempts');
  t.equal(ok.json.body, 'a b+c', '+ is a space, %2B a plus, as in form encoding');
  isProblem(t, await f.call('GET', publishUrl('not-a-nonce', { message: 'x', confirm: 'publish' })), 403, 'challenge_invalid');
});

t.test('pagination: limit 1..100, default 50, opaque cursors, clear errors', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await seed(f, 120);
  const first = await f.call('GET', '/messages.json');
  t.equal(first.json.items.length, 50);
  t.equal(first.json.items[0].id, 'm120');
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: any = await f.call('GET', `/messages.json?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
    t.equal(res.status, 200);
    seen.push(...res.json.items.map((m: any) => m.id));
    if (res.json.nextCursor) t.match(res.headers.link, `<\/messages.json?limit=7&cursor=${res.json.nextCursor}>; rel="next"`);
    cursor = res.json.nextCursor;
    pages++;
  } while (cursor);
  t.equal(pages, Math.ceil(120 / 7));
  t.same(seen, Array.from({ length: 120 }, (_, i) => `m${120 - i}`), 'every message exactly once, newest first');
  // New messages do not shift a page already addressed by a cursor.
  const page2 = (await f.call('GET', `/messages.json?limit=10`)).json.nextCursor;
  const before = (await f.call('GET', `/messages.json?limit=10&cursor=${page2}`)).json.items.map((m: any) => m.id);
  await seed(f, 3);
  t.same((await f.call('GET', `/messages.json?limit=10&cursor=${page2}`)).json.items.map((m: any) => m.id), before);

  t.equal((await f.call('GET', '/messages.json?limit=1')).json.items.length, 1);
  t.equal((await f.call('GET', '/messages.json?limit=100')).json.items.length, 100);
  for (const bad of ['limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=', 'limit=5.0', 'limit=%2B5', 'limit=05', 'limit=1&limit=2', 'cursor=', 'cursor=zzz', 'cursor=' + 'A'.repeat(65), 'page=2', '__proto__=1', 'constructor=1', 'limit=5&toString=x', 'cursor=' + Buffer.from('v1:g:2').toString('base64url'), 'cursor=' + Buffer.from('v1:m:9999').toString('base64url')]) {
    const res = await f.call('GET', `/messages.json?${bad}`);
    isProblem(t, res, 400, 'invalid_parameter');
    const md = await f.call('GET', `/messages.md?${bad}`);
    isProblem(t, md, 400, 'invalid_parameter');
  }
  const limitErr = await f.call('GET', '/messages.json?limit=0');
  t.equal(limitErr.json.detail, 'limit: must be an integer from 1 to 100');
  const gb = await f.call('GET', '/guestbook.json?limit=101');
  isProblem(t, gb, 400, 'invalid_parameter');
  const mdPage = await f.call('GET', '/messages.md?limit=2');
  t.match(mdPage.body, /Next page: `\/messages\.md\?limit=2&cursor=[A-Za-z0-9_-]+`/);
  t.same(f.logs, []);
});

t.test('routing: unknown paths and methods, chat paths are not the board', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  isProblem(t, await f.call('GET', '/api/v1/server_settings'), 404, 'not_found');
  isProblem(t, await f.call('GET', '/api/v1/users/me'), 404, 'not_found');
  isProblem(t, await f.call('GET', '/'), 404, 'not_found');
  const wrong = await f.call('DELETE', '/messages/m1.json');
  isProblem(t, wrong, 405, 'method_not_allowed');
  t.equal(wrong.headers.allow, 'GET');
  isProblem(t, await f.call('GET', '/api/v1/messages'), 405, 'method_not_allowed');
  for (const res of [await f.call('GET', '/messages.json'), await f.call('GET', '/nope')]) {
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.match(res.headers['content-security-policy'], /default-src 'none'/);
  }
});

t.test('the OpenAPI document is generated from the route records', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const res = await f.call('GET', '/openapi.json');
  t.equal(res.status, 200);
  const doc = res.json;
  t.equal(doc.openapi, '3.1.0');
  t.match(doc.info.version, /^1\./);
  const ops = Object.entries(doc.paths).flatMap(([path, methods]: [string, any]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
  for (const op of ['GET /guestbook.json', 'GET /guestbook.md', 'GET /messages.json', 'GET /messages.md', 'GET /messages/{id}.json', 'GET /messages/{id}.md', 'POST /api/v1/messages', 'POST /api/v1/guestbook', 'GET /compat/v1/write-challenge', 'GET /compat/v1/publish/{nonce}']) {
    t.ok(ops.includes(op), op);
  }
  const gb = doc.paths['/api/v1/guestbook'].post;
  t.same(Object.keys(gb.responses).sort(), ['201', '404', '413', '415', '422', '429']);
  t.equal(doc.components.schemas.GuestbookRequest.additionalProperties, false);
  t.equal(doc.components.schemas.CreateRequest.properties.body['x-maxUtf8Bytes'], 8192);
  t.equal(doc.paths['/messages.json'].get.parameters.find((p: any) => p.name === 'limit').schema.maximum, 100);
  const refs = new Set(JSON.stringify(doc).match(/#\/components\/schemas\/\w+/g) ?? []);
  for (const r of refs) t.ok(doc.components.schemas[r.split('/').pop()!], `${r} resolves`);
});
