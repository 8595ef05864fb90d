/**
 * Subscribing and unsubscribing, decided by the organization actor because a
 * subscription request may create channels, and the organization owns the channel
 * directory. Channel and user actors apply the resulting facts.
 */
import { ApiError, badRequest } from './errors.js';
import type { Fact, SubscriptionsAdded, SubscriptionsRemoved } from './facts.js';
import type { Decision, DecideEnv } from './logic.js';
import { checkChannelName, codePointLength, LIMITS } from './message_rules.js';
import type { OrgContext } from './organization.js';
import { Role, type ChannelRecord, type SubscriptionProps, type UserRecord } from './types.js';
import type { World } from './world.js';
import { escapeHtml } from './markdown.js';

/** Subscribe users (the actor by default) to channels, creating missing ones. */
export interface Subscribe {
  type: 'SUBSCRIBE';
  actor_id: number;
  channels: Array<{ name: string; description?: string }>;
  /** User ids to subscribe; null means the acting user. */
  principals: number[] | null;
  invite_only: boolean;
  history_public_to_subscribers: boolean | null;
  is_web_public: boolean;
  authorization_errors_fatal: boolean;
}

/** Unsubscribe users (the actor by default) from channels, by name. */
export interface Unsubscribe {
  type: 'UNSUBSCRIBE';
  actor_id: number;
  names: string[];
  principals: number[] | null;
}

/** The colors Zulip assigns to new subscriptions, in order. */
const COLORS = ['#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5', '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063', '#9987e1', '#e4523d', '#c2c2c2', '#4f8de4', '#c6a8ad', '#e7cc4d', '#c8bebf', '#a47462'];

export function defaultSubscriptionProps(color: string): SubscriptionProps {
  return {
    color,
    is_muted: false,
    pin_to_top: false,
    desktop_notifications: null,
    audible_notifications: null,
    push_notifications: null,
    email_notifications: null,
    wildcard_mentions_notify: null,
  };
}

/**
 * Most bytes a bulk subscription fact may take, by the estimate below: a request
 * larger than this is logged as several facts (each with its own events), so that no
 * log record comes near `MAX_RECORD_BYTES` (64 MiB). 5,000 new channels for one user
 * estimate at about 4 MiB: one fact.
 */
export const BULK_FACT_BUDGET_BYTES = 16 * 1024 * 1024;

/**
 * An upper bound on what a channel adds to a bulk fact in msgpack: its record if it is
 * created (every UTF-16 unit of its text at most 3 bytes), and per user an id and a
 * set of subscription settings (about 180 bytes).
 */
function channelBytes(created: ChannelRecord | null, users: number): number {
  const record = created ? 512 + 3 * (created.name.length + created.description.length + created.rendered_description.length) : 0;
  return 16 + record + 256 * users;
}

/** Bulk facts of one decision, a new one begun whenever the next channel would overflow the budget. */
class BulkFacts<F extends SubscriptionsAdded | SubscriptionsRemoved> {
  private readonly facts: F[] = [];
  private bytes = 0;
  constructor(private readonly fresh: () => F) {}
  /** The fact to add a channel of `bytes` to. */
  room(bytes: number): F {
    if (this.facts.length === 0 || (this.bytes > 0 && this.bytes + bytes > BULK_FACT_BUDGET_BYTES)) {
      this.facts.push(this.fresh());
      this.bytes = 0;
    }
    this.bytes += bytes;
    return this.facts[this.facts.length - 1];
  }
  done(): Fact[] {
    return this.facts;
  }
}

function activeUser(ctx: OrgContext, id: number): UserRecord {
  const user = ctx.users.get(id);
  if (!user || !user.is_active) throw badRequest(`Invalid user ID: ${id}`);
  return user;
}

/** Whether `user` may see a channel's existence and subscribe themselves. */
export function canAccessChannel(user: UserRecord, channel: ChannelRecord, subscribers: Set<number>): boolean {
  if (subscribers.has(user.user_id)) return true;
  if (channel.invite_only) return user.role <= Role.ADMIN;
  return user.role !== Role.GUEST;
}

