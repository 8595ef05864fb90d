/**
 * The success bodies of the chat API's generated document (`GET /api/v1/openapi.json`):
 * a route's record declares its own (`response`, or `responses` for a file, a redirect or
 * a tus answer), or it is a route of Zulip's description, whose success schema
 * `src/http/zulip_schemas/responses.json` holds, looked up by the route's operationId.
 *
 * - The committed `responses.json` is what the description beside the repository builds
 *   (`npm run openapi:zulip` writes it again).
 * - Each of its operations is served by the route of that name, method and path, so the
 *   lookup by name cannot miss a route that renames its operation.
 * - Every route's success is described: none is left with the generic `JsonSuccess`.
 * - The document's schemas compile, and real answers match them (the test helpers check
 *   every answer against Zulip's description, and Parley's own routes against `response`).
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { chatRoutes } from '../src/routes/chat/index.js';
import { buildZulipResponses, DEFAULT_DESCRIPTION, responsesText, SCHEMAS_DIR, type ZulipResponses } from '../src/http/zulip_schemas/build.js';
import { chatFixture } from './helpers.js';

const committed = readFileSync(join(SCHEMAS_DIR, 'responses.json'), 'utf8');
const zulip = JSON.parse(committed) as ZulipResponses;

/** Operations of the description that are pages of Zulip's documentation, not endpoints (as in zulip_operations.test.ts). */
const DOCUMENTATION_ONLY = new Set(['realTime', 'restErrorHandling', 'zulipOutgoingWebhooks']);

/** A path with parameter names erased. */
const shape = (path: string): string => path.replace(/\{[^}]+\}/g, '{}');
/** A path of Zulip's, erased: its uploads' `{filename}` is a path of several segments, which Parley spells as its segments. */
const zulipShape = (path: string): string => shape(path.replace(/^\/api\/v1\/user_uploads\/\{realm_id_str\}\/\{filename\}$/, '/api/v1/user_uploads/{realm_id_str}/{dir}/{name}/{filename}'));

t.test('responses.json is what the description builds', { skip: !existsSync(DEFAULT_DESCRIPTION) && `no ${DEFAULT_DESCRIPTION}` }, async (t) => {
  const text = readFileSync(DEFAULT_DESCRIPTION, 'utf8');
  const built = responsesText(buildZulipResponses(parse(text), 'zulip-openapi-2025-10.yaml', text));
  t.ok(built === committed, 'the committed file is current (npm run openapi:zulip writes it again)');
  t.ok(Object.keys(zulip.responses).length >= 130, `${Object.keys(zulip.responses).length} success responses`);
});

t.test("each of Zulip's operations is served by the route of its name", async (t) => {
  const byName = new Map(chatRoutes.map((r) => [r.operationId, r]));
  const wrong: string[] = [];
  for (const [name, d] of Object.entries(zulip.responses)) {
    if (DOCUMENTATION_ONLY.has(name)) continue;
    const r = byName.get(name);
    if (!r || r.method !== d.method || shape(r.path) !== zulipShape(d.path)) wrong.push(`${name}: ${d.method} ${d.path} is served as ${r ? `${r.method} ${r.path}` : 'nothing of that name'}`);
  }
  t.same(wrong, [], 'name, method and path agree');
  // And no route serves one of them under another name.
  const described = new Map(Object.entries(zulip.responses).map(([name, d]) => [`${d.method} ${zulipShape(d.path)}`, name]));
  const renamed = chatRoutes.filter((r) => described.has(`${r.method} ${shape(r.path)}`) && !Object.hasOwn(zulip.responses, r.operationId) && !(r.path.includes('{email}')));
  t.same(renamed.map((r) => `${r.method} ${r.path} (${r.operationId})`), [], "a route of the description's is named as the description names it");
});

t.test('every success of the document is described, and its schemas compile', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const doc = (await f.call(null, 'GET', '/api/v1/openapi.json')).json;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'doc', components: doc.components });
  const resolve = (schema: any): any => JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"doc#/components/'));
  const generic: string[] = [];
  let compiled = 0;
  for (const r of chatRoutes) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    for (const [status, resp] of Object.entries<any>(op.responses)) {
      if (Number(status) >= 400) continue;
      const schema = resp.content?.['application/json']?.schema;
      if (schema?.$ref === '#/components/schemas/JsonSuccess') generic.push(`${r.method} ${r.path}`);
      if (schema) {
        ajv.compile(resolve(schema));
        compiled++;
      }
    }
  }
  t.same(generic, [], "no route's success is left as the generic JsonSuccess");
  t.ok(compiled >= 160, `${compiled} success schemas compile`);

  // Real answers against the document: one of Zulip's operations, one of Parley's own, and a file's JSON.
  const check = async (method: string, path: string, template: string, params: Record<string, unknown> = {}) => {
    const res = await f.call(f.owner, method, path, params);
    const schema = doc.paths[template][method.toLowerCase()].responses['200'].content['application/json'].schema;
    const validate = ajv.compile(resolve(schema));
    t.ok(validate(res.json), `${method} ${path} matches the document (${JSON.stringify(validate.errors?.slice(0, 2))})`);
    // A schema that cannot fail is no check: a wrong body must not match.
    t.notOk(validate({ result: 'success', msg: '', ...Object.fromEntries(Object.keys(res.json).filter((k) => k !== 'result' && k !== 'msg').map((k) => [k, Symbol.name])) }), `${method} ${path}: a body of wrong values does not`);
  };
  await f.subscribe(f.owner, 'general');
  await check('GET', '/api/v1/users/me/alert_words', '/api/v1/users/me/alert_words');
  await check('POST', '/api/v1/messages', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'schemas', content: 'hello' });
  // Parley's own, whose schema has a tuple (TypeBox writes draft 7's; the document, 2020-12's).
  await check('POST', '/api/v1/realm/domains', '/api/v1/realm/domains', { domain: 'example.org', allow_subdomains: 'false' });
});
