/**
 * The HTTP side of the chat API's errors: the status each domain error code implies
 * (as Zulip's `ErrorCode` does) and the body shape. The codes themselves live in the
 * domain (`actors/errors.ts`).
 */
import type { ErrorCode, ErrorExtra } from '../../actors/errors.js';

/** Status for each error code; anything not listed is a 400, Zulip's default. */
const STATUS: Partial<Record<ErrorCode, number>> = {
  UNAUTHORIZED: 401,
  INVALID_API_KEY: 401,
  USER_DEACTIVATED: 401,
  REALM_DEACTIVATED: 401,
  AUTHENTICATION_FAILED: 401,
  UNAUTHORIZED_PRINCIPAL: 403,
  ACCESS_DENIED: 403,
  NOT_FOUND: 404,
  NONEXISTENT_SUBDOMAIN: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMIT_HIT: 429,
  INTERNAL_SERVER_ERROR: 500,
  SERVER_NOT_READY: 503,
};

/** The HTTP status that goes with `code`. */
export function statusOf(code: string): number {
  return STATUS[code as ErrorCode] ?? 400;
}

/** The JSON body of an error, in Zulip's shape. */
export function errorBody(code: string, msg: string, extra?: ErrorExtra): string {
  return JSON.stringify({ ...extra, result: 'error', msg, code });
}
