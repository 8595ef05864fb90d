/**
 * `notify_*`: the client events derived from each fact. Derivation runs right after
 * the fact is applied, against that state; delivery waits until the fact is durable.
 */
import { emptyChannel } from './channel.js';
import { subscriptionIndex, type ChannelAdditions, type ChannelRemovals, type Fact, type Stamped, type SubscriptionsAdded, type SubscriptionsRemoved } from './facts.js';
import type { OutgoingEvent } from './event_queues/index.js';
import type { MessageRecord, UserRecord } from './types.js';
import { channelView, messageView, SubscriptionJson, subscriptionView, userView } from './views.js';
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
  return activeUsersWhere(world, org, () => true);
}

function activeUsersWhere(world: World, org: number, keep: (user: UserRecord) => boolean): number[] {
  const ctx = world.org(org);
  if (!ctx) return [];
  const ids: number[] = [];
  for (const u of ctx.users.values()) if (u.is_active && keep(u)) ids.push(u.user_id);
  return ids;
}

/** Who is told of a new channel: everyone but guests for a public one, administrators for a private one. */
function seesNewChannel(inviteOnly: boolean): (user: UserRecord) => boolean {
  return inviteOnly ? (u) => u.role <= Role.ADMIN : (u) => u.role !== Role.GUEST;
}

/** An event whose one list member (`streams`, `subscriptions`) is given as serialized items. */
function listEvent(type: string, op: string, key: string, items: string[]): OutgoingEvent {
  return { type, json: `"type":${JSON.stringify(type)},"op":${JSON.stringify(op)},${JSON.stringify(key)}:[${items.join(',')}]` };
}

const ascending = (a: number, b: number): number => a - b;

