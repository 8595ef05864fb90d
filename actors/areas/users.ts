/**
 * Users: creating, deactivating and reactivating accounts (Zulip's
 * `zerver/actions/create_user.py` and `users.py`), and the user directory's
 * sections of `/register`.
 */
import { command, fact, area, type Delivery } from '../core/area.js';
import { botAdministrators, botView } from '../rules/bots.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { adminRequired, ApiError, badRequest } from '../shared/errors.js';
import { addUser, type OrgContext } from '../kinds/organization.js';
import { eventJson } from '../render/events.js';
import { avatarUrl, deliveryEmailFor, userView } from '../render/views.js';
import { Role, type RoleNumber, type UserRecord } from '../shared/types.js';
import { checkEmail, makeUser } from '../rules/users.js';
import { userByEmail } from '../kinds/organization.js';
import type { StateView } from '../core/state_view.js';
import { SYSTEM_BOTS } from '../rules/system_bots.js';
import { settingsForNewUser } from './settings.js';
import { exportConsentDelivery } from './realm_exports.js';
import { directGroupsOf, systemGroupDeliveries } from './user_groups.js';
import { directSystemGroups } from '../rules/group_settings.js';
import { hasGroupPermission } from '../rules/group_settings.js';
import { realmSettings } from '../rules/realm_settings.js';
import { COLORS, defaultSubscriptionProps, type SubscriptionsAdded } from './subscriptions.js';
import { accessUser, INACCESSIBLE_USER_NAME, inaccessibleUserView, userAccessOf, usersWhoCanAccess } from '../rules/user_access.js';
import { addGroupDirectPartners, canAccessAllUsers } from '../rules/presence.js';

/** A user joined an organization. */
export interface UserCreated { type: 'UserCreated'; org: number; user: UserRecord; acting_user_id: number | null }
/** A user was deactivated (`active` false) or reactivated (`active` true). */
export interface UserActivationChanged { type: 'UserActivationChanged'; org: number; user_id: number; active: boolean; acting_user_id: number | null }

/** Create a user; `actor_id` is null only for operator bootstrap. */
export interface CreateUser {
  type: 'CREATE_USER';
  org: number;
  actor_id: number | null;
  email: string;
  password_hash: string;
  full_name: string;
  role: RoleNumber;
}

/** Deactivate or reactivate a user (administrators only; users may deactivate themselves). */
export interface SetUserActive {
  type: 'SET_USER_ACTIVE';
  org: number;
  actor_id: number | null;
  user_id: number;
  active: boolean;
}

export const createUser = command({
  type: 'CREATE_USER',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateUser, env: DecideEnv, view: StateView): Decision<{ user_id: number; user: UserRecord }, UserCreated | SubscriptionsAdded> {
    if (c.actor_id !== null) {
      const actor = ctx.users.get(c.actor_id);
      if (!actor || actor.role > Role.ADMIN) throw adminRequired();
      if (c.role === Role.OWNER && actor.role !== Role.OWNER) throw badRequest('Only organization owners can create owners');
    }
    const email = checkEmail(c.email);
    if (ctx.byEmail.has(email.toLowerCase())) throw badRequest(`Email '${email}' already in use`);
    const user = makeUser(env, {
      user_id: ctx.nextUserId,
      recipient_id: ctx.nextRecipientId,
      email,
      password_hash: c.password_hash,
      full_name: c.full_name,
      role: c.role,
      waitingPeriodDays: realmSettings(ctx).waiting_period_threshold,
    });
    const settings = settingsForNewUser(ctx);
    if (settings) user.settings = settings;
    const facts: Array<UserCreated | SubscriptionsAdded> = [{ type: 'UserCreated', org: ctx.org.id, user, acting_user_id: c.actor_id }];
    // A new account joins the organization's default channels, as Zulip's do_create_user does.
    const defaults = defaultChannelIds(ctx, view);
    if (defaults.length > 0) {
      facts.push({
        type: 'SubscriptionsAdded', org: ctx.org.id, created: [], acting_user_id: c.actor_id ?? user.user_id,
        additions: defaults.map((stream_id, i) => ({ stream_id, user_ids: [user.user_id], props: [defaultSubscriptionProps(COLORS[i % COLORS.length])] })),
      });
    }
    return { facts, value: { user_id: user.user_id, user } };
  },
});

