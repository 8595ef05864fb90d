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
import MarkdownIt from 'markdown-it';
import { blocks } from './blocks.js';
import { channelLinks } from './channel_links.js';
import { emoji } from './emoji.js';
import { STASH_CLOSE, STASH_OPEN, type MarkdownEnv, type RenderState, type Rendered } from './env.js';
import { preprocessFences } from './fences.js';
import { inline } from './inline.js';
import { links } from './links.js';
import { linkifiers } from './linkifiers.js';
import { hangingLists, lazyQuotes, nestByTwo } from './lists.js';
import { mentions } from './mentions.js';
import { inlineTex } from './tex.js';
import { time } from './time.js';

export type { MarkdownEnv, Rendered } from './env.js';
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

const STASH_CHARS = new RegExp(`[${STASH_OPEN}${STASH_CLOSE}]`, 'g');
const NEEDS_NORMALIZING = new RegExp(`[\r${STASH_OPEN}${STASH_CLOSE}]`);

/** Renders message Markdown to HTML and collects its mentions. */
export function renderMarkdown(source: string, env: MarkdownEnv): Rendered {
  const out: Rendered = { html: '', mentioned: [], wildcard: null, mentionedGroups: [] };
  const state: RenderState = { lookup: env, out, stash: [], stashBlock: [] };
  // Python-Markdown's NormalizeWhitespace: no STX/ETX, \n line ends, tabs as 4 spaces, blank lines empty.
  const text = NEEDS_NORMALIZING.test(source) ? source.replace(STASH_CHARS, '\uFFFD').replace(/\r\n?/g, '\n') : source;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].includes('\t') ? expandTabs(lines[i]) : lines[i];
    lines[i] = line.trim() === '' ? '' : line;
  }
  const prepared = nestByTwo(lazyQuotes(preprocessFences(hangingLists(lines), state))).join('\n');
  out.html = md.render(prepared, state as unknown as Record<string, unknown>).replace(/\n+$/, '');
  return out;
}

function expandTabs(line: string): string {
  let out = '';
  for (const ch of line) out += ch === '\t' ? ' '.repeat(4 - (out.length % 4)) : ch;
  return out;
}
