/**
 * The OpenAPI documents against what is served: for the chat API (served at
 * `GET /api/v1/openapi.json`) and the board (`GET /openapi.json`), every route the
 * router serves is in the document, and every operation the document lists is served
 * (a request for it is routed: never the API's "no such endpoint" nor a 405).
 */
import t from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { boardRoutes } from '../src/routes/board/index.js';
import { boardFixture } from './board_helpers.js';
import { basicAuth, chatFixture } from './helpers.js';

/** `METHOD /path` of every operation of a document. */
function operations(doc: any): string[] {
  return Object.entries(doc.paths).flatMap(([path, methods]: [string, any]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)).sort();
}

t.test('chat: the document lists exactly the served routes', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const res = await f.call(null, 'GET', '/api/v1/openapi.json');
  t.equal(res.status, 200, 'served without credentials');
  t.match(res.headers['content-type'], /^application\/json/);
  const doc = res.json;
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.result, undefined, 'no Zulip envelope around the document');
  t.ok(doc.components.securitySchemes.basicAuth, 'HTTP Basic is described');

  const documented = operations(doc);
  const served = f.app.router.list().sort();
  t.strictSame(documented, served, "the router's routes are the document's operations");
  t.strictSame(documented, chatRoutes.map((r) => `${r.method} ${r.path}`).sort(), 'and the route records');
  t.ok(documented.includes('GET /api/v1/openapi.json'), 'the document describes itself');

  // Every documented operation is routed: a request for it reaches its route.
  for (const op of documented) {
    const [method, template] = op.split(' ');
    const path = template.replace(/\{\w+\}/g, '99999');
    const r = await f.call(f.owner, method, path);
    t.not(r.status, 405, `${op}: not a 405`);
    t.not(r.status === 404 && r.json?.msg === 'Endpoint not found', true, `${op}: routed (${r.status} ${r.json?.code ?? ''})`);
  }
  // And an operation that is not documented is not served.
  t.equal((await f.call(f.owner, 'GET', '/api/v1/not_documented')).json.msg, 'Endpoint not found');

  // Each operation documents the record's parameters, security and error shape.
  for (const r of chatRoutes) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    t.equal(op.operationId, r.operationId, `${r.method} ${r.path}: operationId`);
    t.strictSame(op.parameters.map((p: any) => p.name).sort(), Object.keys(r.params).sort(), `${r.operationId}: parameters`);
    for (const p of op.parameters) {
      const spec = r.params[p.name];
      t.equal(p.in, spec.in === 'path' ? 'path' : 'query', `${r.operationId}.${p.name}: in`);
      t.equal(p.required, spec.in === 'path' || spec.required === true, `${r.operationId}.${p.name}: required`);
      t.ok(p.schema ?? p.content?.['application/json']?.schema, `${r.operationId}.${p.name}: a schema`);
    }
    t.strictSame(op.security, r.auth === 'user' ? [{ basicAuth: [] }] : [], `${r.operationId}: security`);
    t.equal(op.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/JsonError', `${r.operationId}: Zulip error body`);
  }
  // The document's schemas compile (JSON Schema 2020-12, OpenAPI 3.1's dialect, references within the document), and every reference resolves.
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema({ $id: 'doc', components: doc.components });
  for (const name of Object.keys(doc.components.schemas)) t.ok(ajv.getSchema(`doc#/components/schemas/${name}`), `${name} compiles`);
  for (const ref of new Set(JSON.stringify(doc).match(/#\/components\/schemas\/[\w.]+/g) ?? [])) t.ok(doc.components.schemas[ref.split('/').pop()!], `${ref} resolves`);
});

t.test('chat: the document needs no credentials, but an organization', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const anonymous = await f.call(null, 'GET', '/api/v1/openapi.json');
  const authed = await f.app.handle(
    { method: 'GET', path: '/api/v1/openapi.json', query: '', headers: { host: '127.0.0.1', authorization: basicAuth(f.owner) }, body: Buffer.alloc(0), remoteAddress: '127.0.0.1' },
    { aborted: false, onAbort() {}, respond() {} },
  );
  t.equal(anonymous.status, 200);
  t.equal((await authed)!.body.toString(), anonymous.body, 'the same document either way');
  t.equal((await f.call(null, 'GET', '/api/v1/openapi.json', {}, { headers: { host: 'nosuch.localhost' } })).status, 404, 'an unknown organization is still refused');
});

t.test('board: the document lists exactly the served routes', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  await f.setSwitch('compat', true);
  const doc = (await f.call('GET', '/openapi.json')).json;
  const documented = operations(doc);
  t.strictSame(documented, f.app.router.list().sort(), "the router's routes are the document's operations");
  t.strictSame(documented, boardRoutes.map((r) => `${r.method} ${r.path}`).sort(), 'and the route records');
  for (const op of documented) {
    const [method, template] = op.split(' ');
    const path = template.replace(/\{\w+\}/g, 'x');
    const r = await f.call(method, path, method === 'POST' ? { json: {} } : {});
    t.not(r.status, 405, `${op}: not a 405`);
    t.not(r.status === 404 && r.json?.detail === 'No such board resource', true, `${op}: routed (${r.status} ${r.json?.code ?? ''})`);
  }
});
