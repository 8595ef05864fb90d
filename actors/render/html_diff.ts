/**
 * The difference between two renderings of a message, as Zulip's
 * `highlight_html_differences` shows it in edit history: the new HTML, with the words
 * that came in wrapped in `<span class="highlight_text_inserted">` and the words that
 * went shown in `<span class="highlight_text_deleted">` where they were. Tags are
 * kept as they are; only text is compared, word by word (with the `diff` package).
 */
import { diffArrays } from '../shared/cjs_packages.js';

/** Tags and runs of text between them, text split into words and the spaces after them. */
function tokens(html: string): string[] {
  const out: string[] = [];
  for (const part of html.split(/(<[^>]*>)/)) {
    if (part === '') continue;
    if (part.startsWith('<')) out.push(part);
    else out.push(...(part.match(/\S+\s*|\s+/g) ?? []));
  }
  return out;
}

const isTag = (t: string): boolean => t.startsWith('<');

export function htmlDiff(before: string, after: string): string {
  const parts = diffArrays(tokens(before), tokens(after));
  let out = '';
  for (const part of parts) {
    if (!part.added && !part.removed) {
      out += part.value.join('');
      continue;
    }
    // Tags come from the new rendering only; words are marked in runs.
    let run = '';
    const flush = (): void => {
      if (run.trim() !== '') out += `<span class="${part.added ? 'highlight_text_inserted' : 'highlight_text_deleted'}">${run}</span>`;
      else out += part.added ? run : '';
      run = '';
    };
    for (const t of part.value) {
      if (isTag(t)) {
        flush();
        if (part.added) out += t;
      } else run += t;
    }
    flush();
  }
  return out;
}
