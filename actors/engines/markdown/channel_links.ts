/**
 * Channel, topic and message links, as Zulip's `StreamPattern`,
 * `StreamTopicPattern` and `StreamTopicMessagePattern`
 * (`zerver/lib/markdown/__init__.py`), with hrefs encoded as Zulip's
 * `zerver/lib/url_encoding.py`:
 *
 * - `#**channel**` → `<a class="stream" data-stream-id="9" href="/#narrow/channel/9-channel">#channel</a>`
 * - `#**channel>topic**` → `<a class="stream-topic" data-stream-id="9" href="/#narrow/channel/9-channel/topic/topic">#channel &gt; topic</a>`
 *   (an empty topic shows as `<em>general chat</em>`)
 * - `#**channel>topic@123**` → `<a class="message-link" href="…/topic/topic/near/123">#channel &gt; topic @ 💬</a>`
 * An unknown channel stays text. The slug is `id-name` with spaces as `-`, and
 * name and topic are percent-encoded (UTF-8) with `%` written `.` and `.` written `.2E`.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { escapeAttr, escapeText, type RenderState } from './env.js';
import { startsToken } from './mentions.js';

const MESSAGE_RE = /#\*\*([^*>]+)>([^*]*)@(\d+)\*\*/y;
const TOPIC_RE = /#\*\*([^*>]+)>([^*]*)\*\*/y;
const CHANNEL_RE = /#\*\*([^*]+)\*\*/y;
const EMPTY_TOPIC_NAME = 'general chat';
const KEEP = /[A-Za-z0-9_\-~*]/;

/** Zulip's `encode_hash_component`. */
export function encodeHashComponent(s: string): string {
  let out = '';
  for (const ch of s) {
    if (KEEP.test(ch)) out += ch;
    else if (ch === '.') out += '.2E';
    else for (const byte of Buffer.from(ch, 'utf8')) out += '.' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** Zulip's `encode_channel`: `9-Channel-name`. */
export function encodeChannel(id: number, name: string): string {
  return `${id}-${encodeHashComponent(name.replace(/ /g, '-'))}`;
}

function exec(re: RegExp, state: StateInline): RegExpExecArray | null {
  re.lastIndex = state.pos;
  const m = re.exec(state.src);
  return m && m.index + m[0].length <= state.posMax ? m : null;
}

function channelLink(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x23 || !startsToken(state.src, state.pos)) return false;
  const env = state.env as unknown as RenderState;
  let html: string | null = null;
  let m = exec(MESSAGE_RE, state);
  if (m) {
    const channel = env.lookup.channel(m[1]);
    if (channel) {
      const href = `/#narrow/channel/${encodeChannel(channel.stream_id, channel.name)}/topic/${encodeHashComponent(m[2])}/near/${m[3]}`;
      const topic = m[2] === '' ? `<em>${EMPTY_TOPIC_NAME}</em>` : escapeText(m[2]);
      html = `<a class="message-link" href="${escapeAttr(href)}">#${escapeText(channel.name)} &gt; ${topic} @ 💬</a>`;
    }
  }
  if (html === null && (m = exec(TOPIC_RE, state))) {
    const channel = env.lookup.channel(m[1]);
    if (channel) {
      const href = `/#narrow/channel/${encodeChannel(channel.stream_id, channel.name)}/topic/${encodeHashComponent(m[2])}`;
      const topic = m[2] === '' ? `<em>${EMPTY_TOPIC_NAME}</em>` : escapeText(m[2]);
      html = `<a class="stream-topic" data-stream-id="${channel.stream_id}" href="${escapeAttr(href)}">#${escapeText(channel.name)} &gt; ${topic}</a>`;
    }
  }
  if (html === null && (m = exec(CHANNEL_RE, state))) {
    const channel = env.lookup.channel(m[1]);
    if (channel) {
      const href = `/#narrow/channel/${encodeChannel(channel.stream_id, channel.name)}`;
      html = `<a class="stream" data-stream-id="${channel.stream_id}" href="${escapeAttr(href)}">#${escapeText(channel.name)}</a>`;
    }
  }
  if (html === null || m === null) return false;
  if (!silent) state.push('html_inline', '', 0).content = html;
  state.pos += m[0].length;
  return true;
}

export function channelLinks(md: MarkdownIt): void {
  md.inline.ruler.before('link', 'zulip_channel_link', channelLink);
}
