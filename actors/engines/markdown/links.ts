/**
 * Links, as Zulip's (`zerver/lib/markdown/__init__.py`):
 *
 * - `[text](url)`: the URL goes through Zulip's `sanitize_url`: a URL without a
 *   scheme gets `http://` (or `mailto:` if it has an `@`); `/path` and `#fragment`
 *   stay relative; other schemes than http, https, ftp, mailto, tel, sms, bitcoin
 *   and irc (`javascript:`, `data:`, …) are refused and the brackets stay text.
 *   Empty link text shows the URL. Links into the organization itself
 *   (`realmUrl/#…`, `realmUrl/user_uploads/…`) become relative, as Zulip's
 *   `rewrite_local_links_to_relative`.
 * - Bare URLs are linked by Zulip's `get_web_link_regex`: `http(s)://…`, or a
 *   domain with a known top-level domain (not `md`, `py`, `zip`, `mov`, `java`),
 *   or an email address; starting after whitespace, a quote, `(`, `,`, `:` or `<`,
 *   and ending before trailing punctuation (`!:;?),.'">`) and whitespace. Up to
 *   six levels of balanced parentheses belong to the URL. Not inside code or
 *   inside a link. The HTML is `<a href="…">url</a>`.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateCore, StateInline, Token } from 'markdown-it';
import type { RenderState } from './env.js';

const ALLOWED_SCHEMES = new Set(['http', 'https', 'ftp', 'mailto', 'tel', 'sms', 'bitcoin', 'irc']);
const REFUSED = '\u0000refused';

/** Zulip's `sanitize_url`: the href for a link, or null when the link is refused. */
export function sanitizeUrl(raw: string): string | null {
  const url = raw.replace(/ /g, '%20');
  const schemeMatch = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url);
  const scheme = schemeMatch ? schemeMatch[1].toLowerCase() : '';
  const rest = schemeMatch ? url.slice(schemeMatch[0].length) : url;
  const hasNetloc = rest.startsWith('//');
  if (!scheme && !hasNetloc) {
    const path = rest.split(/[?#]/, 1)[0];
    if (path.includes('@')) return 'mailto:' + url;
    if (path.startsWith('/')) return url;
    if (url.startsWith('#') && url.length > 1) return url;
  }
  if (!scheme) return sanitizeUrl('http://' + raw);
  if (!ALLOWED_SCHEMES.has(scheme)) return null;
  return scheme + ':' + rest;
}

/** Zulip's `rewrite_local_links_to_relative`. */
function relative(realmUrl: string | undefined, href: string): string {
  if (!realmUrl) return href;
  const prefix = realmUrl.replace(/\/+$/, '') + '/';
  return href.startsWith(prefix + '#') || href.startsWith(prefix + 'user_uploads/') ? href.slice(prefix.length) : href;
}

// Zulip uses the full IANA list; this is the common generic ones plus every two-letter
// country code but `md` and `py` (which Zulip leaves out, with zip, mov and java, as
// common file extensions).
const GENERIC_TLDS = [
  'com', 'net', 'org', 'edu', 'gov', 'mil', 'int', 'info', 'biz', 'name', 'pro', 'aero', 'coop', 'museum', 'mobi',
  'asia', 'tel', 'travel', 'jobs', 'cat', 'app', 'dev', 'page', 'xyz', 'online', 'site', 'tech', 'store', 'blog',
  'top', 'club', 'shop', 'live', 'cloud', 'wiki', 'news', 'design', 'art', 'network', 'email', 'zone', 'link',
  'solutions', 'world', 'today', 'space', 'website', 'fun', 'icu', 'vip', 'work', 'chat', 'social', 'team',
  'software', 'systems', 'digital', 'media', 'academy', 'agency', 'company', 'global', 'group', 'host', 'io',
];
const TLDS = [...GENERIC_TLDS].sort((a, b) => b.length - a.length).join('|');
const CC_TLD = '(?!md\\b|py\\b)[a-z]{2}';

function webLinkSource(): string {
  const inner = '[^\\s()"\\u0001]*';
  const group = '[^\\s()"\\u0001]*?(?:\\(%s\\)[^\\s()"\\u0001]*?)*';
  let nested = group;
  for (let i = 0; i < 6; i++) nested = nested.replace('%s', group);
  nested = nested.replace('%s', inner);
  const w = '[\\p{L}\\p{N}_]';
  return (
    `(?<![^\\s'"(,:<])` +
    '(' +
    `(?:(?:https?://[\\p{L}\\p{N}_.:@-]+?|(?:(?:${w}|-)+\\.)+(?:(?:${TLDS})|${CC_TLD}))(?:/${nested})?)` +
    `|(?:(?:${w}|[.-])+@(?:${w}|[.-])+\\.${w}+)` +
    '|(?:bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34})' +
    ')' +
    `(?=[!:;?),.'">]*(?:$|\\s))`
  );
}

const WEB_LINK = new RegExp(webLinkSource(), 'gu');
// What every match of WEB_LINK contains (a scheme's `://`, a dot before a lowercase
// top-level domain, an email's `@`, or `bitcoin:`): text without it skips the big regex.
export const MAYBE_LINK = /:\/\/|\.[a-z]|@|bitcoin:/;

function autolinkHref(url: string, realmUrl: string | undefined): string | null {
  let href: string | null;
  if (url.startsWith('http')) href = sanitizeUrl(url);
  else if (url.includes('@') && !url.startsWith('bitcoin:')) href = 'mailto:' + url;
  else if (url.startsWith('bitcoin:')) href = url;
  else href = sanitizeUrl('http://' + url);
  return href === null ? null : relative(realmUrl, href);
}

function linkTokens(state: StateCore, children: Token[], realmUrl: string | undefined): Token[] {
  // Most inline blocks hold no text that could be a URL: nothing to rebuild.
  if (!children.some((tok) => tok.type === 'text' && MAYBE_LINK.test(tok.content))) return children;
  const out: Token[] = [];
  let depth = 0;
  for (let i = 0; i < children.length; i++) {
    const tok = children[i];
    if (tok.type === 'link_open') depth++;
    else if (tok.type === 'link_close') depth--;
    if (tok.type !== 'text' || depth > 0 || !MAYBE_LINK.test(tok.content)) {
      out.push(tok);
      continue;
    }
    const prev = children[i - 1];
    const next = children[i + 1];
    const startOk = !prev || prev.type === 'hardbreak' || prev.type === 'softbreak';
    const endOk = !next || next.type === 'hardbreak' || next.type === 'softbreak';
    const text = (startOk ? '' : '\u0001') + tok.content + (endOk ? '' : '\u0001');
    const shift = startOk ? 0 : 1;
    let last = shift;
    let found = false;
    WEB_LINK.lastIndex = 0;
    for (let m = WEB_LINK.exec(text); m; m = WEB_LINK.exec(text)) {
      const url = m[1];
      const href = autolinkHref(url, realmUrl);
      if (href === null) continue;
      found = true;
      if (m.index > last) out.push(textToken(state, text.slice(last, m.index), tok.level));
      const open = new state.Token('link_open', 'a', 1);
      open.attrs = [['href', href]];
      open.markup = 'linkify';
      open.level = tok.level;
      out.push(open, textToken(state, url, tok.level + 1));
      const close = new state.Token('link_close', 'a', -1);
      close.markup = 'linkify';
      close.level = tok.level;
      out.push(close);
      last = m.index + m[0].length;
    }
    if (!found) out.push(tok);
    else {
      const end = text.length - (endOk ? 0 : 1);
      if (last < end) out.push(textToken(state, text.slice(last, end), tok.level));
    }
  }
  return out;
}

function textToken(state: StateCore, content: string, level: number): Token {
  const t = new state.Token('text', '', 0);
  t.content = content;
  t.level = level;
  return t;
}

/** Markdown links with no text show their URL. */
function fillEmptyLinks(state: StateCore, children: Token[]): void {
  for (let i = 0; i < children.length; i++) {
    if (children[i].type !== 'link_open' || children[i].markup === 'linkify') continue;
    let j = i + 1;
    while (j < children.length && children[j].type === 'text' && children[j].content.trim() === '') j++;
    if (children[j]?.type !== 'link_close') continue;
    const t = textToken(state, String(children[i].attrGet('href') ?? ''), children[i].level + 1);
    children.splice(i + 1, j - i - 1, t);
  }
}

/** The bound's switch and its count of link rule runs, for tests that compare and count. */
export const LINK_RULE_BOUND = { enabled: true, runs: 0 };

/**
 * markdown-it's `link` rule, tried only where a label could close. From every `[` it
 * scans for the `]` that ends the label (up to 100 nested scans deep), so 10,000 `[`
 * followed by `[message truncated]` (a cut message) cost ~13 ms a render, all in
 * scans that could only fail. The rule is not run where it would fail for certain:
 *
 * - no `]` follows before the end of the text being parsed; or
 * - (at the inline text's own end) the brackets after it never close it: counting `[`
 *   as +1 and `]` as -1, the count never falls below its value at the `[`, and no
 *   character that starts a token able to hold a bracket (`` ` @ # $ < ``) follows.
 *   Without those, every bracket is seen by the scan, each `[` either raising the
 *   level or ending the scan (a nested link), so the count is the scan's level.
 *
 * Anywhere else it runs as it is.
 */
function boundedLinkRule(md: MarkdownIt): void {
  const rules = (md.inline.ruler as unknown as { __rules__: Array<{ name: string; fn: InlineRule }> }).__rules__;
  const link = rules.find((r) => r.name === 'link')!.fn;
  const bounds = new WeakMap<StateInline, Bounds>();
  md.inline.ruler.at('link', (state, silent) => {
    if (state.src.charCodeAt(state.pos) !== 0x5b /* [ */) return false;
    if (LINK_RULE_BOUND.enabled) {
      let b = bounds.get(state);
      if (!b) bounds.set(state, (b = new Bounds(state.src, state.posMax)));
      if (!b.mayClose(state.pos, state.posMax)) return false;
    }
    LINK_RULE_BOUND.runs++;
    return link(state, silent);
  });
}

/** Characters that start an inline token able to contain a bracket (code, mention, channel link, TeX, time). */
const HIDES_BRACKETS = new Set([0x60, 0x40, 0x23, 0x24, 0x3c]);

/** What one inline text says about where a link label opened at some `[` could close. */
class Bounds {
  /** The last `]` before each end a text is parsed to (a label is parsed to its own end). */
  private readonly lastClose = new Map<number, number>();
  /** `[` minus `]` up to and including each position, up to `end`. */
  private readonly depth: Int32Array;
  /** The least `depth` after each position, up to `end`. */
  private readonly leastAfter: Int32Array;
  /** Whether a character of `HIDES_BRACKETS` is at or after each position, up to `end`. */
  private readonly hiderAfter: Uint8Array;

  constructor(private readonly src: string, private readonly end: number) {
    this.depth = new Int32Array(end);
    this.leastAfter = new Int32Array(end);
    this.hiderAfter = new Uint8Array(end + 1);
    let d = 0;
    for (let i = 0; i < end; i++) {
      const c = src.charCodeAt(i);
      if (c === 0x5b) d++;
      else if (c === 0x5d) d--;
      this.depth[i] = d;
    }
    let least = 0x7fffffff;
    for (let i = end - 1; i >= 0; i--) {
      this.leastAfter[i] = least;
      least = Math.min(least, this.depth[i]);
      this.hiderAfter[i] = this.hiderAfter[i + 1] | (HIDES_BRACKETS.has(src.charCodeAt(i)) ? 1 : 0);
    }
  }

  /** False only where a label opened by the `[` at `pos` certainly does not close before `posMax`. */
  mayClose(pos: number, posMax: number): boolean {
    let close = this.lastClose.get(posMax);
    if (close === undefined) this.lastClose.set(posMax, (close = this.src.lastIndexOf(']', posMax - 1)));
    if (close <= pos) return false;
    if (posMax !== this.end || this.hiderAfter[pos + 1] === 1) return true;
    return this.leastAfter[pos] <= this.depth[pos] - 1;
  }
}

type InlineRule = (state: StateInline, silent: boolean) => boolean;

export function links(md: MarkdownIt): void {
  boundedLinkRule(md);
  md.normalizeLink = (url: string) => sanitizeUrl(url.trim()) ?? REFUSED;
  md.validateLink = (url: string) => url !== REFUSED;
  md.core.ruler.after('inline', 'zulip_links', (state) => {
    const realmUrl = (state.env as unknown as RenderState).lookup.realmUrl;
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      if (realmUrl) for (const tok of block.children) if (tok.type === 'link_open') tok.attrSet('href', relative(realmUrl, String(tok.attrGet('href') ?? '')));
      fillEmptyLinks(state, block.children);
      block.children = linkTokens(state, block.children, realmUrl);
    }
  });
}
