/**
 * `check_*` rules for message content and topics, as Zulip applies them on send.
 */
import type { Address } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';

/** Server limits, shared with the register response. */
export const LIMITS = {
  max_message_length: 10000,
  max_topic_length: 60,
  max_stream_name_length: 60,
  max_stream_description_length: 1024,
  max_channel_folder_name_length: 60,
  max_channel_folder_description_length: 1024,
  max_user_name_length: 100,
  max_file_upload_size_mib: 100,
  max_bulk_new_subscription_messages: 50,
} as const;

/** What ends content cut to `max_message_length`. */
export const MESSAGE_TRUNCATED = '\n[message truncated]';

/** What an empty topic is shown as. */
export const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';

/** Length in Unicode code points, which is how Zulip counts. */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Cuts `s` to at most `max` code points, ending with `suffix` when it was cut. */
export function truncateCodePoints(s: string, max: number, suffix: string): string {
  // A string is never longer in code points than in UTF-16 units: most need no count.
  if (s.length <= max || codePointLength(s) <= max) return s;
  return s.slice(0, codePointOffset(s, max - codePointLength(suffix))) + suffix;
}

/** The UTF-16 offset just after the first `n` code points of `s` (counting only as far as needed). */
function codePointOffset(s: string, n: number): number {
  let i = 0;
  for (let points = 0; points < n && i < s.length; points++) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  return i;
}

/**
 * Normalizes message content: rejects empty content and null bytes, and truncates
 * content over the limit with a visible marker, as Zulip does.
 */
export function checkContent(content: string): string {
  if (content.includes('\u0000')) throw badRequest('Message must not contain null bytes');
  // As Zulip's normalize_body: trailing whitespace and leading blank lines go. trimEnd
  // removes exactly what `\s` matches, in linear time; the regex /\s+$/ is quadratic on
  // a run of whitespace followed by text (200,000 spaces and an `x`: over a minute).
  const trimmed = content.trimEnd().replace(/^\n+/, '');
  if (trimmed.trim().length === 0) throw badRequest('Message must not be empty');
  return truncateCodePoints(trimmed, LIMITS.max_message_length, MESSAGE_TRUNCATED);
}

/**
 * Normalizes a topic for a channel message. The display name of the empty topic and
 * the legacy `(no topic)` both mean the empty topic; over-long topics are truncated.
 */
export function checkTopic(topic: string): string {
  if (topic.includes('\u0000')) throw badRequest('Topic must not contain null bytes');
  const cleaned = topic.trim();
  for (let i = 0; i < cleaned.length; i++) {
    const c = cleaned.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) throw badRequest(`Invalid character in topic, at position ${i + 1}!`);
  }
  if (cleaned === EMPTY_TOPIC_DISPLAY_NAME || cleaned === '(no topic)') return '';
  return truncateCodePoints(cleaned, LIMITS.max_topic_length, '...');
}

/** A topic as a client names it, as stored: the empty topic's display names name the empty topic. */
export function topicNamed(topic: string): string {
  const t = topic.trim();
  return t === EMPTY_TOPIC_DISPLAY_NAME || t === '(no topic)' ? '' : t;
}

/** Channel names: non-empty, bounded, no control characters. */
export function checkChannelName(name: string): string {
  const cleaned = name.trim();
  if (cleaned.length === 0) throw badRequest('Channel name can\'t be empty.');
  if (codePointLength(cleaned) > LIMITS.max_stream_name_length) {
    throw badRequest(`Channel name too long (limit: ${LIMITS.max_stream_name_length} characters).`);
  }
  for (let i = 0; i < cleaned.length; i++) {
    const c = cleaned.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) throw badRequest(`Invalid character in channel name, at position ${i + 1}.`);
  }
  return cleaned;
}

/** The topic name of the notification bot's notices about a channel itself (Zulip's `STREAM_EVENTS_NOTIFICATION_TOPIC_NAME`). */
export const CHANNEL_EVENTS_TOPIC = 'channel events';

/**
 * A channel's `topics_policy` on a new message's topic (Zulip's
 * `MessagesNotAllowedInEmptyTopicError` and `TopicsNotAllowedError`). `inherit` follows
 * the organization, which allows the empty topic.
 */
export function checkTopicsPolicy(policy: string | undefined, topic: string): void {
  if (policy === 'disable_empty_topic' && topic === '') {
    throw badRequest(`Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} topic is not allowed in this channel.`);
  }
  if (policy === 'empty_topic_only' && topic !== '') {
    throw badRequest(`Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`);
  }
}

/**
 * The actor that decides a command on an existing message: the message's channel, or the
 * organization for a direct message. An unknown message is Zulip's "Invalid message(s)".
 */
export function messageActor(view: StateView, c: { org: number; message_id: number }): Address<'channel' | 'org'> {
  const org = view.org(c.org);
  const streamId = org?.messageChannel.get(c.message_id);
  if (streamId !== undefined) return { kind: 'channel', org: c.org, stream_id: streamId };
  if (org?.directMessages.has(c.message_id)) return { kind: 'org', org: c.org };
  throw badRequest('Invalid message(s)');
}
