/**
 * Parley serves every operation of Zulip's OpenAPI description (the list in
 * `test/fixtures/zulip_operations.txt`, taken from `zulip-openapi-2025-10.yaml`): each
 * matches a chat route record, method and path, with any path parameter's name and
 * Parley's uploads path, which spells Zulip's `{filename}` (a path of several segments)
 * as its segments. Three entries of the description are documentation, not endpoints.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { chatRoutes } from '../src/routes/chat/index.js';
import { fixturePath } from './paths.js';

/** Pages of Zulip's API documentation that the description lists as operations: not served by Zulip either. */
const DOCUMENTATION_ONLY = new Set([
  'POST /real-time', // "(Ignored)": the page on the real-time events API
  'POST /rest-error-handling', // "Common error to many endpoints"
  'POST /zulip-outgoing-webhook', // the payload Zulip posts to an outgoing webhook bot's own server
]);

const operations = readFileSync(fixturePath('zulip_operations.txt'), 'utf8')
  .split('\n')
  .filter((line) => line !== '' && !line.startsWith('#'));

/** A route's method and path with parameter names erased, under Zulip's `/api/v1` root. */
const shape = (method: string, path: string): string => `${method} ${path.replace(/\{[^}]+\}/g, '{}')}`;
const served = new Set(chatRoutes.map((r) => shape(r.method, r.path.replace(/^\/api\/v1/, ''))));

t.test('the list is the description\'s, whole', async (t) => {
  t.equal(operations.length, 138, 'Zulip 2025-10 describes 138 operations');
  t.equal(new Set(operations).size, operations.length, 'each once');
  for (const op of DOCUMENTATION_ONLY) t.ok(operations.includes(op), `${op} is in it`);
});

t.test('every operation Zulip serves, Parley serves', async (t) => {
  const missing = operations.filter((op) => {
    if (DOCUMENTATION_ONLY.has(op)) return false;
    const [method, path] = op.split(' ');
    const key = shape(method, path);
    // Zulip's {filename} in an upload's path is several segments in Parley's route.
    const uploads = key === 'GET /user_uploads/{}/{}' && served.has('GET /user_uploads/{}/{}/{}/{}');
    return !served.has(key) && !uploads;
  });
  t.same(missing, [], `${operations.length - DOCUMENTATION_ONLY.size - missing.length} of ${operations.length - DOCUMENTATION_ONLY.size} served`);
});

t.test('the check sees a missing operation', async (t) => {
  t.notOk(served.has(shape('POST', '/no_such_operation')));
  t.ok(served.has(shape('GET', '/messages/{message_id}')), 'and a served one, whatever its parameter is named');
});
