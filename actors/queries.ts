/**
 * Read-only questions the HTTP layer asks. They read actor snapshots synchronously
 * and return API-shaped data; they never change state.
 */
import { ApiError, badRequest } from './errors.js';
import type { StateView } from './core/state_view.js';
import { canReadChannelMessage } from './message_query.js';
import { canAccessChannel, received } from './kinds/channel.js';
import { userByEmail } from './kinds/organization.js';
import type { MessageRecord, UserRecord } from './types.js';
import { flagsOf } from './kinds/user.js';
import { channelView, messageView, subscriptionView, userView, type MessageViewOptions } from './render/views.js';
import { Role } from './types.js';

/** A user of an organization by email, active or not. */
export function findUserByEmail(rt: StateView, org: number, email: string): UserRecord | undefined {
  const ctx = rt.org(org);
  return ctx && userByEmail(ctx, email);
}

/** Every user of an organization, as `GET /users` lists them. */
export function listUsers(rt: StateView, org: number): Record<string, unknown>[] {
  return [...rt.org(org)!.users.values()].map(userView);
}

/** One user by id, or `BAD_REQUEST` "No such user". */
export function getUser(rt: StateView, org: number, userId: number): Record<string, unknown> {
  const user = rt.org(org)!.users.get(userId);
  if (!user) throw badRequest('No such user');
  return userView(user);
}

/**
 * One user by email, as `GET /users/{email}` finds them: by their email (any case),
 * else by the dummy form `user{id}@{host}` Zulip still accepts; deactivated users
 * included, as by id. `BAD_REQUEST` "No such user" otherwise.
 */
export function getUserByEmail(rt: StateView, org: number, email: string): Record<string, unknown> {
  const ctx = rt.org(org)!;
  const dummy = /^user([0-9]{1,15})@[^@]+$/i.exec(email);
  const user = userByEmail(ctx, email) ?? (dummy ? ctx.users.get(Number(dummy[1])) : undefined);
  if (!user) throw badRequest('No such user');
  return userView(user);
}

/**
 * One channel by id, as `GET /streams/{stream_id}` shows it, if the viewer may see
 * it exists (Zulip's `access_stream_by_id` without content access: subscribers, and
 * non-guests for public channels, administrators for private ones).
 */
export function getChannel(rt: StateView, org: number, viewer: UserRecord, streamId: number): Record<string, unknown> {
  const ch = rt.channel(org, streamId);
  if (!ch || !canAccessChannel(viewer, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
  return channelView(ch);
}

/** The channels a user can see, as `GET /streams` lists them. */
export function listChannels(rt: StateView, org: number, viewer: UserRecord, opts: { include_public: boolean; include_subscribed: boolean; include_all: boolean }): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const id of rt.channelIdsOf(org)) {
    const ch = rt.channel(org, id)!;
    const subscribed = ch.subscribers.has(viewer.user_id);
    const isPublic = !ch.channel.invite_only && viewer.role !== Role.GUEST;
    const visible = (opts.include_all && viewer.role <= Role.ADMIN) || (opts.include_subscribed && subscribed) || (opts.include_public && isPublic);
    if (visible && !ch.channel.is_archived) out.push(channelView(ch));
  }
  return out.sort((a, b) => (a.stream_id as number) - (b.stream_id as number));
}

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

/** Finds a channel id by name, or `STREAM_DOES_NOT_EXIST`. */
export function channelIdByName(rt: StateView, org: number, name: string): number {
  const id = rt.org(org)!.channelsByName.get(name.trim().toLowerCase());
  if (id === undefined) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel '${name}' does not exist`, { stream: name });
  return id;
}

/** A channel id by name, if the user may know the channel exists; else "Invalid channel name". */
export function visibleChannelId(rt: StateView, org: number, user: UserRecord, name: string): number {
  const id = rt.org(org)!.channelsByName.get(name.trim().toLowerCase());
  const ch = id === undefined ? undefined : rt.channel(org, id);
  if (!ch || !canAccessChannel(user, ch.channel, ch.subscribers)) throw badRequest(`Invalid channel name '${name}'`);
  return id!;
}

/** Checks that a channel id exists, or `STREAM_DOES_NOT_EXIST`. */
export function checkChannelId(rt: StateView, org: number, id: number): number {
  if (!rt.channel(org, id)) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel with ID '${id}' does not exist`, { stream_id: id });
  return id;
}

/** Resolves user ids or emails to ids of users of the organization. */
export function resolveUserIds(rt: StateView, org: number, items: Array<string | number>): number[] {
  const ctx = rt.org(org)!;
  return items.map((item) => {
    if (typeof item === 'number') {
      if (!ctx.users.has(item)) throw badRequest(`Invalid user ID ${item}`);
      return item;
    }
    const user = userByEmail(ctx, item);
    if (!user) throw badRequest(`Invalid email '${item}'`);
    return user.user_id;
  });
}

/** A stored message the user may read, or `BAD_REQUEST` "Invalid message(s)". */
export function accessMessage(rt: StateView, org: number, viewer: UserRecord, id: number): MessageRecord {
  const ctx = rt.org(org)!;
  const streamId = ctx.messageChannel.get(id);
  if (streamId !== undefined) {
    const ch = rt.channel(org, streamId);
    const m = ch?.messages.get(id);
    if (m && canReadChannelMessage(ch!, viewer, id)) return m;
  } else {
    const m = ctx.directMessages.get(id);
    if (m && m.dm_user_ids!.includes(viewer.user_id)) return m;
  }
  throw badRequest('Invalid message(s)');
}

/**
 * A message with the viewer's flags, as `GET /messages` shows it. A channel message the
 * viewer never received is `historical` (and read), as in Zulip.
 */
export function messageForViewer(rt: StateView, org: number, viewerId: number, m: MessageRecord, opts: MessageViewOptions): Record<string, unknown> {
  const orgCtx = rt.org(org)!;
  const ch = m.stream_id === null ? undefined : rt.channel(org, m.stream_id);
  const me = rt.user(org, viewerId);
  const flags = me ? flagsOf(me, m.id) : ['read'];
  if (ch && !received(ch, viewerId, m.id)) {
    if (!flags.includes('read')) flags.unshift('read');
    flags.push('historical');
  }
  return { ...messageView(orgCtx, m, ch?.channel.name ?? '', opts), flags };
}
