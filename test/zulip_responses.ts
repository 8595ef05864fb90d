/**
 * The response validator of the test helpers: every body Parley answers through them is
 * checked against Zulip's description (`zulip_description.ts`), with the differences
 * `response_differences.ts` lists (and the "Differences from Zulip's description"
 * section of docs/api.md repeats) and no others.
 *
 * - The operation is found by method and path (`/api/v1/...`); a request the
 *   description does not describe (Parley's own routes, the board) is not checked, nor
 *   is a body that is not JSON (files, redirects).
 * - A success is checked against the operation's schema for its status (or `default`).
 * - An error is checked against what may answer it: the operation's schema for its
 *   status, the common errors of `/rest-error-handling` for it, or any error the
 *   description names (`CodedError`: `result`, `msg`, `code`, nothing else; or one with
 *   its own fields, such as `MissingArgumentError`'s `var_name`). Zulip's own test suite
 *   checks no error body; this at least holds their shape.
 * - Each event of `GET /events` is checked against the description's events of its
 *   `type` (and `op`), so that a failure names the event and its own schema's complaints
 *   rather than those of 86 alternatives.
 *
 * Zulip's description is OpenAPI 3.0: `nullable` becomes a `null` type, and `oneOf`
 * becomes `anyOf` (several of its alternatives overlap, e.g. a group-setting value, which
 * `oneOf` would refuse for matching two). Schemas compile with ajv on first use and are
 * cached for the process, and their code on disk for the next processes (see `CACHE_DIR`).
 *
 * Parley's own promises are checked too: a success of a chat route whose record declares
 * a `response` schema (`RouteRecord.response`; every JSON route the description does not
 * describe declares one) must match it.
 *
 * `PARLEY_VALIDATE` chooses what a mismatch does: `fail` (the default) throws with the
 * request, status and ajv's errors; `record` appends one JSON line per mismatch to
 * `PARLEY_VALIDATE_FILE` (default `$TMPDIR/parley-validate.jsonl`) and carries on, to survey
 * many test files at once; `off` checks nothing.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { successBody, type RouteRecord } from '../src/http/route.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { DESCRIPTION, deref, descriptionDigest, findOperation, loadDescription, type Description } from './zulip_description.js';
import { RESPONSE_DIFFERENCES } from './response_differences.js';
import { sourceOf } from './paths.js';

const requireHere = createRequire(import.meta.url);
const standaloneCode = (requireHere('ajv/dist/standalone') as typeof import('ajv/dist/standalone/index.js')).default;
const AJV_VERSION = (requireHere('ajv/package.json') as { version: string }).version;

const MODE = process.env.PARLEY_VALIDATE ?? 'fail';
const RECORD_FILE = process.env.PARLEY_VALIDATE_FILE ?? join(tmpdir(), 'parley-validate.jsonl');

/** OpenAPI 3.0 to JSON Schema: `nullable` as a `null` type, `oneOf` as `anyOf`, `$ref`s into the one document ajv holds. */
function toJsonSchema(x: any): any {
  if (Array.isArray(x)) return x.map(toJsonSchema);
  if (x === null || typeof x !== 'object') return x;
  const out: any = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === 'example' || k === 'examples' || k === 'description') continue;
    if (k === '$ref' && typeof v === 'string') out.$ref = v.startsWith('#') ? `zulip${v}` : v;
    else if (k === 'oneOf') out.anyOf = toJsonSchema(v);
    else if (k === 'properties') out.properties = Object.fromEntries(Object.entries(v as object).map(([name, s]) => [name, toJsonSchema(s)]));
    else out[k] = toJsonSchema(v);
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
    } else return { anyOf: [out, { type: 'null' }] };
  } else delete out.nullable;
  return out;
}

