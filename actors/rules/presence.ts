/**
 * Presence rules and renditions (Zulip's `zerver/lib/presence.py`): the thresholds,
 * the modern and legacy formats, which rows a fetch returns, and who may see whom
 * when `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE` is on. The area
 * (`actors/areas/presence.ts`) decides updates; this module only reads.
 */
import type { StateView } from '../core/state_view.js';
import { hasGroupPermission } from './group_settings.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from './realm_settings.js';
import { Role, type UserRecord } from '../shared/types.js';

/** One user's presence. Times are Unix seconds. */
export interface PresenceRow {
  /** When the user was last reported active; null: never (shown as their join date). */
  active: number | null;
  /** When a client of the user last reported in at all (Zulip's `last_connected_time`). */
  connected: number;
  /** The `presenceLastUpdateId` this row was last changed at. */
  update_id: number;
}

/** Zulip's `OFFLINE_THRESHOLD_SECS`: older timestamps show as offline. */
export const OFFLINE_THRESHOLD_SECS = 200;
/** Zulip's `PRESENCE_PING_INTERVAL_SECS`. */
export const PRESENCE_PING_INTERVAL_SECS = 60;
/** Zulip's `PRESENCE_UPDATE_MIN_FREQ_SECONDS`: a timestamp this recent is not moved. */
export const PRESENCE_UPDATE_MIN_FREQ_SECONDS = 55;
/** Zulip's `PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS`. */
export const LEGACY_ACTIVE_OFFSET_SECS = 70;
/** Zulip's `USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS`: larger audiences get no presence events. */
export const USER_LIMIT_FOR_PRESENCE_EVENTS = 100;
/** A user not seen active for longer than this comes "back online" (Zulip: offline threshold - ping interval - 10). */
export const BACK_ONLINE_AFTER_SECS = OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10;
/** Default of `history_limit_days`. */
export const DEFAULT_HISTORY_DAYS = 14;

/** A user's presence as two timestamps: never active shows as the join date, as in Zulip. */
export function timestampsOf(row: PresenceRow, user: UserRecord): { active_timestamp: number; idle_timestamp: number } {
  return { active_timestamp: row.active ?? user.date_joined, idle_timestamp: row.connected };
}

/** The legacy one-client record (Zulip's `format_legacy_presence_dict`). */
export function legacyClientInfo(row: PresenceRow, user: UserRecord): LegacyClientInfo {
  const { active_timestamp: active, idle_timestamp: connected } = timestampsOf(row, user);
  return legacyClientInfoOf(active, connected);
}

/** One client's record in the legacy format. */
export type LegacyClientInfo = {
  client: 'website';
  status: 'active' | 'idle';
  timestamp: number;
  pushable: false;
};

/** The legacy record of two timestamps: active if activity came within 70 s of the last report. */
export function legacyClientInfoOf(active: number, connected: number): LegacyClientInfo {
  return active + LEGACY_ACTIVE_OFFSET_SECS >= connected
    ? { client: 'website', status: 'active', timestamp: active, pushable: false }
    : { client: 'website', status: 'idle', timestamp: connected, pushable: false };
}

/** The legacy format of one user: `aggregated` and `website` (Zulip's `get_legacy_user_presence_info`). */
export function legacyInfo(row: PresenceRow, user: UserRecord): Record<string, Record<string, unknown>> {
  const info = legacyClientInfo(row, user);
  return { aggregated: { client: info.client, status: info.status, timestamp: info.timestamp }, website: info };
}

/** Whether `viewer` may see every user (Zulip's `check_user_can_access_all_users`). */
export function canAccessAllUsers(org: OrgContext, viewer: UserRecord): boolean {
  return viewer.role !== Role.GUEST || hasGroupPermission(org, viewer, realmSettings(org).can_access_all_users_group);
}

