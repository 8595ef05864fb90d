/**
 * Search highlighting, as Zulip returns it in `match_content` and `match_subject`:
 * each occurrence of a search word in the text (never inside a tag) is wrapped in
 * `<span class="highlight">`.
 */
import { escapeHtml } from '../markdown/index.js';

function wordPattern(words: string[]): RegExp | null {
  const parts = words.filter((w) => w.length > 0).map((w) => escapeHtml(w).replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return parts.length === 0 ? null : new RegExp(`(${parts.join('|')})`, 'gi');
}

/** Highlights search words in rendered HTML, touching only text between tags. */
export function highlightHtml(html: string, words: string[]): string {
  const pattern = wordPattern(words);
  if (!pattern) return html;
  return html
    .split(/(<[^>]*>)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(pattern, '<span class="highlight">$1</span>')))
    .join('');
}

/** Highlights search words in a topic, returned as escaped HTML. */
export function highlightText(text: string, words: string[]): string {
  return highlightHtml(escapeHtml(text), words);
}