/** The components with the listed differences applied: extra fields admitted, corrections made. */
function adjusted(doc: Description): any {
  const components = toJsonSchema(doc.components);
  for (const d of RESPONSE_DIFFERENCES) {
    if (d.schema === undefined) continue;
    const schema = components.schemas[d.schema];
    if (!schema) throw new Error(`response_differences.ts: no schema ${d.schema} in the description`);
    let admitted = 0;
    // Every object of the schema that forbids extras (not through `$ref`s: those are other schemas).
    const visit = (s: any): void => {
      if (s === null || typeof s !== 'object') return;
      if (Array.isArray(s)) return s.forEach(visit);
      if (s.additionalProperties === false) {
        s.properties ??= {};
        for (const f of d.fields) {
          s.properties[f] = d.as ? toJsonSchema(d.as) : (s.properties[f] ?? {});
          admitted++;
        }
      }
      for (const k of ['allOf', 'anyOf', 'items']) visit(s[k]);
    };
    visit(schema);
    if (admitted === 0) throw new Error(`response_differences.ts: ${d.schema} forbids no extra field, so ${d.fields.join(', ')} need no entry`);
  }
  return components;
}

let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();

/** The one ajv of the process; it keeps each validator's source, for the cache below. */
function theAjv(): Ajv {
  return (ajv ??= new Ajv({ strict: false, allErrors: true, validateFormats: false, code: { source: true } }));
}

/*
 * Compiled validators are cached on disk, across test processes: ajv took about 1.3 s of CPU in
 * each test file to generate the code of the validators its responses met (the description's
 * schemas are large and nest deeply), where loading that code takes milliseconds. A cached
 * validator is ajv's own standalone code (`ajv/dist/standalone`) for the same schema, compiled by
 * the same ajv with the same options, so it answers and reports errors as a fresh one would. A
 * file's name is the hash of everything that decides the code: ajv's version, the description's
 * text, the listed differences, this module's source (how the schemas are translated and which
 * options ajv is given), and the schema itself.
 */
const CACHE_DIR = join(tmpdir(), 'parley-validators');
let fingerprint: string | undefined;

/** Where the compiled code of a JSON schema is kept; `components` says whether its `$ref`s reach the description. */
function cacheFile(schema: unknown, components: boolean): string {
  fingerprint ??= createHash('sha256')
    .update(`ajv ${AJV_VERSION}\n${JSON.stringify(RESPONSE_DIFFERENCES)}\n`)
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .digest('hex');
  const description = components ? descriptionDigest() : 'none';
  const name = createHash('sha256').update(`${fingerprint}\n${description}\n${JSON.stringify(schema)}`).digest('hex').slice(0, 32);
  return join(CACHE_DIR, `${name}.cjs`);
}

/** A validator whose code is cached, or undefined (not yet cached, or a damaged file: compiled again). */
function cachedValidator(file: string): ValidateFunction | undefined {
  let code: string;
  try {
    code = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    return fromCode(code);
  } catch {
    return undefined;
  }
}

/** The validator of ajv's standalone code (a CommonJS module whose export is the function). */
function fromCode(code: string): ValidateFunction {
  const module = { exports: {} as any };
  new Function('require', 'module', 'exports', code)(requireHere, module, module.exports);
  if (typeof module.exports !== 'function') throw new Error('no validator in the cached code');
  return module.exports as ValidateFunction;
}

/**
 * A schema of the description (`$ref`s as the description writes them) compiled by ajv, and the
 * same validator as the cache gives it back, from its standalone code: for the test that they
 * answer alike (`response_differences.test.ts`).
 */
export function compiledBothWays(schema: any): { fresh: ValidateFunction; cached: ValidateFunction } {
  if (!theAjv().getSchema('zulip')) theAjv().addSchema({ $id: 'zulip', components: adjusted(loadDescription()) });
  const fresh = theAjv().compile(toJsonSchema(schema));
  return { fresh, cached: fromCode(standaloneCode(theAjv(), fresh)) };
}

/** Compiles a JSON schema with the process's ajv and caches its code (written whole, then renamed). */
function compileAndCache(schema: unknown, file: string): ValidateFunction {
  const v = theAjv().compile(schema as object);
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    const temp = `${file}.${process.pid}`;
    writeFileSync(temp, standaloneCode(theAjv(), v));
    renameSync(temp, file);
  } catch {
    // No cache: the next process compiles it again.
  }
  return v;
}

