/**
 * The one error catalog of the message board, separate from the chat API's: a board
 * client never sees a Zulip-shaped error, and a chat client never sees this one.
 *
 * Errors are RFC 9457 problem details (`application/problem+json`):
 * `{type, title, status, code, detail}` plus `field` when one input field is to blame.
 * `type` is a URN (`urn:parley:board:error:<code>`): stable, and deliberately not a
 * URL, so that no agent reading an error is invited to fetch anything.
 */
import { BoardError, type BoardErrorCode } from '../../actors/errors.js';
import { STATUS_TEXT, type OutgoingResponse } from '../http/types.js';

export { BoardError, invalidField, type BoardErrorCode } from '../../actors/errors.js';

/** Each error code and its HTTP status. */
export const BOARD_ERRORS: Record<BoardErrorCode, number> = {
  invalid_parameter: 400,
  challenge_invalid: 403,
  not_found: 404,
  publication_disabled: 404,
  compatibility_disabled: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  malformed_json: 422,
  validation_failed: 422,
  rate_limited: 429,
  internal_error: 500,
};

/** The HTTP status of a board error. */
export function boardStatusOf(err: BoardError): number {
  return BOARD_ERRORS[err.code];
}

/** The JSON body of a board error. */
export function problemBody(err: BoardError): Record<string, unknown> {
  const body: Record<string, unknown> = {
    type: `urn:parley:board:error:${err.code}`,
    title: STATUS_TEXT[boardStatusOf(err)] ?? 'Error',
    status: boardStatusOf(err),
    code: err.code,
    detail: err.message,
  };
  if (err.field !== undefined) body.field = err.field;
  return body;
}

/** Renders a board error, with the board's common headers added by the caller. */
export function problemResponse(err: BoardError): OutgoingResponse {
  return {
    status: boardStatusOf(err),
    headers: [['Content-Type', 'application/problem+json'], ...err.headers],
    body: JSON.stringify(problemBody(err)),
  };
}
