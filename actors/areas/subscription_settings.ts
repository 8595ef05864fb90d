/**
 * A user's own subscriptions: what `GET /users/me/subscriptions` and the `subscription`
 * section of `/register` show (with `unsubscribed` and `never_subscribed`), and the
 * settings a user changes on them (`POST /users/me/subscriptions/properties`, Zulip's
 * `do_change_subscription_property`). Subscribing and unsubscribing are in
 * subscriptions.ts.
 */
import { area, command, type Delivery, userFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { canAccessChannel } from '../kinds/channel.js';
import type { UserContext } from '../kinds/user.js';
import { MAX_CHANNELS_PER_REQUEST } from './subscriptions.js';
import { eventJson } from '../render/events.js';
import { channelView, subscriptionView } from '../render/views.js';
import type { SubscriptionProps, UserRecord } from '../shared/types.js';

// Reads: a user's subscriptions, as GET /users/me/subscriptions and register show them.

/** A user's subscriptions, as `GET /users/me/subscriptions` and `register` show them. */
export function listSubscriptions(rt: StateView, org: number, userId: number, withSubscribers: boolean): Record<string, unknown>[] {
  const me = rt.user(org, userId);
  const out: Record<string, unknown>[] = [];
  for (const [streamId, props] of me?.subs ?? []) {
    const ch = rt.channel(org, streamId);
    if (ch) out.push(subscriptionView(ch, props, withSubscribers));
  }
  return out.sort((a, b) => (a.stream_id as number) - (b.stream_id as number));
}

/** Channels a user left, for `register`'s `unsubscribed`. */
export function listUnsubscribed(rt: StateView, org: number, userId: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const [streamId, props] of rt.user(org, userId)?.former ?? []) {
    const ch = rt.channel(org, streamId);
    if (ch) out.push(subscriptionView(ch, props, true));
  }
  return out.sort((a, b) => (a.stream_id as number) - (b.stream_id as number));
}

/** Channels a user can see and was never subscribed to, for `register`'s `never_subscribed`. */
export function listNeverSubscribed(rt: StateView, org: number, user: UserRecord): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const former = rt.user(org, user.user_id)?.former;
  for (const id of rt.channelIdsOf(org)) {
    const ch = rt.channel(org, id)!;
    if (ch.subscribers.has(user.user_id) || former?.has(id) || !canAccessChannel(user, ch.channel, ch.subscribers)) continue;
    out.push({ ...channelView(ch), subscribers: [...ch.subscribers].sort((a, b) => a - b) });
  }
  return out;
}

// A user's own settings of their subscriptions (Zulip's `do_change_subscription_property`).

/** Settings a user may change on their subscription, with how each value is checked. */
const PROPERTY_CHECKS: Record<string, (value: unknown) => boolean> = {
  color: (v) => typeof v === 'string' && /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(v),
  is_muted: (v) => typeof v === 'boolean',
  in_home_view: (v) => typeof v === 'boolean',
  pin_to_top: (v) => typeof v === 'boolean',
  desktop_notifications: (v) => typeof v === 'boolean',
  audible_notifications: (v) => typeof v === 'boolean',
  push_notifications: (v) => typeof v === 'boolean',
  email_notifications: (v) => typeof v === 'boolean',
  wildcard_mentions_notify: (v) => typeof v === 'boolean',
};

/**
 * The most changes one `POST /users/me/subscriptions/properties` may ask for (Parley's
 * own cap; Zulip has none): as many as the channels one subscribe request may name.
 * Each change is checked, applied and told as an event of its own; 40,000 held the
 * event loop for half a second. The route's schema refuses more, before any is checked.
 */
export const MAX_PROPERTY_CHANGES_PER_REQUEST = MAX_CHANNELS_PER_REQUEST;

/** One requested change, as `subscription_data` lists them. */
export interface PropertyChange {
  stream_id: number;
  property: string;
  value: unknown;
}

