/**
 * Every size limit of the board spec, exactly at and one past it, with ASCII,
 * multi-byte and astral characters: byte limits count UTF-8 bytes, character limits
 * count code points (not UTF-16 units).
 */
import t from 'tap';
import { boardFixture, challenge, publishUrl } from './board_helpers.js';

const E = 'é'; // 2 UTF-8 bytes, 1 code point, 1 UTF-16 unit
const EURO = '€'; // 3 bytes
const GRIN = '😀'; // 4 bytes, 1 code point, 2 UTF-16 units

/** Strings of exactly `bytes` UTF-8 bytes, in several scripts. */
function ofBytes(bytes: number): Record<string, string> {
  return {
    ascii: 'a'.repeat(bytes),
    twoByte: E.repeat(Math.floor(bytes / 2)) + 'a'.repeat(bytes % 2),
    threeByte: EURO.repeat(Math.floor(bytes / 3)) + 'a'.repeat(bytes % 3),
    astral: GRIN.repeat(Math.floor(bytes / 4)) + 'a'.repeat(bytes % 4),
  };
}

/** Strings of exactly `n` code points, in several scripts. */
function ofCodePoints(n: number): Record<string, string> {
  return { ascii: 'a'.repeat(n), twoByte: E.repeat(n), astral: GRIN.repeat(n), combining: 'e\u0301'.repeat(Math.floor(n / 2)) + 'x'.repeat(n % 2) };
}

t.test('byte limits: message body 8192, guestbook message 1024, sourceUrl 2048', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const cases: Array<{ name: string; limit: number; post: (s: string) => Promise<{ status: number; json: any }>; field: string }> = [
    { name: 'message body', limit: 8192, field: 'body', post: (s) => f.call('POST', '/api/v1/messages', { json: { body: s } }) },
    { name: 'guestbook message', limit: 1024, field: 'message', post: (s) => f.call('POST', '/api/v1/guestbook', { json: { message: s } }) },
  ];
  for (const c of cases) {
    for (const [script, s] of Object.entries(ofBytes(c.limit))) {
      t.equal(Buffer.byteLength(s), c.limit);
      t.equal((await c.post(s)).status, 201, `${c.name}: ${script} at ${c.limit} bytes`);
      const over = await c.post(s + 'a');
      t.equal(over.status, 422, `${c.name}: ${script} at ${c.limit + 1} bytes`);
      t.equal(over.json.field, c.field);
      t.match(over.json.detail, `at most ${c.limit} UTF-8 bytes`);
    }
    // Astral characters are 2 UTF-16 units but 4 bytes: a count of units would let this pass.
    const units = GRIN.repeat(c.limit / 4 + 1);
    t.ok(units.length <= c.limit * 2 && Buffer.byteLength(units) === c.limit + 4);
    t.equal((await c.post(units)).status, 422, `${c.name}: astral characters are counted in bytes`);
  }
  const base = 'https://example.com/';
  for (const [script, tail] of Object.entries(ofBytes(2048 - base.length))) {
    const url = base + tail;
    t.equal(Buffer.byteLength(url), 2048);
    t.equal((await f.call('POST', '/api/v1/guestbook', { json: { message: 'm', sourceUrl: url } })).status, 201, `sourceUrl: ${script} at 2048 bytes`);
    const over = await f.call('POST', '/api/v1/guestbook', { json: { message: 'm', sourceUrl: url + 'a' } });
    t.equal(over.status, 422, `sourceUrl: ${script} at 2049 bytes`);
    t.equal(over.json.field, 'sourceUrl');
  }
  t.equal((await f.call('POST', '/api/v1/messages', { json: { body: '' } })).status, 201, 'an empty body is within the limits');
});

t.test('code point limits: author and agent 80, model 120', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const fields: Array<{ field: string; limit: number; post: (s: string) => Promise<{ status: number; json: any }> }> = [
    { field: 'author', limit: 80, post: (s) => f.call('POST', '/api/v1/messages', { json: { body: 'b', author: s } }) },
    { field: 'agent', limit: 80, post: (s) => f.call('POST', '/api/v1/guestbook', { json: { message: 'm', agent: s } }) },
    { field: 'model', limit: 120, post: (s) => f.call('POST', '/api/v1/guestbook', { json: { message: 'm', model: s } }) },
  ];
  for (const c of fields) {
    for (const [script, s] of Object.entries(ofCodePoints(c.limit))) {
      t.equal(Array.from(s).length, c.limit);
      t.equal((await c.post(s)).status, 201, `${c.field}: ${script} at ${c.limit} code points (${s.length} UTF-16 units)`);
      const over = await c.post(s + 'a');
      t.equal(over.status, 422, `${c.field}: ${script} at ${c.limit + 1} code points`);
      t.equal(over.json.field, c.field);
      t.match(over.json.detail, `at most ${c.limit} Unicode characters`);
    }
  }
});

