/**
 * Parley's chat route records against Zulip's OpenAPI description
 * (`../shared/reference/zulip-openapi-2025-10.yaml`, the level Parley serves), parameter
 * by parameter, for every operation both have (`test/zulip_operations.test.ts` checks
 * that every operation is served):
 *
 * - encoding: a parameter the description declares JSON-encoded (`content:
 *   application/json` on a query parameter, `encoding: {name: {contentType:
 *   application/json}}` on a request body) is decoded as JSON by Parley
 *   (`decodesJson`), and one Parley decodes as JSON though its schema admits a string
 *   is JSON-encoded in the description;
 * - requirement: one the description does not require, Parley does not require; one
 *   it requires, Parley requires;
 * - presence: every parameter of the description is one Parley declares (by name or alias).
 *
 * Each deliberate difference is in the lists below, with its reason; a stale entry fails too.
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { chatRoutes } from '../src/routes/chat/index.js';
import { decodesJson, typesOf } from '../src/http/params.js';
import type { ParamSpec, RouteRecord } from '../src/http/route.js';
import { DESCRIPTION, deref, loadDescription, type Description } from './zulip_description.js';

/** `METHOD /path name`: Parley decodes JSON where the description says a plain string. */
const JSON_THOUGH_PLAIN = new Map([
  // Zulip's views take `message_retention_days: Json[str] | Json[int]` (its web app sends
  // `"unlimited"` quoted); the description omits the encoding. The bare form is taken too.
  ['POST /users/me/subscriptions message_retention_days', 'Zulip views: Json[str] | Json[int]'],
  ['PATCH /streams/{stream_id} message_retention_days', 'Zulip views: Json[str] | Json[int]'],
  ['POST /channels/create message_retention_days', 'Zulip views: Json[str] | Json[int]'],
]);

/** `METHOD /path name`: required by the description, optional in Parley. */
const OPTIONAL_THOUGH_REQUIRED = new Map([
  // Zulip's get_events: without a queue_id, a dont_block poll registers a queue; Parley
  // does the same, and a blocking one without it is "Missing 'queue_id' argument".
  ['GET /events queue_id', 'a dont_block poll registers a queue'],
  // Feature level 406's form requires all five; Parley also serves the later form, a
  // device_id with its key or token fields, where none is needed (the handler checks each form).
  ['POST /mobile_push/register token_kind', 'the device_id form does without'],
  ['POST /mobile_push/register push_account_id', 'the device_id form does without'],
  ['POST /mobile_push/register push_public_key', 'the device_id form does without'],
  ['POST /mobile_push/register bouncer_public_key', 'the device_id form does without'],
  ['POST /mobile_push/register encrypted_push_registration', 'the device_id form does without'],
]);

/** `METHOD /path name`: required by Parley, though the description's schema does not say so. */
const REQUIRED_THOUGH_OPTIONAL = new Map([
  // These request schemas carry no `required` list at all, while Zulip's views have no
  // default for them (`name: str`, `description: str`, `order: Json[list[int]]`,
  // `message_id: Json[int]`, `scheduled_delivery_timestamp: Json[int]`): a request without
  // one is 400 "Missing 'description' argument" there too (zerver/views/channel_folders.py).
  ['POST /channel_folders/create name', 'no default in Zulip\'s view'],
  ['POST /channel_folders/create description', 'no default in Zulip\'s view'],
  ['PATCH /channel_folders order', 'no default in Zulip\'s view'],
  ['POST /reminders message_id', 'no default in Zulip\'s view'],
  ['POST /reminders scheduled_delivery_timestamp', 'no default in Zulip\'s view'],
]);

/** `METHOD /path name`: in the description, not declared by Parley (so reported in `ignored_parameters_unsupported`). */
const NOT_DECLARED = new Map<string, string>([
]);

interface DescribedParam {
  name: string;
  json: boolean;
  required: boolean;
  /** `path`, `query`, or the request body's media type. */
  where: string;
  /** A file part of a multipart body (`format: binary`), which Parley takes as an upload. */
  file: boolean;
}

type Doc = Pick<Description, 'paths'>;

/** The request parameters of one operation of the description. */
function describedParams(doc: Doc, pathItem: any, op: any): DescribedParam[] {
  const out: DescribedParam[] = [];
  for (const ref of [...(pathItem.parameters ?? []), ...(op.parameters ?? [])]) {
    const p = deref(doc, ref);
    out.push({ name: p.name, json: p.content?.['application/json'] !== undefined, required: p.required === true, where: p.in, file: false });
  }
  const body = deref(doc, op.requestBody);
  for (const [mediaType, content] of Object.entries<any>(body?.content ?? {})) {
    const schema = deref(doc, content.schema) ?? {};
    const required = new Set<string>(schema.required ?? []);
    for (const [name, prop] of Object.entries<any>(schema.properties ?? {})) {
      out.push({
        name, json: content.encoding?.[name]?.contentType === 'application/json', required: required.has(name), where: mediaType,
        file: deref(doc, prop)?.format === 'binary',
      });
    }
  }
  return out;
}

