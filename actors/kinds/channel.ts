/**
 * The channel actor: a channel's settings, its subscribers, its topics and its
 * messages. Channel messages are decided here, so that sends to different channels
 * never queue behind each other.
 */
import { slices, type Persistence } from '../core/persistence.js';
import { SYSTEM_GROUPS, type GroupSettingValue } from '../group_settings.js';
import { Role, type ChannelGroupSettingKey, type ChannelRecord, type MessageRecord, type UserRecord } from '../types.js';

/** A topic's display name and the id of its newest message. */
export interface TopicEntry {
  name: string;
  max_id: number;
}

/** State of one channel actor. */
export interface ChannelContext {
  seq: number;
  channel: ChannelRecord;
  subscribers: Set<number>;
  /** Lower-cased topic name to its entry. */
  topics: Map<string, TopicEntry>;
  /** Message ids, ascending. */
  ids: number[];
  messages: Map<number, MessageRecord>;
  /**
   * Which messages each user received: flat [from, to, from, to, ...] message-id
   * bounds of their subscription periods, `to` exclusive and -1 while subscribed.
   * This is what Zulip keeps as UserMessage rows, at a few numbers per user.
   */
  history: Map<number, number[]>;
}

/** The id bound for "every message from now on" in a channel. */
export function nextBound(ctx: ChannelContext): number {
  return ctx.ids.length > 0 ? ctx.ids[ctx.ids.length - 1] + 1 : 0;
}

/** Whether a user received a channel message (was subscribed when it was sent). */
export function received(ctx: ChannelContext, userId: number, messageId: number): boolean {
  const bounds = ctx.history.get(userId);
  if (!bounds) return false;
  for (let i = 0; i < bounds.length; i += 2) {
    if (messageId >= bounds[i] && (bounds[i + 1] === -1 || messageId < bounds[i + 1])) return true;
  }
  return false;
}

/**
 * Whether a user may read a channel's whole history, not only what they received:
 * public channels for everyone but guests, shared-history private channels for
 * their subscribers.
 */
export function readsFullHistory(ctx: ChannelContext, user: { user_id: number; role: number }): boolean {
  const c = ctx.channel;
  if (c.invite_only) return c.history_public_to_subscribers && ctx.subscribers.has(user.user_id);
  if (user.role === Role.GUEST) return c.history_public_to_subscribers && ctx.subscribers.has(user.user_id);
  return c.history_public_to_subscribers;
}

/** Whether `user` may see a channel's existence and subscribe themselves. */
export function canAccessChannel(user: UserRecord, channel: ChannelRecord, subscribers: Set<number>): boolean {
  if (subscribers.has(user.user_id)) return true;
  if (channel.invite_only) return user.role <= Role.ADMIN;
  return user.role !== Role.GUEST;
}

/**
 * Whether `user` may read a channel's messages and post there (Zulip's content
 * access): its subscribers, and everyone but guests in a public channel.
 */
export function hasContentAccess(ch: ChannelContext, user: { user_id: number; role: number }): boolean {
  return ch.subscribers.has(user.user_id) || (!ch.channel.invite_only && user.role !== Role.GUEST);
}

/** Zulip's defaults for a new channel's permission settings. */
export const CHANNEL_GROUP_DEFAULTS: Readonly<Record<ChannelGroupSettingKey, GroupSettingValue>> = {
  can_add_subscribers_group: SYSTEM_GROUPS.members,
  can_administer_channel_group: SYSTEM_GROUPS.administrators,
  can_create_topic_group: SYSTEM_GROUPS.everyone,
  can_delete_any_message_group: SYSTEM_GROUPS.administrators,
  can_delete_own_message_group: SYSTEM_GROUPS.everyone,
  can_move_messages_out_of_channel_group: SYSTEM_GROUPS.nobody,
  can_move_messages_within_channel_group: SYSTEM_GROUPS.nobody,
  can_remove_subscribers_group: SYSTEM_GROUPS.administrators,
  can_resolve_topics_group: SYSTEM_GROUPS.nobody,
  can_send_message_group: SYSTEM_GROUPS.everyone,
  can_subscribe_group: SYSTEM_GROUPS.nobody,
};

