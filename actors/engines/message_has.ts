/**
 * What a message "has", for the `has:` narrows: Zulip stores `has_link` and `has_image`
 * on each message, set by its Markdown processor from the rendered tree at send and at
 * every content edit (`InlineInterestingLinkProcessor.run`). Here they are two bits of
 * `MessageRecord.has`, derived from the rendered HTML wherever a record enters state, so
 * records written before the bits existed (snapshot chunks, log facts) get them when
 * they are restored or replayed.
 *
 * `has:attachment` follows the uploads a message claimed (the attachments' message
 * lists) and `has:reaction` its reactions; neither needs a bit.
 */
import type { MessageRecord } from '../shared/types.js';

/** The message renders at least one link (`<a>`), channel and message links included. */
export const HAS_LINK = 1;
/** Zulip would show an inline image preview: a link to an image outside any quote. */
export const HAS_IMAGE = 2;

/** Zulip's `IMAGE_EXTENSIONS` (`zerver/lib/markdown/__init__.py`). */
const IMAGE_EXTENSIONS = ['.bmp', '.gif', '.jpe', '.jpeg', '.jpg', '.png', '.webp'];

/** Zulip previews no link at all in a message with more distinct previewable URLs than this. */
const INLINE_PREVIEW_LIMIT_PER_MESSAGE = 24;

/** Each link's href, and quote openings and closings, in document order. */
const LINK_OR_QUOTE = /<(\/?)blockquote>|<a\b[^>]*?\bhref="([^"]*)"/g;

/** Zulip's `is_image`: the URL's path ends with an image extension (pasteboard.co pages aside). */
function isImageUrl(href: string): boolean {
  const url = href.replace(/&amp;/g, '&');
  let path: string;
  let host = '';
  try {
    const parsed = new URL(url, 'http://relative.invalid');
    path = parsed.pathname;
    host = parsed.host;
  } catch {
    return false;
  }
  if (host === 'pasteboard.co') return false;
  const lower = path.toLowerCase();
  return IMAGE_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/** The `has` bits of a rendering. */
export function hasBits(rendered: string): number {
  // Most messages link nothing: one substring test.
  if (!rendered.includes('<a ')) return 0;
  let quoteDepth = 0;
  const previewable = new Set<string>();
  let any = false;
  for (const m of rendered.matchAll(LINK_OR_QUOTE)) {
    if (m[2] === undefined) {
      quoteDepth += m[1] === '/' ? -1 : 1;
      continue;
    }
    any = true;
    // Zulip previews no link inside a quote.
    if (quoteDepth <= 0) previewable.add(m[2]);
  }
  if (!any) return 0;
  let bits = HAS_LINK;
  if (previewable.size <= INLINE_PREVIEW_LIMIT_PER_MESSAGE && [...previewable].some(isImageUrl)) bits |= HAS_IMAGE;
  return bits;
}

/**
 * Sets a record's `has` bits from its rendering, as it enters state (a send, an edit, a
 * restore or a replay). The record is one no one else holds yet, or the fact's own,
 * already in the log: its bits are a function of its `rendered`, so writing them is
 * idempotent.
 */
export function stampHas(m: MessageRecord): MessageRecord {
  m.has = hasBits(m.rendered);
  return m;
}

/** A restored record's bits: kept when written with them, derived when written before them. */
export function restoreHas(m: MessageRecord): MessageRecord {
  if (m.has === undefined) m.has = hasBits(m.rendered);
  return m;
}
