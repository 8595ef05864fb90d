/**
 * Who may access whom under `can_access_all_users_group` (Zulip's
 * `zerver/lib/users.py`: `check_can_access_user`, `get_inaccessible_user_ids`,
 * `get_data_for_inaccessible_user`). A guest outside the group accesses only
 * themself, bots, and the users they share a channel or a direct message
 * conversation with; the others are refused, or named as "Unknown user" where a
 * payload must name them. The accessible set is `accessibleUserIds` of
 * `presence.ts`, computed only for such a guest.
 */
import { BOT_DOMAIN } from './bots.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { accessibleUserIds, addGroupDirectPartners, canAccessAllUsers } from './presence.js';
import { Role, type OrgRecord, type UserRecord } from '../shared/types.js';

/** Zulip's `UserProfile.INACCESSIBLE_USER_NAME`. */
export const INACCESSIBLE_USER_NAME = 'Unknown user';

/** Whether one user is accessible to a given viewer. */
export type AccessCheck = (user: UserRecord) => boolean;

/**
 * The viewer's access check, or null when the viewer may access every user (every
 * non-guest, and every guest while `can_access_all_users_group` includes them).
 */
export function userAccessOf(view: StateView, orgId: number, viewer: UserRecord): AccessCheck | null {
  const org = view.org(orgId);
  if (!org || canAccessAllUsers(org, viewer)) return null;
  const ids = accessibleUserIds(view, orgId, viewer);
  // Bots are accessible to all (Zulip's `user_access_restricted_in_realm` is false for them).
  return (user) => user.is_bot || ids.has(user.user_id);
}

/** Zulip's `check_can_access_user` as API code uses it: 400 "Insufficient permission" otherwise. */
export function accessUser(view: StateView, orgId: number, viewer: UserRecord, target: UserRecord): void {
  if (target.user_id === viewer.user_id || target.is_bot) return;
  const check = userAccessOf(view, orgId, viewer);
  if (check && !check(target)) throw badRequest('Insufficient permission');
}

/** The placeholder email of an inaccessible user (`user{id}@` the organization's fake email domain). */
export function inaccessibleUserEmail(org: OrgRecord, userId: number): string {
  return `user${userId}@${org.subdomain ? `${org.subdomain}.` : ''}${BOT_DOMAIN}`;
}

/** Zulip's `get_avatar_for_inaccessible_user`. */
export const INACCESSIBLE_USER_AVATAR_URL = '/static/images/unknown-user-avatar.png';

/** A message's sender the viewer may not access, as Zulip's `finalize_payload` names them. */
export function inaccessibleSender(org: OrgRecord, userId: number): { full_name: string; email: string; avatar_url: string } {
  return { full_name: INACCESSIBLE_USER_NAME, email: inaccessibleUserEmail(org, userId), avatar_url: INACCESSIBLE_USER_AVATAR_URL };
}

/** An inaccessible user as payloads name them (Zulip's `get_data_for_inaccessible_user`). */
export function inaccessibleUserView(org: OrgRecord, userId: number): Record<string, unknown> {
  return {
    email: inaccessibleUserEmail(org, userId),
    user_id: userId,
    avatar_version: 1,
    is_admin: false,
    is_owner: false,
    is_guest: false,
    role: Role.MEMBER,
    is_bot: false,
    full_name: INACCESSIBLE_USER_NAME,
    timezone: '',
    is_active: true,
    date_joined: '1970-01-01T00:00:00+00:00',
    delivery_email: null,
    avatar_url: INACCESSIBLE_USER_AVATAR_URL,
    profile_data: {},
    is_imported_stub: false,
  };
}

/** Zulip's `check_sender_can_access_recipients`: a limited guest may address only users they may access. */
export function checkCanAccessRecipients(view: StateView, orgId: number, sender: UserRecord, recipients: readonly UserRecord[]): void {
  const access = userAccessOf(view, orgId, sender);
  if (access && recipients.some((u) => !access(u))) throw badRequest('You do not have permission to access some of the recipients.');
}

/**
 * The active users who may access `target` (Zulip's `get_user_ids_who_can_access_user`):
 * everyone for a bot or while guests access all users; otherwise everyone but the
 * limited guests who share no channel or conversation with the target. The target's
 * own shared set is computed once, and only when a limited guest is met.
 */
export function usersWhoCanAccess(view: StateView, orgId: number, target: UserRecord): number[] {
  const org = view.org(orgId);
  if (!org) return [];
  let shared: Set<number> | undefined;
  const ids: number[] = [];
  for (const u of org.users.values()) {
    if (!u.is_active) continue;
    if (target.is_bot || u.user_id === target.user_id || canAccessAllUsers(org, u)) ids.push(u.user_id);
    else if ((shared ??= accessibleUserIds(view, orgId, target)).has(u.user_id)) ids.push(u.user_id);
  }
  return ids;
}