/** Every delivery a fact causes. */
export function notify(world: World, stamped: Stamped): Delivery[] {
  const { fact, seq } = stamped;
  switch (fact.type) {
    case 'MessageSent':
      return [notifyMessage(world, fact, seq)];
    case 'Subscribed':
    case 'Unsubscribed':
      return notifySubscription(world, fact, seq);
    case 'SubscriptionsAdded':
      return notifySubscriptionsAdded(world, fact, seq);
    case 'SubscriptionsRemoved':
      return notifySubscriptionsRemoved(world, fact, seq);
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
      const viewers = activeUsersWhere(world, fact.org, seesNewChannel(fact.channel.invite_only));
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

/** A channel with no subscribers and no messages yet: how a channel looks when created. */
const PRISTINE = emptyChannel(0);

/**
 * The events of one subscription request (`bulk_add_subscriptions` in Zulip's
 * zerver/actions/streams.py), a handful per user however many channels it names:
 * 1. the channels it created, one `stream` `create` per audience (Zulip sends one per
 *    channel; `streams` is a list, so one event carries them all);
 * 2. members added to private channels learn of them first: one `stream` `create`
 *    per such member, listing those channels;
 * 3. each user added gets one `subscription` `add` listing all their new subscriptions;
 * 4. everyone else who sees the subscribers gets `peer_add`, grouped as in Zulip's
 *    `send_peer_subscriber_events`: one event per set of added users and set of recipients.
 * Everything is read from the state after the whole fact, as Zulip reads it after the
 * transaction; a channel created here is shown as created, before anyone joined.
 */
function notifySubscriptionsAdded(world: World, fact: SubscriptionsAdded, seq: number): Delivery[] {
  const org = world.org(fact.org)!;
  const index = subscriptionIndex(fact);
  const out: Delivery[] = [];
  for (const inviteOnly of [false, true]) {
    const created = fact.created.filter((c) => c.invite_only === inviteOnly).map((channel) => JSON.stringify(channelView({ ...PRISTINE, channel })));
    if (created.length > 0) out.push({ org: fact.org, seq, type: 'stream', user_ids: activeUsersWhere(world, fact.org, seesNewChannel(inviteOnly)), event: listEvent('stream', 'create', 'streams', created) });
  }

  const views = new Map<number, string>();
  const viewOf = (streamId: number): string => {
    let view = views.get(streamId);
    if (view === undefined) views.set(streamId, (view = JSON.stringify(channelView(world.channel(fact.org, streamId)!))));
    return view;
  };
  const newcomers = new Map<number, number[]>();
  for (const part of fact.additions) {
    if (!world.channel(fact.org, part.stream_id)?.channel.invite_only) continue;
    for (const id of part.user_ids) {
      if ((org.users.get(id)?.role ?? Role.MEMBER) <= Role.ADMIN) continue;
      let mine = newcomers.get(id);
      if (!mine) newcomers.set(id, (mine = []));
      mine.push(part.stream_id);
    }
  }
  if (newcomers.size > 0) {
    out.push({ org: fact.org, seq, type: 'stream', user_ids: [...newcomers.keys()], event: (userId) => listEvent('stream', 'create', 'streams', newcomers.get(userId)!.map(viewOf)) });
  }

  const rendered = new Map<number, SubscriptionJson>();
  const subscriptionOf = (streamId: number): SubscriptionJson => {
    let r = rendered.get(streamId);
    if (!r) rendered.set(streamId, (r = new SubscriptionJson(world.channel(fact.org, streamId)!)));
    return r;
  };
  if (index.byUser.size > 0) {
    out.push({
      org: fact.org,
      seq,
      type: 'subscription',
      user_ids: [...index.byUser.keys()],
      event: (userId) => listEvent('subscription', 'add', 'subscriptions', index.byUser.get(userId)!.map((s) => subscriptionOf(s.stream_id).render(s.props!))),
    });
  }
  peerEvents(world, fact.org, seq, 'peer_add', fact.additions, out);
  return out;
}

/**
 * The events of one unsubscription request (Zulip's `bulk_remove_subscriptions`):
 * each user removed gets one `subscription` `remove` listing the channels they left,
 * and the others who see the subscribers get `peer_remove`, grouped as `peer_add` is.
 */
function notifySubscriptionsRemoved(world: World, fact: SubscriptionsRemoved, seq: number): Delivery[] {
  const index = subscriptionIndex(fact);
  const out: Delivery[] = [];
  const items = new Map<number, string>();
  const itemOf = (streamId: number): string => {
    let item = items.get(streamId);
    if (item === undefined) items.set(streamId, (item = JSON.stringify({ name: world.channel(fact.org, streamId)?.channel.name ?? '', stream_id: streamId })));
    return item;
  };
  if (index.byUser.size > 0) {
    out.push({
      org: fact.org,
      seq,
      type: 'subscription',
      user_ids: [...index.byUser.keys()],
      event: (userId) => listEvent('subscription', 'remove', 'subscriptions', index.byUser.get(userId)!.map((s) => itemOf(s.stream_id))),
    });
  }
  peerEvents(world, fact.org, seq, 'peer_remove', fact.removals, out);
  return out;
}

/**
 * `peer_add`/`peer_remove` for the channels of one request. Who is told is unchanged
 * from the per-channel events: everyone active for a public channel, the remaining
 * subscribers of a private one, never the users who changed. Channels with the same
 * changed users and the same recipients share one event (Zulip's grouping of public
 * channels, extended to private channels whose subscribers coincide).
 */
function peerEvents(world: World, orgId: number, seq: number, op: 'peer_add' | 'peer_remove', parts: Array<ChannelAdditions | ChannelRemovals>, out: Delivery[]): void {
  let active: number[] | undefined;
  const groups = new Map<string, { stream_ids: number[]; user_ids: number[]; recipients: number[] }>();
  for (const part of parts) {
    const ch = world.channel(orgId, part.stream_id);
    if (!ch || part.user_ids.length === 0) continue;
    const altered = [...part.user_ids].sort(ascending);
    let key = altered.join(',');
    let recipients: number[] | undefined;
    if (ch.channel.invite_only) {
      const changed = new Set(altered);
      recipients = [...ch.subscribers].filter((id) => !changed.has(id)).sort(ascending);
      key += '|' + recipients.join(',');
    } else {
      key += '|public';
    }
    let group = groups.get(key);
    if (!group) {
      if (!recipients) {
        const changed = new Set(altered);
        recipients = (active ??= activeUserIds(world, orgId)).filter((id) => !changed.has(id));
      }
      groups.set(key, (group = { stream_ids: [], user_ids: altered, recipients }));
    }
    group.stream_ids.push(part.stream_id);
  }
  for (const g of groups.values()) {
    if (g.recipients.length === 0) continue;
    out.push({ org: orgId, seq, type: 'subscription', user_ids: g.recipients, event: json('subscription', { op, stream_ids: g.stream_ids.sort(ascending), user_ids: g.user_ids }) });
  }
}
