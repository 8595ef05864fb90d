/**
 * Channels and subscriptions: subscribing (creating the channels that do not exist
 * yet) and unsubscribing, as Zulip's `bulk_add_subscriptions` and
 * `bulk_remove_subscriptions` (zerver/actions/streams.py), and their events. Elsewhere:
 * a user's own subscriptions, their settings and the `subscription` section of
 * `/register` in subscription_settings.ts; the channel directory's reads (`GET /streams`,
 * topics, members) in channels.ts; the per-channel facts of older logs in
 * subscriptions_legacy.ts.
 *
 * The organization actor decides, because a request may create channels and the
 * organization owns the channel directory; channel and user actors apply the facts.
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest } from '../shared/errors.js';
import { addSubscribers, canAccessChannel, emptyChannel, removeSubscribers } from '../kinds/channel.js';
import { MemoryBodies } from '../core/bodies.js';
import { addChannel, type OrgContext } from '../kinds/organization.js';
import { join, leave } from '../kinds/user.js';
import { defaultChannelsDelivery } from './default_channels.js';
import { renderDescription, upgradeDescription } from '../engines/channel_description.js';
import { mentionResolver, notificationBotDirect, type MessageSent } from './messages.js';
import { checkNewChannelSettings } from '../rules/channel_settings.js';
import { checkChannelName, codePointLength, LIMITS } from '../rules/messages.js';
import { activeUsersWhere, eventJson, listEvent, seesNewChannel } from '../render/events.js';
import { channelView, SubscriptionJson, userView } from '../render/views.js';
import { hiddenBySubscriptionRemovals, INACCESSIBLE_USER_NAME, revealedBySubscriptions } from '../rules/user_access.js';
import { Role, type ChannelRecord, type SubscriptionProps, type UserRecord } from '../shared/types.js';

// Facts: one bulk fact per request (older logs' per-channel facts: subscriptions_legacy.ts).

/** The users one subscription request added to one channel, each with their settings. */
export interface ChannelAdditions { stream_id: number; user_ids: number[]; props: SubscriptionProps[] }
/** The users one unsubscription request removed from one channel. */
export interface ChannelRemovals { stream_id: number; user_ids: number[] }

/**
 * What one `POST /users/me/subscriptions` did: the channels it created and, per
 * channel, the users it added. One fact per request (or per few megabytes of it),
 * so that its events are batched as Zulip batches them and replay does per-request,
 * not per-channel, work. Earlier logs hold `ChannelCreated` + `Subscribed` per
 * channel instead; those still replay.
 */
export interface SubscriptionsAdded {
  type: 'SubscriptionsAdded';
  org: number;
  /** Channels the request created, in request order; they exist before anyone is added. */
  created: ChannelRecord[];
  /** Per channel, in request order; a channel appears at most once. */
  additions: ChannelAdditions[];
  acting_user_id: number;
}
/** What one `DELETE /users/me/subscriptions` did (earlier logs: `Unsubscribed` per channel). */
export interface SubscriptionsRemoved {
  type: 'SubscriptionsRemoved';
  org: number;
  /** Per channel, in request order; a channel appears at most once. */
  removals: ChannelRemovals[];
  acting_user_id: number;
}

/** A bulk subscription fact looked up by channel and by user, built once per fact object. */
export interface SubscriptionIndex {
  /** Channels the fact created, by id. */
  created: Map<number, ChannelRecord>;
  /** The users added to (or removed from) each channel, by channel id, with their settings when added. */
  byChannel: Map<number, ChannelAdditions | ChannelRemovals>;
  /** Per user, in fact order: the channels they joined or left, and their settings when they joined. */
  byUser: Map<number, Array<{ stream_id: number; props: SubscriptionProps | null }>>;
}

const indexes = new WeakMap<SubscriptionsAdded | SubscriptionsRemoved, SubscriptionIndex>();

/**
 * The index of a bulk subscription fact. Every channel and user actor the fact
 * concerns reads its own part from it, so applying a fact of C channels and P users
 * costs O(C + P + pairs), not O(C x P).
 */
export function subscriptionIndex(fact: SubscriptionsAdded | SubscriptionsRemoved): SubscriptionIndex {
  let index = indexes.get(fact);
  if (index) return index;
  index = { created: new Map(), byChannel: new Map(), byUser: new Map() };
  const parts: Array<ChannelAdditions | ChannelRemovals> = fact.type === 'SubscriptionsAdded' ? fact.additions : fact.removals;
  if (fact.type === 'SubscriptionsAdded') for (const c of fact.created) index.created.set(c.stream_id, c);
  for (const part of parts) {
    index.byChannel.set(part.stream_id, part);
    const props = 'props' in part ? part.props : null;
    for (let i = 0; i < part.user_ids.length; i++) {
      const id = part.user_ids[i];
      let mine = index.byUser.get(id);
      if (!mine) index.byUser.set(id, (mine = []));
      mine.push({ stream_id: part.stream_id, props: props ? props[i] : null });
    }
  }
  indexes.set(fact, index);
  return index;
}