/** A channel's permission setting, or its default. */
export function channelGroupSetting(channel: ChannelRecord, key: ChannelGroupSettingKey): GroupSettingValue {
  return channel.groups?.[key] ?? CHANNEL_GROUP_DEFAULTS[key];
}

/** Context before the channel's `ChannelCreated` fact is applied. */
export function emptyChannel(streamId: number): ChannelContext {
  return {
    seq: 0,
    channel: {
      stream_id: streamId, name: '', description: '', rendered_description: '', invite_only: false, is_web_public: false,
      history_public_to_subscribers: true, date_created: 0, creator_id: null, is_archived: false, message_retention_days: null,
      recipient_id: 0, is_default: false,
    },
    subscribers: new Set(),
    topics: new Map(),
    ids: [],
    messages: new Map(),
    history: new Map(),
  };
}

interface ChannelChunk {
  k: 'channel';
  org: number;
  seq: number;
  channel: ChannelRecord;
  subscribers: number[];
  topics: TopicEntry[];
  history: Array<[number, number[]]>;
}
interface MessagesChunk {
  k: 'msgs';
  org: number;
  stream_id: number;
  msgs: MessageRecord[];
}

/** Where a restored channel goes, and where its slices find it and its organization's index. */
export interface ChannelRestoreScope {
  installChannel(orgId: number, ctx: ChannelContext): void;
  channel(orgId: number, streamId: number): ChannelContext | undefined;
  org(orgId: number): { messageChannel: Map<number, number> } | undefined;
}

/** A channel's persistence needs its organization's id, which its context does not hold. */
export function channelPersistence(orgId: number): Persistence<ChannelContext, ChannelRestoreScope> {
  return {
    ...channelRestore,
    *chunks(ctx, sliceSize) {
      let count = 0;
      let ids: number[] = [];
      yield (): ChannelChunk => {
        // The id list as it is now: appends go to its end, and a deletion replaces the
        // list rather than changing it, so its first `count` ids stay exactly these.
        ids = ctx.ids;
        count = ids.length;
        return {
          k: 'channel', org: orgId, seq: ctx.seq, channel: ctx.channel, subscribers: [...ctx.subscribers], topics: [...ctx.topics.values()],
          history: [...ctx.history].map(([uid, bounds]) => [uid, [...bounds]]),
        };
      };
      // Message records are replaced, never changed in place. A record changed or deleted
      // after the head is written as it is then (a deleted one not at all); replaying the
      // facts after the head's seq, which are idempotent on messages, gives the same state.
      yield* slices(() => count, sliceSize, (from, to): MessagesChunk => ({
        k: 'msgs', org: orgId, stream_id: ctx.channel.stream_id, msgs: present(ids.slice(from, to).map((id) => ctx.messages.get(id))),
      }));
    },
  };
}

function present<T>(items: Array<T | undefined>): T[] {
  return items.filter((x): x is T => x !== undefined);
}

/** Restoring channel chunks (the same for every organization). */
export const channelRestore: Pick<Persistence<ChannelContext, ChannelRestoreScope>, 'tags' | 'restore'> = {
  tags: ['channel', 'msgs'],
  restore(chunk, scope) {
    if (chunk.k === 'channel') {
      const c = chunk as ChannelChunk;
      scope.installChannel(c.org, {
        seq: c.seq,
        channel: c.channel,
        subscribers: new Set(c.subscribers),
        topics: new Map(c.topics.map((t) => [t.name.toLowerCase(), t])),
        ids: [],
        messages: new Map(),
        history: new Map(c.history),
      });
      return;
    }
    const c = chunk as MessagesChunk;
    const ctx = scope.channel(c.org, c.stream_id)!;
    // The organization's message-to-channel index is derived from the channels' messages.
    const org = scope.org(c.org)!;
    for (const m of c.msgs) {
      ctx.ids.push(m.id);
      ctx.messages.set(m.id, m);
      org.messageChannel.set(m.id, c.stream_id);
    }
  },
};
