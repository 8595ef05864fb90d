/**
 * Parameter decoding and checking, compiled at boot from each route record's `params`
 * (and `body`) by the one schema compiler (`compile.ts`). Each API decodes its input
 * its own way, as its clients expect:
 *
 * - chat (Zulip): parameters come from the query string or a form body (urlencoded or
 *   multipart, `body.ts`). Values are strings: each is first converted by what its
 *   schema allows (integers, booleans, JSON-encoded lists and objects, as Zulip sends
 *   them; a string declared `json` is unquoted), then validated. Unknown names are reported back as
 *   `ignored_parameters_unsupported`. A path parameter of the wrong shape is a 404.
 * - board: parameters come from a strict query string (no duplicates, valid UTF-8);
 *   integers must be plain decimal digits; the query is validated as one object that
 *   admits no unknown name. A JSON body (media type, UTF-8, JSON, then its schema).
 */
import type { ValidateFunction, ErrorObject } from 'ajv';
import { ApiError, missingArgument } from '../../actors/shared/errors.js';
import { BoardError, type BoardErrorCode } from '../board/errors.js';
import { convertQuery, isJsonMediaType, parseJsonBody, parseQuery } from '../board/input.js';
import { decodeParams, type DecodedParams, type UploadedFile } from './body.js';
import { compileSchema } from './compile.js';
import { queryParamsOf, type ParamSpec, type RouteRecord, type Schema } from './route.js';
import type { IncomingRequest } from './types.js';

/** A request's checked input. */
export interface Checked {
  params: Record<string, unknown>;
  /** Chat: names the route does not support, sorted. */
  ignored: string[];
  files: UploadedFile[];
  /** Board: the validated JSON body. */
  body: unknown;
}

/** A route's compiled input checker; a multipart body is decoded asynchronously. */
export interface ParamChecker {
  check(req: IncomingRequest, pathParams: Record<string, string>): Checked | Promise<Checked>;
}

/** Compiles the checker of a route record, by its API; throws naming the route if a schema is bad. */
export function compileParams(route: RouteRecord): ParamChecker {
  return route.api === 'chat' ? compileChat(route) : compileBoard(route);
}

// ---------------------------------------------------------------------------
// Chat (Zulip)
// ---------------------------------------------------------------------------

interface CompiledParam {
  name: string;
  spec: ParamSpec;
  admits: Admits;
  /** The names it may also be sent under (none: an empty list, shared). */
  aliases: readonly string[];
  validate: ValidateFunction;
}

const NO_ALIASES: readonly string[] = [];

/** Every JSON type a schema admits. */
export function typesOf(schema: Schema): Set<string> {
  const out = new Set<string>();
  const visit = (s: Schema): void => {
    const t = s.type;
    if (typeof t === 'string') out.add(t);
    else if (Array.isArray(t)) for (const x of t) out.add(String(x));
    for (const key of ['oneOf', 'anyOf']) {
      const alts = s[key];
      if (Array.isArray(alts)) for (const a of alts) visit(a as Schema);
    }
    if (Array.isArray(s.enum)) for (const v of s.enum) out.add(v === null ? 'null' : typeof v === 'number' ? 'number' : typeof v);
  };
  visit(schema);
  if (out.has('integer')) out.add('number');
  return out;
}

/**
 * Whether a chat parameter is decoded as JSON text, as a Zulip `Json[...]` parameter is:
 * declared so (`json`), or its schema admits no string (integers, booleans, numbers,
 * lists, objects and null are read as their JSON text). A string one is taken verbatim.
 */
export function decodesJson(spec: ParamSpec): boolean {
  return spec.json === true || !typesOf(spec.schema).has('string');
}

