/**
 * The domain's errors: a failure the client is to see, with a stable code. Decisions,
 * queries and the queue module raise them; the HTTP layer only maps a code to a
 * status (`src/http/errors.ts`) and renders the body in the API's shape.
 *
 * Codes are Zulip's (`zerver/lib/exceptions.py` `ErrorCode`), so that Zulip clients
 * recognize them.
 */

/** Extra fields an error body may carry beyond `result`, `msg` and `code`. */
export type ErrorExtra = Record<string, unknown>;

/** Every code the chat API answers with. */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'REQUEST_VARIABLE_INVALID'
  | 'INVALID_JSON'
  | 'BAD_NARROW'
  | 'BAD_EVENT_QUEUE_ID'
  | 'STREAM_DOES_NOT_EXIST'
  | 'UNAUTHORIZED'
  | 'INVALID_API_KEY'
  | 'USER_DEACTIVATED'
  | 'REALM_DEACTIVATED'
  | 'AUTHENTICATION_FAILED'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'ACCESS_DENIED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'NONEXISTENT_SUBDOMAIN'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMIT_HIT'
  | 'SERVER_NOT_READY'
  | 'INTERNAL_SERVER_ERROR'
  | 'INSUFFICIENT_STORAGE'
  | 'REACTION_ALREADY_EXISTS'
  | 'REACTION_DOES_NOT_EXIST'
  | 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'
  | 'EXPECTATION_MISMATCH'
  | 'CHANNEL_ALREADY_EXISTS'
  | 'CANNOT_DEACTIVATE_GROUP_IN_USE'
  | 'INVITATION_FAILED'
  | 'NO_ACTIVE_PUSH_DEVICE'
  | 'INVALID_PUSH_DEVICE_TOKEN'
  | 'INVALID_REMOTE_PUSH_DEVICE_TOKEN'
  | 'ADMIN_ACTION_REQUIRED'
  | 'PUSH_SERVICE_NOT_CONFIGURED'
  | 'FAILED_TO_CONNECT_BOUNCER'
  | 'INTERNAL_SERVER_ERROR_ON_BOUNCER';

/**
 * A failure that is the client's to see. Thrown anywhere below a route and rendered
 * by the HTTP layer as `{result: "error", msg, code, ...extra}`.
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly extra: ErrorExtra | undefined;
  /** A status other than the code's own (Zulip's `ResourceNotFoundError`: `BAD_REQUEST` with 404). */
  readonly status: number | undefined;
  constructor(code: ErrorCode, msg: string, extra?: ErrorExtra, status?: number) {
    super(msg);
    this.code = code;
    this.extra = extra;
    this.status = status;
  }
}

/** Shorthands for the errors raised from many places. */
export const badRequest = (msg: string, extra?: ErrorExtra): ApiError => new ApiError('BAD_REQUEST', msg, extra);
/** Zulip's `ResourceNotFoundError`: something named by the request does not exist (404, code `BAD_REQUEST`). */
export const notFound = (msg: string): ApiError => new ApiError('BAD_REQUEST', msg, undefined, 404);
export const missingArgument = (name: string): ApiError =>
  new ApiError('REQUEST_VARIABLE_MISSING', `Missing '${name}' argument`, { var_name: name });
export const invalidArgument = (name: string, why: string): ApiError =>
  new ApiError('BAD_REQUEST', why.includes(name) ? why : `Invalid ${name}: ${why}`, { var_name: name });
export const badQueue = (queueId: string): ApiError =>
  new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ID: ${queueId}`, { queue_id: queueId });
/** Zulip's `@require_bot` refusal (bot storage). */
export const botsOnly = (): ApiError => new ApiError('PERMISSION_DENIED', 'This endpoint is only available to bots.');
export const adminRequired = (): ApiError => new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator');

/** Every code the message board answers with (its statuses: `src/board/errors.ts`). */
export type BoardErrorCode =
  | 'invalid_parameter'
  | 'challenge_invalid'
  | 'not_found'
  | 'publication_disabled'
  | 'compatibility_disabled'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'malformed_json'
  | 'validation_failed'
  | 'rate_limited'
  | 'internal_error'
  | 'unavailable';

/**
 * A failure that is the board client's to see, rendered as RFC 9457 problem details;
 * the code alone decides the status.
 */
export class BoardError extends Error {
  constructor(
    readonly code: BoardErrorCode,
    message: string,
    /** The input field at fault, if one is. */
    readonly field?: string,
    /** Extra response headers (`Allow`, `Retry-After`). */
    readonly headers: Array<[string, string]> = [],
  ) {
    super(message);
  }
}

/** Shorthand for a 422 naming its field. */
export const invalidField = (field: string, message: string): BoardError => new BoardError('validation_failed', `${field}: ${message}`, field);
