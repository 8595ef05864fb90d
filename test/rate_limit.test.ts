import t from 'tap';
import { chatFixture, startPoll } from './helpers.js';
import { parseRateLimit } from '../src/http/rate_limit.js';

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
  t.same(parseRateLimit('200/60'), { requests: 200, windowSecs: 60 });
  t.same(parseRateLimit('0'), { requests: 0, windowSecs: 1 });
  t.throws(() => parseRateLimit('200'));
  t.throws(() => parseRateLimit('5/0'));
});