/** A validator for a schema of the description (a `$ref` or an inline one), compiled once. */
function validator(key: string, schema: any): ValidateFunction {
  let v = compiled.get(key);
  if (!v) {
    const json = toJsonSchema(schema);
    const file = cacheFile(json, true);
    v = cachedValidator(file);
    if (!v) {
      if (!theAjv().getSchema('zulip')) theAjv().addSchema({ $id: 'zulip', components: adjusted(loadDescription()) });
      v = compileAndCache(json, file);
    }
    compiled.set(key, v);
  }
  return v;
}

/** The JSON schema of a response object of the description (itself perhaps a `$ref`). */
function responseSchema(doc: Description, response: any): any {
  return deref(doc, response)?.content?.['application/json']?.schema;
}

/** The values a property of a schema may take, when it is an enum (through `$ref`s and `allOf`s). */
function enumOf(doc: Description, schema: any, name: string): unknown[] | undefined {
  const s = deref(doc, schema);
  if (!s) return undefined;
  const own = deref(doc, s.properties?.[name]);
  const values = (p: any): unknown[] | undefined => {
    const q = deref(doc, p);
    if (!q) return undefined;
    if (Array.isArray(q.enum)) return q.enum;
    for (const part of q.allOf ?? []) {
      const v = values(part);
      if (v) return v;
    }
    return undefined;
  };
  const found = own && values(own);
  if (found) return found;
  for (const part of s.allOf ?? []) {
    const v = enumOf(doc, part, name);
    if (v) return v;
  }
  return undefined;
}

/** ajv's errors, one line each. */
function lines(errors: ErrorObject[] | null | undefined, prefix = ''): string[] {
  return (errors ?? []).map((e) => `${prefix}${e.instancePath || '/'} ${e.message}${e.keyword === 'additionalProperties' ? `: ${e.params.additionalProperty}` : ''} (${e.schemaPath})`);
}

/** What is wrong with one event, checked against the description's events of its type and op. */
function eventProblems(doc: Description, event: any, index: number): string[] {
  const branches: any[] = deref(doc, { $ref: '#/components/schemas/get_events_200_response_allOf_events_inner' }).oneOf;
  const ofType = branches.filter((b) => enumOf(doc, b, 'type')?.includes(event?.type));
  const candidates = ofType.filter((b) => {
    const ops = enumOf(doc, b, 'op');
    return ops === undefined || ops.includes(event?.op);
  });
  const where = `/events/${index} (${event?.type}${event?.op ? ` ${event.op}` : ''})`;
  if (candidates.length === 0) return RESPONSE_DIFFERENCES.some((d) => d.event === event?.type) ? [] : [`${where} is no event of the description`];
  const problems: string[] = [];
  for (const b of candidates) {
    const v = validator(b.$ref, b);
    if (v(event)) return [];
    problems.push(...lines(v.errors, `${where} as ${b.$ref.split('/').pop()}: `));
  }
  return problems;
}

/**
 * The description's errors, whichever operation they are documented for (`CodedError`,
 * `MissingArgumentError`, `NonExistingChannelNameError`, ...): Zulip raises them from
 * shared code, so an error that one operation documents can answer another (a channel
 * named in `PATCH /users/me/subscriptions` that does not exist is `STREAM_DOES_NOT_EXIST`
 * with its `stream`, as in `POST /messages`).
 */
let catalog: any[] | undefined;
function errorCatalog(doc: Description): any[] {
  return (catalog ??= Object.keys(doc.components.schemas).filter((name) => name.endsWith('Error')).map((name) => ({ $ref: `#/components/schemas/${name}` })));
}

let present: boolean | undefined;

/** Whether the description is there (a clone without `../shared` checks nothing, as `zulip_parameters.test.ts` skips). */
function described(): boolean {
  if (present === undefined) {
    present = existsSync(DESCRIPTION);
    if (!present) process.emitWarning(`${DESCRIPTION} is missing: API responses are not checked against Zulip's description`);
  }
  return present;
}

