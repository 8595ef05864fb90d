/**
 * The commonest message, rendered without markdown-it: one line of plain text, maybe
 * with `***x***`, `**x**` or `*x*`. `plainParagraph` returns exactly the HTML the full
 * renderer (index.ts) gives such a line, or null when the line holds anything it does
 * not handle, and the caller then renders it in full. It declines when:
 *
 * - the line is not one plain line (`isPlainLine`), or starts with a space (indented
 *   code, and the paragraph's dedent), `>` (a quote), `#` (a heading) or `_` (a rule);
 * - the line holds a control character (markdown-it's NUL replacement, line breaks),
 *   a backtick, `[`, `~~`, `$$`, `<time:`, `#*` or a character entity (the inline rules
 *   that start at those: code, links, strikethrough, math, times, channel links,
 *   entities), or anything the bare-URL pass looks at (`://`, `.` + letter, `@` —
 *   mentions too — or `bitcoin:`);
 * - the line holds a `:name:` or a non-ASCII character that can be part of an emoji
 *   (the emoji pass would look at it), or, for a sender who translates emoticons, an
 *   emoticon;
 * - one of the organization's linkifiers matches a text piece of the line, with the
 *   same boundaries the linkifier pass gives it.
 *
 * Every other character is text to every inline rule, so the paragraph is its text,
 * escaped, with `*` emphasis found by the same regular expressions as inline.ts's rule,
 * applied in the same order over the same ranges. test/markdown.test.ts checks it
 * against the full renderer on generated lines and on every case of Zulip's fixture.
 */
import { hasLinkifierMatch } from '../../rules/linkifiers.js';
import { mayHoldEmoticon, NAME_RE } from './emoji.js';
import { escapeText, type MarkdownEnv } from './env.js';
import { EMPHASIS, ENTITY, STRONG, STRONG_EM } from './inline.js';
import { MAYBE_LINK } from './links.js';

/** What some inline rule, block rule or later pass may act on; the full renderer takes such a line. */
const DECLINE = /[\x00-\x1f`[@]|~~|\$\$|<time:|#\*|:\/\/|\.[a-z]|bitcoin:/;
const FIRST_DECLINED = /^[ >#_]/;
const ANY_NAME = new RegExp(NAME_RE.source, 'u');
const ANY_ENTITY = new RegExp(ENTITY.source);
const NON_ASCII = /[^\x00-\x7f]/;
/** A non-ASCII character an emoji sequence may hold (the ASCII ones, `#*0-9`, alone never render as emoji). */
const EMOJI_PART = /(?![\x00-\x7f])[\p{Emoji}\p{Emoji_Component}]/u;

/** A piece of the paragraph's inline content: a text run (as markdown-it's `text` tokens) or a tag. */
type Piece = { text: string } | string;

function matchAt(re: RegExp, src: string, pos: number, max: number): RegExpExecArray | null {
  re.lastIndex = pos;
  const m = re.exec(src);
  return m && m.index + m[0].length <= max ? m : null;
}

/** inline.ts's tokenizer over `src[pos, max)`, where only `*` can start a rule. */
function tokenize(src: string, pos: number, max: number, out: Piece[]): void {
  let pending = pos;
  let at = pos;
  for (;;) {
    const star = src.indexOf('*', at);
    if (star < 0 || star >= max) break;
    let m = matchAt(STRONG_EM, src, star, max);
    let open = '<strong><em>';
    let close = '</em></strong>';
    let width = 3;
    if (!m) {
      m = matchAt(STRONG, src, star, max);
      open = '<strong>';
      close = '</strong>';
      width = 2;
      if (!m) {
        m = matchAt(EMPHASIS, src, star, max);
        open = '<em>';
        close = '</em>';
        width = 1;
      }
    }
    if (!m) {
      at = star + 1;
      continue;
    }
    if (star > pending) out.push({ text: src.slice(pending, star) });
    const end = star + m[0].length;
    out.push(open);
    tokenize(src, star + width, end - width, out);
    out.push(close);
    pending = at = end;
  }
  if (max > pending) out.push({ text: src.slice(pending, max) });
}

/** Whether the line is one `plainParagraph` may render (before linkifiers). */
export function fastRenderable(source: string): boolean {
  if (FIRST_DECLINED.test(source) || DECLINE.test(source) || MAYBE_LINK.test(source)) return false;
  if (source.includes(':') && ANY_NAME.test(source)) return false;
  if (source.includes('&') && ANY_ENTITY.test(source)) return false;
  if (NON_ASCII.test(source) && EMOJI_PART.test(source)) return false;
  return true;
}

/**
 * The HTML of a one-line plain paragraph (the caller has checked `isPlainLine`), or
 * null when the full renderer must take it.
 */
export function plainParagraph(source: string, env: MarkdownEnv): string | null {
  if (!fastRenderable(source) || (env.translateEmoticons && mayHoldEmoticon(source))) return null;
  const pieces: Piece[] = [];
  if (source.includes('*')) tokenize(source, 0, source.length, pieces);
  else pieces.push({ text: source });
  const list = env.linkifiers;
  let html = '<p>';
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i];
    if (typeof piece === 'string') html += piece;
    else {
      if (list && list.length > 0 && hasLinkifierMatch(piece.text, list, i === 0, i === pieces.length - 1)) return null;
      html += escapeText(piece.text);
    }
  }
  return html + '</p>';
}
