/**
 * Inline math `$$…$$`, by Zulip's `TEX_RE` (`zerver/lib/markdown/__init__.py`):
 * `$$` not next to another `$` or a word character, a body that does not start
 * with `_`, `$` or a newline and holds no newline (a `\$` may appear in it).
 * The body is typeset by KaTeX (`katex.ts`); when KaTeX refuses it, Zulip's
 * `<span class="tex-error">$$body$$</span>`. Markdown inside the body is not processed.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { escapeText } from './env.js';
import { renderTex } from './katex.js';

const TEX_RE = /\$\$([^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)/y;
const WORD = /[\p{L}\p{N}_]/u;

function tex(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  if (src.charCodeAt(state.pos) !== 0x24) return false;
  const before = state.pos > 0 ? src[state.pos - 1] : '';
  if (before === '$' || WORD.test(before)) return false;
  TEX_RE.lastIndex = state.pos;
  const m = TEX_RE.exec(src);
  if (!m || m.index + m[0].length > state.posMax) return false;
  const after = src[state.pos + m[0].length] ?? '';
  if (WORD.test(after)) return false;
  if (!silent) state.push('html_inline', '', 0).content = renderTex(m[1], false) ?? `<span class="tex-error">$$${escapeText(m[1])}$$</span>`;
  state.pos += m[0].length;
  return true;
}

export function inlineTex(md: MarkdownIt): void {
  md.inline.ruler.before('link', 'zulip_tex', tex);
}
