import t from 'tap';
import { chatFixture, startPoll } from './helpers.js';
import { formatRateLimit, parseRateLimit, rateLimitHeaders, RateLimiter } from '../src/http/rate_limit.js';

t.test('each user gets N requests per window, with X-RateLimit headers, then 429 with Retry-After', async (t) => {
  const f = await chatFixture({ config: { rateLimit: { requests: 3, windowSecs: 60 } } });
  t.teardown(f.stop);
  for (let i = 0; i < 3; i++) {
    const res = await f.call(f.owner, 'GET', '/api/v1/users/me');
    t.equal(res.status, 200);
    t.equal(res.headers['x-ratelimit-limit'], '3');
    t.equal(res.headers['x-ratelimit-remaining'], String(2 - i));
    t.equal(res.headers['x-ratelimit-reset'], String(Math.ceil((f.clock.t + 60000) / 1000)));
  }
  const limited = await f.call(f.owner, 'GET', '/api/v1/users/me');
  t.equal(limited.status, 429);
  t.equal(limited.json.code, 'RATE_LIMIT_HIT');
  t.equal(limited.json['retry-after'], 60);
  t.equal(limited.headers['retry-after'], '60');
  // The event queue endpoints are not limited, as Zulip's Tornado is not.
  const reg = await f.runtime.queues.register({ org: 1, user_id: f.owner.user_id, event_types: null, narrow: [], client: 't', lifespan_secs: null, empty_topic_name: false });
  await reg.durable;
  const poll = await startPoll(f, f.owner, { queue_id: reg.queueId, dont_block: true }).result;
  t.equal(poll.status, 200);
  t.equal(poll.headers['x-ratelimit-limit'], undefined);
  f.clock.t += 60000;
  t.equal((await f.call(f.owner, 'GET', '/api/v1/users/me')).status, 200, 'a new window opens');
});

t.test('requests without credentials are limited per address', async (t) => {
  const f = await chatFixture({ config: { rateLimitAnonymous: { requests: 2, windowSecs: 10 } } });
  t.teardown(f.stop);
  const from = (ip: string) => f.call(null, 'GET', '/api/v1/server_settings', {}, { remoteAddress: ip });
  t.equal((await from('10.0.0.1')).status, 200);
  t.equal((await from('10.0.0.1')).status, 200);
  t.equal((await from('10.0.0.1')).status, 429);
  t.equal((await from('10.0.0.2')).status, 200, 'another address has its own window');
});

t.test('rate limit settings parse strictly', async (t) => {
  t.strictSame(parseRateLimit('200/60'), { requests: 200, windowSecs: 60 });
  t.strictSame(parseRateLimit('0'), { requests: 0, windowSecs: 1 });
  t.strictSame(parseRateLimit('5/86400, 2/3600'), { requests: 2, windowSecs: 3600, also: [{ requests: 5, windowSecs: 86400 }] }, 'several windows, shortest first');
  t.equal(formatRateLimit(parseRateLimit('5/86400,2/3600')), '2/3600,5/86400');
  t.equal(formatRateLimit(parseRateLimit('0')), '0');
  t.throws(() => parseRateLimit('200'));
  t.throws(() => parseRateLimit('5/0'));
  t.throws(() => parseRateLimit('0/60,5/60'), 'no empty window in a list');
  t.throws(() => parseRateLimit('2/3600,'));
});

t.test('several windows: each is enforced, refusals are not counted, the headers describe the longest', async (t) => {
  const clock = { t: 1_000_000 };
  const limiter = new RateLimiter(parseRateLimit('2/10,3/100'), () => clock.t);
  const first = limiter.hit('k');
  t.same([first.allowed, first.limit, first.remaining, first.reset], [true, 3, 2, 1100]);
  t.equal(limiter.hit('k').remaining, 1);
  const short = limiter.hit('k');
  t.same([short.allowed, short.remaining, short.retryAfter], [false, 0, 10], 'the 10-second window is full');
  clock.t += 10_000;
  t.same([limiter.hit('k').allowed, limiter.hit('k').allowed], [true, false], 'the refusal was not counted: one more, then the 100-second window is full');
  t.equal(limiter.hit('k').retryAfter, 90);
  t.ok(limiter.hit('other').allowed, 'each key has its own windows');
  limiter.clear('k');
  t.ok(limiter.hit('k').allowed, 'a cleared key starts over');
  t.same(rateLimitHeaders([first, short]), [['X-RateLimit-Limit', '3'], ['X-RateLimit-Remaining', '0'], ['X-RateLimit-Reset', '1100']], 'several limits combine as in Zulip: lowest limit and remaining, latest reset');
});

