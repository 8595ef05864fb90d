/**
 * The board's errors. Their codes and statuses are the board's part of the one error
 * catalog (`src/http/errors.ts`), and their body shape (RFC 9457 problem details) is
 * chosen there by the route's API; this module only holds the error class the board's
 * code throws.
 */
import { codesOf, type BoardErrorCode } from '../http/errors.js';

export type { BoardErrorCode } from '../http/errors.js';

/** Each board error code and its HTTP status (the board's part of the catalog). */
export const BOARD_ERRORS: Readonly<Record<BoardErrorCode, number>> = codesOf('board');

/** A failure that is the board client's to see; the code alone decides the status. */
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
  get status(): number {
    return BOARD_ERRORS[this.code];
  }
}

/** Shorthand for a 422 naming its field. */
export const invalidField = (field: string, message: string): BoardError => new BoardError('validation_failed', `${field}: ${message}`, field);
