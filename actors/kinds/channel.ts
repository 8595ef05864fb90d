/**
 * The channel actor: a channel's settings, its subscribers, its topics and its
 * messages. Channel messages are decided here, so that sends to different channels
 * never queue behind each other.
 */
import { slices, type Persistence } from '../core/persistence.js';
import { SYSTEM_GROUPS, type GroupSettingValue } from '../rules/group_settings.js';
import { restoreHas, stampHas } from '../engines/message_has.js';
import { upgradeDescription } from '../engines/channel_description.js';
import { lowerBound } from '../shared/id_set.js';
import { IdMap } from '../shared/id_map.js';
import { MessageTable } from '../shared/message_table.js';
import { Role, type ChannelGroupSettingKey, type ChannelRecord, type MessageRecord, type StoredMessage, type UserRecord } from '../shared/types.js';
import { persistedMessage, restoredMessage, storeMessage, type Bodies, type PersistedMessage } from '../core/bodies.js';

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
  /** The channel's messages, as columns ascending by id (`messages.ids`). */
  messages: MessageTable;
  /** Where the bodies of `messages` are (the runtime's body store; not part of snapshots). */
  bodies: Bodies;
  /**
   * Which messages each user received: flat [from, to, from, to, ...] message-id
   * bounds of their subscription periods, `to` exclusive and -1 while subscribed.
   * This is what Zulip keeps as UserMessage rows, at a few numbers per user.
   */
  history: Map<number, number[]>;
}

/** The id bound for "every message from now on" in a channel. */
export function nextBound(ctx: ChannelContext): number {
  const last = ctx.messages.lastId;
  return last === undefined ? 0 : last + 1;
}

/** Users join the channel: each starts a subscription period at the next message. */
export function addSubscribers(ctx: ChannelContext, userIds: number[]): void {
  for (const id of userIds) {
    ctx.subscribers.add(id);
    const bounds = ctx.history.get(id);
    if (!bounds) ctx.history.set(id, [nextBound(ctx), -1]);
    else if (bounds[bounds.length - 1] !== -1) bounds.push(nextBound(ctx), -1);
  }
}

/** Users leave the channel: each one's open subscription period ends at the next message. */
export function removeSubscribers(ctx: ChannelContext, userIds: number[]): void {
  for (const id of userIds) {
    ctx.subscribers.delete(id);
    const bounds = ctx.history.get(id);
    if (bounds && bounds[bounds.length - 1] === -1) bounds[bounds.length - 1] = nextBound(ctx);
  }
}

/** Whether a user received a channel message (was subscribed when it was sent). */
export function received(ctx: ChannelContext, userId: number, messageId: number): boolean {
  const holders = ctx.messages.receivedBy(messageId);
  if (holders) return sortedIncludes(holders, userId);
  const bounds = ctx.history.get(userId);
  if (!bounds) return false;
  for (let i = 0; i < bounds.length; i += 2) {
    if (messageId >= bounds[i] && (bounds[i + 1] === -1 || messageId < bounds[i + 1])) return true;
  }
  return false;
}

function sortedIncludes(ids: number[], id: number): boolean {
  return ids[lowerBound(ids, id)] === id;
}

/**
 * The newest message of the channel a user received that is newer than `above`, or
 * `above`: their subscription periods from the newest, each from its end backwards, so
 * that usually the first id looked at is it. A message moved in keeps the holders it had;
 * one outside the user's periods is not looked for.
 */
