/**
 * Parameters Zulip declares JSON-encoded whose schema admits a string (`ParamSpec.json`):
 * `topics_policy` on `POST /channels/create`, `message_retention_days`, `to` on
 * `POST /messages` (which already took JSON lists and quoted names). Zulip's clients send them quoted (`"allow_empty_topic"`); older
 * Parley clients sent them bare. Both are taken: a JSON string is unquoted, and a value
 * that is not JSON, or whose JSON the schema refuses, is the bare string.
 */
import t from 'tap';
import { chatFixture } from './helpers.js';

t.test('topics_policy: quoted as Zulip sends it, and bare', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const create = (name: string, topics_policy: string) => f.call(f.owner, 'POST', '/api/v1/channels/create', { name, subscribers: '[]', topics_policy });
  for (const [name, raw] of [['quoted', '"allow_empty_topic"'], ['bare', 'allow_empty_topic'], ['spaced', ' "disable_empty_topic"']] as const) {
    const r = await create(name, raw);
    t.equal(r.status, 200, `${name}: ${r.body}`);
    const stream = (await f.call(f.owner, 'GET', `/api/v1/streams/${r.json.id}`)).json.stream;
    t.equal(stream.topics_policy, JSON.parse(raw.trim().startsWith('"') ? raw : JSON.stringify(raw)), `${name} is stored unquoted`);
  }
  const bad = await create('bad', '"no_such_policy"');
  t.same([bad.status, bad.json.msg], [400, 'Invalid topics_policy'], 'a quoted unknown value is refused as Zulip refuses it');
  const num = await create('num', '5');
  t.equal(num.status, 400, 'a number is no policy, bare or not');
  const deep = await create('deep', '['.repeat(200));
  t.same([deep.status, deep.json.msg], [400, 'Argument "topics_policy" is nested too deeply (at most 100 levels).'], 'nesting is bounded before parsing');
});

t.test('message_retention_days: a quoted keyword, a bare one, a number', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  for (const [name, raw, want] of [['q', '"unlimited"', -1], ['b', 'unlimited', -1], ['n', '30', 30]] as const) {
    const r = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name, subscribers: '[]', message_retention_days: raw });
    t.equal(r.status, 200, `${raw}: ${r.body}`);
    t.equal((await f.call(f.owner, 'GET', `/api/v1/streams/${r.json.id}`)).json.stream.message_retention_days, want, raw);
  }
});

t.test('to on POST /messages: a quoted channel name and a bare one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'design');
  for (const to of ['"design"', 'design', ' "design"']) {
    const r = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to, topic: 't', content: `to ${to}` });
    t.equal(r.status, 200, `${to}: ${r.body}`);
  }
});

t.test('the OpenAPI document says a declared string is JSON-encoded', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const doc = (await f.call(null, 'GET', '/api/v1/openapi.json')).json;
  const param = (path: string, method: string, name: string) => doc.paths[path][method].parameters.find((p: any) => p.name === name);
  t.same(param('/api/v1/channels/create', 'post', 'topics_policy').content, { 'application/json': { schema: { type: 'string' } } }, 'topics_policy on create');
  t.same(param('/api/v1/streams/{stream_id}', 'patch', 'topics_policy').schema, { type: 'string' }, 'but not on PATCH, where Zulip takes it verbatim');
});

t.test('numbers JSON cannot hold are refused as invalid JSON, not taken as Infinity', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general', [f.owner.user_id]);
  for (const to of ['1e999', '[1e999]', '[1, -1e999]']) {
    const r = await f.call(f.owner, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to, topic: 'x', content: 'hi', scheduled_delivery_timestamp: Math.floor(f.clock.t / 1000) + 3600 });
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Argument "to" is not valid JSON.'], to);
  }
  const users = await f.call(f.owner, 'POST', '/api/v1/messages/flags', { messages: '[1e999]', op: 'add', flag: 'starred' });
  t.same([users.status, users.json.msg], [400, 'Argument "messages" is not valid JSON.']);
});
