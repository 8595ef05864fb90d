/**
 * Zulip's inline basics, replacing markdown-it's CommonMark ones
 * (`build_inlinepatterns` in Zulip's `zerver/lib/markdown/__init__.py`):
 *
 * - text runs also stop at stash placeholders, which become their HTML;
 * - code spans keep their inner spaces (`` ` a ` `` is `<code> a </code>`);
 * - `***x***`, `**x**`, `*x*` by Zulip's regexes: no `_` forms, nothing across a
 *   line break, and `*` emphasis may not start or end with a space
 *   (`const char *x = (char *)y` stays text);
 * - `~~x~~` strikethrough, spaces allowed inside;
 * - a newline is a line break (`<br>`) and trailing spaces stay;
 * - character entities (`&amp;`, `&#39;`) pass through as written.
 * Zulip applies bold, italics, strikethrough and entities after links, so they do
 * not apply inside a link's text; the rules check `linkLevel` for that.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { STASH_CLOSE, STASH_OPEN, escapeText, type RenderState } from './env.js';

const STX = STASH_OPEN.charCodeAt(0);

/** markdown-it's terminator characters, plus STX. */
function isTerminator(ch: number): boolean {
  switch (ch) {
    case 0x0a: case 0x21: case 0x23: case 0x24: case 0x25: case 0x26: case 0x2a: case 0x2b: case 0x2d: case 0x3a:
    case 0x3c: case 0x3d: case 0x40: case 0x5b: case 0x5c: case 0x5d: case 0x5e: case 0x5f: case 0x60: case 0x7b:
    case 0x7d: case 0x7e: case STX:
      return true;
    default:
      return false;
  }
}

function text(state: StateInline, silent: boolean): boolean {
  let pos = state.pos;
  while (pos < state.posMax && !isTerminator(state.src.charCodeAt(pos))) pos++;
  if (pos === state.pos) return false;
  if (!silent) state.pending += state.src.slice(state.pos, pos);
  state.pos = pos;
  return true;
}

const PLACEHOLDER = new RegExp(`${STASH_OPEN}(\\d+)${STASH_CLOSE}`, 'y');

function stashed(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== STX) return false;
  PLACEHOLDER.lastIndex = state.pos;
  const m = PLACEHOLDER.exec(state.src);
  const env = state.env as unknown as RenderState;
  if (!m || Number(m[1]) >= env.stash.length) return false;
  if (!silent) state.push('html_inline', '', 0).content = env.stash[Number(m[1])];
  state.pos += m[0].length;
  return true;
}

function backticks(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  let pos = state.pos;
  if (src.charCodeAt(pos) !== 0x60) return false;
  if (pos > 0 && src.charCodeAt(pos - 1) === 0x5c) return false;
  const start = pos;
  while (pos < state.posMax && src.charCodeAt(pos) === 0x60) pos++;
  const n = pos - start;
  // The closing run: exactly n backticks, at least one character after the opening.
  for (let i = pos + 1; i + n <= state.posMax; i++) {
    if (src.charCodeAt(i) !== 0x60) continue;
    let j = i;
    while (j < state.posMax && src.charCodeAt(j) === 0x60) j++;
    if (j - i === n && src.charCodeAt(i - 1) !== 0x60) {
      if (!silent) {
        const token = state.push('code_inline', 'code', 0);
        token.markup = '`'.repeat(n);
        token.content = src.slice(pos, i);
      }
      state.pos = j;
      return true;
    }
    i = j;
  }
  if (!silent) state.pending += src.slice(start, pos);
  state.pos = pos;
  return true;
}

/** Zulip's `***x***`, `**x**` and `*x*` (sticky; exported for the plain-paragraph renderer in fast.ts). */
export const STRONG_EM = /\*\*\*(?!\s)([^*^\n]+)(?<!\s)\*\*\*/y;
export const STRONG = /\*\*([^\n]+?)\*\*/y;
export const EMPHASIS = /\*(?!\s)([^*^\n]+)(?<!\s)\*/y;
const DEL = /~~([^~\n]+?)~~(?!~)/y;

/** Emits `tags` around the inline parse of `src[from, to)`, and moves past `end`. */
function wrap(state: StateInline, tags: string[], markup: string, from: number, to: number, end: number): void {
  for (const tag of tags) state.push(`${tag}_open`, tag, 1).markup = markup;
  const oldMax = state.posMax;
  state.pos = from;
  state.posMax = to;
  state.md.inline.tokenize(state);
  state.posMax = oldMax;
  for (const tag of [...tags].reverse()) state.push(`${tag}_close`, tag, -1).markup = markup;
  state.pos = end;
}

/** Nesting depth of links at this point (kept by markdown-it's state, absent from its type declarations). */
function linkLevel(state: StateInline): number {
  return (state as StateInline & { linkLevel: number }).linkLevel;
}

function match(re: RegExp, state: StateInline): RegExpExecArray | null {
  re.lastIndex = state.pos;
  const m = re.exec(state.src);
  return m && m.index + m[0].length <= state.posMax ? m : null;
}

function emphasis(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x2a) return false;
  let m = match(STRONG_EM, state);
  let tags = ['strong', 'em'];
  let width = 3;
  if (!m && linkLevel(state) === 0) {
    m = match(STRONG, state);
    tags = ['strong'];
    width = 2;
    if (!m) {
      m = match(EMPHASIS, state);
      tags = ['em'];
      width = 1;
    }
  }
  if (!m) return false;
  if (!silent) wrap(state, tags, '*'.repeat(width), state.pos + width, state.pos + m[0].length - width, state.pos + m[0].length);
  else state.pos += m[0].length;
  return true;
}

function strikethrough(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x7e || linkLevel(state) > 0) return false;
  if (state.pos > 0 && state.src.charCodeAt(state.pos - 1) === 0x7e) return false;
  const m = match(DEL, state);
  if (!m) return false;
  if (!silent) wrap(state, ['s'], '~~', state.pos + 2, state.pos + m[0].length - 2, state.pos + m[0].length);
  else state.pos += m[0].length;
  return true;
}

export const ENTITY = /&(?:#[0-9]+|#x[0-9a-fA-F]+|[a-zA-Z0-9]+);/y;

function entity(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x26 || linkLevel(state) > 0) return false;
  const m = match(ENTITY, state);
  if (!m) return false;
  if (!silent) state.push('html_inline', '', 0).content = m[0];
  state.pos += m[0].length;
  return true;
}

function newline(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x0a) return false;
  if (!silent) state.push('hardbreak', 'br', 0);
  state.pos++;
  return true;
}

export function inline(md: MarkdownIt): void {
  md.inline.ruler.at('text', text);
  md.inline.ruler.at('newline', newline);
  md.inline.ruler.at('backticks', backticks);
  md.inline.ruler.at('emphasis', emphasis);
  md.inline.ruler.at('strikethrough', strikethrough);
  md.inline.ruler.at('entity', entity);
  md.inline.ruler.before('text', 'zulip_stash', stashed);
  md.inline.ruler2.disable(['strikethrough', 'emphasis']);
  md.renderer.rules.text = (tokens, idx) => escapeText(tokens[idx].content);
  md.renderer.rules.code_inline = (tokens, idx) => `<code>${escapeText(tokens[idx].content)}</code>`;
  md.renderer.rules.s_open = () => '<del>';
  md.renderer.rules.s_close = () => '</del>';
}
