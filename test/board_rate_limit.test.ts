/**
 * Board rate limits, per client address, on an injected clock: the guestbook and the
 * GET publication path share one limiter; POST /api/v1/messages has its own. A
 * limited request is refused before its body is parsed or any actor is asked.
 */
import t from 'tap';
import { boardFixture, challenge, publishUrl } from './board_helpers.js';

t.test('the (N+1)th request in the window gets 429 with Retry-After, and passes after the window', async (t) => {
  const f = boardFixture({ settings: { publishLimit: { requests: 3, windowSecs: 60 } } });
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const sign = (ip: string, body?: string) => f.call('POST', '/api/v1/guestbook', { body: body ?? JSON.stringify({ message: 'hi' }), headers: { 'content-type': 'application/json' }, remoteAddress: ip });
  for (let i = 0; i < 3; i++) {
    const ok = await sign('203.0.113.7');
    t.equal(ok.status, 201, `request ${i + 1} of 3`);
  }
  const limited = await sign('203.0.113.7');
  t.equal(limited.status, 429);
  t.equal(limited.json.code, 'rate_limited');
  t.equal(limited.headers['retry-after'], '60');
  t.equal(limited.headers['x-ratelimit-limit'], '3');
  t.equal(limited.headers['x-ratelimit-remaining'], '0');
  t.equal((await sign('198.51.100.1')).status, 201, 'another address has its own window');
  const seq = f.runtime.lastSeq;
  const malformed = await sign('203.0.113.7', '{not json');
  t.equal(malformed.status, 429, 'limited before the body is parsed');
  t.equal(f.runtime.lastSeq, seq, 'and before any actor is asked');
  f.clock.t += 59_000;
  const almost = await sign('203.0.113.7');
  t.equal(almost.status, 429);
  t.equal(almost.headers['retry-after'], '1');
  f.clock.t += 1_000;
  t.equal((await sign('203.0.113.7')).status, 201, 'a new window opens');
});

t.test('the GET publication path shares the guestbook limiter', async (t) => {
  const f = boardFixture({ settings: { publishLimit: { requests: 2, windowSecs: 10 } } });
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  await f.setSwitch('compat', true);
  const ip = '192.0.2.44';
  t.equal((await f.call('POST', '/api/v1/guestbook', { json: { message: 'a' }, remoteAddress: ip })).status, 201);
  const nonce = await challenge(f, ip);
  const limited = await f.call('GET', publishUrl(nonce, { message: 'm', confirm: 'publish' }), { remoteAddress: ip });
  t.equal(limited.status, 429, 'guestbook, challenge, then publish: the third in the window');
  t.equal(limited.headers['retry-after'], '10');
  t.equal(limited.headers['cache-control'], 'no-store', 'compat headers on a 429 too');
  t.equal((await f.call('GET', '/compat/v1/write-challenge', { remoteAddress: ip })).status, 429);
  f.clock.t += 10_000;
  t.equal((await f.call('GET', publishUrl(nonce, { message: 'm', confirm: 'publish' }), { remoteAddress: ip })).status, 201, 'a limited publish did not consume the nonce');
});

t.test('POST /api/v1/messages has its own per-address limit', async (t) => {
  const f = boardFixture({ settings: { messageLimit: { requests: 2, windowSecs: 5 }, publishLimit: { requests: 1, windowSecs: 5 } } });
  t.teardown(f.stop);
  const post = () => f.call('POST', '/api/v1/messages', { json: { body: 'x' } });
  t.equal((await post()).status, 201);
  t.equal((await post()).status, 201);
  const limited = await post();
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '5');
  t.equal((await f.call('GET', '/messages.json')).status, 200, 'reads are not limited');
  f.clock.t += 5_000;
  t.equal((await post()).status, 201);
});

t.test('every answer of a limited board route carries the X-RateLimit headers, not only the 429', async (t) => {
  const f = boardFixture({ settings: { messageLimit: { requests: 3, windowSecs: 60 } } });
  t.teardown(f.stop);
  const ok = await f.call('POST', '/api/v1/messages', { json: { body: 'x' } });
  t.equal(ok.status, 201);
  t.same([ok.headers['x-ratelimit-limit'], ok.headers['x-ratelimit-remaining'], ok.headers['x-ratelimit-reset']], ['3', '2', String(Math.ceil((f.clock.t + 60_000) / 1000))]);
  const invalid = await f.call('POST', '/api/v1/messages', { json: { body: 'x', extra: 1 } });
  t.equal(invalid.status, 422);
  t.equal(invalid.headers['x-ratelimit-remaining'], '1', 'a refused body still counts, and says so');
  const read = await f.call('GET', '/messages.json');
  t.equal(read.headers['x-ratelimit-limit'], undefined, 'unlimited routes carry none');
});
