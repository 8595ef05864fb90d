/**
 * `notify_*`: the client events derived from each fact. Derivation runs right after
 * the fact is applied, against that state; delivery waits until the fact is durable.
 */
import type { Fact, Stamped } from './facts.js';
import type { OutgoingEvent } from './queue.js';
import type { MessageRecord } from './types.js';
import { channelView, messageView, subscriptionView, userView } from './views.js';
import type { World } from './world.js';
import { Role } from './types.js';

/** Events for some users of one organization, from one fact. */
export interface Delivery {
  org: number;
  seq: number;
  /** The event type, for queues that filter by type. */
  type: string;
  user_ids: Iterable<number>;
  /**
   * The same event for everyone, or one built per user (and per whether the client
   * shows the empty topic as `""`).
   */
  event: OutgoingEvent | ((userId: number, emptyTopicName: boolean) => OutgoingEvent);
  /** For message events: the message, so that queues with a narrow can filter. */
  message?: MessageRecord;
  channelName?: string;
}

function json(type: string, body: Record<string, unknown>): OutgoingEvent {
  const text = JSON.stringify({ type, ...body });
  return { type, json: text.slice(1, -1) };
}

function activeUserIds(world: World, org: number): number[] {
  const ctx = world.org(org);
  if (!ctx) return [];
  const ids: number[] = [];
  for (const u of ctx.users.values()) if (u.is_active) ids.push(u.user_id);
  return ids;
}

/** Every delivery a fact causes. */
export function notify(world: World, stamped: Stamped): Delivery[] {
  const { fact, seq } = stamped;
  switch (fact.type) {
    case 'MessageSent':
      return [notifyMessage(world, fact, seq)];
    case 'Subscribed':
    case 'Unsubscribed':
      return notifySubscription(world, fact, seq);
    case 'UserCreated':
      return [{ org: fact.org, seq, type: 'realm_user', user_ids: activeUserIds(world, fact.org), event: json('realm_user', { op: 'add', person: userView(fact.user) }) }];
    case 'UserActivationChanged': {
      const everyone = [...world.org(fact.org)!.users.values()].map((u) => u.user_id).filter((id) => id !== fact.user_id || fact.active);
      return [{ org: fact.org, seq, type: 'realm_user', user_ids: everyone, event: json('realm_user', { op: 'update', person: { user_id: fact.user_id, is_active: fact.active } }) }];
    }
    case 'ChannelCreated': {
      // Public channels are announced to everyone but guests; private ones to administrators,
      // and to each member as they are added (see notifySubscription).
      const ch = world.channel(fact.org, fact.channel.stream_id)!;
      const org = world.org(fact.org)!;
      const viewers = [...org.users.values()]
        .filter((u) => u.is_active && (fact.channel.invite_only ? u.role <= Role.ADMIN : u.role !== Role.GUEST))
        .map((u) => u.user_id);
      return [{ org: fact.org, seq, type: 'stream', user_ids: viewers, event: json('stream', { op: 'create', streams: [channelView(ch)] }) }];
    }
    case 'FlagsUpdated': {
      const body: Record<string, unknown> = { op: fact.op, operation: fact.op, flag: fact.flag, messages: fact.messages, all: false };
      if (fact.flag === 'read' && fact.op === 'remove') body.message_details = messageDetails(world, fact.org, fact.user_id, fact.messages);
      return [{ org: fact.org, seq, type: 'update_message_flags', user_ids: [fact.user_id], event: json('update_message_flags', body) }];
    }
    default:
      return [];
  }
}

/** What a client needs to put messages marked unread back into its unread counts. */
function messageDetails(world: World, orgId: number, userId: number, ids: number[]): Record<string, unknown> {
  const org = world.org(orgId)!;
  const me = world.user(orgId, userId);
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const mentioned = me?.flags.mentioned.has(id) ?? false;
    const streamId = org.messageChannel.get(id);
    if (streamId !== undefined) {
      const m = world.channel(orgId, streamId)?.messages.get(id);
      out[id] = { type: 'stream', mentioned, stream_id: streamId, topic: m?.topic ?? '', unmuted_stream_msg: !(me?.subs.get(streamId)?.is_muted ?? false) };
    } else {
      const m = org.directMessages.get(id);
      out[id] = { type: 'private', mentioned, user_ids: (m?.dm_user_ids ?? []).filter((u) => u !== userId) };
    }
  }
  return out;
}

