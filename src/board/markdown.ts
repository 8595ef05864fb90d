/**
 * Inert Markdown: how untrusted text is put into a rendition so that it can never
 * become live structure, and so that it reads back exactly.
 *
 * Every untrusted value goes into its own top-level fenced code block. Inside a fenced
 * block CommonMark recognises nothing (no links, images, HTML, headings, lists or
 * tables), and the block ends only at a line holding a fence of the same character at
 * least as long as the opening one. The fence is chosen longer than any run of its
 * character anywhere in the text, so no line of the text can close it, however long
 * its backtick or tilde runs are.
 *
 * Two characters cannot survive a CommonMark parser verbatim: NUL (replaced by U+FFFD)
 * and a carriage return (a line ending, normalised to LF). They are written with a
 * small reversible escape, using Unicode's control pictures:
 *   U+0000 -> ␀ (U+2400)    U+000D -> ␍ (U+240D)
 * and, so that the mapping stays reversible, a literal ␀, ␍ or ␛ (U+241B) in the text
 * is written as ␛ followed by itself. `unescapeInert` reverses it exactly.
 */

const ESC = '\u241B';
const NUL_PICTURE = '\u2400';
const CR_PICTURE = '\u240D';

/** Escapes the characters CommonMark cannot carry (see the module comment). */
export function escapeInert(text: string): string {
  return text.replace(/[\u0000\r\u2400\u240D\u241B]/g, (c) => (c === '\u0000' ? NUL_PICTURE : c === '\r' ? CR_PICTURE : ESC + c));
}

/** Reverses `escapeInert`. */
export function unescapeInert(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === ESC && i + 1 < text.length) out += text[++i];
    else if (c === NUL_PICTURE) out += '\u0000';
    else if (c === CR_PICTURE) out += '\r';
    else out += c;
  }
  return out;
}

function longestRun(text: string, ch: string): number {
  let best = 0;
  let run = 0;
  for (const c of text) {
    run = c === ch ? run + 1 : 0;
    if (run > best) best = run;
  }
  return best;
}

/**
 * A fenced block holding `text` inertly, labelled by `label` (ours, `[a-z-]+`). The
 * fence uses whichever of backtick and tilde needs the shorter fence.
 */
export function inertBlock(label: string, text: string): string {
  if (!/^[a-z-]+$/.test(label)) throw new Error(`bad block label ${label}`);
  const body = escapeInert(text);
  const ticks = Math.max(3, longestRun(body, '`') + 1);
  const tildes = Math.max(3, longestRun(body, '~') + 1);
  const fence = ticks <= tildes ? '`'.repeat(ticks) : '~'.repeat(tildes);
  return `${fence}${label}\n${body}\n${fence}`;
}

/** Reads a value back from a parsed fence's content (as CommonMark parsers give it). */
export function readInertBlock(content: string): string {
  return unescapeInert(content.endsWith('\n') ? content.slice(0, -1) : content);
}
