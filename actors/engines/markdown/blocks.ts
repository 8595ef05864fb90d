/**
 * Block-level rules that make markdown-it parse as Zulip's Python-Markdown does:
 *
 * - `zulip_stash`: a line that is just a placeholder for a block-level stashed
 *   fragment (code, spoiler wrappers; see fences.ts) becomes that HTML, not a
 *   paragraph — Python-Markdown's `RawHtmlPostprocessor` unwraps such `<p>`s.
 * - `paragraph`: as markdown-it's, but trailing spaces stay (Zulip keeps them:
 *   `test  ` renders `<p>test  </p>`), and so does indent of later lines beyond
 *   the first line's.
 * - `blockquote`: a run of `>` lines with nothing after the markers is not a quote
 *   (Zulip's `BlockQuoteProcessor`: `>` alone renders `<p>&gt;</p>`).
 * - `list`: a nested item (indented under a paragraph in a list item) starts a
 *   sublist whatever its number (CommonMark lets only `1.` interrupt a paragraph;
 *   Python-Markdown nests by indentation), and a sublist follows its item's text
 *   on the same line (`<li>text<ul>`), as Python-Markdown writes it.
 * - indented code blocks render as Zulip's code blocks (`<div class="codehilite">`).
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateBlock } from 'markdown-it';
import { STASH_CLOSE, STASH_OPEN, type RenderState } from './env.js';
import { codeBlockHtml } from './highlight/index.js';

const PLACEHOLDER_LINE = new RegExp(`^${STASH_OPEN}(\\d+)${STASH_CLOSE}$`);

function lineText(state: StateBlock, line: number): string {
  return state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
}

const STX = STASH_OPEN.charCodeAt(0);

function stashBlock(state: StateBlock, startLine: number, _endLine: number, silent: boolean): boolean {
  if (state.src.charCodeAt(state.bMarks[startLine] + state.tShift[startLine]) !== STX) return false;
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  const m = PLACEHOLDER_LINE.exec(lineText(state, startLine).trimEnd());
  if (!m) return false;
  const env = state.env as unknown as RenderState;
  const index = Number(m[1]);
  if (!env.stashBlock[index]) return false;
  if (silent) return true;
  const token = state.push('html_block', '', 0);
  token.content = env.stash[index] + '\n';
  token.map = [startLine, startLine + 1];
  state.line = startLine + 1;
  return true;
}

const DEDENT: RegExp[] = [];

/** `^ {0,n}`, compiled once for each n. */
function dedentPattern(n: number): RegExp {
  return (DEDENT[n] ??= new RegExp(`^ {0,${n}}`));
}

function paragraph(state: StateBlock, startLine: number, endLine: number): boolean {
  const terminatorRules = state.md.block.ruler.getRules('paragraph');
  const oldParentType = state.parentType;
  let nextLine = startLine + 1;
  state.parentType = 'paragraph';
  for (; nextLine < endLine && !state.isEmpty(nextLine); nextLine++) {
    if (state.sCount[nextLine] - state.blkIndent > 3) continue;
    if (state.sCount[nextLine] < 0) continue;
    let terminate = false;
    for (const rule of terminatorRules) {
      if (rule(state, nextLine, endLine, true)) {
        terminate = true;
        break;
      }
    }
    if (terminate) break;
  }
  // Python-Markdown dedents a paragraph's lines by its first line's indent; further indent stays.
  const firstIndent = Math.max(0, state.sCount[startLine] - state.blkIndent);
  const text = state.getLines(startLine, nextLine, state.blkIndent, false);
  let content: string;
  if (nextLine === startLine + 1 && !text.includes('\n')) {
    // One line (the commonest paragraph): the same as below, without the split, map and join.
    content = text.charCodeAt(0) === 0x20 || text.charCodeAt(0) === 0x09 ? text.replace(/^[ \t]+/, '') : text;
  } else {
    const lines = text.split('\n');
    const dedent = dedentPattern(firstIndent);
    content = lines
      .map((line, i) => (i === 0 ? line.replace(/^[ \t]+/, '') : line.replace(dedent, '')))
      .join('\n')
      .replace(/^\n+|\n+$/g, '');
  }
  state.line = nextLine;
  const open = state.push('paragraph_open', 'p', 1);
  open.map = [startLine, state.line];
  const inline = state.push('inline', '', 0);
  inline.content = content;
  inline.map = [startLine, state.line];
  inline.children = [];
  state.push('paragraph_close', 'p', -1);
  state.parentType = oldParentType;
  return true;
}

const EMPTY_QUOTE_LINE = /^>[\s>]*$/;

export function blocks(md: MarkdownIt): void {
  md.block.ruler.before('table', 'zulip_stash', stashBlock, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
  md.block.ruler.at('paragraph', paragraph);
  const rules = (md.block.ruler as unknown as { __rules__: { name: string; fn: (s: StateBlock, a: number, b: number, c: boolean) => boolean }[] }).__rules__;
  const original = rules.find((r) => r.name === 'blockquote')!.fn;
  md.block.ruler.at('blockquote', (state, startLine, endLine, silent) => {
    if (state.sCount[startLine] - state.blkIndent >= 4) return false;
    // Not a quote at all (markdown-it's rule requires the `>` too).
    if (state.src.charCodeAt(state.bMarks[startLine] + state.tShift[startLine]) !== 0x3e) return false;
    // Zulip: a quote whose lines (up to the next blank line) hold only `>` markers is not a quote.
    let allEmpty = true;
    for (let line = startLine; line < endLine && !state.isEmpty(line); line++) {
      if (!EMPTY_QUOTE_LINE.test(lineText(state, line))) {
        allEmpty = false;
        break;
      }
      // Only the markers of this level count: `>>` has content at this level.
      if (/^>\s*>/.test(lineText(state, line))) {
        allEmpty = false;
        break;
      }
    }
    if (allEmpty) return false;
    return original(state, startLine, endLine, silent);
  }, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
  const list = rules.find((r) => r.name === 'list')!.fn;
  md.block.ruler.at('list', (state, startLine, endLine, silent) => {
    if (!silent || state.parentType !== 'paragraph' || state.sCount[startLine] <= state.blkIndent) return list(state, startLine, endLine, silent);
    const parentType = state.parentType;
    state.parentType = 'list';
    try {
      return list(state, startLine, endLine, silent);
    } finally {
      state.parentType = parentType;
    }
  }, { alt: ['paragraph', 'reference', 'blockquote'] });
  for (const name of ['bullet_list_open', 'ordered_list_open']) {
    md.renderer.rules[name] = (tokens, idx, options, _env, self) => {
      const html = self.renderToken(tokens, idx, options);
      const prev = tokens[idx - 1];
      return prev && prev.type === 'paragraph_close' && prev.hidden ? html.replace(/^\n/, '') : html;
    };
  }
  md.renderer.rules.code_block = (tokens, idx) => codeBlockHtml(null, tokens[idx].content.replace(/[ \t]+$/gm, ''), true) + '\n';
}
