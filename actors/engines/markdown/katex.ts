/**
 * TeX, typeset on the server with KaTeX, as Zulip's `render_tex` (`zerver/lib/tex.py`)
 * has its KaTeX server do it: `renderToString` with `displayMode` for a `math` fence and
 * inline for `$$…$$`, KaTeX's default HTML and MathML output. A body KaTeX refuses gives
 * null, and the caller writes Zulip's `<span class="tex-error">` with the source.
 */
import katex from 'katex';

/** The body typeset, or null when KaTeX cannot parse it. */
export function renderTex(tex: string, display: boolean): string | null {
  try {
    return katex.renderToString(tex, { displayMode: display, throwOnError: true });
  } catch {
    return null;
  }
}