/**
 * The users a guest without `can_access_all_users_group` may access (Zulip's
 * `get_accessible_user_ids`): themself, the active subscribers of their channels (a
 * deactivated user's subscriptions stop counting, as Zulip's `is_user_active`), and
 * the people they share group direct messages with, deactivated or not. A 1:1
 * conversation grants nothing: Zulip counts only `STREAM` and `DIRECT_MESSAGE_GROUP`
 * subscriptions, and a 1:1 message has a `PERSONAL` recipient. `exceptMessage`: the
 * set as it was before that direct message.
 */
export function accessibleUserIds(view: StateView, orgId: number, viewer: UserRecord, exceptMessage?: number): Set<number> {
  const ids = new Set<number>([viewer.user_id]);
  const org = view.org(orgId)!;
  if (viewer.is_active) {
    for (const streamId of view.user(orgId, viewer.user_id)?.subs.keys() ?? []) {
      for (const id of view.channel(orgId, streamId)?.subscribers ?? []) if (org.users.get(id)?.is_active) ids.add(id);
    }
  }
  addGroupDirectPartners(org, viewer.user_id, ids, exceptMessage);
  return ids;
}

/**
 * Adds to `into` the participants of the user's group direct messages (three people or
 * more), those of message `except` left out: Zulip's `DIRECT_MESSAGE_GROUP` subscriptions.
 */
export function addGroupDirectPartners(org: OrgContext, userId: number, into: Set<number>, except?: number): void {
  for (const messageId of org.directIdsByUser.get(userId) ?? []) {
    const ids = messageId === except ? undefined : org.directMessages.get(messageId)?.dm_user_ids;
    if (ids && ids.length > 2) for (const id of ids) into.add(id);
  }
}

/** Who may see a user's presence: everyone active, or with the limit on, those who may access the user. */
export function presenceAudience(view: StateView, orgId: number, target: number, limited: boolean): number[] {
  const org = view.org(orgId);
  if (!org) return [];
  const ids: number[] = [];
  for (const u of org.users.values()) {
    if (!u.is_active) continue;
    if (!limited || canAccessAllUsers(org, u) || u.user_id === target || accessibleUserIds(view, orgId, u).has(target)) ids.push(u.user_id);
  }
  return ids;
}

/** What a presence fetch asks for. */
export interface PresenceQuery {
  /** Modern format keyed by user id, or legacy keyed by email. */
  slim: boolean;
  /** Only rows changed after this update id (`last_update_id`); null: not given. */
  lastUpdateId: number | null;
  /** `history_limit_days`; null: the default 14. */
  historyLimitDays: number | null;
  /** `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE`. */
  limited: boolean;
  /** Unix seconds. */
  now: number;
}

/**
 * The presence rows a user may fetch (Zulip's `get_presence_dict_by_realm`): active
 * humans only, changed since `lastUpdateId`, and seen within the history limit
 * unless the client already has data. Returns them with the update id to poll from.
 */
export function fetchPresences(view: StateView, orgId: number, viewer: UserRecord, q: PresenceQuery): { presences: Record<string, unknown>; lastUpdateId: number } {
  const org = view.org(orgId)!;
  const presences: Record<string, unknown> = {};
  let newest: number | null = null;
  if (q.historyLimitDays !== 0) {
    const since = q.lastUpdateId === null || q.lastUpdateId <= 0 ? q.now - (q.historyLimitDays ?? DEFAULT_HISTORY_DAYS) * 86400 : -Infinity;
    const after = q.lastUpdateId ?? -Infinity;
    const accessible = q.limited && !canAccessAllUsers(org, viewer) ? accessibleUserIds(view, orgId, viewer) : null;
    for (const [userId, row] of org.presence) {
      if (row.update_id <= after || row.connected < since) continue;
      const user = org.users.get(userId);
      if (!user || !user.is_active || user.is_bot) continue;
      if (accessible && !accessible.has(userId)) continue;
      if (q.slim) presences[userId] = timestampsOf(row, user);
      else presences[user.email] = legacyInfo(row, user);
      if (newest === null || row.update_id > newest) newest = row.update_id;
    }
  }
  return { presences, lastUpdateId: newest ?? q.lastUpdateId ?? -1 };
}
