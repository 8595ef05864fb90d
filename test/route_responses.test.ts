/**
 * Route records' response schemas (`RouteRecord.response`, issue 26 §1): every JSON route
 * of the chat API that Zulip's description does not describe promises its success body;
 * the generated OpenAPI document shows the promise; and the tests' response validator
 * holds every answer to it (`promiseProblems` in zulip_responses.ts, run by every API call
 * of the test helpers).
 */
import t from 'tap';
import { chatOpenApi } from '../src/http/chat_openapi.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { findOperation, loadDescription } from './zulip_description.js';
import { promiseProblems, routeOf } from './zulip_responses.js';

/** Chat routes that answer something other than a JSON success: files, redirects, tus's empty bodies, the document itself. */
const NOT_JSON = (path: string): boolean => !path.startsWith('/api/v1/') || path.startsWith('/api/v1/tus') || path === '/api/v1/openapi.json';

t.test("every JSON route Zulip's description does not describe declares its response", async (t) => {
  const doc = loadDescription();
  const own = chatRoutes.filter((r) => !NOT_JSON(r.path) && !findOperation(doc, r.method, r.path.replace(/\{\w+\}/g, '1')));
  t.ok(own.length >= 20, `${own.length} routes of Parley's own`);
  for (const r of own) t.ok(r.response, `${r.method} ${r.path} declares \`response\``);
});

t.test('the generated document shows the promise', async (t) => {
  const doc = chatOpenApi(chatRoutes) as { paths: Record<string, Record<string, any>> };
  const ok = doc.paths['/api/v1/bot_storage'].get.responses[200];
  t.match(ok.content['application/json'].schema, { type: 'object', required: ['result', 'msg', 'storage'], additionalProperties: false, properties: { result: { const: 'success' }, storage: { type: 'object' } } });
});

t.test('the validator holds answers to the promise', async (t) => {
  t.equal(routeOf('GET', '/api/v1/bot_storage?keys=x')?.path, '/api/v1/bot_storage');
  t.equal(routeOf('PATCH', '/api/v1/users/me/profile_data')?.path, '/api/v1/users/me/profile_data', 'a literal path before a parameter');
  t.same(promiseProblems('GET', '/api/v1/bot_storage', 200, { result: 'success', msg: '', storage: { k: 'v' } })?.problems, [], 'a body as promised');
  t.ok(promiseProblems('GET', '/api/v1/bot_storage', 200, { result: 'success', msg: '', storage: { k: 5 } })!.problems.length > 0, 'a value of the wrong type');
  t.ok(promiseProblems('POST', '/api/v1/submessage', 200, { result: 'success', msg: '', extra: 1 })!.problems.length > 0, 'a field not promised');
  t.ok(promiseProblems('POST', '/api/v1/register_client_device', 200, { result: 'success', msg: '' })!.problems.length > 0, 'a promised field missing');
  t.equal(promiseProblems('GET', '/api/v1/bot_storage', 400, { result: 'error', msg: 'x', code: 'BAD_REQUEST' }), undefined, 'errors are not held to it');
  t.equal(promiseProblems('GET', '/api/v1/users', 200, { result: 'success', msg: '', members: [] }), undefined, 'a route that promises nothing');
});
