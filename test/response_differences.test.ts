/**
 * The response validator of the helpers (`zulip_responses.ts`) and its list of differences
 * (`response_differences.ts`): the API reference's table (docs/api.md) says the same as the list, and the
 * validator refuses what the description does not allow, admits what the list does, and
 * leaves alone what the description does not describe.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RESPONSE_DIFFERENCES } from './response_differences.js';
import { compiledBothWays, responseProblems } from './zulip_responses.js';
import { chatFixture } from './helpers.js';
import { root } from './paths.js';

/** `where: fields` for each row of docs/api.md's "Differences from Zulip's description" table. */
function docRows(): string[] {
  const text = readFileSync(join(root, 'docs', 'api.md'), 'utf8');
  const section = text.split("### Differences from Zulip's description\n")[1]?.split('\n#')[0] ?? '';
  return section.split('\n').filter((l) => l.startsWith('| `')).map((l) => {
    const [where, fields] = l.split(' | ');
    return `${where.slice(2)}: ${fields}`;
  });
}

/** The same, from the code's list. */
function codeRows(): string[] {
  return RESPONSE_DIFFERENCES.map((d) => `${d.schema ? `\`${d.schema}\`` : `\`${d.event}\` events`}: ${d.fields.length ? d.fields.map((f) => `\`${f}\``).join(', ') : '(all)'}`);
}

t.test("the API reference lists the code's differences, no more and no fewer", async (t) => {
  const rows = docRows();
  t.ok(rows.length > 5, `${rows.length} rows in docs/api.md`);
  t.same(rows, codeRows());
  t.ok(RESPONSE_DIFFERENCES.every((d) => d.why.length > 10), 'each with its reason');
});

const success = { result: 'success', msg: '' };
/** What `PARLEY_VALIDATE` asks of the checker: `off` checks nothing, `record` does not throw. */
const mode = process.env.PARLEY_VALIDATE ?? 'fail';
const checking = { skip: mode === 'off' && 'PARLEY_VALIDATE=off' };

t.test('a body the description allows passes; an unknown field fails, named with its place', checking, async (t) => {
  t.same(responseProblems('POST', '/api/v1/users/me/subscriptions/properties', 200, success)?.problems, []);
  const extra = responseProblems('POST', '/api/v1/users/me/subscriptions/properties', 200, { ...success, subscription_data: [] });
  t.equal(extra?.operation, 'POST /users/me/subscriptions/properties');
  t.match(extra?.problems, [/must NOT have additional properties: subscription_data/]);
  t.match(responseProblems('GET', '/api/v1/users/me/alert_words', 200, { ...success, alert_words: 'x' })?.problems, [/\/alert_words must be array/]);
});

t.test('the listed differences are admitted, and only where listed', checking, async (t) => {
  const version = { service_version: '1', service_feature_level: 1, service_merge_base: '' };
  const settings = responseProblems('GET', '/api/v1/server_settings', 200, { ...success, ...version, zulip_version: '1', zulip_feature_level: 1, zulip_merge_base: '' });
  t.same(settings?.problems, [], 'service_* beside zulip_* in server_settings');
  t.match(responseProblems('GET', '/api/v1/users/me/alert_words', 200, { ...success, alert_words: [], ...version })?.problems, [/service_version/], 'not elsewhere');
});

t.test('errors: any error the description names, with its own fields, and no others', checking, async (t) => {
  const error = { result: 'error', msg: 'Channel \'x\' does not exist', code: 'STREAM_DOES_NOT_EXIST' };
  t.same(responseProblems('PATCH', '/api/v1/users/me/subscriptions', 400, { ...error, stream: 'x' })?.problems, [], 'a channel error\'s `stream`, documented for another operation');
  t.same(responseProblems('GET', '/api/v1/users/me', 401, { result: 'error', msg: 'Invalid API key', code: 'INVALID_API_KEY' })?.problems, []);
  t.not(responseProblems('GET', '/api/v1/users/me', 400, { ...error, extra: 1 })?.problems.length, 0, 'an unknown field fails');
  t.not(responseProblems('GET', '/api/v1/users/me', 400, { result: 'error', msg: 'x' })?.problems.length, 0, 'an error without a code fails');
});

t.test('events are checked one by one against the events of their type', checking, async (t) => {
  const envelope = { ...success, queue_id: 'q' };
  t.same(responseProblems('GET', '/api/v1/events', 200, { ...envelope, events: [{ id: 0, type: 'heartbeat' }] })?.problems, []);
  t.match(responseProblems('GET', '/api/v1/events', 200, { ...envelope, events: [{ id: 0, type: 'heartbeat' }, { id: 1, type: 'realm_linkifiers', linkifiers: [] }] })?.problems,
    [/^\/events\/1 \(realm_linkifiers\) as .*: \/ must NOT have additional properties: linkifiers/]);
  t.match(responseProblems('GET', '/api/v1/events', 200, { ...envelope, events: [{ id: 0, type: 'no_such_event' }] })?.problems, [/no event of the description/]);
  t.same(responseProblems('GET', '/api/v1/events', 200, { ...envelope, events: [{ id: 0, type: 'device', op: 'remove', device_id: 1 }] })?.problems, [], 'a listed event type');
});

t.test('what the description does not describe is not checked', async (t) => {
  t.equal(responseProblems('GET', '/guestbook.json', 200, { anything: 1 }), undefined, 'the board');
  t.equal(responseProblems('GET', '/api/v1/no_such_route', 404, { result: 'error', msg: 'x' }), undefined, 'an unknown route');
  t.equal(responseProblems('GET', '/api/v1/users/me', 200, undefined), undefined, 'a body that is not JSON');
  t.equal(responseProblems('DELETE', '/api/v1/server_settings', 405, { result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET'] }), undefined, 'the router\'s 405');
});

t.test('the helpers check every call: a mismatch fails the request with the path, status and errors', { skip: mode !== 'fail' && `PARLEY_VALIDATE=${mode}` }, async (t) => {
  const f = await chatFixture();
  t.teardown(() => f.stop());
  // The fixture's app answers through the same check; a body made wrong on purpose throws.
  const handle = f.app.handle.bind(f.app);
  f.app.handle = ((req: any, exchange: any) => {
    const res = handle(req, exchange);
    return Promise.resolve(res).then((r: any) => r && { ...r, body: Buffer.from(JSON.stringify({ ...JSON.parse(r.body.toString()), unexpected: true })) });
  }) as typeof f.app.handle;
  await t.rejects(f.call(f.owner, 'GET', '/api/v1/users/me/alert_words'), /GET \/api\/v1\/users\/me\/alert_words answered 200 with a body that Zulip's description \(GET \/users\/me\/alert_words\) does not allow:\n {2}\/ must NOT have additional properties: unexpected/);
});

t.test('a validator from the disk cache answers as a freshly compiled one, errors included', checking, async (t) => {
  const events = compiledBothWays({ $ref: '#/components/schemas/get_events_200_response_allOf_events_inner' });
  const errors = compiledBothWays({ anyOf: ['CodedError', 'MissingArgumentError', 'NonExistingChannelNameError'].map((name) => ({ $ref: `#/components/schemas/${name}` })) });
  const cases: Array<[typeof events, unknown, boolean]> = [
    [events, { id: 0, type: 'heartbeat' }, true],
    [events, { id: 1, type: 'realm_linkifiers', realm_linkifiers: [] }, true],
    [events, { id: 1, type: 'realm_linkifiers', linkifiers: [] }, false],
    [events, { id: 1, type: 'realm_linkifiers', realm_linkifiers: 'x' }, false],
    [events, { id: 2, type: 'no_such_event' }, false],
    [events, { id: 3, type: 'subscription', op: 'peer_add', stream_ids: [1], user_ids: ['x'] }, false],
    [errors, { result: 'error', msg: 'x', code: 'BAD_REQUEST' }, true],
    [errors, { result: 'error', msg: 'x', code: 'BAD_REQUEST', extra: 1 }, false],
    [errors, { result: 'error', msg: 'x' }, false],
  ];
  for (const [{ fresh, cached }, body, valid] of cases) {
    const answer = fresh(body);
    t.equal(answer, valid, `${JSON.stringify(body)}: ${valid ? 'valid' : 'invalid'}`);
    t.equal(cached(body), answer, 'the cached validator answers the same');
    t.same(cached.errors, fresh.errors, 'with the same errors');
  }
});
