/**
 * Parley's renderer of Zulip's Markdown dialect: markdown-it (no raw HTML, no
 * typographer) with Zulip's own rules as plugins, so a message renders as Zulip's
 * server (`zerver/lib/markdown/`) renders it, measured against Zulip's fixture file
 * in `test/markdown_fixtures.test.ts`. Rendering is synchronous; the markdown-it
 * instance is built once.
 *
 * The pipeline, as Zulip's: preprocess lines (hanging lists, fenced blocks into
 * stash placeholders), parse blocks (Zulip's paragraph, quote and list rules),
 * parse inlines (code, mentions, math, channel links, times, links, bold and
 * italics, strikethrough), then link bare URLs and emoji, and render.
 */
import type { StateCore } from 'markdown-it';
import { MarkdownIt } from '../../shared/cjs_packages.js';
import { blocks } from './blocks.js';
import { channelLinks } from './channel_links.js';
import { emoji } from './emoji.js';
import { STASH_CLOSE, STASH_OPEN, type MarkdownEnv, type RenderState, type Rendered } from './env.js';
import { plainParagraph } from './fast.js';
import { preprocessFences } from './fences.js';
import { inline } from './inline.js';
import { links } from './links.js';
import { linkifiers } from './linkifiers.js';
import { hangingLists, lazyQuotes, nestByTwo } from './lists.js';
import { mentions } from './mentions.js';
import { inlineTex } from './tex.js';
import { time } from './time.js';

export type { MarkdownEnv, Rendered, RenderState } from './env.js';
export { hasAlertWord } from './alert_words.js';

/** Escapes text for HTML: `& < > " '`. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

const md = new MarkdownIt('default', { html: false, linkify: false, typographer: false, breaks: true, xhtmlOut: false });
// Zulip has no setext headings, reference links, images, `<url>` autolinks,
// backslash escapes or raw HTML; its fences are done by the preprocessor.
md.disable(['lheading', 'reference', 'html_block', 'html_inline', 'image', 'autolink', 'escape', 'fence', 'linkify', 'replacements', 'smartquotes']);
md.use(blocks).use(inline).use(mentions).use(inlineTex).use(channelLinks).use(time).use(links).use(linkifiers).use(emoji);
// markdown-it's normalize rewrites line ends and NULs, copying the source each time;
// a source with neither (every source that went through prepareLines but for NUL) is left as it is.
const normalize = (md.core.ruler as unknown as { __rules__: { name: string; fn: (s: StateCore) => void }[] }).__rules__.find((r) => r.name === 'normalize')!.fn;
md.core.ruler.at('normalize', (state) => {
  if (/[\r\0]/.test(state.src)) normalize(state);
});

const STASH_CHARS = new RegExp(`[${STASH_OPEN}${STASH_CLOSE}]`, 'g');
const NEEDS_NORMALIZING = new RegExp(`[\r${STASH_OPEN}${STASH_CLOSE}]`);

/**
 * One line that no line preprocessor changes: no line break, tab or stash character, not
 * blank, and not starting (after spaces) as a list item, a fence (three backticks or
 * tildes) or a number could.
 */
const PLAIN_LINE = new RegExp(`^(?![ ]*(?:[*+\\-]|\\d|\`\`\`|~~~))(?=[^]*\\S)[^\n\r\t${STASH_OPEN}${STASH_CLOSE}]*$`);

/** Whether `source` is one such line, which the block parser takes as it is. */
export function isPlainLine(source: string): boolean {
  return PLAIN_LINE.test(source);
}

/** Renders message Markdown to HTML and collects its mentions. */
export function renderMarkdown(source: string, env: MarkdownEnv): Rendered {
  const plain = isPlainLine(source);
  if (plain) {
    const html = plainParagraph(source, env);
    if (html !== null) return { html, mentioned: [], wildcard: null, mentionedGroups: [] };
    if (isOneParagraph(source)) return renderParagraph(source, env);
  }
  return render(source, env, plain);
}

// The core rules after the block parse, as markdown-it runs them.
const coreRules = (md.core.ruler as unknown as { __rules__: { name: string; enabled: boolean; fn: (s: StateCore) => void }[] }).__rules__.filter((r) => r.enabled);
if (coreRules[0].name !== 'normalize' || coreRules[1].name !== 'block') throw new Error('markdown-it core rules: expected normalize and block first');
const AFTER_BLOCK = coreRules.slice(2).map((r) => r.fn);

