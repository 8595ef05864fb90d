/**
 * Link headers of board responses: each JSON resource names its Markdown alternate
 * (and back), and list pages name their next page. Targets are relative references
 * built only from our own paths, ids and cursors.
 */
import type { Page, PageQuery } from '../../board/paging.js';

/** `Link: <target>; rel="alternate"; type="..."`. */
export function alternate(target: string, type: 'text/markdown' | 'application/json'): [string, string] {
  return ['Link', `<${target}>; rel="alternate"; type="${type}"`];
}

/** `Link: <...?limit=N&cursor=C>; rel="next"` when there is a next page. */
export function next(path: string, page: Page<unknown>): Array<[string, string]> {
  return page.nextCursor === null ? [] : [['Link', `<${path}?limit=${page.limit}&cursor=${page.nextCursor}>; rel="next"`]];
}

/** The query of the same page, rebuilt from validated values (never echoed raw). */
export function queryOf(q: PageQuery): string {
  const parts: string[] = [];
  if (q.limit !== undefined) parts.push(`limit=${q.limit}`);
  if (q.cursor !== undefined) parts.push(`cursor=${encodeURIComponent(q.cursor)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}