/** A user changed settings of their subscriptions (`in_home_view` is stored as `is_muted`). */
export interface SubscriptionPropertiesChanged {
  type: 'SubscriptionPropertiesChanged';
  org: number;
  user_id: number;
  changes: Array<{ stream_id: number; property: keyof SubscriptionProps; value: SubscriptionProps[keyof SubscriptionProps] }>;
}

/** Change settings of the user's own subscriptions (decided by the user's actor). */
export interface ChangeSubscriptionProperties {
  type: 'CHANGE_SUBSCRIPTION_PROPERTIES';
  user_id: number;
  org: number;
  changes: PropertyChange[];
}

export const changeSubscriptionProperties = command({
  type: 'CHANGE_SUBSCRIPTION_PROPERTIES',
  actor: 'user',
  decide(ctx: UserContext, c: ChangeSubscriptionProperties, _env: DecideEnv, view: StateView): Decision<{ subscription_data: PropertyChange[] }, SubscriptionPropertiesChanged> {
    const user = view.org(c.org)?.users.get(ctx.user_id);
    if (!user) throw badRequest('Invalid user');
    const changes: SubscriptionPropertiesChanged['changes'] = [];
    for (const change of c.changes) {
      const check = Object.hasOwn(PROPERTY_CHECKS, change.property) ? PROPERTY_CHECKS[change.property] : undefined;
      if (!check) throw badRequest(`Unknown subscription property: ${change.property}`);
      const ch = view.channel(c.org, change.stream_id);
      if (!ch || !canAccessChannel(user, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
      if (!ctx.subs.has(change.stream_id)) throw badRequest(`Not subscribed to channel ID ${change.stream_id}`);
      if (!check(change.value)) throw badRequest(change.property === 'color' ? 'color is not a valid hex color code' : `${change.property} is not a boolean`);
      if (change.property === 'in_home_view') changes.push({ stream_id: change.stream_id, property: 'is_muted', value: !change.value });
      else changes.push({ stream_id: change.stream_id, property: change.property as keyof SubscriptionProps, value: change.value as SubscriptionProps[keyof SubscriptionProps] });
    }
    const facts: SubscriptionPropertiesChanged[] = changes.length === 0 ? [] : [{ type: 'SubscriptionPropertiesChanged', org: c.org, user_id: ctx.user_id, changes }];
    return { facts, value: { subscription_data: c.changes } };
  },
});

const subscriptionPropertiesChanged = userFact<SubscriptionPropertiesChanged>({
  type: 'SubscriptionPropertiesChanged',
  apply(ctx, f) {
    for (const change of f.changes) {
      const props = ctx.subs.get(change.stream_id);
      // Settings are replaced, never changed in place.
      if (props) ctx.subs.set(change.stream_id, { ...props, [change.property]: change.value });
    }
  },
  notify(f, seq) {
    // One event per change, and for `is_muted` its legacy inverse `in_home_view` too, as Zulip sends.
    const out: Delivery[] = [];
    for (const change of f.changes) {
      const update = (property: string, value: unknown) =>
        out.push({ org: f.org, seq, type: 'subscription', user_ids: [f.user_id], event: eventJson('subscription', { op: 'update', property, value, stream_id: change.stream_id }) });
      update(change.property, change.value);
      if (change.property === 'is_muted') update('in_home_view', !change.value);
    }
    return out;
  },
});

export const subscriptionSettings = area({
  name: 'subscription_settings',
  commands: [changeSubscriptionProperties],
  facts: [subscriptionPropertiesChanged],
  register: [
    {
      types: ['subscription'],
      fill(state, r, view) {
        // A client without the archived_channels capability is told nothing of archived channels.
        const shown = (list: Record<string, unknown>[]) => (r.caps.archived_channels ? list : list.filter((s) => s.is_archived !== true));
        state.subscriptions = shown(listSubscriptions(view, r.org.id, r.user.user_id, r.includeSubscribers));
        state.unsubscribed = shown(listUnsubscribed(view, r.org.id, r.user.user_id));
        state.never_subscribed = shown(listNeverSubscribed(view, r.org.id, r.user));
      },
    },
  ],
});
