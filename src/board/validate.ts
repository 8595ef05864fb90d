/**
 * The board's ajv instance, compiled once at boot. Sizes are checked exactly as the
 * spec counts them, by custom keywords rather than by ajv's defaults:
 * - `x-maxUtf8Bytes`: UTF-8 bytes (`Buffer.byteLength`);
 * - `x-maxCodePoints`: Unicode code points (`Array.from(s).length`), not UTF-16 units;
 * - `x-wellFormed`: no lone surrogates, which UTF-8 cannot carry (and the log could
 *   not store faithfully);
 * - `x-httpUrl`: an absolute http(s) URL with a host. It is only parsed, never fetched.
 * The schemas also carry the standard `maxLength` (code points in JSON Schema), so the
 * OpenAPI document reads naturally; the custom keywords are what enforce.
 */
import { Ajv, type ErrorObject, type FuncKeywordDefinition, type SchemaValidateFunction, type ValidateFunction } from 'ajv';
import { BoardError, type BoardErrorCode } from './errors.js';

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

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true, coerceTypes: false, formats: { uri: true } });
ajv.addKeyword(keyword('x-maxUtf8Bytes', (n) => `must be at most ${n} UTF-8 bytes`, (s, n) => Buffer.byteLength(s, 'utf8') <= n));
ajv.addKeyword(keyword('x-maxCodePoints', (n) => `must be at most ${n} Unicode characters`, (s, n) => Array.from(s).length <= n));
ajv.addKeyword(keyword('x-wellFormed', () => 'must be well-formed Unicode (no lone surrogates)', (s) => !LONE_SURROGATE.test(s)));
ajv.addKeyword(keyword('x-httpUrl', () => 'must be an absolute http or https URL', (s) => isHttpUrl(s)));
// maxLength is documentation here: x-maxCodePoints enforces the same limit explicitly.
ajv.removeKeyword('maxLength');
ajv.addKeyword({ keyword: 'maxLength', schemaType: 'number' });

/** A compiled checker that throws a board error naming the field at fault. */
export type Checker<T> = (value: unknown) => T;

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

/** Compiles a schema; a bad schema fails at boot, naming `where`. */
export function compileChecker<T>(where: string, schema: object, code: BoardErrorCode = 'validation_failed'): Checker<T> {
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (err) {
    throw new Error(`${where}: bad schema: ${(err as Error).message}`);
  }
  return (value: unknown): T => {
    if (validate(value)) return value as T;
    const { field, message } = explain(validate.errors);
    throw new BoardError(code, field === undefined ? `the request ${message}` : `${field}: ${message}`, field);
  };
}
