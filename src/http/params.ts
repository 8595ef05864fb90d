/**
 * Parameter checking, compiled at boot from each route's `params`. Form and query
 * values are strings: they are first converted by what the schema allows (integers,
 * booleans, JSON-encoded lists and objects, as Zulip sends them), then validated by
 * ajv. A schema that does not compile stops the boot and names its route.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { ApiError, missingArgument } from '../../actors/errors.js';
import type { ParamSpec, Route, Schema } from './route.js';

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false });

interface CompiledParam {
  name: string;
  spec: ParamSpec;
  types: Set<string>;
  validate: ValidateFunction;
}

/** A route's compiled parameter checker. */
export interface ParamChecker {
  /** Names (and aliases) the route accepts. */
  known: Set<string>;
  /**
   * Converts and validates raw values. Returns the typed parameters and the names
   * that the route does not support.
   */
  check(values: Map<string, string>, pathParams: Record<string, string>): { params: Record<string, unknown>; ignored: string[] };
}

/** Every JSON type a schema admits. */
function typesOf(schema: Schema): Set<string> {
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

const INTEGER = /^-?\d{1,16}$/;
const LOOKS_LIKE_JSON = /^\s*[[{"]|^null$/;
const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** Converts one raw string by what its schema allows. */
function convert(name: string, raw: string, types: Set<string>): unknown {
  if (types.has('integer') && INTEGER.test(raw)) return Number(raw);
  if (types.has('number') && !types.has('integer') && NUMBER.test(raw)) return Number(raw);
  if (types.has('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true';
  const structured = types.has('array') || types.has('object') || (types.has('null') && raw === 'null');
  // A parameter that may also be a plain string (a channel name in `to`) is parsed as JSON
  // only when it looks like JSON: a thrown SyntaxError costs more than the rest of a request.
  if (structured && (!types.has('string') || LOOKS_LIKE_JSON.test(raw))) {
    try {
      return JSON.parse(raw);
    } catch {
      if (!types.has('string')) throw new ApiError('BAD_REQUEST', `Argument "${name}" is not valid JSON.`, { var_name: name });
    }
  }
  if (types.has('string')) return raw;
  if (types.has('integer')) throw new ApiError('BAD_REQUEST', `${name} is not an integer`, { var_name: name });
  if (types.has('number')) throw new ApiError('BAD_REQUEST', `${name} is not a number`, { var_name: name });
  if (types.has('boolean')) throw new ApiError('BAD_REQUEST', `${name} is not a boolean`, { var_name: name });
  return raw;
}

function describe(name: string, validate: ValidateFunction): string {
  const e = validate.errors?.[0];
  if (!e) return `Invalid ${name}`;
  const where = e.instancePath ? `${name}${e.instancePath.replace(/\//g, '.')}` : name;
  return `Invalid ${where}: ${e.message ?? 'is not valid'}`;
}

/** Compiles a route's parameter checker; throws naming the route if a schema is bad. */
export function compileParams(route: Route): ParamChecker {
  const compiled: CompiledParam[] = [];
  const known = new Set<string>();
  for (const [name, spec] of Object.entries(route.params)) {
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(spec.schema);
    } catch (err) {
      throw new Error(`Route ${route.method} ${route.path}: parameter '${name}' has a bad schema: ${(err as Error).message}`);
    }
    compiled.push({ name, spec, types: typesOf(spec.schema), validate });
    known.add(name);
    for (const alias of spec.aliases ?? []) known.add(alias);
  }
  return {
    known,
    check(values, pathParams) {
      const params: Record<string, unknown> = {};
      for (const p of compiled) {
        let raw: string | undefined;
        if (p.spec.in === 'path') raw = pathParams[p.name];
        else {
          raw = values.get(p.name);
          for (const alias of p.spec.aliases ?? []) if (raw === undefined) raw = values.get(alias);
        }
        if (raw === undefined) {
          if (p.spec.required) throw missingArgument(p.name);
          continue;
        }
        if (p.spec.in === 'path') {
          // A path segment of the wrong shape means no such resource, as Zulip's typed URL patterns do.
          let value: unknown;
          try {
            value = convert(p.name, raw, p.types);
          } catch {
            throw new ApiError('NOT_FOUND', 'Endpoint not found');
          }
          if (!p.validate(value)) throw new ApiError('NOT_FOUND', 'Endpoint not found');
          params[p.name] = value;
          continue;
        }
        const value = convert(p.name, raw, p.types);
        if (!p.validate(value)) throw new ApiError('BAD_REQUEST', describe(p.name, p.validate), { var_name: p.name });
        params[p.name] = value;
      }
      const ignored: string[] = [];
      for (const name of values.keys()) if (!known.has(name)) ignored.push(name);
      return { params, ignored: ignored.sort() };
    },
  };
}
