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
 * Names and codes are Zulip's table (`actors/engines/emoji.ts`): a `:name:` may be any of an
 * emoji's names and keeps it (`:thumbs_up:`); a literal emoji takes its canonical name.
 * Sequences the table lacks (newer emoji, ZWJ families) stay text, as in Zulip.
 * Emoji are found after links (as in Zulip, where emoji come later), so not inside
 * URLs, link text or code.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateCore, Token } from 'markdown-it';
import { emojiCode, emojiCodeOf, emojiNameOf, EMOTICON_CONVERSIONS } from '../emoji.js';
import { escapeAttr, escapeText, type MarkdownEnv, type RenderState } from './env.js';

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

type Piece = string | { html: string };

const ANY_EMOTICON_SOURCE = Object.keys(EMOTICON_CONVERSIONS).map((e) => e.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
/** Zulip's `terminal_symbols`: an emoticon stands between these, or at an end of the text. */
const TERMINAL = ',.;?!()\\[\\] "\'\\n\\t';
const EMOTICON_RE = new RegExp(
  `(?<![^${TERMINAL}])(?:${ANY_EMOTICON_SOURCE})(?![^${TERMINAL}])`,
  'g',
);
const ANY_EMOTICON = new RegExp(ANY_EMOTICON_SOURCE);

/** Whether the text holds something that may be an emoticon (for a sender who translates them). */
export function mayHoldEmoticon(text: string): boolean {
  return ANY_EMOTICON.test(text);
}

/** Stands for what is not text at a stretch's edge (another emoji, a tag): not a terminal symbol. */
const NOT_TERMINAL = '\u0000';

/** Unicode emoji in a stretch of text, as spans; false when there is none. */
function pushUnicode(pieces: Piece[], s: string): boolean {
  let at = 0;
  POSSIBLE_EMOJI.lastIndex = 0;
  for (let m = POSSIBLE_EMOJI.exec(s); m; m = POSSIBLE_EMOJI.exec(s)) {
    if (TEXT_PRESENTATION.test(m[0])) continue;
    const code = emojiCode(m[0]);
    const name = emojiNameOf(code);
    if (name === undefined) continue;
    if (m.index > at) pieces.push(s.slice(at, m.index));
    pieces.push({ html: emojiSpan(code, name) });
    at = m.index + m[0].length;
  }
  if (at === 0) return false;
  if (at < s.length) pieces.push(s.slice(at));
  return true;
}

/**
 * Emoticons (`:)` → `:smile:`, for a sender who turned on `translate_emoticons`), then
 * Unicode emoji, in a stretch of text; `open`/`close` say whether its edges count as
 * the text's ends for an emoticon's boundary. False when nothing was found.
 */
function pushText(pieces: Piece[], s: string, lookup: MarkdownEnv, open: boolean, close: boolean): boolean {
  if (s === '') return false;
  let changed = false;
  if (lookup.translateEmoticons && mayHoldEmoticon(s)) {
    const padded = (open ? '' : NOT_TERMINAL) + s + (close ? '' : NOT_TERMINAL);
    const shift = open ? 0 : 1;
    let at = 0;
    EMOTICON_RE.lastIndex = 0;
    for (let m = EMOTICON_RE.exec(padded); m; m = EMOTICON_RE.exec(padded)) {
      const name = EMOTICON_CONVERSIONS[m[0]];
      const code = emojiCodeOf(name);
      if (code === undefined) continue;
      const start = m.index - shift;
      if (start > at && !pushUnicode(pieces, s.slice(at, start))) pieces.push(s.slice(at, start));
      pieces.push({ html: emojiSpan(code, name) });
      at = start + m[0].length;
      changed = true;
    }
    s = s.slice(at);
    if (s === '') return changed;
  }
  if (NON_ASCII.test(s) && pushUnicode(pieces, s)) return true;
  pieces.push(s);
  return changed;
}

/**
 * Splits a text token into text and emoji HTML pieces, or null when it has none;
 * `open`/`close` say whether the token starts/ends the line (for emoticons).
 */
function split(content: string, lookup: MarkdownEnv, open: boolean, close: boolean): Piece[] | null {
  const pieces: Piece[] = [];
  let changed = false;
  let last = 0;
  if (content.includes(':')) {
    NAME_RE.lastIndex = 0;
    for (let m = NAME_RE.exec(content); m; m = NAME_RE.exec(content)) {
      const html = byName(m[1], lookup);
      if (html === null) {
        // Zulip's pattern consumes the unknown `:name:` as text, so the next match starts after it.
        continue;
      }
      changed = pushText(pieces, content.slice(last, m.index), lookup, last === 0 && open, false) || changed;
      pieces.push({ html });
      last = m.index + m[0].length;
      changed = true;
    }
  }
  changed = pushText(pieces, content.slice(last), lookup, last === 0 && open, close) || changed;
  return changed ? pieces : null;
}

/** Whether a token is a line's edge for an emoticon: none, or a line break. */
const isLineEdge = (tok: Token | undefined): boolean => tok === undefined || tok.type === 'softbreak' || tok.type === 'hardbreak';

export function emoji(md: MarkdownIt): void {
  md.core.ruler.after('zulip_links', 'zulip_emoji', (state: StateCore) => {
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      const lookup = (state.env as unknown as RenderState).lookup;
      const wanted = (tok: Token): boolean => tok.type === 'text' && (tok.content.includes(':') || NON_ASCII.test(tok.content) || (lookup.translateEmoticons === true && mayHoldEmoticon(tok.content)));
      if (!block.children.some(wanted)) continue;
      const out: Token[] = [];
      let depth = 0;
      const children = block.children;
      children.forEach((tok, i) => {
        if (tok.type === 'link_open') depth++;
        else if (tok.type === 'link_close') depth--;
        const pieces = depth === 0 && wanted(tok) ? split(tok.content, lookup, isLineEdge(children[i - 1]), isLineEdge(children[i + 1])) : null;
        if (!pieces) {
          out.push(tok);
          return;
        }
        for (const piece of pieces) {
          const t = new state.Token(typeof piece === 'string' ? 'text' : 'html_inline', '', 0);
          t.content = typeof piece === 'string' ? piece : piece.html;
          t.level = tok.level;
          out.push(t);
        }
      });
      block.children = out;
    }
  });
}
