/**
 * Mentions, as Zulip's `UserMentionPattern` and `UserGroupMentionPattern`
 * (`zerver/lib/markdown/__init__.py`, regexes from `zerver/lib/mention.py`):
 *
 * - `@**Full Name**`, `@**Full Name|id**`, `@**|id**` mention a user:
 *   `<span class="user-mention" data-user-id="7">@Full Name</span>`; with `_`
 *   (`@_**Name**`) the mention is silent: class `user-mention silent`, no `@`, and
 *   nobody is notified. With `|id`, a name that is not that user's is no mention.
 * - `@**all**`, `everyone`, `stream`, `channel` mention the channel:
 *   `<span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span>`;
 *   `@**topic**` the topic: `<span class="topic-mention">@topic</span>`.
 * - `@*group*` mentions a user group: `<span class="user-group-mention" data-user-group-id="3">@group</span>`,
 *   notifying its members unless silent.
 * - A mention starts after whitespace, a quote, `(`, `,`, `:` or `<`, or at the
 *   start; a name nobody has stays text (so `@**x**` then reads as `@` and bold).
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { escapeAttr, escapeText, type RenderState } from './env.js';

const STREAM_WILDCARDS = new Set(['all', 'everyone', 'stream', 'channel']);
const USER_RE = /@(_?)\*\*([^*]+)\*\*/y;
const GROUP_RE = /@(_?)\*([^*]+)\*/y;
const ID_SYNTAX = /^(.+)?\|(\d+)$/;

/** Whether a mention, channel link or URL may start at `pos` (Zulip's `(?<![^\s'"\(,:<])`). */
export function startsToken(src: string, pos: number): boolean {
  if (pos === 0) return true;
  const c = src[pos - 1];
  return /\s/.test(c) || c === "'" || c === '"' || c === '(' || c === ',' || c === ':' || c === '<';
}

function pushHtml(state: StateInline, html: string): void {
  state.push('html_inline', '', 0).content = html;
}

function userMention(state: StateInline, silentCheck: boolean): boolean {
  USER_RE.lastIndex = state.pos;
  const m = USER_RE.exec(state.src);
  if (!m || m.index + m[0].length > state.posMax) return false;
  const env = state.env as unknown as RenderState;
  const silent = m[1] === '_';
  const name = m[2];
  const cls = (c: string): string => (silent ? `${c} silent` : c);
  let html: string;
  if (STREAM_WILDCARDS.has(name)) {
    if (!silentCheck && !silent) env.out.wildcard = 'stream';
    html = `<span class="${cls('user-mention channel-wildcard-mention')}" data-user-id="*">${silent ? '' : '@'}${escapeText(name)}</span>`;
  } else if (name === 'topic') {
    if (!silentCheck && !silent && env.out.wildcard === null) env.out.wildcard = 'topic';
    html = `<span class="${cls('topic-mention')}">${silent ? '' : '@'}${escapeText(name)}</span>`;
  } else {
    const idSyntax = ID_SYNTAX.exec(name);
    let user: { user_id: number; full_name: string } | undefined;
    if (idSyntax) {
      user = env.lookup.user(idSyntax[1] ?? '', Number(idSyntax[2]));
      if (user && idSyntax[1] !== undefined && user.full_name !== idSyntax[1]) return false;
    } else user = env.lookup.user(name, null);
    if (!user) return false;
    if (!silentCheck && !silent && !env.out.mentioned.includes(user.user_id)) env.out.mentioned.push(user.user_id);
    html = `<span class="${cls('user-mention')}" data-user-id="${user.user_id}">${silent ? '' : '@'}${escapeText(user.full_name)}</span>`;
  }
  if (!silentCheck) pushHtml(state, html);
  state.pos += m[0].length;
  return true;
}

function groupMention(state: StateInline, silentCheck: boolean): boolean {
  GROUP_RE.lastIndex = state.pos;
  const m = GROUP_RE.exec(state.src);
  if (!m || m.index + m[0].length > state.posMax) return false;
  const env = state.env as unknown as RenderState;
  const silent = m[1] === '_';
  const group = env.lookup.group(m[2]);
  if (!group) return false;
  if (!silentCheck) {
    if (!silent) {
      if (!env.out.mentionedGroups.includes(group.id)) env.out.mentionedGroups.push(group.id);
      for (const member of group.members) if (!env.out.mentioned.includes(member)) env.out.mentioned.push(member);
    }
    pushHtml(state, `<span class="user-group-mention${silent ? ' silent' : ''}" data-user-group-id="${escapeAttr(String(group.id))}">${silent ? '' : '@'}${escapeText(group.name)}</span>`);
  }
  state.pos += m[0].length;
  return true;
}

function mention(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x40 || !startsToken(state.src, state.pos)) return false;
  return userMention(state, silent) || groupMention(state, silent);
}

export function mentions(md: MarkdownIt): void {
  md.inline.ruler.before('link', 'zulip_mention', mention);
}
