/**
 * Zulip's fenced blocks, done as Zulip does them: a line preprocessor that runs
 * before Markdown parsing (Zulip's `zerver/lib/markdown/fenced_code.py`).
 *
 * - A fence is a line starting with ``` or ~~~ (3 or more), then an optional
 *   language (`.py`, `{python}`, `python`) and, for spoilers, a header. It closes
 *   on a line equal to the same fence (trailing spaces ignored), or at the end of
 *   the message; fences nest (a quote may hold code, spoilers and quotes).
 * - ```` ```quote ```` / `quoted`: the lines are prefixed with `> ` and parsed as Markdown.
 * - ```` ```spoiler Header ````: `<div class="spoiler-block"><div class="spoiler-header">`,
 *   the header and body parsed as Markdown, and the closing divs.
 * - ```` ```math ````: each paragraph typeset by KaTeX in display mode (`katex.ts`), or,
 *   where KaTeX refuses it, `<span class="tex-error">escaped source</span>`; inside a `<p>`.
 * - Anything else is code, highlighted as Zulip's Pygments does (`highlight/`), lines
 *   right-trimmed. A fence without a language takes the organization's
 *   `default_code_block_language`, except inside a spoiler (as in Zulip, whose
 *   spoiler handler does not pass the default on).
 *
 * Code, spoiler wrappers and math are replaced by stash placeholders (see env.ts)
 * that the block and inline rules turn back into the HTML.
 */
import { stash, type RenderState } from './env.js';
import { codeBlockHtml } from './highlight/index.js';
import { renderTex } from './katex.js';

const FENCE_RE = /^(?<fence>~{3,}|`{3,})[ ]*(?:\{?\.?(?<lang>[a-zA-Z0-9_+,\-./#]+)[ ]*(?<header>[^ ~`][^~`]*)?\}?)?$/;

/** Escapes as Django's `escape` (used for math that did not render). */
function escapeDjango(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#x27;'));
}

type Kind = 'outer' | 'code' | 'quote' | 'spoiler' | 'math';

interface Handler {
  kind: Kind;
  fence: string;
  lang: string | null;
  header: string | null;
  /** Where finished output goes: the parent's lines. */
  output: string[];
  lines: string[];
}

/** Replaces fenced blocks in the message's lines (see the module comment). */
export function preprocessFences(lines: string[], state: RenderState): string[] {
  const output: string[] = [];
  const handlers: Handler[] = [{ kind: 'outer', fence: '', lang: null, header: null, output, lines: output }];

  const defaultLanguage = state.lookup.defaultCodeBlockLanguage || null;
  const open = (line: string, into: string[], withDefault: boolean): void => {
    const m = FENCE_RE.exec(line);
    if (!m) {
      into.push(line);
      return;
    }
    const lang = m.groups!.lang ? m.groups!.lang.toLowerCase() : withDefault ? defaultLanguage?.toLowerCase() ?? null : null;
    const kind: Kind = lang === 'quote' || lang === 'quoted' ? 'quote' : lang === 'math' ? 'math' : lang === 'spoiler' ? 'spoiler' : 'code';
    handlers.push({ kind, fence: m.groups!.fence, lang, header: m.groups!.header ?? null, output: into, lines: [] });
  };

  const done = (): void => {
    const h = handlers.pop()!;
    if (h.lines.length === 0) return;
    const text = h.lines.join('\n');
    let result: string;
    if (h.kind === 'code') result = stash(state, codeBlockHtml(h.lang, text), true);
    else if (h.kind === 'math') result = stash(state, text.split('\n\n').map((p) => renderTex(p, true) ?? `<span class="tex-error">${escapeDjango(p)}</span>`).join('\n\n'), false);
    else if (h.kind === 'quote') result = text.split('\n').map((l) => '> ' + l).join('\n');
    else {
      const parts = [stash(state, '<div class="spoiler-block"><div class="spoiler-header">', true)];
      if (h.header !== null) parts.push(h.header);
      parts.push(stash(state, '</div><div class="spoiler-content" aria-hidden="true">', true), text, stash(state, '</div></div>', true));
      result = parts.join('\n\n');
    }
    h.output.push('', ...result.split('\n'), '');
  };

  for (const line of lines) {
    const h = handlers[handlers.length - 1];
    if (h.kind === 'outer') open(line, output, true);
    else if (line.trimEnd() === h.fence) done();
    else if (h.kind === 'quote' || h.kind === 'spoiler') open(line, h.lines, h.kind === 'quote');
    else h.lines.push(line.trimEnd());
  }
  while (handlers.length > 1) done();
  return output;
}
