/**
 * Reading board input strictly: query strings (no duplicates, valid UTF-8
 * percent-encoding, `+` as space as in form encoding) and JSON bodies (media type,
 * valid UTF-8, well-formed JSON). Nothing here guesses or repairs: bad input is a
 * clear error, never a silent default and never a 500.
 */
import { BoardError, type BoardErrorCode } from './errors.js';
import type { ParamSpec } from '../http/route.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeComponent(raw: string, code: BoardErrorCode): string {
  // uWS hands raw invalid UTF-8 over as U+FFFD: refuse it as its percent-encoded form is refused.
  if (raw.includes('\uFFFD')) throw new BoardError(code, `the query string is not valid UTF-8 near '${raw.slice(0, 40)}'`);
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    throw new BoardError(code, `the query string is not valid percent-encoded UTF-8 near '${raw.slice(0, 40)}'`);
  }
}

/** Parses a raw query string into name/value pairs; a repeated name is an error. */
export function parseQuery(raw: string, code: BoardErrorCode): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (raw === '') return out;
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeComponent(eq < 0 ? pair : pair.slice(0, eq), code);
    const value = decodeComponent(eq < 0 ? '' : pair.slice(eq + 1), code);
    if (name in out) throw new BoardError(code, `${name}: given more than once`, name);
    out[name] = value;
  }
  return out;
}

/**
 * Converts raw query values by their declared schema type before validation. An
 * integer must be plain decimal digits: `+5`, `05`, `5.0` and `` are all refused.
 */
export function convertQuery(raw: Record<string, string>, params: Record<string, ParamSpec>, code: BoardErrorCode): Record<string, unknown> {
  // No prototype: a parameter named `__proto__` must reach the validator, not vanish.
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(raw)) {
    const spec = Object.hasOwn(params, name) ? params[name] : undefined;
    if (spec?.schema.type === 'integer') {
      if (!/^(0|[1-9][0-9]{0,8})$/.test(value)) throw new BoardError(code, `${name}: ${spec.hint ?? 'must be an integer'}`, name);
      out[name] = Number(value);
    } else out[name] = value;
  }
  return out;
}

/** True when a Content-Type names JSON in UTF-8 (`application/json`, optionally `charset=utf-8`). */
export function isJsonMediaType(header: string | undefined): boolean {
  if (!header) return false;
  const [type, ...params] = header.split(';').map((p) => p.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => p === '' || /^charset="?utf-8"?$/.test(p));
}

/** Decodes a JSON request body; the checks that precede it (media type, size) are the caller's. */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new BoardError('malformed_json', 'the request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BoardError('malformed_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