export function newestReceived(ctx: ChannelContext, userId: number, above: number): number {
  const bounds = ctx.history.get(userId) ?? [];
  const ids = ctx.messages.ids;
  for (let p = bounds.length - 2; p >= 0; p -= 2) {
    const [from, to] = [bounds[p], bounds[p + 1]];
    for (let i = (to === -1 ? ids.length : lowerBound(ids, to)) - 1; i >= 0 && ids[i] >= from && ids[i] > above; i--) {
      if (received(ctx, userId, ids[i])) return ids[i];
    }
  }
  return above;
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

/**
 * Recomputes a topic's entry from the channel's messages: its newest message and the
 * name as that message spells it; the topic goes when it has no message left.
 */
export function refreshTopic(ctx: ChannelContext, key: string): void {
  const messages = ctx.messages;
  for (let i = messages.size - 1; i >= 0; i--) {
    const topic = messages.topicAt(i);
    if (topic.toLowerCase() === key) {
      ctx.topics.set(key, { name: topic, max_id: messages.ids[i] });
      return;
    }
  }
  ctx.topics.delete(key);
}

/**
 * Puts message records into the channel, replacing those it holds with the same ids
 * (idempotent). Records that land anywhere but the end are merged in one pass, into
 * new columns: a paused scan and a snapshot being written keep the ids they hold.
 */
export function putMessages(ctx: ChannelContext, records: MessageRecord[]): void {
  const touched = new Set<string>();
  const stored: StoredMessage[] = [];
  for (const m of records) {
    const old = ctx.messages.get(m.id);
    if (old) {
      touched.add(old.topic.toLowerCase());
      ctx.bodies.release(old.body);
    }
    stored.push(storeMessage(ctx.bodies, stampHas(m)));
    touched.add(m.topic.toLowerCase());
  }
  ctx.messages.setMany(stored);
  for (const key of touched) refreshTopic(ctx, key);
}

/** Takes messages out of the channel (those it holds), into new columns. */
export function dropMessages(ctx: ChannelContext, ids: number[]): void {
  const touched = new Set<string>();
  for (const id of ids) {
    const m = ctx.messages.get(id);
    if (!m) continue;
    touched.add(m.topic.toLowerCase());
    ctx.bodies.release(m.body);
  }
  if (ctx.messages.deleteMany(ids) === 0) return;
  for (const key of touched) refreshTopic(ctx, key);
}

/**
 * Zulip's defaults for a new channel's permission settings
 * (`Stream.stream_permission_group_settings`). A channel's settings grant permissions
 * on top of the organization's, so most default to nobody.
 */
export const CHANNEL_GROUP_DEFAULTS: Readonly<Record<ChannelGroupSettingKey, GroupSettingValue>> = {
  can_add_subscribers_group: SYSTEM_GROUPS.nobody,
  can_administer_channel_group: SYSTEM_GROUPS.nobody,
  can_create_topic_group: SYSTEM_GROUPS.everyone,
  can_delete_any_message_group: SYSTEM_GROUPS.nobody,
  can_delete_own_message_group: SYSTEM_GROUPS.nobody,
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
export function emptyChannel(streamId: number, bodies: Bodies): ChannelContext {
  return {
    seq: 0,
    channel: {
      stream_id: streamId, name: '', description: '', rendered_description: '', invite_only: false, is_web_public: false,
      history_public_to_subscribers: true, date_created: 0, creator_id: null, is_archived: false, message_retention_days: null,
      recipient_id: 0, is_default: false,
    },
    subscribers: new Set(),
    topics: new Map(),
    messages: new MessageTable(),
    bodies,
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
  /** Whole before format 4; with a body store, as stored (`PersistedMessage`). */
  msgs: PersistedMessage[];
}

/** Where a restored channel goes, and where its slices find it and its organization's index. */
export interface ChannelRestoreScope {
  installChannel(orgId: number, ctx: ChannelContext): void;
  channel(orgId: number, streamId: number): ChannelContext | undefined;
  org(orgId: number): { messageChannel: IdMap } | undefined;
  /** The runtime's body store, where restored bodies go. */
  bodies: Bodies;
  /** The store the snapshot's locators are of: `bodies`, or the source directory's in a restore. */
  bodySource: Bodies;
}

/** A channel's persistence needs its organization's id, which its context does not hold. */
export function channelPersistence(orgId: number): Persistence<ChannelContext, ChannelRestoreScope> {
  return {
    ...channelRestore,
    *chunks(ctx, sliceSize) {
      let count = 0;
      let ids: Uint32Array = new Uint32Array(0);
      yield (): ChannelChunk => {
        // The id list as it is now: appends go to its end, and a deletion replaces the
        // list rather than changing it, so its first `count` ids stay exactly these.
        ids = ctx.messages.ids;
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
        k: 'msgs', org: orgId, stream_id: ctx.channel.stream_id, msgs: present(Array.from(ids.subarray(from, to), (id) => ctx.messages.get(id))).map((m) => persistedMessage(ctx.bodies, m)),
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
        channel: upgradeDescription(c.channel),
        subscribers: new Set(c.subscribers),
        topics: new Map(c.topics.map((t) => [t.name.toLowerCase(), t])),
        messages: new MessageTable(),
        bodies: scope.bodies,
        history: new Map(c.history),
      });
      return;
    }
    const c = chunk as MessagesChunk;
    const ctx = scope.channel(c.org, c.stream_id)!;
    // The organization's message-to-channel index is derived from the channels' messages.
    const org = scope.org(c.org)!;
    for (const m of c.msgs) {
      ctx.messages.set(m.id, restoredMessage(ctx.bodies, scope.bodySource, 'body' in m ? m : restoreHas(m)));
      org.messageChannel.set(m.id, c.stream_id);
    }
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    channel: ChannelContext;
  }
}
