/**
 * Emoji, as Zulip's `Emoji` and `UnicodeEmoji` patterns (`zerver/lib/markdown/__init__.py`):
 *
 * - `:name:` (letters, digits, `_`, `-`, `+`) of a known emoji renders
 *   `<span aria-label="smile" class="emoji emoji-1f604" role="img" title="smile">:smile:</span>`
 *   (title and label with `_` as spaces); `:zulip:` is Zulip's own image; unknown
 *   names and skin-tone modifiers stay text.
 * - A Unicode emoji in the text (Unicode's emoji sequence regex, TR51) that the
 *   table knows renders the same span with its name; characters that default to
 *   text presentation (`↔`, `#`, digits) are left alone.
 * Names and codes are Parley's table (`actors/emoji.ts`: iamcal short names from
 * emojibase), not Zulip's own name table, so some names differ from Zulip's
 * (Zulip calls 1f642 `smile`; iamcal calls 1f604 `smile`).
 * Emoji are found after links (as in Zulip, where emoji come later), so not inside
 * URLs, link text or code.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateCore, Token } from 'markdown-it';
import { createRequire } from 'node:module';
import { emojiCodeOf, isEmojiCode } from '../emoji.js';
import { escapeAttr, escapeText, type MarkdownEnv, type RenderState } from './env.js';

const require = createRequire(import.meta.url);
const IAMCAL = require('emojibase-data/en/shortcodes/iamcal.json') as Record<string, string | string[]>;

/** The first iamcal name of each code (Zulip's form of code). */
const nameOfCode = new Map<string, string>();
for (const [hexcode, names] of Object.entries(IAMCAL)) {
  const code = hexcode.toLowerCase().split('-').filter((p) => p !== 'fe0f').join('-');
  const first = Array.isArray(names) ? names[0] : names;
  if (!nameOfCode.has(code)) nameOfCode.set(code, first);
}

export const NAME_RE = /:([\p{L}\p{N}_\-+]+):/gu;
const EMOJI_UNIT = '(?:\\p{Emoji}(?:\\p{Emoji_Modifier}|\\uFE0F\\u20E3?|[\\u{E0020}-\\u{E007E}]+\\u{E007F})?)';
const POSSIBLE_EMOJI = new RegExp(`\\p{Regional_Indicator}\\p{Regional_Indicator}|${EMOJI_UNIT}(?:\\u200D(?:\\p{Regional_Indicator}\\p{Regional_Indicator}|${EMOJI_UNIT}))*`, 'gu');
const TEXT_PRESENTATION = /^\P{Emoji_Presentation}\u20E3?$/u;
const NON_ASCII = /[^\x00-\x7f]/;

export function emojiSpan(code: string, name: string): string {
  const title = escapeAttr(name.replace(/_/g, ' '));
  return `<span aria-label="${title}" class="emoji emoji-${escapeAttr(code)}" role="img" title="${title}">:${escapeText(name)}:</span>`;
}

function byName(name: string, lookup: MarkdownEnv): string | null {
  const custom = lookup.realmEmoji?.(name);
  if (custom) return `<img alt=":${escapeAttr(name)}:" class="emoji" src="${escapeAttr(custom.source_url)}" title="${escapeAttr(name.replace(/_/g, ' '))}">`;
  if (name === 'zulip') return '<img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip">';
  if (name.startsWith('skin-tone-')) return null;
  const code = emojiCodeOf(name);
  return code === undefined ? null : emojiSpan(code, name);
}

function unicodeCode(sequence: string): string {
  return [...sequence.replace(/\uFE0F/g, '')].map((c) => c.codePointAt(0)!.toString(16).padStart(4, '0')).join('-');
}

/** Splits `content` into text and emoji HTML pieces. */
function split(content: string, lookup: MarkdownEnv): (string | { html: string })[] | null {
  const pieces: (string | { html: string })[] = [];
  let changed = false;
  let last = 0;
  const pushText = (s: string): void => {
    if (s === '') return;
    if (!NON_ASCII.test(s)) {
      pieces.push(s);
      return;
    }
    let at = 0;
    POSSIBLE_EMOJI.lastIndex = 0;
    for (let m = POSSIBLE_EMOJI.exec(s); m; m = POSSIBLE_EMOJI.exec(s)) {
      if (TEXT_PRESENTATION.test(m[0])) continue;
      const code = unicodeCode(m[0]);
      const name = nameOfCode.get(code);
      if (!name || !isEmojiCode(code)) continue;
      if (m.index > at) pieces.push(s.slice(at, m.index));
      pieces.push({ html: emojiSpan(code, name) });
      at = m.index + m[0].length;
      changed = true;
    }
    if (at < s.length) pieces.push(s.slice(at));
  };
  if (content.includes(':')) {
    NAME_RE.lastIndex = 0;
    for (let m = NAME_RE.exec(content); m; m = NAME_RE.exec(content)) {
      const html = byName(m[1], lookup);
      if (html === null) {
        // Zulip's pattern consumes the unknown `:name:` as text, so the next match starts after it.
        continue;
      }
      pushText(content.slice(last, m.index));
      pieces.push({ html });
      last = m.index + m[0].length;
      changed = true;
    }
  }
  pushText(content.slice(last));
  return changed ? pieces : null;
}

export function emoji(md: MarkdownIt): void {
  md.core.ruler.after('zulip_links', 'zulip_emoji', (state: StateCore) => {
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      if (!block.children.some((tok) => tok.type === 'text' && (tok.content.includes(':') || NON_ASCII.test(tok.content)))) continue;
      const out: Token[] = [];
      let depth = 0;
      for (const tok of block.children) {
        if (tok.type === 'link_open') depth++;
        else if (tok.type === 'link_close') depth--;
        const pieces = tok.type === 'text' && depth === 0 && (tok.content.includes(':') || NON_ASCII.test(tok.content)) ? split(tok.content, (state.env as unknown as RenderState).lookup) : null;
        if (!pieces) {
          out.push(tok);
          continue;
        }
        for (const piece of pieces) {
          const t = new state.Token(typeof piece === 'string' ? 'text' : 'html_inline', '', 0);
          t.content = typeof piece === 'string' ? piece : piece.html;
          t.level = tok.level;
          out.push(t);
        }
      }
      block.children = out;
    }
  });
}
