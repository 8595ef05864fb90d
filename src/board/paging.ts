/**
 * Cursor pagination over an append-only list, newest first. A cursor is opaque to
 * clients: base64url of `v1:<collection>:<n>`, meaning "items before position n".
 * Because items are never removed, a cursor stays valid forever and new items never
 * shift a page. A cursor for another collection, or one we could not have issued, is
 * a clear 400, not a silent first page.
 */
import { BoardError } from './errors.js';
import { Type } from '../../actors/shared/cjs_packages.js';
import type { ParamMap, ParamsOf } from '../http/route.js';

/** The paging query of every list endpoint. */
export const PAGE_QUERY = {
  limit: {
    schema: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    description: 'Items per page, 1 to 100 (default 50)',
    hint: 'must be an integer from 1 to 100',
  },
  cursor: {
    schema: Type.String({ minLength: 1, maxLength: 64 }),
    description: 'Opaque cursor from a previous page\'s `nextCursor`',
    hint: 'must be a cursor returned as nextCursor by this list',
  },
} satisfies ParamMap;

/** The converted paging query. */
export type PageQuery = ParamsOf<typeof PAGE_QUERY>;

/** A page of a list, and where the next one starts. */
export interface Page<T> {
  items: T[];
  limit: number;
  nextCursor: string | null;
}

/** The cursor of the page that starts just before position `before`. */
export function encodeCursor(collection: string, before: number): string {
  return Buffer.from(`v1:${collection}:${before}`, 'utf8').toString('base64url');
}

function decodeCursor(collection: string, cursor: string, total: number): number {
  const invalid = new BoardError('invalid_parameter', `cursor: ${PAGE_QUERY.cursor.hint}`, 'cursor');
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid;
  const m = /^v1:([a-z]+):([1-9][0-9]{0,9})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!m || m[1] !== collection) throw invalid;
  const before = Number(m[2]);
  // Cursors are only issued for positions that exist; anything further was forged.
  if (before > total) throw invalid;
  return before;
}

/** One page of `list` (oldest first in storage), returned newest first. */
export function pageOf<T>(collection: string, list: readonly T[], q: PageQuery): Page<T> {
  const limit = q.limit ?? 50;
  const before = q.cursor === undefined ? list.length + 1 : decodeCursor(collection, q.cursor, list.length);
  const items: T[] = [];
  for (let n = before - 1; n >= 1 && items.length < limit; n--) items.push(list[n - 1]);
  const lowest = before - items.length;
  return { items, limit, nextCursor: lowest > 1 ? encodeCursor(collection, lowest) : null };
}