const shape = (method: string, path: string): string => `${method} ${path.replace(/\{[^}]+\}/g, '{}')}`;

/** The chat route serving an operation of the description (Parley spells an upload's `{filename}` as its segments). */
function routeFor(routes: Map<string, RouteRecord>, method: string, path: string): RouteRecord | undefined {
  return routes.get(shape(method, path)) ?? (shape(method, path) === 'GET /user_uploads/{}/{}' ? routes.get('GET /user_uploads/{}/{}/{}/{}') : undefined);
}

function specFor(route: RouteRecord, name: string): ParamSpec | undefined {
  return Object.hasOwn(route.params, name) ? route.params[name] : Object.values(route.params).find((s) => s.aliases?.includes(name));
}

/** Every difference between the description and the route records, one line each. */
function walk(doc: Doc): { json: string[]; jsonThoughPlain: string[]; optional: string[]; required: string[]; undeclared: string[]; operations: number; params: number } {
  const routes = new Map(chatRoutes.map((r) => [shape(r.method, r.path.replace(/^\/api\/v1/, '')), r]));
  const found = { json: [] as string[], jsonThoughPlain: [] as string[], optional: [] as string[], required: [] as string[], undeclared: [] as string[], operations: 0, params: 0 };
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries<any>(item)) {
      if (op === null || typeof op !== 'object' || op.responses === undefined) continue;
      const method = m.toUpperCase();
      const route = routeFor(routes, method, path);
      if (!route) continue; // documentation pages; zulip_operations.test.ts holds that every operation is served
      found.operations++;
      for (const p of describedParams(doc, item, op)) {
        // Path parameters are the path's (zulip_operations.test.ts); file parts are uploads.
        if (p.where === 'path' || p.file) continue;
        found.params++;
        const key = `${method} ${path} ${p.name}`;
        const spec = specFor(route, p.name);
        if (!spec) {
          found.undeclared.push(key);
          continue;
        }
        if (p.json && !decodesJson(spec)) found.json.push(key);
        if (!p.json && spec.json === true && typesOf(spec.schema).has('string')) found.jsonThoughPlain.push(key);
        if (!p.required && spec.required) found.required.push(key);
        if (p.required && !spec.required) found.optional.push(key);
      }
    }
  }
  return found;
}

/** The differences found that no list explains, and the list's entries nothing needed. */
function unexplained(found: string[], allowed: Map<string, string>): { unexpected: string[]; stale: string[] } {
  return { unexpected: found.filter((k) => !allowed.has(k)), stale: [...allowed.keys()].filter((k) => !found.includes(k)) };
}

t.test('the route records match the description, parameter by parameter', { skip: !existsSync(DESCRIPTION) && `no ${DESCRIPTION}` }, async (t) => {
  const found = walk(loadDescription());
  t.ok(found.operations >= 130, `${found.operations} operations walked`);
  t.ok(found.params > 400, `${found.params} parameters compared`);
  t.same(found.json, [], 'every JSON-encoded parameter of the description is decoded as JSON (declare `json: true` on a string one)');
  t.same(unexplained(found.jsonThoughPlain, JSON_THOUGH_PLAIN), { unexpected: [], stale: [] }, 'a string is JSON-decoded only where Zulip decodes it');
  t.same(unexplained(found.required, REQUIRED_THOUGH_OPTIONAL), { unexpected: [], stale: [] }, 'what the description leaves optional, Parley does not require');
  t.same(unexplained(found.optional, OPTIONAL_THOUGH_REQUIRED), { unexpected: [], stale: [] }, 'what the description requires, Parley requires');
  t.same(unexplained(found.undeclared, NOT_DECLARED), { unexpected: [], stale: [] }, 'every parameter of the description is declared');
});

t.test('the walk sees a drift', async (t) => {
  const doc: Doc = {
    paths: {
      '/channels/create': {
        post: {
          responses: {},
          requestBody: {
            content: {
              'application/x-www-form-urlencoded': {
                schema: { properties: { name: { type: 'string' }, description: { type: 'string' }, subscribers: { type: 'array' } }, required: [] },
                encoding: { description: { contentType: 'application/json' } },
              },
            },
          },
        },
      },
    },
  };
  const found = walk(doc);
  t.same(found.json, ['POST /channels/create description'], 'a JSON-encoded string Parley takes verbatim');
  t.same(found.required, ['POST /channels/create name', 'POST /channels/create subscribers'], 'a parameter Parley requires that the description does not');
});