t.test('raw body ceilings: guestbook 8192 bytes exactly, messages 65536', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const padded = (json: unknown, size: number): string => {
    const text = JSON.stringify(json);
    return text + ' '.repeat(size - Buffer.byteLength(text));
  };
  const gb = (body: string) => f.call('POST', '/api/v1/guestbook', { body, headers: { 'content-type': 'application/json' } });
  t.equal((await gb(padded({ message: E.repeat(512) }, 8192))).status, 201, 'raw guestbook body of exactly 8192 bytes');
  const over = await gb(padded({ message: 'x' }, 8193));
  t.equal(over.status, 413, 'raw guestbook body of 8193 bytes');
  t.equal(over.json.code, 'payload_too_large');
  // A body whose fields are all within limits is still refused when the raw body is too large.
  t.equal((await gb(padded({ message: 'short' }, 8193))).status, 413);
  const msg = (body: string) => f.call('POST', '/api/v1/messages', { body, headers: { 'content-type': 'application/json' } });
  t.equal((await msg(padded({ body: GRIN.repeat(2048) }, 65536))).status, 201, 'raw message body of exactly 65536 bytes');
  t.equal((await msg(padded({ body: 'x' }, 65537))).status, 413, 'raw message body of 65537 bytes');
  // JSON escapes may make an in-limit body six times larger on the wire, and that is accepted.
  const escaped = '{"body":"' + '\\u00e9'.repeat(4096) + '"}';
  t.ok(escaped.length > 24000);
  t.equal((await msg(escaped)).status, 201);
});

t.test('GET publication limits: message 1024 bytes, author 80 code points', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('compat', true);
  for (const [script, s] of Object.entries(ofBytes(1024))) {
    t.equal((await f.call('GET', publishUrl(await challenge(f), { message: s, confirm: 'publish' }))).status, 201, `message: ${script} at 1024 bytes`);
    const over = await f.call('GET', publishUrl(await challenge(f), { message: s + 'a', confirm: 'publish' }));
    t.equal(over.status, 422, `message: ${script} at 1025 bytes`);
    t.equal(over.json.field, 'message');
  }
  for (const [script, s] of Object.entries(ofCodePoints(80))) {
    t.equal((await f.call('GET', publishUrl(await challenge(f), { message: 'm', author: s, confirm: 'publish' }))).status, 201, `author: ${script} at 80`);
    t.equal((await f.call('GET', publishUrl(await challenge(f), { message: 'm', author: s + 'a', confirm: 'publish' }))).status, 422, `author: ${script} at 81`);
  }
});

t.test('text must be well-formed Unicode; sourceUrl must be an absolute http(s) URL', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  for (const s of ['\\ud800', 'a\\udc00', '\\ude00\\ud83d']) {
    const res = await f.call('POST', '/api/v1/messages', { body: `{"body":"${s}"}`, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 422, `lone surrogate ${s}`);
    t.match(res.json.detail, /well-formed/);
  }
  t.equal((await f.call('POST', '/api/v1/messages', { body: '{"body":"\\ud83d\\ude00"}', headers: { 'content-type': 'application/json' } })).status, 201, 'an escaped surrogate pair is fine');
  const good = ['http://example.com', 'HTTPS://EXAMPLE.COM/A?b=c#d', 'https://[::1]:8080/x', 'http://xn--bcher-kva.example/', 'https://bücher.example/ä', 'https://user@example.com/'];
  const bad = ['', 'example.com', '//example.com/x', 'ftp://example.com/', 'javascript:alert(1)', 'data:text/html,<b>', 'mailto:a@example.com', 'http:/example.com', 'http:example.com', 'https://', 'https:// example.com', 'https://example.com/a b', ' https://example.com', 'https://example.com\n', 'https://exa\tmple.com', 'http://example.com/\u0000'];
  for (const sourceUrl of good) t.equal((await f.call('POST', '/api/v1/guestbook', { json: { message: 'm', sourceUrl } })).status, 201, `accepts ${JSON.stringify(sourceUrl)}`);
  for (const sourceUrl of bad) {
    const res = await f.call('POST', '/api/v1/guestbook', { json: { message: 'm', sourceUrl } });
    t.equal(res.status, 422, `refuses ${JSON.stringify(sourceUrl)}`);
    t.equal(res.json.field, 'sourceUrl');
  }
  const stored = await f.call('POST', '/api/v1/guestbook', { json: { message: 'm', sourceUrl: 'HTTPS://Example.COM/%7e' } });
  t.equal(stored.json.sourceUrl, 'HTTPS://Example.COM/%7e', 'stored verbatim, not normalised');
  t.same(f.logs, []);
});