/** What `POST /users/me/subscriptions` answers. */
export interface SubscribeResult {
  subscribed: Record<string, string[]>;
  already_subscribed: Record<string, string[]>;
  unauthorized?: string[];
  /** Whether Notification Bot told the new subscribers (present when asked, as by default). */
  new_subscription_messages_sent?: boolean;
}

/** Subscribe users (the actor by default) to channels, creating missing ones. */
export interface Subscribe {
  type: 'SUBSCRIBE';
  org: number;
  actor_id: number;
  /** `color`: the new subscription's color (`PATCH /users/me/subscriptions`); a rejoined one keeps its own. */
  channels: Array<{ name: string; description?: string; color?: string }>;
  /** User ids to subscribe; null means the acting user. */
  principals: number[] | null;
  invite_only: boolean;
  history_public_to_subscribers: boolean | null;
  is_web_public: boolean;
  authorization_errors_fatal: boolean;
  /** The settings of the channels the request creates (`topics_policy`, `folder_id`, the `can_*_group`s). */
  new_channel?: { folder_id: number | null; topics_policy?: string; groups: Record<string, unknown> };
  /** Zulip's `send_new_subscription_messages` (the route's default is true): Notification Bot tells the others it subscribes to existing channels. */
  send_new_subscription_messages?: boolean;
}

/** Unsubscribe users (the actor by default) from channels, by name. */
export interface Unsubscribe {
  type: 'UNSUBSCRIBE';
  org: number;
  actor_id: number;
  names: string[];
  principals: number[] | null;
}

/** The colors Zulip assigns to new subscriptions, in order. */
/** Zulip's subscription colors, handed out in turn. */
export const COLORS = ['#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5', '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063', '#9987e1', '#e4523d', '#c2c2c2', '#4f8de4', '#c6a8ad', '#e7cc4d', '#c8bebf', '#a47462'];

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
 * The most channels one subscribe request may name (Parley's own cap; Zulip has none, but
 * answers such a request in its own thread). Each new channel costs its record, its
 * events and its place in every later `/register` and channel list, all decided and
 * applied on the one event loop: 50,000 in one request held it for seconds.
 */
export const MAX_CHANNELS_PER_REQUEST = 1000;

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
  done(): F[] {
    return this.facts;
  }
}

function activeUser(ctx: OrgContext, id: number): UserRecord {
  const user = ctx.users.get(id);
  if (!user || !user.is_active) throw badRequest(`Invalid user ID: ${id}`);
  return user;
}

