/**
 * The channel actor: a channel's settings, its subscribers, its topics and its
 * messages. Channel messages are decided here, so that sends to different channels
 * never queue behind each other.
 */
import { badRequest } from './errors.js';
import { subscriptionIndex, type Fact } from './facts.js';
import { domainLogic, type Decision, type DecideEnv } from './logic.js';
import { renderMarkdown, type MentionResolver } from './markdown.js';
import { checkContent, checkTopic } from './message_rules.js';
import { userByEmail, type OrgContext } from './organization.js';
import { Role, type ChannelRecord, type MessageRecord } from './types.js';
import type { World } from './world.js';

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
function nextBound(ctx: ChannelContext): number {
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

/** Send a message to a topic of this channel. */
export interface SendToChannel {
  type: 'SEND_CHANNEL_MESSAGE';
  org: number;
  sender_id: number;
  topic: string;
  content: string;
  client: string;
  read_by_sender: boolean;
}
export type ChannelCommand = SendToChannel;

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

/** Resolves `@**Name**` and `@**Name|id**` against an organization's active users. */
export function mentionResolver(org: OrgContext): MentionResolver {
  return (name, id) => {
    if (id !== null) {
      const user = org.users.get(id);
      return user && user.is_active ? user : undefined;
    }
    const lower = name.toLowerCase();
    for (const user of org.users.values()) if (user.is_active && user.full_name.toLowerCase() === lower) return user;
    return userByEmail(org, name);
  };
}

function addSubscribers(ctx: ChannelContext, userIds: number[]): void {
  for (const id of userIds) {
    ctx.subscribers.add(id);
    const bounds = ctx.history.get(id);
    if (!bounds) ctx.history.set(id, [nextBound(ctx), -1]);
    else if (bounds[bounds.length - 1] !== -1) bounds.push(nextBound(ctx), -1);
  }
}

function removeSubscribers(ctx: ChannelContext, userIds: number[]): void {
  for (const id of userIds) {
    ctx.subscribers.delete(id);
    const bounds = ctx.history.get(id);
    if (bounds && bounds[bounds.length - 1] === -1) bounds[bounds.length - 1] = nextBound(ctx);
  }
}

function reduce(ctx: ChannelContext, fact: Fact): void {
  switch (fact.type) {
    case 'ChannelCreated':
      ctx.channel = { ...fact.channel };
      break;
    case 'Subscribed':
      addSubscribers(ctx, fact.user_ids);
      break;
    case 'Unsubscribed':
      removeSubscribers(ctx, fact.user_ids);
      break;
    case 'SubscriptionsAdded': {
      const index = subscriptionIndex(fact);
      const created = index.created.get(ctx.channel.stream_id);
      if (created) ctx.channel = { ...created };
      const mine = index.byChannel.get(ctx.channel.stream_id);
      if (mine) addSubscribers(ctx, mine.user_ids);
      break;
    }
    case 'SubscriptionsRemoved': {
      const mine = subscriptionIndex(fact).byChannel.get(ctx.channel.stream_id);
      if (mine) removeSubscribers(ctx, mine.user_ids);
      break;
    }
    case 'MessageSent': {
      const m = fact.message;
      ctx.ids.push(m.id);
      ctx.messages.set(m.id, m);
      const key = m.topic.toLowerCase();
      const entry = ctx.topics.get(key);
      if (entry) entry.max_id = m.id;
      else ctx.topics.set(key, { name: m.topic, max_id: m.id });
      break;
    }
    default:
      break;
  }
}

/** Builds the channel actor's logic; decisions read the organization through `world`. */
export function channelLogic(world: World) {
  function decide(ctx: ChannelContext, command: ChannelCommand, env: DecideEnv): Decision {
    const org = world.org(command.org)!;
    const sender = org.users.get(command.sender_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    const channel = ctx.channel;
    if (channel.is_archived) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    const subscribed = ctx.subscribers.has(sender.user_id);
    if (!subscribed && (channel.invite_only || sender.role === Role.GUEST)) {
      throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    }
    const topic = checkTopic(command.topic);
    const content = checkContent(command.content);
    const rendered = renderMarkdown(content, mentionResolver(org));
    const message: MessageRecord = {
      id: env.nextMessageId(),
      sender_id: sender.user_id,
      content,
      rendered: rendered.html,
      timestamp: env.now(),
      client: command.client,
      stream_id: channel.stream_id,
      topic,
      dm_user_ids: null,
      recipient_id: channel.recipient_id,
    };
    return {
      facts: [{ type: 'MessageSent', org: command.org, message, mentioned: rendered.mentioned, wildcard: rendered.wildcard, read_by_sender: command.read_by_sender }],
      value: { id: message.id },
    };
  }
  return domainLogic<ChannelContext, ChannelCommand>({ decide, reduce });
}
