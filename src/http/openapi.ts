/**
 * OpenAPI 3.1 documents generated from route records, so that a document cannot drift
 * from what is served. One generator for both APIs; what differs (error body and
 * media type, authentication, how parameters travel) is read from the records and
 * from the per-API table below.
 */
import { typesOf } from './params.js';
import { successBody, type ApiName, type Requirement, type ResponseDoc, type RouteRecord } from './route.js';

/** What a route's `requires` refuses, as the generated document says it. */
const REQUIREMENT_DOC: Record<Requirement, string> = {
  owner: 'Organization owners only ("Must be an organization owner")',
  admin: 'Organization administrators only ("Must be an organization administrator")',
  member: 'Not for guests or bots',
  bot: 'Bots only',
};

const ref = (name: string): Record<string, string> => ({ $ref: `#/components/schemas/${name}` });

/**
 * A route's schema in the document's dialect (OpenAPI 3.1 is JSON Schema 2020-12):
 * TypeBox writes a tuple as draft 7 does (`items` a list, `additionalItems`), which is
 * `prefixItems` and `items` in 2020-12.
 */
function as2020(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(as2020);
  if (x === null || typeof x !== 'object') return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === 'items' && Array.isArray(v)) out.prefixItems = as2020(v);
    else if (k === 'additionalItems') out.items = as2020(v);
    else out[k] = as2020(v);
  }
  return out;
}

/** What each API's operations have in common. */
const API_DOC: Record<ApiName, { errorMediaType: string; errorComponent: string; defaults(r: RouteRecord): Record<number, ResponseDoc> }> = {
  chat: {
    errorMediaType: 'application/json',
    errorComponent: 'JsonError',
    defaults(r) {
      // Zulip's success body, unless the record documents its own successes (a file, a redirect, a tus answer).
      const ownSuccess = Object.keys(r.responses ?? {}).some((s) => Number(s) < 400);
      const out: Record<number, ResponseDoc> = ownSuccess ? {} : { 200: { description: 'Success', component: 'JsonSuccess' } };
      out[400] = { description: 'Bad request: a parameter is missing or invalid' };
      if (r.auth === 'user') out[401] = { description: 'Not authenticated, or the account or organization is deactivated' };
      if (r.requires) out[403] = { description: REQUIREMENT_DOC[r.requires] };
      if (Object.values(r.params).some((p) => p.in === 'path')) out[404] = { description: 'No such resource, or a path parameter of the wrong shape' };
      if (!r.unlimited) out[429] = { description: 'Rate limited; `Retry-After` says when to retry' };
      return out;
    },
  },
  board: { errorMediaType: 'application/problem+json', errorComponent: 'Problem', defaults: () => ({}) },
};

function responseOf(api: ApiName, status: number, doc: ResponseDoc): Record<string, unknown> {
  if (doc.body === false) return { description: doc.description };
  const mediaType = doc.mediaType ?? (status >= 400 ? API_DOC[api].errorMediaType : 'application/json');
  return { description: doc.description, content: { [mediaType]: { schema: bodySchema(api, status, doc, mediaType) } } };
}

/** A documented body's schema: its component or its own, else what its media type and status imply. */
function bodySchema(api: ApiName, status: number, doc: ResponseDoc, mediaType: string): Record<string, unknown> {
  if (doc.component) return ref(doc.component);
  if (doc.schema) return doc.schema;
  if (mediaType === 'text/markdown') return { type: 'string' };
  if (mediaType === 'application/octet-stream') return { type: 'string', format: 'binary' };
  return status >= 400 ? ref(API_DOC[api].errorComponent) : { type: 'object' };
}

/** One parameter. Chat values that are JSON-encoded (lists, objects, strings declared `json`) are documented as such. */
function parameterOf(r: RouteRecord, name: string): Record<string, unknown> {
  const p = r.params[name];
  const where = p.in === 'path' ? 'path' : 'query';
  const out: Record<string, unknown> = { name, in: where, required: where === 'path' || (p.required ?? false) };
  if (p.description !== undefined) out.description = p.description;
  const types = typesOf(p.schema);
  if (r.api === 'chat' && where === 'query' && (types.has('array') || types.has('object') || p.json === true)) out.content = { 'application/json': { schema: as2020(p.schema) } };
  else out.schema = as2020(p.schema);
  if (p.aliases && p.aliases.length > 0) out['x-aliases'] = p.aliases;
  return out;
}

/** A success response described elsewhere than on the route record (Zulip's description, for the chat API). */
export interface DescribedSuccess {
  description: string;
  schema: unknown;
}

function operationOf(r: RouteRecord, described?: (r: RouteRecord) => DescribedSuccess | undefined): Record<string, unknown> {
  const parameters = Object.keys(r.params).map((name) => parameterOf(r, name));
  const responses: Record<string, unknown> = {};
  for (const [status, doc] of Object.entries({ ...API_DOC[r.api].defaults(r), ...r.responses })) responses[status] = responseOf(r.api, Number(status), doc);
  const success = (responses[200] ?? { description: 'Success' }) as { description: string };
  const elsewhere = r.response ? undefined : described?.(r);
  if (r.response) responses[200] = { description: success.description, content: { 'application/json': { schema: as2020(successBody(r.response)) } } };
  else if (elsewhere) responses[200] = { description: elsewhere.description, content: { 'application/json': { schema: elsewhere.schema } } };
  const notes: string[] = [];
  if (r.switch) notes.push(`Answers 404 while the \`${r.switch}\` runtime switch is off (the default).`);
  if (r.limiter) notes.push('Rate limited per client address; 429 carries Retry-After.');
  if (r.body) notes.push(`The raw request body may not exceed ${r.body.maxBytes} bytes (413).`);
  if (r.api === 'chat' && r.method !== 'GET' && r.method !== 'DELETE' && parameters.some((p) => p.in === 'query')) {
    notes.push('Parameters may also be sent as an `application/x-www-form-urlencoded` or `multipart/form-data` body, as Zulip takes them.');
  }
  const op: Record<string, unknown> = {
    operationId: r.operationId,
    summary: r.summary,
    description: [r.description, ...notes].filter(Boolean).join('\n\n'),
    parameters,
    responses,
  };
  if (r.api === 'chat') op.security = r.auth === 'user' ? [{ basicAuth: [] }] : [];
  if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: ref(r.body.component) } } };
  if (r.method === 'GET' && r.limiter) op['x-state-changing-get'] = true;
  if (r.requires) op['x-requires'] = r.requires;
  return op;
}

/**
 * Builds an API's OpenAPI document from its route records. A route's success body is
 * its record's `response`, or else what `described` finds for it.
 */
export function openApiDocument(routes: RouteRecord[], info: Record<string, unknown>, components: Record<string, unknown>, described?: (r: RouteRecord) => DescribedSuccess | undefined): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) (paths[r.path] ??= {})[r.method.toLowerCase()] = operationOf(r, described);
  return { openapi: '3.1.0', info, paths, components };
}