function decideSubscribe(ctx: OrgContext, command: Subscribe, env: DecideEnv, world: StateView): Decision<SubscribeResult, SubscriptionsAdded> {
  const actor = activeUser(ctx, command.actor_id);
  // Zulip's add_subscriptions_backend is closed to guests (require_non_guest_user): administrators subscribe them.
  if (actor.role === Role.GUEST) throw badRequest('Not allowed for guest users');
  // Principals are a set: naming a user twice (or by id and by email) subscribes them once.
  const targets = [...new Set(command.principals ?? [actor.user_id])].map((id) => activeUser(ctx, id));
  if (command.channels.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
  if (command.channels.length > MAX_CHANNELS_PER_REQUEST) throw badRequest(`Too many channels in one request (limit: ${MAX_CHANNELS_PER_REQUEST}).`);
  const facts = new BulkFacts<SubscriptionsAdded>(() => ({ type: 'SubscriptionsAdded', org: ctx.org.id, created: [], additions: [], acting_user_id: actor.user_id }));
  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  const unauthorized: string[] = [];
  let nextChannelId = ctx.nextChannelId;
  let nextRecipientId = ctx.nextRecipientId;
  const seen = new Set<string>();
  const subCount = new Map<number, number>();
  // Checked once, before anything is created (Zulip checks the request's settings up front).
  const history = command.history_public_to_subscribers ?? !command.invite_only;
  const settings = checkNewChannelSettings(ctx, actor, { invite_only: command.invite_only, history_public_to_subscribers: history, folder_id: null, groups: {}, ...command.new_channel });
  for (const requested of command.channels) {
    const name = checkChannelName(String(requested.name ?? ''));
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    const existingId = ctx.channelsByName.get(name.toLowerCase());
    let channel: ChannelRecord;
    let subscribers: Set<number>;
    if (existingId === undefined) {
      const description = String(requested.description ?? '');
      if (codePointLength(description) > LIMITS.max_stream_description_length) {
        throw badRequest(`Channel description too long (limit: ${LIMITS.max_stream_description_length} characters).`);
      }
      if (command.is_web_public && actor.role > Role.ADMIN) throw badRequest('Insufficient permission');
      channel = {
        stream_id: nextChannelId++,
        name,
        description,
        rendered_description: renderDescription(description, mentionResolver(ctx)),
        invite_only: command.invite_only,
        is_web_public: command.is_web_public && !command.invite_only,
        history_public_to_subscribers: history,
        date_created: env.now(),
        creator_id: actor.user_id,
        is_archived: false,
        message_retention_days: null,
        recipient_id: nextRecipientId++,
        is_default: false,
        groups: settings.groups,
        folder_id: settings.folder_id,
        topics_policy: settings.topics_policy,
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
      props.push(targetState?.former.get(channel.stream_id) ?? defaultSubscriptionProps(requested.color ?? COLORS[count % COLORS.length]));
    }
    const created = existingId === undefined;
    if (added.length > 0 || created) {
      const fact = facts.room(channelBytes(created ? channel : null, added.length));
      if (created) fact.created.push(channel);
      if (added.length > 0) fact.additions.push({ stream_id: channel.stream_id, user_ids: added, props });
    }
  }
  const value: SubscribeResult = { subscribed, already_subscribed: already };
  if (!command.authorization_errors_fatal) value.unauthorized = unauthorized;
  return { facts: facts.done(), value };
}

/** Channels and subscribers an earlier part of the same decision adds, by lowercase name (`PATCH /users/me/subscriptions`). */
type PendingAdditions = Map<string, { channel: ChannelRecord; added: number[] }>;

function decideUnsubscribe(ctx: OrgContext, command: Unsubscribe, world: StateView, pending?: PendingAdditions): Decision<{ removed: string[]; not_removed: string[] }, SubscriptionsRemoved> {
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
    const fresh = pending?.get(name.toLowerCase());
    const channel = state?.channel ?? fresh?.channel;
    const subscribers = fresh ? new Set([...(state?.subscribers ?? []), ...fresh.added]) : state?.subscribers;
    if (!channel || !subscribers || !canAccessChannel(actor, channel, subscribers)) {
      throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel '${name}' does not exist`, { stream: name });
    }
    const leaving = targets.filter((t) => subscribers.has(t.user_id)).map((t) => t.user_id);
    if (leaving.length === 0) {
      notRemoved.push(channel.name);
      continue;
    }
    removed.push(channel.name);
    facts.room(channelBytes(null, leaving.length)).removals.push({ stream_id: channel.stream_id, user_ids: leaving });
  }
  return { facts: facts.done(), value: { removed, not_removed: notRemoved } };
}

/** Subscribe the actor to some channels and unsubscribe them from others, at once (`PATCH /users/me/subscriptions`). */
export interface UpdateSubscriptions {
  type: 'UPDATE_SUBSCRIPTIONS';
  org: number;
  actor_id: number;
  add: Array<{ name: string; description?: string; color?: string }>;
  delete: string[];
}

/** What `PATCH /users/me/subscriptions` answers: what POST and DELETE would, merged. */
export type UpdateSubscriptionsResult = SubscribeResult & { removed: string[]; not_removed: string[] };

/**
 * Zulip's `update_subscriptions_backend`: the add, then the delete, as
 * `POST`/`DELETE /users/me/subscriptions` decide them, in one decision, so that either
 * both happen or neither (Zulip's one transaction). The delete sees what the add did.
 */
function decideUpdateSubscriptions(ctx: OrgContext, c: UpdateSubscriptions, env: DecideEnv, world: StateView): Decision<UpdateSubscriptionsResult, SubscriptionsAdded | SubscriptionsRemoved> {
  if (c.add.length === 0 && c.delete.length === 0) throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
  // Zulip composes add_subscriptions_backend, which is closed to guests, even when only deleting.
  if (activeUser(ctx, c.actor_id).role === Role.GUEST) throw badRequest('Not allowed for guest users');
  for (const a of c.add) if (a.color !== undefined && !/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(a.color)) throw badRequest('add.color is not a valid hex color code');
  const added: Decision<SubscribeResult, SubscriptionsAdded> = c.add.length === 0
    ? { facts: [], value: { subscribed: {}, already_subscribed: {} } }
    : decideSubscribe(ctx, { type: 'SUBSCRIBE', org: c.org, actor_id: c.actor_id, channels: c.add, principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true }, env, world);
  const pending: PendingAdditions = new Map();
  for (const f of added.facts) {
    for (const channel of f.created) pending.set(channel.name.toLowerCase(), { channel, added: [] });
    for (const part of f.additions) {
      const channel = world.channel(ctx.org.id, part.stream_id)?.channel ?? f.created.find((x) => x.stream_id === part.stream_id)!;
      const entry = pending.get(channel.name.toLowerCase()) ?? { channel, added: [] };
      entry.added.push(...part.user_ids);
      pending.set(channel.name.toLowerCase(), entry);
    }
  }
  const removed: Decision<{ removed: string[]; not_removed: string[] }, SubscriptionsRemoved> = c.delete.length === 0
    ? { facts: [], value: { removed: [], not_removed: [] } }
    : decideUnsubscribe(ctx, { type: 'UNSUBSCRIBE', org: c.org, actor_id: c.actor_id, names: c.delete, principals: null }, world, pending);
  return { facts: [...added.facts, ...removed.facts], value: { ...added.value, ...removed.value } };
}

// Commands.

export const subscribe = command({
  type: 'SUBSCRIBE',
  actor: 'org',
  decide(ctx: OrgContext, c: Subscribe, env: DecideEnv, view: StateView): Decision<SubscribeResult, SubscriptionsAdded | MessageSent> {
    const decided = decideSubscribe(ctx, c, env, view);
    if (c.send_new_subscription_messages !== true) return decided;
    const told = newSubscriptionMessages(ctx, env, ctx.users.get(c.actor_id)!, decided);
    return { facts: [...decided.facts, ...(told ?? [])], value: { ...decided.value, new_subscription_messages_sent: told !== null } };
  },
});

/**
 * Zulip's `send_user_subscribed_direct_messages`: Notification Bot tells each human the
 * actor subscribed to channels that existed before the request which ones; none when more
 * than `max_bulk_new_subscription_messages` users were subscribed (null then).
 */
function newSubscriptionMessages(ctx: OrgContext, env: DecideEnv, actor: UserRecord, decided: Decision<SubscribeResult, SubscriptionsAdded>): MessageSent[] | null {
  const subscribed = Object.entries(decided.value.subscribed);
  if (subscribed.length > LIMITS.max_bulk_new_subscription_messages) return null;
  const created = new Set(decided.facts.flatMap((f) => f.created.map((ch) => ch.name)));
  const mention = `@_**${actor.full_name}|${actor.user_id}**`;
  const out: MessageSent[] = [];
  for (const [key, names] of subscribed) {
    const user = ctx.users.get(Number(key));
    const told = names.filter((name) => !created.has(name)).sort();
    if (!user || user.user_id === actor.user_id || user.is_bot || told.length === 0) continue;
    const content = told.length === 1
      ? `${mention} subscribed you to #**${told[0]}**.`
      : `${mention} subscribed you to the following channels:\n\n${told.map((name) => `* #**${name}**\n`).join('')}`;
    out.push(notificationBotDirect(env, ctx, user, content));
  }
  return out;
}
export const unsubscribe = command({ type: 'UNSUBSCRIBE', actor: 'org', decide: (ctx: OrgContext, c: Unsubscribe, _env: DecideEnv, view: StateView) => decideUnsubscribe(ctx, c, view) });
export const updateSubscriptions = command({ type: 'UPDATE_SUBSCRIPTIONS', actor: 'org', decide: decideUpdateSubscriptions });

const subscriptionsAdded = fact<SubscriptionsAdded>({
  type: 'SubscriptionsAdded',
  apply: {
    org(ctx, f) {
      for (const channel of f.created) addChannel(ctx, channel);
    },
    channel(ctx, f) {
      const index = subscriptionIndex(f);
      const created = index.created.get(ctx.channel.stream_id);
      if (created) ctx.channel = upgradeDescription({ ...created });
      const mine = index.byChannel.get(ctx.channel.stream_id);
      if (mine) addSubscribers(ctx, mine.user_ids);
    },
    user(ctx, f) {
      for (const { stream_id, props } of subscriptionIndex(f).byUser.get(ctx.user_id) ?? []) join(ctx, stream_id, props!);
    },
  },
  route(f, to) {
    // Each actor reads its own part from the fact's index, and gets the fact once.
    const index = subscriptionIndex(f);
    to.org(f.org);
    for (const channel of f.created) to.channel(f.org, channel.stream_id, { create: true });
    for (const streamId of index.byChannel.keys()) if (!index.created.has(streamId)) to.channel(f.org, streamId);
    for (const id of index.byUser.keys()) to.user(f.org, id);
  },
  notify: (f, seq, view) => notifySubscriptionsAdded(view, f, seq),
});

const subscriptionsRemoved = fact<SubscriptionsRemoved>({
  type: 'SubscriptionsRemoved',
  apply: {
    channel(ctx, f) {
      const mine = subscriptionIndex(f).byChannel.get(ctx.channel.stream_id);
      if (mine) removeSubscribers(ctx, mine.user_ids);
    },
    user(ctx, f) {
      for (const { stream_id } of subscriptionIndex(f).byUser.get(ctx.user_id) ?? []) leave(ctx, stream_id);
    },
  },
  route(f, to) {
    const index = subscriptionIndex(f);
    for (const streamId of index.byChannel.keys()) to.channel(f.org, streamId);
    for (const id of index.byUser.keys()) to.user(f.org, id);
  },
  notify: (f, seq, view) => notifySubscriptionsRemoved(view, f, seq),
});

// Events.

const ascending = (a: number, b: number): number => a - b;

/** A channel with no subscribers and no messages yet: how a channel looks when created. */
const PRISTINE = emptyChannel(0, new MemoryBodies());

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
function notifySubscriptionsAdded(world: StateView, fact: SubscriptionsAdded, seq: number): Delivery[] {
  const org = world.org(fact.org)!;
  const index = subscriptionIndex(fact);
  const out: Delivery[] = [];
  // Limited guests learn of the users they now share a channel with, first (Zulip's notify_created_user).
  for (const [guestId, users] of revealedBySubscriptions(world, fact.org, fact.additions)) {
    const viewer = org.users.get(guestId)!;
    for (const u of users) {
      out.push({ org: fact.org, seq, type: 'realm_user', user_ids: [guestId], event: (_id, { client_gravatar: clientGravatar }) => eventJson('realm_user', { op: 'add', person: userView(u, { profileData: true, clientGravatar, viewer }) }) });
    }
  }
  for (const inviteOnly of [false, true]) {
    const created = fact.created.filter((c) => c.invite_only === inviteOnly).map((channel) => JSON.stringify(channelView({ ...PRISTINE, channel })));
    if (created.length > 0) out.push({ org: fact.org, seq, type: 'stream', user_ids: activeUsersWhere(world, fact.org, seesNewChannel(inviteOnly)), event: listEvent('stream', 'create', 'streams', created) });
  }
  if (fact.created.some((c) => c.is_default)) {
    out.push(defaultChannelsDelivery(world, fact.org, seq));
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
function notifySubscriptionsRemoved(world: StateView, fact: SubscriptionsRemoved, seq: number): Delivery[] {
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
  // Limited guests who no longer share anything with a user who left see them as "Unknown user".
  for (const [userId, guests] of hiddenBySubscriptionRemovals(world, fact.org, fact.removals)) {
    out.push({ org: fact.org, seq, type: 'realm_user', user_ids: guests, event: eventJson('realm_user', { op: 'remove', person: { user_id: userId, full_name: INACCESSIBLE_USER_NAME } }) });
  }
  return out;
}

/**
 * `peer_add`/`peer_remove` for the channels of one request. Who is told is unchanged
 * from the per-channel events: everyone active for a public channel, the remaining
 * subscribers of a private one, never the users who changed. Channels with the same
 * changed users and the same recipients share one event (Zulip's grouping of public
 * channels, extended to private channels whose subscribers coincide).
 */
function peerEvents(world: StateView, orgId: number, seq: number, op: 'peer_add' | 'peer_remove', parts: Array<ChannelAdditions | ChannelRemovals>, out: Delivery[]): void {
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
        recipients = (active ??= activeUsersWhere(world, orgId)).filter((id) => !changed.has(id));
      }
      groups.set(key, (group = { stream_ids: [], user_ids: altered, recipients }));
    }
    group.stream_ids.push(part.stream_id);
  }
  for (const g of groups.values()) {
    if (g.recipients.length === 0) continue;
    out.push({ org: orgId, seq, type: 'subscription', user_ids: g.recipients, event: eventJson('subscription', { op, stream_ids: g.stream_ids.sort(ascending), user_ids: g.user_ids }) });
  }
}

export const subscriptions = area({
  name: 'subscriptions',
  commands: [subscribe, unsubscribe, updateSubscriptions],
  facts: [subscriptionsAdded, subscriptionsRemoved],
});
