/**
 * `unread_msgs` of `POST /register`: a user's unread message ids grouped by
 * conversation, so that a client can show unread counts per channel, topic and
 * direct-message conversation without fetching the messages, as Zulip serves it:
 *
 * - `streams`: one entry per (channel, topic), topics compared case-insensitively and
 *   shown with the spelling of the conversation's oldest unread message;
 * - `pms`: one entry per one-to-one conversation (`other_user_id` is the user
 *   themself for messages to self); `huddles`: one per group, by its sorted user ids;
 * - `mentions`: unread ids that mention the user, or mention everyone outside a
 *   muted channel;
 * - `count`: unread messages outside muted channels;
 * - only the newest `MAX_UNREAD_MESSAGES` are listed; `old_unreads_missing` says when
 *   older ones were left out.
 */
import { EMPTY_TOPIC_DISPLAY_NAME } from '../rules/messages.js';
import type { OrgContext } from '../kinds/organization.js';
import type { UserContext } from '../kinds/user.js';
import type { StateView } from '../core/state_view.js';
import { SYSTEM_BOTS } from '../rules/system_bots.js';

/** As in Zulip: a client never gets more unread ids than this at registration. */
export const MAX_UNREAD_MESSAGES = 50_000;

interface StreamBucket {
  stream_id: number;
  topic: string;
  unread_message_ids: number[];
}

export interface UnreadMessages {
  count: number;
  pms: Array<{ other_user_id: number; sender_id: number; unread_message_ids: number[] }>;
  streams: StreamBucket[];
  huddles: Array<{ user_ids_string: string; unread_message_ids: number[] }>;
  mentions: number[];
  old_unreads_missing: boolean;
}

/** The unread state of `me` in `org`, newest `limit` unread messages at most. */
export function unreadMessages(world: StateView, org: OrgContext, me: UserContext | undefined, allowEmptyTopicName: boolean, limit = MAX_UNREAD_MESSAGES): UnreadMessages {
  const out: UnreadMessages = { count: 0, pms: [], streams: [], huddles: [], mentions: [], old_unreads_missing: false };
  if (!me) return out;
  const all = me.unread.toArray();
  const ids = all.length > limit ? all.slice(all.length - limit) : all;
  out.old_unreads_missing = all.length > limit;
  const orgId = org.org.id;
  const streams = new Map<string, StreamBucket>();
  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  for (const id of ids) {
    const streamId = org.messageChannel.get(id);
    const wildcard = me.flags.stream_wildcard_mentioned.has(id) || me.flags.topic_wildcard_mentioned.has(id);
    if (streamId !== undefined) {
      const message = world.channel(orgId, streamId)?.messages.get(id);
      if (!message) continue;
      const topic = message.topic === '' && !allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : message.topic;
      const key = `${streamId}\u0000${topic.toLowerCase()}`;
      let bucket = streams.get(key);
      if (!bucket) streams.set(key, (bucket = { stream_id: streamId, topic, unread_message_ids: [] }));
      bucket.unread_message_ids.push(id);
      const muted = me.subs.get(streamId)?.is_muted ?? false;
      if (!muted) out.count++;
      if (me.flags.mentioned.has(id) || (wildcard && !muted)) out.mentions.push(id);
      continue;
    }
    const message = org.directMessages.get(id);
    if (!message) continue;
    const members = message.dm_user_ids ?? [];
    const others = members.filter((u) => u !== me.user_id);
    if (others.length <= 1) {
      // No one else among the participants: a note to self, or a system bot's message to me.
      const other = others[0] ?? (SYSTEM_BOTS.has(message.sender_id) ? message.sender_id : me.user_id);
      const list = pms.get(other);
      if (list) list.push(id);
      else pms.set(other, [id]);
    } else {
      const key = [...new Set([...members, me.user_id])].sort((a, b) => a - b).join(',');
      const list = huddles.get(key);
      if (list) list.push(id);
      else huddles.set(key, [id]);
    }
    out.count++;
    if (me.flags.mentioned.has(id) || wildcard) out.mentions.push(id);
  }
  out.streams = [...streams.values()].sort((a, b) => a.stream_id - b.stream_id || compareText(a.topic.toLowerCase(), b.topic.toLowerCase()));
  out.pms = [...pms].sort((a, b) => a[0] - b[0]).map(([other, list]) => ({ other_user_id: other, sender_id: other, unread_message_ids: list }));
  out.huddles = [...huddles].sort((a, b) => compareText(a[0], b[0])).map(([key, list]) => ({ user_ids_string: key, unread_message_ids: list }));
  return out;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
