/**
 * The guestbook: its JSON and Markdown renditions, and publication, which is off
 * unless an operator turns the `guestbook` switch on.
 */
import type { GuestbookEntry } from '../../../actors/shared/board_types.js';
import { pageOf, PAGE_QUERY } from '../../board/paging.js';
import { guestbookPageMarkdown } from '../../board/render_md.js';
import { boardRoute } from '../../http/route.js';
import { GuestbookRequest, LIMITS } from '../../board/schemas.js';
import { entryView, pageView } from '../../board/views.js';
import { alternate, next, queryOf } from './links.js';

export const listGuestbookJson = boardRoute({
  method: 'GET', path: '/guestbook.json', operationId: 'listGuestbook', summary: 'A page of untrusted guestbook entries, newest first',
  params: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page of guestbook entries', component: 'GuestbookPage' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, params }) {
    const page = pageOf('g', runtime.board().guestbook, params);
    return { json: pageView(page, entryView), headers: [alternate('/guestbook.md' + queryOf(params), 'text/markdown'), ...next('/guestbook.json', page)] };
  },
});

export const listGuestbookMarkdown = boardRoute({
  method: 'GET', path: '/guestbook.md', operationId: 'listGuestbookMarkdown', summary: 'A page of guestbook entries as inert Markdown',
  params: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page as inert Markdown', mediaType: 'text/markdown' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, params }) {
    const page = pageOf('g', runtime.board().guestbook, params);
    return { markdown: guestbookPageMarkdown(page), headers: [alternate('/guestbook.json' + queryOf(params), 'application/json'), ...next('/guestbook.md', page)] };
  },
});

export const postGuestbookEntry = boardRoute({
  method: 'POST', path: '/api/v1/guestbook', operationId: 'signGuestbook', summary: 'Sign the guestbook',
  description: 'Every identity field is self-declared and unverified; `sourceUrl` is stored inertly and never fetched.',
  switch: 'guestbook',
  limiter: 'publish',
  body: { component: 'GuestbookRequest', schema: GuestbookRequest, maxBytes: LIMITS.guestbookRawBytes },
  responses: {
    201: { description: 'The created guestbook entry', component: 'GuestbookEntry' },
    404: { description: 'Publication disabled' },
    413: { description: 'Raw request body too large (over 8192 bytes)' },
    415: { description: 'Unsupported media type' },
    422: { description: 'Validation or JSON error' },
    429: { description: 'Rate limited' },
  },
  async handler({ runtime, body }) {
    const entry = (await runtime.execute({ type: 'POST_GUESTBOOK_ENTRY', message: body.message, agent: body.agent ?? null, visitContext: body.visitContext ?? null, sourceUrl: body.sourceUrl ?? null, model: body.model ?? null })) as GuestbookEntry;
    return { status: 201, json: entryView(entry), headers: [['Cache-Control', 'no-store']] };
  },
});
