/**
 * The one error catalog of both APIs: every error code, the API that answers with it
 * and the HTTP status it implies, and the two body shapes as data.
 *
 * - Chat codes are Zulip's (`zerver/lib/exceptions.py` `ErrorCode`; the domain raises
 *   them, `actors/shared/errors.ts`). A chat code not listed here is a 400, Zulip's default.
 *   Body: `{result: "error", msg, code, ...extra}`.
 * - Board codes are the board's own. Body: an RFC 9457 problem document
 *   (`application/problem+json`), `{type, title, status, code, detail}` plus `field`
 *   when one input field is to blame. `type` is a URN (`urn:parley:board:error:<code>`):
 *   stable, and deliberately not a URL, so that no agent reading an error is invited to
 *   fetch anything.
 *
 * A board client never sees a Zulip-shaped error, and a chat client never sees a
 * problem document: the shape is chosen by the route's API (`src/http/api.ts`).
 */
import type { ErrorCode, ErrorExtra } from '../../actors/shared/errors.js';
import { STATUS_TEXT } from './types.js';

/** Every code, the API it belongs to, and its status. */
export const ERROR_CATALOG = {
  BAD_REQUEST: { api: 'chat', status: 400 },
  REQUEST_VARIABLE_MISSING: { api: 'chat', status: 400 },
  REQUEST_VARIABLE_INVALID: { api: 'chat', status: 400 },
  REACTION_ALREADY_EXISTS: { api: 'chat', status: 400 },
  REACTION_DOES_NOT_EXIST: { api: 'chat', status: 400 },
  MOVE_MESSAGES_TIME_LIMIT_EXCEEDED: { api: 'chat', status: 400 },
  EXPECTATION_MISMATCH: { api: 'chat', status: 400 },
  CHANNEL_ALREADY_EXISTS: { api: 'chat', status: 409 },
  CANNOT_DEACTIVATE_GROUP_IN_USE: { api: 'chat', status: 400 },
  INVITATION_FAILED: { api: 'chat', status: 400 },
  NO_ACTIVE_PUSH_DEVICE: { api: 'chat', status: 400 },
  INVALID_PUSH_DEVICE_TOKEN: { api: 'chat', status: 400 },
  INVALID_REMOTE_PUSH_DEVICE_TOKEN: { api: 'chat', status: 400 },
  PUSH_SERVICE_NOT_CONFIGURED: { api: 'chat', status: 400 },
  ADMIN_ACTION_REQUIRED: { api: 'chat', status: 403 },
  FAILED_TO_CONNECT_BOUNCER: { api: 'chat', status: 502 },
  INTERNAL_SERVER_ERROR_ON_BOUNCER: { api: 'chat', status: 502 },
  INVALID_JSON: { api: 'chat', status: 400 },
  BAD_NARROW: { api: 'chat', status: 400 },
  BAD_EVENT_QUEUE_ID: { api: 'chat', status: 400 },
  STREAM_DOES_NOT_EXIST: { api: 'chat', status: 400 },
  UNAUTHORIZED: { api: 'chat', status: 401 },
  INVALID_API_KEY: { api: 'chat', status: 401 },
  USER_DEACTIVATED: { api: 'chat', status: 401 },
  REALM_DEACTIVATED: { api: 'chat', status: 401 },
  AUTHENTICATION_FAILED: { api: 'chat', status: 401 },
  // Zulip's Organization{Member,Administrator,Owner}RequiredError: no status override, so 400.
  UNAUTHORIZED_PRINCIPAL: { api: 'chat', status: 400 },
  ACCESS_DENIED: { api: 'chat', status: 403 },
  PERMISSION_DENIED: { api: 'chat', status: 403 },
  NOT_FOUND: { api: 'chat', status: 404 },
  NONEXISTENT_SUBDOMAIN: { api: 'chat', status: 404 },
  METHOD_NOT_ALLOWED: { api: 'chat', status: 405 },
  PAYLOAD_TOO_LARGE: { api: 'chat', status: 413 },
  RATE_LIMIT_HIT: { api: 'chat', status: 429 },
  INTERNAL_SERVER_ERROR: { api: 'chat', status: 500 },
  SERVER_NOT_READY: { api: 'chat', status: 503 },
  // Parley's own: the disk holding uploads is full (RFC 4918's 507; src/uploads/write_failure.ts).
  INSUFFICIENT_STORAGE: { api: 'chat', status: 507 },

  invalid_parameter: { api: 'board', status: 400 },
  challenge_invalid: { api: 'board', status: 403 },
  not_found: { api: 'board', status: 404 },
  publication_disabled: { api: 'board', status: 404 },
  compatibility_disabled: { api: 'board', status: 404 },
  method_not_allowed: { api: 'board', status: 405 },
  payload_too_large: { api: 'board', status: 413 },
  unsupported_media_type: { api: 'board', status: 415 },
  malformed_json: { api: 'board', status: 422 },
  validation_failed: { api: 'board', status: 422 },
  rate_limited: { api: 'board', status: 429 },
  internal_error: { api: 'board', status: 500 },
  unavailable: { api: 'board', status: 503 },
} as const satisfies Record<string, { api: 'chat' | 'board'; status: number }>;

type Catalog = typeof ERROR_CATALOG;
/** The codes of one API. */
export type CodeOf<A extends 'chat' | 'board'> = { [K in keyof Catalog]: Catalog[K]['api'] extends A ? K : never }[keyof Catalog];
/** A board error code. */
export type BoardErrorCode = CodeOf<'board'>;

// Every chat code of the domain is in the catalog, and nothing else is called a chat code.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const chatCodesComplete: Same<CodeOf<'chat'>, ErrorCode> = true;
void chatCodesComplete;

/** The codes and statuses of one API, in catalog order. */
export function codesOf<A extends 'chat' | 'board'>(api: A): Record<CodeOf<A>, number> {
  return Object.fromEntries(Object.entries(ERROR_CATALOG).filter(([, e]) => e.api === api).map(([code, e]) => [code, e.status])) as Record<CodeOf<A>, number>;
}

/** The HTTP status that goes with `code` (a chat code not in the catalog: 400). */
export function statusOf(code: string): number {
  return Object.hasOwn(ERROR_CATALOG, code) ? ERROR_CATALOG[code as keyof Catalog].status : 400;
}

/** The JSON body of an error, in Zulip's shape. */
export function errorBody(code: string, msg: string, extra?: ErrorExtra): string {
  return JSON.stringify({ ...extra, result: 'error', msg, code });
}

/** The JSON body of a board error (RFC 9457 problem details). */
export function problemBody(code: string, detail: string, field?: string): Record<string, unknown> {
  const status = statusOf(code);
  const body: Record<string, unknown> = {
    type: `urn:parley:board:error:${code}`,
    title: STATUS_TEXT[status] ?? 'Error',
    status,
    code,
    detail,
  };
  if (field !== undefined) body.field = field;
  return body;
}