/**
 * The limited guests, who may not access a new user: it shares nothing with anyone yet.
 * Those in the default channels it then joins get the user itself from that
 * subscription's events, as in Zulip.
 */
function guestsWithoutAccessToNewUser(org: OrgContext, newUserId: number, everyone: number[]): number[] {
  return everyone.filter((id) => id !== newUserId && !canAccessAllUsers(org, org.users.get(id)!));
}

/** The organization's default channels that are not archived, in id order. */
export function defaultChannelIds(ctx: OrgContext, view: StateView): number[] {
  return view.channelIdsOf(ctx.org.id).filter((id) => {
    const ch = view.channel(ctx.org.id, id);
    return ch !== undefined && ch.channel.is_default && !ch.channel.is_archived;
  }).sort((a, b) => a - b);
}

export const setUserActive = command({
  type: 'SET_USER_ACTIVE',
  actor: 'org',
  decide(ctx: OrgContext, c: SetUserActive): Decision<Record<string, never>, UserActivationChanged> {
    // Users may deactivate themselves; anything else is for administrators.
    const self = c.actor_id !== null && c.actor_id === c.user_id && !c.active;
    if (c.actor_id !== null && !self) {
      const actor = ctx.users.get(c.actor_id);
      if (!actor || actor.role > Role.ADMIN) throw adminRequired();
      if (ctx.users.get(c.user_id)?.role === Role.OWNER && actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    }
    const target = ctx.users.get(c.user_id);
    if (!target) throw badRequest('No such user');
    if (c.active === target.is_active) throw badRequest(c.active ? 'User is already active' : 'User is already deactivated');
    if (!c.active && target.role === Role.OWNER) {
      const owners = [...ctx.users.values()].filter((u) => u.is_active && u.role === Role.OWNER);
      if (owners.length <= 1) throw badRequest('Cannot deactivate the only organization owner');
    }
    const change = (userId: number): UserActivationChanged => ({ type: 'UserActivationChanged', org: ctx.org.id, user_id: userId, active: c.active, acting_user_id: c.actor_id });
    // The bots a user owns go first, as in Zulip's do_deactivate_user (reactivation leaves them be).
    const bots = c.active ? [] : [...ctx.users.values()].filter((u) => u.is_bot && u.is_active && u.bot_owner_id === target.user_id).map((u) => change(u.user_id));
    return { facts: [...bots, change(target.user_id)], value: {} };
  },
});

const userCreated = fact<UserCreated>({
  type: 'UserCreated',
  apply: { org: (ctx, f) => addUser(ctx, f.user) },
  route(f, to) {
    to.org(f.org);
    to.user(f.org, f.user.user_id, { create: true });
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const everyone = [...org.users.values()].filter((u) => u.is_active).map((u) => u.user_id);
    const unknownTo = f.user.is_bot ? [] : guestsWithoutAccessToNewUser(org, f.user.user_id, everyone);
    const unknown = new Set(unknownTo);
    const knownTo = unknown.size === 0 ? everyone : everyone.filter((id) => !unknown.has(id));
    const variants: ReturnType<typeof eventJson>[] = [];
    const out: Delivery[] = [{
      org: f.org, seq, type: 'realm_user', user_ids: knownTo,
      event: (userId, { client_gravatar: clientGravatar }) => {
        const viewer = org.users.get(userId)!;
        const visible = deliveryEmailFor(f.user, viewer) !== null;
        return (variants[(clientGravatar ? 1 : 0) + (visible ? 2 : 0)] ??= eventJson('realm_user', { op: 'add', person: userView(f.user, { profileData: true, clientGravatar, viewer }) }));
      },
    }];
    // Zulip's notify_created_user: limited guests learn of a user they may not access as "Unknown user".
    if (unknownTo.length > 0) out.push({ org: f.org, seq, type: 'realm_user', user_ids: unknownTo, event: eventJson('realm_user', { op: 'add', person: inaccessibleUserView(org.org, f.user.user_id) }) });
    if (f.user.is_bot) out.push({ org: f.org, seq, type: 'realm_bot', user_ids: botAdministrators(org, f.user), event: eventJson('realm_bot', { op: 'add', bot: botView(view, f.org, f.user) }) });
    out.push(...systemGroupDeliveries(f.org, seq, view, f.user.user_id, [], directSystemGroups(f.user)));
    // A new human's consent, which the realm_user event does not carry (Zulip's realm_export_consent on creation).
    if (!f.user.is_bot) out.push(exportConsentDelivery(view, f.org, seq, f.user.user_id, f.user.settings?.allow_private_data_export === true));
    return out;
  },
});

const userActivationChanged = fact<UserActivationChanged>({
  type: 'UserActivationChanged',
  apply: {
    org(ctx, f) {
      const user = ctx.users.get(f.user_id);
      if (user) user.is_active = f.active;
    },
    // Zulip's `clear_push_device_tokens`: a deactivated user's phones stop being notified for good.
    user(ctx, f) {
      if (!f.active && ctx.pushTokens.length > 0) ctx.pushTokens = [];
    },
  },
  route(f, to) {
    to.org(f.org);
    to.user(f.org, f.user_id);
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const everyone = [...org.users.values()].map((u) => u.user_id).filter((id) => id !== f.user_id || f.active);
    const target = org.users.get(f.user_id);
    // Those who may access the user (Zulip's send_events_for_user_deactivation, do_reactivate_user).
    const audience = target ? usersWhoCanAccess(view, f.org, target).filter((id) => id !== f.user_id || f.active) : [];
    // Limited guests sharing only channels with a returning user were told `remove` when
    // the user left; Zulip sends them the `update` anyway, and their clients keep "Unknown
    // user" until they reload. Parley sends them the user instead, so that they converge.
    const regaining = target && f.active && !target.is_bot ? regainingGuests(view, f.org, target, audience) : [];
    const updated = regaining.length === 0 ? audience : audience.filter((id) => !regaining.includes(id));
    const out: Delivery[] = [{ org: f.org, seq, type: 'realm_user', user_ids: updated, event: eventJson('realm_user', { op: 'update', person: { user_id: f.user_id, is_active: f.active } }) }];
    if (target && regaining.length > 0) {
      out.push({ org: f.org, seq, type: 'realm_user', user_ids: regaining, event: (id, { client_gravatar: clientGravatar }) => eventJson('realm_user', { op: 'add', person: userView(target, { profileData: true, clientGravatar, viewer: org.users.get(id) }) }) });
    }
    // Limited guests who shared only channels with a deactivated user lose access: Zulip's send_events_for_user_deactivation.
    if (target && !f.active && !target.is_bot) {
      const told = new Set(audience);
      const losing = new Set<number>();
      for (const streamId of view.user(f.org, f.user_id)?.subs.keys() ?? []) {
        for (const id of view.channel(f.org, streamId)?.subscribers ?? []) {
          const u = org.users.get(id);
          if (u && u.is_active && !told.has(id) && !canAccessAllUsers(org, u)) losing.add(id);
        }
      }
      if (losing.size > 0) out.push({ org: f.org, seq, type: 'realm_user', user_ids: [...losing], event: eventJson('realm_user', { op: 'remove', person: { user_id: f.user_id, full_name: INACCESSIBLE_USER_NAME } }) });
    }
    const user = org.users.get(f.user_id);
    if (user?.is_bot) {
      // A deactivated bot leaves everyone's bot lists; a reactivated one returns to its administrators'.
      out.push(f.active
        ? { org: f.org, seq, type: 'realm_bot', user_ids: botAdministrators(org, user), event: eventJson('realm_bot', { op: 'add', bot: botView(view, f.org, user) }) }
        : { org: f.org, seq, type: 'realm_bot', user_ids: everyone, event: eventJson('realm_bot', { op: 'delete', bot: { user_id: f.user_id } }) });
    }
    if (user && f.active) out.push(...systemGroupDeliveries(f.org, seq, view, f.user_id, [], directGroupsOf(org, user)));
    // Zulip's do_reactivate_user tells the administrators a returning human's consent; deactivation sends none.
    if (user && f.active && !user.is_bot) out.push(exportConsentDelivery(view, f.org, seq, f.user_id, user.settings?.allow_private_data_export === true));
    return out;
  },
});

/** The limited guests among `audience` who access `target` through channels only, as deactivation takes away. */
function regainingGuests(view: StateView, orgId: number, target: UserRecord, audience: readonly number[]): number[] {
  const org = view.org(orgId)!;
  let groups: Set<number> | undefined;
  return audience.filter((id) => {
    const u = org.users.get(id);
    if (!u || id === target.user_id || canAccessAllUsers(org, u)) return false;
    if (!groups) addGroupDirectPartners(org, target.user_id, (groups = new Set()));
    return !groups.has(id);
  });
}

// Reads: what route handlers ask, answered from actor state without changing it.

/** A user of an organization by email, active or not. */
export function findUserByEmail(rt: StateView, org: number, email: string): UserRecord | undefined {
  const ctx = rt.org(org);
  return ctx && userByEmail(ctx, email);
}

/**
 * Every user of an organization, as `GET /users` lists them. A guest limited by
 * `can_access_all_users_group` gets the users they may access only (Zulip's
 * `get_users_for_api` with `user_list_incomplete`, its default).
 */
export function listUsers(rt: StateView, org: number, viewer: UserRecord, profileData = false, clientGravatar = false): Record<string, unknown>[] {
  const access = userAccessOf(rt, org, viewer);
  const all = [...rt.org(org)!.users.values()];
  return (access ? all.filter(access) : all).map((u) => userView(u, { profileData, clientGravatar, viewer }));
}

/** One user by id, or `BAD_REQUEST` "No such user" (or "Insufficient permission" for a user the viewer may not access). */
export function getUser(rt: StateView, org: number, viewer: UserRecord, userId: number, profileData = false, clientGravatar = false): Record<string, unknown> {
  const user = rt.org(org)!.users.get(userId);
  if (!user) throw badRequest('No such user');
  accessUser(rt, org, viewer, user);
  return userView(user, { profileData, clientGravatar, viewer });
}

/**
 * One user by email, as `GET /users/{email}` finds them: by their email (any case),
 * else by the dummy form `user{id}@{host}` Zulip still accepts; deactivated users
 * included, as by id. `BAD_REQUEST` "No such user" otherwise.
 */
export function getUserByEmail(rt: StateView, org: number, viewer: UserRecord, email: string, profileData = false, clientGravatar = false): Record<string, unknown> {
  const ctx = rt.org(org)!;
  const dummy = /^user([0-9]{1,15})@[^@]+$/i.exec(email);
  const user = userByEmail(ctx, email) ?? (dummy ? ctx.users.get(Number(dummy[1])) : undefined);
  if (!user) throw badRequest('No such user');
  accessUser(rt, org, viewer, user);
  return userView(user, { profileData, clientGravatar, viewer });
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

export const users = area({
  name: 'users',
  commands: [createUser, setUserActive],
  facts: [userCreated, userActivationChanged],
  register: [
    {
      types: ['realm_user'],
      fill(state, r, view) {
        const all = [...view.org(r.org.id)!.users.values()];
        const shown = { profileData: true, clientGravatar: r.caps.client_gravatar, viewer: r.user };
        // A limited guest gets the users they may not access as "Unknown user", active, unless
        // the client copes with an incomplete list (Zulip's `user_list_incomplete`).
        const access = userAccessOf(view, r.org.id, r.user);
        const accessible = access ? all.filter(access) : all;
        state.realm_users = accessible.filter((u) => u.is_active).map((u) => userView(u, shown));
        state.realm_non_active_users = accessible.filter((u) => !u.is_active).map((u) => userView(u, shown));
        if (access && !r.userListIncomplete) {
          for (const u of all) if (!access(u)) (state.realm_users as unknown[]).push(inaccessibleUserView(r.org, u.user_id));
        }
        state.cross_realm_bots = [...SYSTEM_BOTS.values()].map((bot) => ({ ...userView(bot), is_system_bot: true }));
        Object.assign(state, {
          user_id: r.user.user_id,
          email: r.user.email,
          delivery_email: r.user.delivery_email,
          full_name: r.user.full_name,
          is_admin: r.user.role <= Role.ADMIN,
          is_owner: r.user.role === Role.OWNER,
          is_moderator: r.user.role === Role.MODERATOR,
          is_guest: r.user.role === Role.GUEST,
          avatar_source: 'G',
          avatar_url: avatarUrl(r.user.email),
          avatar_url_medium: avatarUrl(r.user.email),
          can_create_streams: r.user.role !== Role.GUEST,
          can_create_public_streams: r.user.role !== Role.GUEST,
          can_create_private_streams: r.user.role !== Role.GUEST,
          can_create_web_public_streams: r.user.role === Role.OWNER,
          can_subscribe_other_users: r.user.role !== Role.GUEST,
          can_invite_others_to_realm: !r.user.is_bot && r.user.role !== Role.GUEST && hasGroupPermission(view.org(r.org.id)!, r.user, realmSettings(view.org(r.org.id)!).can_invite_users_group),
        });
      },
    },
  ],
});
