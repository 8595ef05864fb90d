/**
 * Search highlighting, as Zulip returns it in `match_content` and `match_subject`:
 * each occurrence of a search word in the text (never inside a tag) is wrapped in
 * `<span class="highlight">`.
 */
import { escapeHtml } from '../engines/markdown/index.js';

/** Highlights a request's search words; built once per request, applied to each message. */
export interface Highlighter {
  /** Highlights search words in rendered HTML, touching only text between tags. */
  html(html: string): string;
  /** Highlights search words in a topic, returned as escaped HTML. */
  text(text: string): string;
}

const TAGS = /(<[^>]*>)/;

/**
 * The highlighter of some search words. Their pattern is compiled here, once: compiled
 * again for each message's content and topic, a page of 2,500 matches built 5,000 of them.
 */
export function highlighter(words: string[]): Highlighter {
  const parts = words.filter((w) => w.length > 0).map((w) => escapeHtml(w).replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (parts.length === 0) return { html: (html) => html, text: (text) => escapeHtml(text) };
  const pattern = new RegExp(`(${parts.join('|')})`, 'gi');
  const html = (source: string): string =>
    source
      .split(TAGS)
      .map((part, i) => (i % 2 === 1 ? part : part.replace(pattern, '<span class="highlight">$1</span>')))
      .join('');
  return { html, text: (text) => html(escapeHtml(text)) };
}
