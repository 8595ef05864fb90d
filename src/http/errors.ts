/**
 * The one error catalog of the chat API. Every error a route can answer with is a
 * code here, and the code alone decides the HTTP status, as in Zulip's `ErrorCode`.
 */

/** Status for each error code; anything not listed is a 400, Zulip's default. */
const STATUS: Record<string, number> = {
  BAD_REQUEST: 400,
  REQUEST_VARIABLE_MISSING: 400,
  REQUEST_VARIABLE_INVALID: 400,
  INVALID_JSON: 400,
  BAD_NARROW: 400,
  BAD_EVENT_QUEUE_ID: 400,
  STREAM_DOES_NOT_EXIST: 400,
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
  SERVER_NOT_READY: 503,
};

/** Extra fields an error body may carry beyond `result`, `msg` and `code`. */
export type ErrorExtra = Record<string, unknown>;

/**
 * A failure that is the client's to see. Thrown (or returned) anywhere below a route
 * and rendered by the dispatcher as `{result: "error", msg, code, ...extra}`.
 */
export class ApiError extends Error {
  readonly code: string;
  readonly extra: ErrorExtra | undefined;
  constructor(code: string, msg: string, extra?: ErrorExtra) {
    super(msg);
    this.code = code;
    this.extra = extra;
  }
  get status(): number {
    return STATUS[this.code] ?? 400;
  }
}

/** The HTTP status that goes with `code`. */
export function statusOf(code: string): number {
  return STATUS[code] ?? 400;
}

/** The JSON body of an error, in Zulip's shape. */
export function errorBody(code: string, msg: string, extra?: ErrorExtra): string {
  return JSON.stringify({ ...extra, result: 'error', msg, code });
}

/** Shorthands for the errors raised from many places. */
export const badRequest = (msg: string, extra?: ErrorExtra): ApiError => new ApiError('BAD_REQUEST', msg, extra);
export const missingArgument = (name: string): ApiError =>
  new ApiError('REQUEST_VARIABLE_MISSING', `Missing '${name}' argument`, { var_name: name });
export const invalidArgument = (name: string, why: string): ApiError =>
  new ApiError('BAD_REQUEST', why.includes(name) ? why : `Invalid ${name}: ${why}`, { var_name: name });
export const badQueue = (queueId: string): ApiError =>
  new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId}`, { queue_id: queueId });
export const adminRequired = (): ApiError => new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');