t.test('every answer of a limited route carries the headers, errors included; exempt routes carry none', async (t) => {
  const f = await chatFixture({ config: { rateLimit: { requests: 5, windowSecs: 60 } } });
  t.teardown(f.stop);
  const missing = await f.call(f.owner, 'GET', '/api/v1/users/424242');
  t.equal(missing.status, 400, missing.body);
  t.equal(missing.headers['x-ratelimit-limit'], '5', 'a 4xx from the handler');
  t.equal(missing.headers['x-ratelimit-remaining'], '4');
  const invalid = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'x', queue_id: 1, local_id: { no: 1 } });
  t.equal(invalid.status, 400, invalid.body);
  t.equal(invalid.headers['x-ratelimit-remaining'], '3', 'a 400 from parameter checks');
  const reg = await f.runtime.queues.register({ org: 1, user_id: f.owner.user_id, event_types: null, narrow: [], client: 't', lifespan_secs: null, empty_topic_name: false });
  await reg.durable;
  const bad = await f.call(f.owner, 'GET', '/api/v1/events', { queue_id: 'nope', last_event_id: -1, dont_block: true });
  t.equal(bad.json.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(bad.headers['x-ratelimit-limit'], undefined, 'the event queue endpoints are exempt, errors too');
  const gone = await f.call(f.owner, 'DELETE', '/api/v1/events', { queue_id: reg.queueId });
  t.equal(gone.status, 200);
  t.equal(gone.headers['x-ratelimit-limit'], undefined);
  const unauthorized = await f.call({ ...f.owner, api_key: 'wrong'.repeat(7) }, 'GET', '/api/v1/users/me');
  t.equal(unauthorized.status, 401);
  t.equal(unauthorized.headers['x-ratelimit-limit'], undefined, 'a request refused before it is counted says nothing of a limit');
});

t.test("the 429 has Zulip's shape, with Retry-After", async (t) => {
  const f = await chatFixture({ config: { rateLimit: { requests: 1, windowSecs: 30 } } });
  t.teardown(f.stop);
  await f.call(f.owner, 'GET', '/api/v1/users/me');
  f.clock.t += 12_500;
  const limited = await f.call(f.owner, 'GET', '/api/v1/users/me');
  t.equal(limited.status, 429);
  t.strictSame(limited.json, { result: 'error', msg: 'API usage exceeded rate limit', 'retry-after': 18, code: 'RATE_LIMIT_HIT' });
  t.equal(limited.headers['retry-after'], '18');
  t.same([limited.headers['x-ratelimit-limit'], limited.headers['x-ratelimit-remaining'], limited.headers['x-ratelimit-reset']], ['1', '0', String(Math.ceil((f.clock.t - 12_500 + 30_000) / 1000))]);
});

t.test('authenticate_by_username: failed logins per username, apart from the general limit; a success forgets them', async (t) => {
  const f = await chatFixture({ config: { rateLimitAnonymous: { requests: 100, windowSecs: 60 }, rateLimitAuthenticate: { requests: 3, windowSecs: 1800 } } });
  t.teardown(f.stop);
  const login = (username: string, password: string) => f.call(null, 'POST', '/api/v1/fetch_api_key', { username, password });
  for (let i = 0; i < 2; i++) t.equal((await login('owner@example.com', 'wrong')).status, 401);
  const ok = await login('OWNER@example.com', 'owner-pass');
  t.equal(ok.status, 200, 'the third attempt succeeds');
  t.same([ok.headers['x-ratelimit-limit'], ok.headers['x-ratelimit-remaining']], ['3', '0'], 'the headers combine both limits: the class is the tighter');
  const failed: number[] = [];
  for (let i = 0; i < 4; i++) failed.push((await login('owner@example.com', 'wrong')).status);
  t.same(failed, [401, 401, 401, 429], 'the success cleared the count: three more failures, then 429');
  const limited = await login('owner@example.com', 'owner-pass');
  t.equal(limited.status, 429, 'even the right password waits');
  t.equal(limited.json.code, 'RATE_LIMIT_HIT');
  t.equal(limited.headers['retry-after'], '1800');
  t.equal(limited.headers['x-ratelimit-remaining'], '0');
  t.equal((await login('nobody@example.com', 'x')).status, 401, 'another username has its own count');
  const server = await f.call(null, 'GET', '/api/v1/server_settings');
  t.equal(server.headers['x-ratelimit-limit'], '100', 'other anonymous routes count only against the general limit');
  t.equal(server.headers['x-ratelimit-remaining'], String(100 - 10), 'which counted every login attempt, refused ones too');
  f.clock.t += 1800_000;
  t.equal((await login('owner@example.com', 'owner-pass')).status, 200, 'after the window');
});
