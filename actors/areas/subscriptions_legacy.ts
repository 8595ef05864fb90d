/**
 * Subscription facts of logs written before one request logged one bulk fact: a
 * `ChannelCreated` per new channel, and a `Subscribed` or `Unsubscribed` per channel
 * and request. Nothing writes them any more; they replay, with the events they always
 * derived. Today's requests log one `SubscriptionsAdded` or `SubscriptionsRemoved`
 * each (subscriptions.ts).
 */
import { area, fact, type Delivery, type FactRecipients } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import { addSubscribers, removeSubscribers } from '../kinds/channel.js';
import { addChannel } from '../kinds/organization.js';
import { join, leave } from '../kinds/user.js';
import { upgradeDescription } from '../engines/channel_description.js';
import { activeUsersWhere, eventJson, seesNewChannel } from '../render/events.js';
import { channelView, subscriptionView } from '../render/views.js';
import { Role, type ChannelRecord, type SubscriptionProps } from '../shared/types.js';

/** A channel was created. */
export interface ChannelCreated { type: 'ChannelCreated'; org: number; channel: ChannelRecord }
/** Users were subscribed to a channel, each with their subscription settings. */
export interface Subscribed {
  type: 'Subscribed';
  org: number;
  stream_id: number;
  user_ids: number[];
  props: SubscriptionProps[];
  acting_user_id: number;
}
/** Users left a channel. */
export interface Unsubscribed { type: 'Unsubscribed'; org: number; stream_id: number; user_ids: number[]; acting_user_id: number }

const channelCreated = fact<ChannelCreated>({
  type: 'ChannelCreated',
  apply: {
    org: (ctx, f) => addChannel(ctx, f.channel),
    channel(ctx, f) {
      ctx.channel = upgradeDescription({ ...f.channel });
    },
  },
  route(f, to) {
    to.org(f.org);
    to.channel(f.org, f.channel.stream_id, { create: true });
  },
  notify(f, seq, view) {
    // Public channels are announced to everyone but guests; private ones to administrators,
    // and to each member as they are added (see notifySubscription).
    const ch = view.channel(f.org, f.channel.stream_id)!;
    const viewers = activeUsersWhere(view, f.org, seesNewChannel(f.channel.invite_only));
    return [{ org: f.org, seq, type: 'stream', user_ids: viewers, event: eventJson('stream', { op: 'create', streams: [channelView(ch)] }) }];
  },
});

/** A per-channel (legacy) fact goes to its channel and to each user it names. */
function toChannelAndUsers(f: Subscribed | Unsubscribed, to: FactRecipients): void {
  to.channel(f.org, f.stream_id);
  for (const id of f.user_ids) to.user(f.org, id);
}

const subscribed = fact<Subscribed>({
  type: 'Subscribed',
  apply: {
    channel: (ctx, f) => addSubscribers(ctx, f.user_ids),
    user(ctx, f) {
      const i = f.user_ids.indexOf(ctx.user_id);
      if (i >= 0) join(ctx, f.stream_id, f.props[i]);
    },
  },
  route: toChannelAndUsers,
  notify: (f, seq, view) => notifySubscription(view, f, seq),
});

const unsubscribed = fact<Unsubscribed>({
  type: 'Unsubscribed',
  apply: {
    channel: (ctx, f) => removeSubscribers(ctx, f.user_ids),
    user(ctx, f) {
      if (f.user_ids.includes(ctx.user_id)) leave(ctx, f.stream_id);
    },
  },
  route: toChannelAndUsers,
  notify: (f, seq, view) => notifySubscription(view, f, seq),
});

function notifySubscription(world: StateView, fact: Subscribed | Unsubscribed, seq: number): Delivery[] {
  const ch = world.channel(fact.org, fact.stream_id);
  if (!ch) return [];
  const changed = new Set(fact.user_ids);
  const peers = ch.channel.invite_only ? [...ch.subscribers] : activeUsersWhere(world, fact.org);
  const others = peers.filter((id) => !changed.has(id));
  const peerOp = fact.type === 'Subscribed' ? 'peer_add' : 'peer_remove';
  const out: Delivery[] = [];
  if (fact.type === 'Subscribed') {
    if (ch.channel.invite_only) {
      // Members learn of a private channel when they are added; administrators already know it.
      const org = world.org(fact.org)!;
      const newcomers = fact.user_ids.filter((id) => (org.users.get(id)?.role ?? Role.MEMBER) > Role.ADMIN);
      if (newcomers.length > 0) out.push({ org: fact.org, seq, type: 'stream', user_ids: newcomers, event: eventJson('stream', { op: 'create', streams: [channelView(ch)] }) });
    }
    out.push({
      org: fact.org,
      seq,
      type: 'subscription',
      user_ids: fact.user_ids,
      event: (userId) => {
        const props = fact.props[fact.user_ids.indexOf(userId)];
        return eventJson('subscription', { op: 'add', subscriptions: [subscriptionView(ch, props, true)] });
      },
    });
  } else {
    out.push({ org: fact.org, seq, type: 'subscription', user_ids: fact.user_ids, event: eventJson('subscription', { op: 'remove', subscriptions: [{ name: ch.channel.name, stream_id: ch.channel.stream_id }] }) });
  }
  if (others.length > 0) {
    out.push({ org: fact.org, seq, type: 'subscription', user_ids: others, event: eventJson('subscription', { op: peerOp, stream_ids: [fact.stream_id], user_ids: fact.user_ids }) });
  }
  return out;
}

export const legacySubscriptions = area({ name: 'subscriptions_legacy', commands: [], facts: [channelCreated, subscribed, unsubscribed] });