/**
 * Whether the block parse of `source` (a plain line: `isPlainLine`) is one paragraph
 * whose inline content is the whole line, with nothing for normalize to do: no NUL,
 * and no first character that starts another block rule (indented code, a quote, a
 * heading, a `___` rule; lists, fences and the stash are not plain lines, and a table
 * needs two lines).
 */
export function isOneParagraph(source: string): boolean {
  const c = source.charCodeAt(0);
  return c !== 0x20 && c !== 0x3e && c !== 0x23 && c !== 0x5f && !source.includes('\0');
}

/**
 * A one-paragraph line (`isOneParagraph`) rendered by markdown-it without its block
 * parse: the paragraph's three tokens are made as the paragraph rule makes them, then
 * the core rules after the block parse (inline, links, emoji, linkifiers) and the
 * renderer run as usual.
 */
function renderParagraph(source: string, env: MarkdownEnv): Rendered {
  const out: Rendered = { html: '', mentioned: [], wildcard: null, mentionedGroups: [] };
  const state: RenderState = { lookup: env, out, stash: [], stashBlock: [] };
  const core = new md.core.State(source, md, state as unknown as Record<string, unknown>);
  const open = new core.Token('paragraph_open', 'p', 1);
  open.map = [0, 1];
  open.block = true;
  open.level = 0;
  const inline = new core.Token('inline', '', 0);
  inline.content = source;
  inline.map = [0, 1];
  inline.children = [];
  inline.block = true;
  inline.level = 1;
  const close = new core.Token('paragraph_close', 'p', -1);
  close.block = true;
  close.level = 0;
  core.tokens.push(open, inline, close);
  for (const rule of AFTER_BLOCK) rule(core);
  out.html = withoutTrailingNewlines(md.renderer.render(core.tokens, md.options, state as unknown as Record<string, unknown>));
  return out;
}

function withoutTrailingNewlines(html: string): string {
  let end = html.length;
  while (end > 0 && html.charCodeAt(end - 1) === 0x0a) end--;
  return end === html.length ? html : html.slice(0, end);
}

/**
 * Renders with markdown-it, never by the plain-paragraph path (fast.ts); exported for
 * the test that the two agree.
 */
export function renderFull(source: string, env: MarkdownEnv): Rendered {
  return render(source, env, isPlainLine(source));
}

function render(source: string, env: MarkdownEnv, plain: boolean): Rendered {
  const out: Rendered = { html: '', mentioned: [], wildcard: null, mentionedGroups: [] };
  const state: RenderState = { lookup: env, out, stash: [], stashBlock: [] };
  const prepared = plain ? source : prepareLines(source, state);
  out.html = withoutTrailingNewlines(md.render(prepared, state as unknown as Record<string, unknown>));
  return out;
}

/**
 * The source as the block parser takes it, after Python-Markdown's NormalizeWhitespace
 * (no STX/ETX, `\n` line ends, tabs as 4 spaces, blank lines empty) and Zulip's line
 * preprocessors (hanging lists, fenced blocks into stash placeholders, lazy quote
 * lines, lists nested by two spaces). Exported for the test that a plain line needs none.
 */
export function prepareLines(source: string, state: RenderState): string {
  const text = NEEDS_NORMALIZING.test(source) ? source.replace(STASH_CHARS, '\uFFFD').replace(/\r\n?/g, '\n') : source;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].includes('\t') ? expandTabs(lines[i]) : lines[i];
    lines[i] = line.trim() === '' ? '' : line;
  }
  // Lines none of which starts (after spaces) as a list item, a quote or a fence could are
  // left as they are by every line preprocessor (test/markdown.test.ts checks it).
  if (!lines.some(mayNeedPreprocessing)) return lines.join('\n');
  return preprocessLines(lines, state).join('\n');
}

const MAY_NEED_PREPROCESSING = /^[ ]*[*+\->`~\d]/;

function mayNeedPreprocessing(line: string): boolean {
  return MAY_NEED_PREPROCESSING.test(line);
}

/** Zulip's line preprocessors (see prepareLines); exported for the test of what they leave alone. */
export function preprocessLines(lines: string[], state: RenderState): string[] {
  return nestByTwo(lazyQuotes(preprocessFences(hangingLists(lines), state)));
}

function expandTabs(line: string): string {
  let out = '';
  for (const ch of line) out += ch === '\t' ? ' '.repeat(4 - (out.length % 4)) : ch;
  return out;
}
