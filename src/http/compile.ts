/**
 * The one place where schemas are compiled, at boot: route parameters and bodies of
 * both APIs. A schema that does not compile stops the boot and names its route.
 *
 * Each API keeps its own ajv options, because they are part of its behaviour:
 * - chat: non-strict, as Zulip's loose parameter schemas need;
 * - board: strict, with sizes checked exactly as the board's spec counts them, by
 *   custom keywords rather than by ajv's defaults:
 *   - `x-maxUtf8Bytes`: UTF-8 bytes (`Buffer.byteLength`);
 *   - `x-maxCodePoints`: Unicode code points (`Array.from(s).length`), not UTF-16 units;
 *   - `x-wellFormed`: no lone surrogates, which UTF-8 cannot carry (and the log could
 *     not store faithfully);
 *   - `x-httpUrl`: an absolute http(s) URL with a host. It is only parsed, never fetched.
 *   The schemas also carry the standard `maxLength` (code points in JSON Schema), so the
 *   OpenAPI document reads naturally; the custom keywords are what enforce.
 */
import { Ajv, type FuncKeywordDefinition, type SchemaValidateFunction, type ValidateFunction } from 'ajv';
import type { ApiName } from './route.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True for an absolute http(s) URL with a host and no whitespace or control characters. */
export function isHttpUrl(s: string): boolean {
  if (!/^https?:\/\//i.test(s) || /[\s\x00-\x1f\x7f]/.test(s)) return false;
  try {
    const url = new URL(s);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
  } catch {
    return false;
  }
}

function keyword(name: string, message: (limit: any) => string, test: (s: string, limit: any) => boolean): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (limit: unknown, data: unknown): boolean => {
    if (typeof data !== 'string' || test(data, limit)) return true;
    validate.errors = [{ keyword: name, message: message(limit), params: { limit } }];
    return false;
  };
  return { keyword: name, errors: true, validate };
}

function boardAjv(): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true, coerceTypes: false, formats: { uri: true } });
  ajv.addKeyword(keyword('x-maxUtf8Bytes', (n) => `must be at most ${n} UTF-8 bytes`, (s, n) => Buffer.byteLength(s, 'utf8') <= n));
  ajv.addKeyword(keyword('x-maxCodePoints', (n) => `must be at most ${n} Unicode characters`, (s, n) => Array.from(s).length <= n));
  ajv.addKeyword(keyword('x-wellFormed', () => 'must be well-formed Unicode (no lone surrogates)', (s) => !LONE_SURROGATE.test(s)));
  ajv.addKeyword(keyword('x-httpUrl', () => 'must be an absolute http or https URL', (s) => isHttpUrl(s)));
  // maxLength is documentation here: x-maxCodePoints enforces the same limit explicitly.
  ajv.removeKeyword('maxLength');
  ajv.addKeyword({ keyword: 'maxLength', schemaType: 'number' });
  return ajv;
}

const AJV: Record<ApiName, Ajv> = {
  chat: new Ajv({ allErrors: false, strict: false, coerceTypes: false }),
  board: boardAjv(),
};

/**
 * Validators by their schema's text, per API. The routes' 765 parameter schemas are 46
 * distinct ones (`{ type: 'integer' }` and the like, each written out where it is used), and
 * ajv caches by object, not by content: compiling each text once took a server boot's schema
 * compiling from 620 to 190 ms (on a loaded machine). A validator is a pure function of
 * its schema, used synchronously (its `errors` are read right after the call), so one
 * validator serves every parameter that has its schema.
 */
const COMPILED: Record<ApiName, Map<string, ValidateFunction>> = { chat: new Map(), board: new Map() };

/** Compiles a schema of `api`'s records; a bad schema fails at boot, naming `where`. */
export function compileSchema(api: ApiName, where: string, schema: object): ValidateFunction {
  const text = JSON.stringify(schema);
  const known = COMPILED[api].get(text);
  if (known !== undefined) return known;
  let validate: ValidateFunction;
  try {
    validate = AJV[api].compile(schema);
  } catch (err) {
    throw new Error(`${where}: bad schema: ${(err as Error).message}`);
  }
  COMPILED[api].set(text, validate);
  return validate;
}
