/**
 * Muted users (Zulip's `zerver/actions/muted_users.py`): a user hides another
 * user's messages. The muter's user actor keeps the list; muting also marks the
 * muted user's messages the muter has unread as read (Zulip's
 * `do_mark_muted_user_messages_as_read`), which is a `FlagsUpdated` fact and its
 * `update_message_flags` event. A `muted_users` event carries the whole new list.
 */
import { area, command, userFact } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { accessibleUserIds, canAccessAllUsers } from '../rules/presence.js';
import { toOwner } from '../render/events.js';
import { senderOf } from '../rules/system_bots.js';
import type { FlagsUpdated } from './flags.js';

/** `user_id` muted `muted_user_id` at `timestamp` (Unix seconds). */
export interface UserMuted { type: 'UserMuted'; org: number; user_id: number; muted_user_id: number; timestamp: number }
export interface UserUnmuted { type: 'UserUnmuted'; org: number; user_id: number; muted_user_id: number }

export interface MuteUser { type: 'MUTE_USER'; user_id: number; org: number; muted_user_id: number }
export interface UnmuteUser { type: 'UNMUTE_USER'; user_id: number; org: number; muted_user_id: number }

/**
 * Zulip's `access_user_by_id_including_cross_realm` with bots and deactivated users
 * allowed: the user must exist here (or be a system bot), and a guest limited by
 * `can_access_all_users_group` must be able to access them.
 */
function accessMutable(view: StateView, org: number, me: number, userId: number): void {
  const orgCtx = view.org(org);
  if (!orgCtx || !senderOf(orgCtx, userId)) throw badRequest('No such user');
  const viewer = orgCtx.users.get(me);
  if (!viewer || !orgCtx.users.has(userId) || canAccessAllUsers(orgCtx, viewer)) return;
  if (!accessibleUserIds(view, org, viewer).has(userId)) throw badRequest('Insufficient permission');
}

/** Who sent a message the user holds (undefined: not found). */
function senderOfMessage(view: StateView, org: number, id: number): number | undefined {
  const orgCtx = view.org(org)!;
  const streamId = orgCtx.messageChannel.get(id);
  if (streamId === undefined) return orgCtx.directMessages.get(id)?.sender_id;
  return view.channel(org, streamId)?.messages.get(id)?.sender_id;
}

export const muteUser = command({
  type: 'MUTE_USER',
  actor: 'user',
  decide(ctx: UserContext, c: MuteUser, env: DecideEnv, view: StateView): Decision<Record<string, never>, UserMuted | FlagsUpdated> {
    if (c.muted_user_id === ctx.user_id) throw badRequest('Cannot mute self');
    accessMutable(view, c.org, ctx.user_id, c.muted_user_id);
    if (ctx.personal.muted.has(c.muted_user_id)) throw badRequest('User already muted');
    // As in Zulip, the messages are marked read first, then the list changes.
    const facts: Array<UserMuted | FlagsUpdated> = [];
    const unread = ctx.unread.toArray().filter((id) => senderOfMessage(view, c.org, id) === c.muted_user_id);
    if (unread.length > 0) facts.push({ type: 'FlagsUpdated', org: c.org, user_id: ctx.user_id, op: 'add', flag: 'read', messages: unread });
    facts.push({ type: 'UserMuted', org: c.org, user_id: ctx.user_id, muted_user_id: c.muted_user_id, timestamp: env.now() });
    return { facts, value: {} };
  },
});

export const unmuteUser = command({
  type: 'UNMUTE_USER',
  actor: 'user',
  decide(ctx: UserContext, c: UnmuteUser, _env: DecideEnv, view: StateView): Decision<Record<string, never>, UserUnmuted> {
    accessMutable(view, c.org, ctx.user_id, c.muted_user_id);
    if (!ctx.personal.muted.has(c.muted_user_id)) throw badRequest('User is not muted');
    return { facts: [{ type: 'UserUnmuted', org: c.org, user_id: ctx.user_id, muted_user_id: c.muted_user_id }], value: {} };
  },
});

/** The user's muted users, as `/register` and the `muted_users` event list them. */
export function listMutedUsers(view: StateView, org: number, userId: number): Array<{ id: number; timestamp: number }> {
  return [...(view.user(org, userId)?.personal.muted ?? [])].map(([id, timestamp]) => ({ id, timestamp }));
}

const notifyMuted = (f: UserMuted | UserUnmuted, seq: number, view: StateView) => toOwner(f, seq, 'muted_users', { muted_users: listMutedUsers(view, f.org, f.user_id) });

const userMuted = userFact<UserMuted>({
  type: 'UserMuted',
  apply: (ctx, f) => void ctx.personal.muted.set(f.muted_user_id, f.timestamp),
  notify: notifyMuted,
});

const userUnmuted = userFact<UserUnmuted>({
  type: 'UserUnmuted',
  apply: (ctx, f) => void ctx.personal.muted.delete(f.muted_user_id),
  notify: notifyMuted,
});

export const mutedUsers = area({
  name: 'muted users',
  commands: [muteUser, unmuteUser],
  facts: [userMuted, userUnmuted],
  register: [{ types: ['muted_users'], fill: (state, r, view) => void (state.muted_users = listMutedUsers(view, r.org.id, r.user.user_id)) }],
});