/**
 * The users a direct message introduces to the limited guests among its participants,
 * by guest (Zulip's `get_recipients_for_user_creation_events`). In a 1:1 conversation,
 * the guest it is addressed to learns of a sender they may not access, at every
 * message, since a 1:1 conversation grants no access. In a group, each guest learns of
 * the others they could not access before this message. (Zulip also spares the users
 * a guest exchanged 1:1 messages with; their client may hold them as "Unknown user",
 * so Parley sends them too and the client converges on a fresh register.)
 */
export function revealedByDirectMessage(view: StateView, orgId: number, messageId: number, senderId: number, participants: readonly number[]): Map<number, UserRecord[]> {
  const out = new Map<number, UserRecord[]>();
  const org = view.org(orgId);
  if (!org || participants.length < 2) return out;
  const learners = participants.length === 2 ? participants.filter((id) => id !== senderId) : participants;
  for (const guestId of learners) {
    const guest = org.users.get(guestId);
    if (!guest || canAccessAllUsers(org, guest)) continue;
    const before = accessibleUserIds(view, orgId, guest, messageId);
    const revealed: UserRecord[] = [];
    for (const id of participants.length === 2 ? [senderId] : participants) {
      const u = org.users.get(id);
      if (u && !u.is_bot && !before.has(id)) revealed.push(u);
    }
    if (revealed.length > 0) out.set(guestId, revealed);
  }
  return out;
}

/**
 * The users each limited guest newly accesses because of the subscriptions just added
 * (Zulip's `send_user_creation_events_on_adding_subscriptions`): read from the state
 * after them, with the added pairs taken out to see the state before.
 */
export function revealedBySubscriptions(view: StateView, orgId: number, additions: ReadonlyArray<{ stream_id: number; user_ids: readonly number[] }>): Map<number, UserRecord[]> {
  const out = new Map<number, UserRecord[]>();
  const org = view.org(orgId);
  if (!org) return out;
  const addedTo = new Map<number, Set<number>>();
  const guests = new Set<number>();
  for (const a of additions) {
    addedTo.set(a.stream_id, new Set(a.user_ids));
    for (const id of view.channel(orgId, a.stream_id)?.subscribers ?? []) {
      const u = org.users.get(id);
      if (u?.role === Role.GUEST && u.is_active && !canAccessAllUsers(org, u)) guests.add(id);
    }
  }
  for (const guestId of guests) {
    const before = new Set<number>([guestId]);
    for (const streamId of view.user(orgId, guestId)?.subs.keys() ?? []) {
      const added = addedTo.get(streamId);
      if (added?.has(guestId)) continue;
      for (const id of view.channel(orgId, streamId)?.subscribers ?? []) if (!added?.has(id)) before.add(id);
    }
    addGroupDirectPartners(org, guestId, before);
    const revealed: UserRecord[] = [];
    for (const id of accessibleUserIds(view, orgId, org.users.get(guestId)!)) {
      const u = org.users.get(id);
      if (u && !before.has(id) && !u.is_bot) revealed.push(u);
    }
    if (revealed.length > 0) out.set(guestId, revealed);
  }
  return out;
}

/**
 * The limited guests who lose access to a user that left channels they are in (Zulip's
 * `send_user_remove_events_on_removing_subscriptions`), by that user: read from the
 * state after the removals.
 */
export function hiddenBySubscriptionRemovals(view: StateView, orgId: number, removals: ReadonlyArray<{ stream_id: number; user_ids: readonly number[] }>): Map<number, number[]> {
  const out = new Map<number, number[]>();
  const org = view.org(orgId);
  if (!org) return out;
  const sets = new Map<number, Set<number> | null>();
  const accessOf = (guestId: number): Set<number> | null => {
    let s = sets.get(guestId);
    if (s === undefined) {
      const g = org.users.get(guestId);
      s = g && g.role === Role.GUEST && g.is_active && !canAccessAllUsers(org, g) ? accessibleUserIds(view, orgId, g) : null;
      sets.set(guestId, s);
    }
    return s;
  };
  const leftBy = new Map<number, Set<number>>();
  for (const r of removals) {
    for (const id of r.user_ids) {
      if (org.users.get(id)?.is_bot !== false) continue;
      let channels = leftBy.get(id);
      if (!channels) leftBy.set(id, (channels = new Set()));
      channels.add(r.stream_id);
    }
  }
  for (const [userId, channels] of leftBy) {
    const losing = new Set<number>();
    for (const streamId of channels) {
      for (const id of view.channel(orgId, streamId)?.subscribers ?? []) {
        const access = id === userId ? null : accessOf(id);
        if (access && !access.has(userId)) losing.add(id);
      }
    }
    if (losing.size > 0) out.set(userId, [...losing]);
  }
  return out;
}
