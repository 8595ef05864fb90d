/**
 * Inline math `$$…$$`, by Zulip's `TEX_RE` (`zerver/lib/markdown/__init__.py`):
 * `$$` not next to another `$` or a word character, a body that does not start
 * with `_`, `$` or a newline and holds no newline (a `\$` may appear in it).
 * Zulip renders the body with KaTeX; Parley has no KaTeX, so it renders what
 * Zulip renders when KaTeX fails: `<span class="tex-error">$$body$$</span>`.
 * Markdown inside the body is not processed.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { escapeText } from './env.js';

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
  if (!silent) state.push('html_inline', '', 0).content = `<span class="tex-error">$$${escapeText(m[1])}$$</span>`;
  state.pos += m[0].length;
  return true;
}

export function inlineTex(md: MarkdownIt): void {
  md.inline.ruler.before('link', 'zulip_tex', tex);
}
