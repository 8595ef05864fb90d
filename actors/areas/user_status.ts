/**
 * User status (Zulip's `zerver/actions/user_status.py`): a status text and emoji,
 * and the legacy `away`, which is the `presence_enabled` setting inverted. `user_status`
 * events to everyone; the `user_status` section of `/register` lists the users who
 * have one. The organization actor keeps it on the user record.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { codePointLength } from '../rules/messages.js';
import { eventJson } from '../render/events.js';
import { accessibleUserIds, canAccessAllUsers } from '../rules/presence.js';
import { usersWhoCanAccess } from '../rules/user_access.js';
import { Role, type UserRecord, type UserStatus } from '../shared/types.js';
import { effectiveSettings } from '../rules/user_settings.js';
import type { UserSettingsChanged } from './settings.js';
import { presenceToggled, type PresenceNotified, type PresenceUpdated } from './presence.js';

export const STATUS_TEXT_MAX = 60;

/** A user's status changed: the fields given are the new ones. */
export interface UserStatusChanged { type: 'UserStatusChanged'; org: number; user_id: number; status: Partial<UserStatus> }

/** Change the caller's status; absent fields stay as they are. The emoji is already checked. */
export interface UpdateStatus {
  type: 'UPDATE_STATUS';
  org: number;
  user_id: number;
  status_text?: string;
  away?: boolean;
  emoji?: { emoji_name: string; emoji_code: string; reaction_type: string };
  /** Another user changing `user_id`'s status (`POST /users/{user_id}/status`): an administrator, or a bot's owner. */
  actor_id?: number;
  /** `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE`, for the presence update a change of `away` forces. */
  limited?: boolean;
}

const NONE: UserStatus = { status_text: '', emoji_name: '', emoji_code: '', reaction_type: '' };

export const updateStatus = command({
  type: 'UPDATE_STATUS',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateStatus, env: DecideEnv): Decision<Record<string, never>, UserStatusChanged | UserSettingsChanged | PresenceNotified> {
    const user = c.actor_id === undefined ? ctx.users.get(c.user_id) : statusTargetFor(ctx, c.actor_id, c.user_id);
    if (!user || !user.is_active) throw badRequest('Invalid user');
    if (c.status_text === undefined && c.away === undefined && c.emoji === undefined) throw badRequest('Client did not pass any new values.');
    const facts: Array<UserStatusChanged | UserSettingsChanged | PresenceNotified> = [];
    const volatile: PresenceUpdated[] = [];
    if (c.away !== undefined && effectiveSettings(user.settings).presence_enabled !== !c.away) {
      facts.push({ type: 'UserSettingsChanged', org: c.org, user_id: user.user_id, settings: { presence_enabled: !c.away } });
      const toggled = presenceToggled(ctx, user, !c.away, env.now(), c.limited ?? false);
      facts.push(toggled.fact);
      volatile.push(toggled.volatile);
    }
    const status: Partial<UserStatus> = {};
    if (c.status_text !== undefined) {
      const text = c.status_text.trim();
      if (codePointLength(text) > STATUS_TEXT_MAX) throw badRequest(`status_text is too long (limit: ${STATUS_TEXT_MAX} characters)`);
      status.status_text = text;
    }
    if (c.emoji) Object.assign(status, c.emoji);
    if (Object.keys(status).length > 0) facts.push({ type: 'UserStatusChanged', org: c.org, user_id: user.user_id, status });
    return { facts, volatile, value: {} };
  },
});

/**
 * The user whose status `actor` may change for them (Zulip's `access_user_by_id` for an
 * administrator's action: bots included, deactivated users refused; `can_admin_user`:
 * an administrator, or the owner of the bot).
 */
export function statusTargetFor(ctx: OrgContext, actorId: number, userId: number): UserRecord {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  const target = ctx.users.get(userId);
  if (!target) throw badRequest('No such user');
  if (!target.is_active) throw badRequest('User is deactivated');
  if (actor.role > Role.ADMIN && target.bot_owner_id !== actor.user_id) throw badRequest('Insufficient permission');
  return target;
}

/** A user's status as `/register`'s `user_status` and `GET /users/{id}/status` show it: only what is set. */
export function statusView(user: UserRecord): Record<string, unknown> {
  const s = user.status ?? NONE;
  const view: Record<string, unknown> = {};
  if (effectiveSettings(user.settings).presence_enabled === false) view.away = true;
  if (s.status_text) view.status_text = s.status_text;
  if (s.emoji_name) Object.assign(view, { emoji_name: s.emoji_name, emoji_code: s.emoji_code, reaction_type: s.reaction_type });
  return view;
}

/**
 * Every active user's status that has anything set, by user id; for a guest limited by
 * `can_access_all_users_group`, only the humans they may access (Zulip's
 * `get_all_users_status_dict` filters by `get_accessible_user_ids`, bots left out).
 */
export function allStatuses(view: StateView, org: number, viewer: UserRecord): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  const ctx = view.org(org)!;
  const accessible = canAccessAllUsers(ctx, viewer) ? null : accessibleUserIds(view, org, viewer);
  for (const user of ctx.users.values()) {
    if (!user.is_active || (accessible && !accessible.has(user.user_id))) continue;
    const s = statusView(user);
    if (Object.keys(s).length > 0) out[user.user_id] = s;
  }
  return out;
}

/** Who hears of a user's status change. */
function statusAudience(view: StateView, org: number, userId: number): number[] {
  const target = view.org(org)?.users.get(userId);
  return target ? usersWhoCanAccess(view, org, target) : [];
}

const userStatusChanged = orgFact<UserStatusChanged>({
  type: 'UserStatusChanged',
  apply(ctx, f) {
    const user = ctx.users.get(f.user_id);
    if (user) ctx.users.set(f.user_id, { ...user, status: { ...(user.status ?? NONE), ...f.status } });
  },
  // Zulip's get_user_ids_who_can_access_user: limited guests hear only of users they may access.
  notify: (f, seq, view) => [{ org: f.org, seq, type: 'user_status', user_ids: statusAudience(view, f.org, f.user_id), event: eventJson('user_status', { user_id: f.user_id, ...f.status }) }],
});

export const userStatus = area({
  name: 'user status',
  commands: [updateStatus],
  facts: [userStatusChanged],
  register: [{ types: ['user_status'], fill: (state, r, view) => void (state.user_status = allStatuses(view, r.org.id, r.user)) }],
});
