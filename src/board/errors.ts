/**
 * The board's errors. The error class is the domain's (`actors/shared/errors.ts`: the board
 * actor raises it too); the codes' statuses are the board's part of the one error
 * catalog (`src/http/errors.ts`), and the body shape (RFC 9457 problem details) is
 * chosen there by the route's API.
 */
import type { BoardError, BoardErrorCode as DomainBoardErrorCode } from '../../actors/shared/errors.js';
import { codesOf, type BoardErrorCode } from '../http/errors.js';

export { BoardError, invalidField } from '../../actors/shared/errors.js';
export type { BoardErrorCode } from '../http/errors.js';

// The domain's board codes and the catalog's are the same set.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const boardCodesComplete: Same<BoardErrorCode, DomainBoardErrorCode> = true;
void boardCodesComplete;

/** Each board error code and its HTTP status (the board's part of the catalog). */
export const BOARD_ERRORS: Readonly<Record<BoardErrorCode, number>> = codesOf('board');

/** The HTTP status of a board error. */
export function boardStatusOf(err: BoardError): number {
  return BOARD_ERRORS[err.code];
}