export function decideSubscribe(ctx: OrgContext, command: Subscribe, env: DecideEnv, world: World): Decision {
  const actor = activeUser(ctx, command.actor_id);
  // Principals are a set: naming a user twice (or by id and by email) subscribes them once.
  const targets = [...new Set(command.principals ?? [actor.user_id])].map((id) => activeUser(ctx, id));
  if (targets.some((t) => t.user_id !== actor.user_id) && actor.role === Role.GUEST) throw badRequest('Insufficient permission');
  if (command.channels.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
  const facts = new BulkFacts<SubscriptionsAdded>(() => ({ type: 'SubscriptionsAdded', org: ctx.org.id, created: [], additions: [], acting_user_id: actor.user_id }));
  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  const unauthorized: string[] = [];
  let nextChannelId = ctx.nextChannelId;
  let nextRecipientId = ctx.nextRecipientId;
  const seen = new Set<string>();
  const subCount = new Map<number, number>();
  for (const requested of command.channels) {
    const name = checkChannelName(String(requested.name ?? ''));
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    const existingId = ctx.channelsByName.get(name.toLowerCase());
    let channel: ChannelRecord;
    let subscribers: Set<number>;
    if (existingId === undefined) {
      if (actor.role === Role.GUEST) throw badRequest('Insufficient permission');
      const description = String(requested.description ?? '');
      if (codePointLength(description) > LIMITS.max_stream_description_length) {
        throw badRequest(`Channel description too long (limit: ${LIMITS.max_stream_description_length} characters).`);
      }
      if (command.is_web_public && actor.role > Role.ADMIN) throw badRequest('Insufficient permission');
      channel = {
        stream_id: nextChannelId++,
        name,
        description,
        rendered_description: description ? `<p>${escapeHtml(description)}</p>` : '',
        invite_only: command.invite_only,
        is_web_public: command.is_web_public && !command.invite_only,
        history_public_to_subscribers: command.history_public_to_subscribers ?? !command.invite_only,
        date_created: env.now(),
        creator_id: actor.user_id,
        is_archived: false,
        message_retention_days: null,
        recipient_id: nextRecipientId++,
        is_default: false,
      };
      subscribers = new Set();
    } else {
      const state = world.channel(ctx.org.id, existingId)!;
      channel = state.channel;
      subscribers = state.subscribers;
      if (!canAccessChannel(actor, channel, subscribers)) {
        if (command.authorization_errors_fatal) throw badRequest(`Unable to access channel (${channel.name}).`);
        unauthorized.push(channel.name);
        continue;
      }
    }
    const added: number[] = [];
    const props: SubscriptionProps[] = [];
    for (const target of targets) {
      const key = String(target.user_id);
      if (subscribers.has(target.user_id)) {
        (already[key] ??= []).push(channel.name);
        continue;
      }
      (subscribed[key] ??= []).push(channel.name);
      const targetState = world.user(ctx.org.id, target.user_id);
      const count = subCount.get(target.user_id) ?? targetState?.subs.size ?? 0;
      subCount.set(target.user_id, count + 1);
      added.push(target.user_id);
      // Rejoining a channel brings back the settings the user had there.
      props.push(targetState?.former.get(channel.stream_id) ?? defaultSubscriptionProps(COLORS[count % COLORS.length]));
    }
    const created = existingId === undefined;
    if (added.length > 0 || created) {
      const fact = facts.room(channelBytes(created ? channel : null, added.length));
      if (created) fact.created.push(channel);
      if (added.length > 0) fact.additions.push({ stream_id: channel.stream_id, user_ids: added, props });
    }
  }
  const value: Record<string, unknown> = { subscribed, already_subscribed: already };
  if (!command.authorization_errors_fatal) value.unauthorized = unauthorized;
  return { facts: facts.done(), value };
}

export function decideUnsubscribe(ctx: OrgContext, command: Unsubscribe, world: World): Decision {
  const actor = activeUser(ctx, command.actor_id);
  const targets = [...new Set(command.principals ?? [actor.user_id])].map((id) => {
    const user = ctx.users.get(id);
    if (!user) throw badRequest(`Invalid user ID: ${id}`);
    return user;
  });
  if (targets.some((t) => t.user_id !== actor.user_id) && actor.role > Role.ADMIN) throw badRequest('Insufficient permission');
  if (command.names.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
  const facts = new BulkFacts<SubscriptionsRemoved>(() => ({ type: 'SubscriptionsRemoved', org: ctx.org.id, removals: [], acting_user_id: actor.user_id }));
  const removed: string[] = [];
  const notRemoved: string[] = [];
  const seen = new Set<string>();
  for (const raw of command.names) {
    const name = String(raw).trim();
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    const id = ctx.channelsByName.get(name.toLowerCase());
    const state = id === undefined ? undefined : world.channel(ctx.org.id, id);
    if (!state || !canAccessChannel(actor, state.channel, state.subscribers)) {
      throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel '${name}' does not exist`, { stream: name });
    }
    const leaving = targets.filter((t) => state.subscribers.has(t.user_id)).map((t) => t.user_id);
    if (leaving.length === 0) {
      notRemoved.push(state.channel.name);
      continue;
    }
    removed.push(state.channel.name);
    facts.room(channelBytes(null, leaving.length)).removals.push({ stream_id: state.channel.stream_id, user_ids: leaving });
  }
  return { facts: facts.done(), value: { removed, not_removed: notRemoved } };
}