function notifyMessage(world: World, fact: Extract<Fact, { type: 'MessageSent' }>, seq: number): Delivery {
  const m = fact.message;
  const org = world.org(fact.org)!;
  const channel = m.stream_id === null ? undefined : world.channel(fact.org, m.stream_id);
  const channelName = channel?.channel.name ?? '';
  // The shared part is serialized once per variant, however many recipients there are.
  const shared: string[] = [];
  const sharedFor = (emptyTopicName: boolean): string => {
    const key = emptyTopicName || m.topic !== '' ? 0 : 1;
    return (shared[key] ??= '"type":"message","message":' + JSON.stringify(messageView(org, m, channelName, { allowEmptyTopicName: emptyTopicName })) + ',"flags":');
  };
  const recipients = channel ? [...channel.subscribers] : (m.dm_user_ids ?? []);
  // A new message's flags follow from the fact alone (the same rule the user actor applies),
  // so recipients share a handful of prebuilt events instead of one each.
  const mentioned = new Set(fact.mentioned);
  const wildcardFlags = fact.wildcard === 'stream' ? ['stream_wildcard_mentioned', 'wildcard_mentioned'] : fact.wildcard === 'topic' ? ['topic_wildcard_mentioned', 'wildcard_mentioned'] : [];
  const built: OutgoingEvent[] = [];
  return {
    org: fact.org,
    seq,
    type: 'message',
    user_ids: recipients,
    message: m,
    channelName,
    event: (userId, emptyTopicName) => {
      const read = fact.read_by_sender && userId === m.sender_id;
      const isMentioned = mentioned.has(userId);
      const key = (emptyTopicName ? 4 : 0) + (read ? 2 : 0) + (isMentioned ? 1 : 0);
      let event = built[key];
      if (!event) {
        const flags = [...(read ? ['read'] : []), ...(isMentioned ? ['mentioned'] : []), ...wildcardFlags];
        event = built[key] = { type: 'message', json: sharedFor(emptyTopicName) + JSON.stringify(flags) };
      }
      return event;
    },
  };
}

function notifySubscription(world: World, fact: Extract<Fact, { type: 'Subscribed' | 'Unsubscribed' }>, seq: number): Delivery[] {
  const ch = world.channel(fact.org, fact.stream_id);
  if (!ch) return [];
  const changed = new Set(fact.user_ids);
  const peers = ch.channel.invite_only ? [...ch.subscribers] : activeUserIds(world, fact.org);
  const others = peers.filter((id) => !changed.has(id));
  const peerOp = fact.type === 'Subscribed' ? 'peer_add' : 'peer_remove';
  const out: Delivery[] = [];
  if (fact.type === 'Subscribed') {
    if (ch.channel.invite_only) {
      // Members learn of a private channel when they are added; administrators already know it.
      const org = world.org(fact.org)!;
      const newcomers = fact.user_ids.filter((id) => (org.users.get(id)?.role ?? Role.MEMBER) > Role.ADMIN);
      if (newcomers.length > 0) out.push({ org: fact.org, seq, type: 'stream', user_ids: newcomers, event: json('stream', { op: 'create', streams: [channelView(ch)] }) });
    }
    out.push({
      org: fact.org,
      seq,
      type: 'subscription',
      user_ids: fact.user_ids,
      event: (userId) => {
        const props = fact.props[fact.user_ids.indexOf(userId)];
        return json('subscription', { op: 'add', subscriptions: [subscriptionView(ch, props, true)] });
      },
    });
  } else {
    out.push({ org: fact.org, seq, type: 'subscription', user_ids: fact.user_ids, event: json('subscription', { op: 'remove', subscriptions: [{ name: ch.channel.name, stream_id: ch.channel.stream_id }] }) });
  }
  if (others.length > 0) {
    out.push({ org: fact.org, seq, type: 'subscription', user_ids: others, event: json('subscription', { op: peerOp, stream_ids: [fact.stream_id], user_ids: fact.user_ids }) });
  }
  return out;
}