/** What is wrong with a response body, or undefined when the description does not describe it. */
export function responseProblems(method: string, url: string, status: number, json: unknown): { operation: string; problems: string[] } | undefined {
  if (MODE === 'off' || json === undefined || !described()) return undefined;
  const doc = loadDescription();
  const found = findOperation(doc, method, url);
  // 405 is the router's answer for a method the path does not serve: no operation's.
  if (!found || status === 405) return undefined;
  const operation = `${found.method} ${found.path}`;
  const key = String(status);
  if (status < 400) {
    const schema = responseSchema(doc, found.op.responses[key] ?? found.op.responses.default);
    if (!schema) return undefined;
    if (operation === 'GET /events' && Array.isArray((json as any)?.events)) {
      const { events, ...envelope } = json as any;
      const v = validator(`${operation} ${key}`, schema);
      const problems = v({ ...envelope, events: [] }) ? [] : lines(v.errors);
      events.forEach((e: unknown, i: number) => problems.push(...eventProblems(doc, e, i)));
      return { operation, problems };
    }
    const v = validator(`${operation} ${key}`, schema);
    return { operation, problems: v(json) ? [] : lines(v.errors) };
  }
  // The alternatives are gathered once per operation and status (the validator is kept).
  const name = `${operation} ${key}`;
  let v = compiled.get(name);
  if (!v) {
    const common = deref(doc, doc.paths['/rest-error-handling'].post).responses[key];
    const alternatives = [responseSchema(doc, found.op.responses[key]), common && responseSchema(doc, common), ...errorCatalog(doc)].filter(Boolean);
    v = validator(name, { anyOf: alternatives });
  }
  return { operation, problems: v(json) ? [] : lines(v.errors) };
}

/** Chat route records with their paths as patterns, the most literal first (`/users/me` before `/users/{user_id}`). */
let patterns: Array<{ route: RouteRecord; re: RegExp }> | undefined;

/** The chat route record that serves a request, if any. */
export function routeOf(method: string, url: string): RouteRecord | undefined {
  patterns ??= chatRoutes
    .map((route) => ({ route, re: new RegExp('^' + route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+') + '$'), params: (route.path.match(/\{/g) ?? []).length }))
    .sort((a, b) => a.params - b.params);
  const path = url.split('?')[0];
  const m = method.toUpperCase();
  return patterns.find((p) => p.route.method === m && p.re.test(path))?.route;
}

const promised = new Map<RouteRecord, ValidateFunction>();

/** What is wrong with a success body by the `response` its route record promises, or undefined when it promises none. */
export function promiseProblems(method: string, url: string, status: number, json: unknown): { operation: string; problems: string[] } | undefined {
  if (MODE === 'off' || json === undefined || status < 200 || status >= 300) return undefined;
  const route = routeOf(method, url);
  if (!route?.response) return undefined;
  let v = promised.get(route);
  if (!v) {
    const schema = successBody(route.response);
    const file = cacheFile(schema, false);
    v = cachedValidator(file) ?? compileAndCache(schema, file);
    promised.set(route, v);
  }
  return { operation: `${route.method} ${route.path}`, problems: v(json) ? [] : lines(v.errors) };
}

/** Checks a response of the API as the mode says: throws (the default), records, or nothing. */
export function checkResponse(method: string, url: string, res: { status: number; json: unknown }): void {
  const promise = promiseProblems(method, url, res.status, res.json);
  if (promise && promise.problems.length > 0) report(method, url, res, promise, "its route record's `response` (Parley's promise)");
  const found = responseProblems(method, url, res.status, res.json);
  if (!found || found.problems.length === 0) return;
  report(method, url, res, found, "Zulip's description");
}

function report(method: string, url: string, res: { status: number; json: unknown }, found: { operation: string; problems: string[] }, against: string): void {
  const request = `${method.toUpperCase()} ${url.split('?')[0]}`;
  if (MODE === 'record') {
    const file = sourceOf(process.argv[1] ?? '');
    appendFileSync(RECORD_FILE, JSON.stringify({ file, request, operation: found.operation, status: res.status, problems: found.problems, body: res.json }) + '\n');
    return;
  }
  const shown = found.problems.slice(0, 40);
  throw new Error(
    `${request} answered ${res.status} with a body that ${against} (${found.operation}) does not allow:\n` +
      shown.map((l) => `  ${l}`).join('\n') + (found.problems.length > shown.length ? `\n  ... and ${found.problems.length - shown.length} more` : '') +
      `\nbody: ${JSON.stringify(res.json).slice(0, 2000)}` +
      '\n(a deliberate difference goes in test/response_differences.ts and the list in docs/api.md)',
  );
}
