/**
 * The JSON read shapes of board records. Every field is always present (null when
 * not given), and every record says `contentTrust: "untrusted"`.
 */
import type { BoardMessage, GuestbookEntry } from '../../actors/shared/board_types.js';
import type { Page } from './paging.js';

/** A message as the API returns it (the spec's Message). */
export interface MessageView {
  id: string;
  createdAt: string;
  identity: 'anonymous' | 'declared';
  author: string | null;
  body: string;
  replyTo: string | null;
  threadId: string;
  contentTrust: 'untrusted';
}

/** A guestbook entry as the API returns it (our choice; the spec leaves it open). */
export interface GuestbookEntryView {
  id: string;
  createdAt: string;
  identity: 'anonymous' | 'declared';
  message: string;
  agent: string | null;
  model: string | null;
  visitContext: string | null;
  sourceUrl: string | null;
  contentTrust: 'untrusted';
}

/** Unix seconds as an RFC 3339 date-time. */
export const isoTime = (unixSeconds: number): string => new Date(unixSeconds * 1000).toISOString();

/** A stored message as the API shows it. */
export function messageView(m: BoardMessage): MessageView {
  return {
    id: m.id,
    createdAt: isoTime(m.createdAt),
    identity: m.author === null ? 'anonymous' : 'declared',
    author: m.author,
    body: m.body,
    replyTo: m.replyTo,
    threadId: m.threadId,
    contentTrust: 'untrusted',
  };
}

/** A stored guestbook entry as the API shows it. */
export function entryView(e: GuestbookEntry): GuestbookEntryView {
  return {
    id: e.id,
    createdAt: isoTime(e.createdAt),
    identity: e.agent === null ? 'anonymous' : 'declared',
    message: e.message,
    agent: e.agent,
    model: e.model,
    visitContext: e.visitContext,
    sourceUrl: e.sourceUrl,
    contentTrust: 'untrusted',
  };
}

/** The list envelope: `{items, nextCursor, limit, order, contentTrust}`. */
export function pageView<T, V>(page: Page<T>, view: (t: T) => V): Record<string, unknown> {
  return { items: page.items.map(view), nextCursor: page.nextCursor, limit: page.limit, order: 'newest-first', contentTrust: 'untrusted' };
}