const INTEGER = /^-?\d{1,16}$/;
const LOOKS_LIKE_JSON = /^\s*[[{"]|^null$/;
/** What may start a JSON value; a bare string that cannot be JSON is not parsed (a thrown SyntaxError is costly). */
const MAY_BE_JSON = /^\s*[[{"\d-]|^(true|false|null)$/;
const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** What a parameter's schema admits, as the conversion reads it (decided once per route, not per request). */
interface Admits {
  integer: boolean;
  /** A number that need not be an integer. */
  number: boolean;
  boolean: boolean;
  string: boolean;
  /** JSON arrays or objects. */
  structured: boolean;
  null: boolean;
  /** Declared JSON-encoded (`ParamSpec.json`) and admits a string: JSON first, the bare string as a fallback. */
  jsonString: boolean;
}

function admits(types: Set<string>, json = false): Admits {
  return {
    integer: types.has('integer'),
    number: types.has('number') && !types.has('integer'),
    boolean: types.has('boolean'),
    string: types.has('string'),
    structured: types.has('array') || types.has('object'),
    null: types.has('null'),
    jsonString: json && types.has('string'),
  };
}

/**
 * The deepest nesting of arrays and objects a JSON-encoded parameter may have. Zulip's
 * deepest (a narrow, a group setting) is three or four levels; Python's `json.loads`
 * gives up near a thousand. Checked before parsing, so that a body of `[[[[…` is refused
 * in one pass over its text, not parsed into a million arrays and then walked by ajv.
 */
export const MAX_JSON_DEPTH = 100;

/** Whether the JSON text `raw` nests arrays and objects at most `max` deep (strings skipped; not a validity check). */
export function nestedWithin(raw: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return false;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x22) {
      // A string: skip to its closing quote, past escaped characters.
      for (i++; i < raw.length; i++) {
        const d = raw.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    }
  }
  return true;
}

/**
 * `JSON.parse`, refusing numbers JSON cannot hold (`1e999` parses as Infinity, which ajv
 * takes for an integer) with the SyntaxError of any other invalid JSON.
 */
function parseJson(raw: string): unknown {
  return JSON.parse(raw, (_key, value: unknown) => {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new SyntaxError('a number out of range');
    return value;
  });
}

/** Converts one raw string by what its schema allows. */
function convert(name: string, raw: string, a: Admits): unknown {
  if (a.integer && INTEGER.test(raw)) return Number(raw);
  if (a.number && NUMBER.test(raw)) return Number(raw);
  if (a.boolean && (raw === 'true' || raw === 'false')) return raw === 'true';
  if (a.jsonString) {
    if (!MAY_BE_JSON.test(raw)) return raw;
    if (!nestedWithin(raw, MAX_JSON_DEPTH)) throw new ApiError('BAD_REQUEST', `Argument "${name}" is nested too deeply (at most ${MAX_JSON_DEPTH} levels).`, { var_name: name });
    try {
      return parseJson(raw);
    } catch {
      return raw;
    }
  }
  // A parameter that may also be a plain string (a channel name in `to`) is parsed as JSON
  // only when it looks like JSON: a thrown SyntaxError costs more than the rest of a request.
  if ((a.structured || (a.null && raw === 'null')) && (!a.string || LOOKS_LIKE_JSON.test(raw))) {
    if (!nestedWithin(raw, MAX_JSON_DEPTH)) throw new ApiError('BAD_REQUEST', `Argument "${name}" is nested too deeply (at most ${MAX_JSON_DEPTH} levels).`, { var_name: name });
    try {
      return parseJson(raw);
    } catch {
      if (!a.string) throw new ApiError('BAD_REQUEST', `Argument "${name}" is not valid JSON.`, { var_name: name });
    }
  }
  if (a.string) return raw;
  if (a.integer) throw new ApiError('BAD_REQUEST', `${name} is not an integer`, { var_name: name });
  if (a.number) throw new ApiError('BAD_REQUEST', `${name} is not a number`, { var_name: name });
  if (a.boolean) throw new ApiError('BAD_REQUEST', `${name} is not a boolean`, { var_name: name });
  return raw;
}

function describe(name: string, validate: ValidateFunction): string {
  const e = validate.errors?.[0];
  if (!e) return `Invalid ${name}`;
  const where = e.instancePath ? `${name}${e.instancePath.replace(/\//g, '.')}` : name;
  return `Invalid ${where}: ${e.message ?? 'is not valid'}`;
}

const EMPTY_BODY = Buffer.alloc(0);

function compileChat(route: RouteRecord): ParamChecker {
  const compiled: CompiledParam[] = [];
  const known = new Set<string>();
  for (const [name, spec] of Object.entries(route.params)) {
    const validate = compileSchema('chat', `Route ${route.method} ${route.path}: parameter '${name}'`, spec.schema);
    compiled.push({ name, spec, admits: admits(typesOf(spec.schema), spec.json === true), aliases: spec.aliases ?? NO_ALIASES, validate });
    known.add(name);
    for (const alias of spec.aliases ?? []) known.add(alias);
  }
  return {
    check(req, pathParams) {
      const decoded = route.streamBody ? decodeParams(undefined, EMPTY_BODY, req.query) : decodeParams(req.headers['content-type'], req.body, req.query);
      return decoded instanceof Promise ? decoded.then((d) => checkDecoded(d, pathParams)) : checkDecoded(decoded, pathParams);
    },
  };

  /** Converts and validates the decoded parameters of a request. */
  function checkDecoded({ values, files }: DecodedParams, pathParams: Record<string, string>): Checked {
    const params: Record<string, unknown> = {};
    for (const p of compiled) {
      let raw: string | undefined;
      if (p.spec.in === 'path') raw = pathParams[p.name];
      else {
        raw = values.get(p.name);
        for (let i = 0; raw === undefined && i < p.aliases.length; i++) raw = values.get(p.aliases[i]);
      }
      if (raw === undefined) {
        if (p.spec.required) throw missingArgument(p.name);
        continue;
      }
      if (p.spec.in === 'path') {
        // A path segment of the wrong shape means no such resource, as Zulip's typed URL patterns do.
        let value: unknown;
        try {
          value = convert(p.name, raw, p.admits);
        } catch {
          throw new ApiError('NOT_FOUND', 'Endpoint not found');
        }
        if (!p.validate(value)) throw new ApiError('NOT_FOUND', 'Endpoint not found');
        params[p.name] = value;
        continue;
      }
      let value = convert(p.name, raw, p.admits);
      if (!p.validate(value)) {
        // A JSON-encoded string parameter also takes the bare form, where its JSON reading is refused (`123` as a name).
        if (!p.admits.jsonString || value === raw || !p.validate(raw)) {
          if (p.admits.jsonString) p.validate(value);
          throw new ApiError('BAD_REQUEST', describe(p.name, p.validate), { var_name: p.name });
        }
        value = raw;
      }
      params[p.name] = value;
    }
    const ignored: string[] = [];
    for (const name of values.keys()) if (!known.has(name)) ignored.push(name);
    return { params, ignored: ignored.sort(), files, body: undefined };
  }
}

// ---------------------------------------------------------------------------
// Board
// ---------------------------------------------------------------------------

/** Explains the first ajv error as `field: what is wrong`. */
function explain(errors: ErrorObject[] | null | undefined): { field: string | undefined; message: string } {
  const e = errors?.[0];
  if (!e) return { field: undefined, message: 'is not valid' };
  if (e.keyword === 'additionalProperties') {
    const extra = String((e.params as { additionalProperty: string }).additionalProperty);
    return { field: extra, message: `unknown property '${extra}'; no properties other than those documented are allowed` };
  }
  if (e.keyword === 'const') {
    const field = e.instancePath.slice(1) || 'value';
    return { field, message: `must be exactly '${String((e.params as { allowedValue: unknown }).allowedValue)}'` };
  }
  if (e.keyword === 'enum') {
    const field = e.instancePath.slice(1) || 'value';
    return { field, message: `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => `'${String(v)}'`).join(', ')}` };
  }
  if (e.keyword === 'required') {
    const missing = String((e.params as { missingProperty: string }).missingProperty);
    return { field: missing, message: 'is required' };
  }
  const field = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : undefined;
  return { field, message: e.message ?? 'is not valid' };
}

/** A compiled schema that throws a board error naming the field at fault. */
function boardChecker(where: string, schema: object, code: BoardErrorCode): (value: unknown) => unknown {
  const validate = compileSchema('board', where, schema);
  return (value) => {
    if (validate(value)) return value;
    const { field, message } = explain(validate.errors);
    throw new BoardError(code, field === undefined ? `the request ${message}` : `${field}: ${message}`, field);
  };
}

function compileBoard(route: RouteRecord): ParamChecker {
  const where = `Board route ${route.method} ${route.path}`;
  const code = route.queryError ?? 'invalid_parameter';
  const params = Object.fromEntries(queryParamsOf(route));
  const querySchema = {
    type: 'object',
    additionalProperties: false,
    required: Object.entries(params).filter(([, p]) => p.required).map(([n]) => n),
    properties: Object.fromEntries(Object.entries(params).map(([n, p]) => [n, p.schema])),
  };
  const query = boardChecker(where, querySchema, code);
  const body = route.body ? boardChecker(where, route.body.schema, 'validation_failed') : undefined;
  /** Parses, converts and validates the query; a parameter's own hint replaces the validator's wording. */
  const checkQuery = (raw: string): Record<string, unknown> => {
    try {
      return query(convertQuery(parseQuery(raw, code), params, code)) as Record<string, unknown>;
    } catch (err) {
      if (!(err instanceof BoardError) || err.field === undefined) throw err;
      const hint = Object.hasOwn(params, err.field) ? params[err.field].hint : undefined;
      throw hint === undefined ? err : new BoardError(code, `${err.field}: ${hint}`, err.field);
    }
  };
  return {
    check(req, pathParams) {
      const checked = checkQuery(req.query);
      let value: unknown;
      if (body) {
        if (!isJsonMediaType(req.headers['content-type'])) throw new BoardError('unsupported_media_type', 'the request body must be application/json (UTF-8)');
        value = body(parseJsonBody(req.body));
      }
      return { params: Object.assign(checked, pathParams), ignored: [], files: [], body: value };
    },
  };
}
