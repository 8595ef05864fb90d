/**
 * Administrators changing a user (Zulip's `update_user_backend`): name, role, custom
 * profile values and, for owners holding the permission, the email. Role rules as in
 * Zulip: only owners grant or take the owner role, and the only owner keeps it.
 * `realm_user` `update` events to everyone, one per changed field.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { AnyFact, Decision, DecideEnv } from '../core/domain_logic.js';
import { adminRequired, ApiError, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { deliveryEmailDelivery, deliveryEmailsForRole, eventJson } from '../render/events.js';
import { usersWhoCanAccess } from '../rules/user_access.js';
import { canAccessAllUsers } from '../rules/presence.js';
import { accessChangeDeliveries } from '../render/access_events.js';
import { Role, type RoleNumber, type UserRecord } from '../shared/types.js';
import { directSystemGroups } from '../rules/group_settings.js';
import { systemGroupDeliveries } from './user_groups.js';
import { checkEmail, checkFullName, onProbation } from '../rules/users.js';
import { realmSettings } from '../rules/realm_settings.js';
import { profileDataChange } from './profile_fields.js';
import { setUserActive } from './users.js';
import { deletionJobStart } from './deletion_jobs.js';
import type { StateView } from '../core/state_view.js';

const ROLES: readonly number[] = [Role.OWNER, Role.ADMIN, Role.MODERATOR, Role.MEMBER, Role.GUEST];

/** An administrator changed a user's name, role or email. */
export interface UserUpdated {
  type: 'UserUpdated'; org: number; user_id: number; full_name?: string; role?: RoleNumber; email?: string;
  /** The role before a role change (absent in facts written before user groups: no group events then). */
  from_role?: RoleNumber;
  /** With a role change: whether the user was, and is now, a member within the waiting period (`role:fullmembers` follows). */
  from_probation?: boolean;
  probation?: boolean;
}

/** Change a user (administrators only). */
export interface UpdateUser {
  type: 'UPDATE_USER';
  org: number;
  actor_id: number;
  user_id: number;
  full_name?: string;
  role?: number;
  new_email?: string;
  profile_data?: Array<{ id: number; value: unknown }>;
}

/** The operator grants or revokes a user's permission to change other users' emails. */
export interface EmailChangesGranted { type: 'EmailChangesGranted'; org: number; user_id: number; granted: boolean }
export interface GrantEmailChanges { type: 'GRANT_EMAIL_CHANGES'; org: number; user_id: number; granted: boolean }

export const grantEmailChanges = command({
  type: 'GRANT_EMAIL_CHANGES',
  actor: 'org',
  decide(ctx: OrgContext, c: GrantEmailChanges): Decision<Record<string, never>, EmailChangesGranted> {
    const user = ctx.users.get(c.user_id);
    if (!user) throw badRequest('No such user');
    if (user.role !== Role.OWNER && c.granted) throw badRequest('Only organization owners may be granted email changes');
    return { facts: (user.can_change_user_emails === true) === c.granted ? [] : [{ type: 'EmailChangesGranted', org: c.org, user_id: c.user_id, granted: c.granted }], value: {} };
  },
});

const emailChangesGranted = orgFact<EmailChangesGranted>({
  type: 'EmailChangesGranted',
  apply(ctx, f) {
    const user = ctx.users.get(f.user_id);
    if (user) ctx.users.set(f.user_id, { ...user, can_change_user_emails: f.granted });
  },
});

export const updateUser = command({
  type: 'UPDATE_USER',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateUser, env: DecideEnv): Decision<Record<string, never>, AnyFact> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    const target = ctx.users.get(c.user_id);
    if (!target) throw badRequest('No such user');
    const fact: UserUpdated = { type: 'UserUpdated', org: c.org, user_id: target.user_id };
    if (c.full_name !== undefined) {
      const name = checkFullName(c.full_name);
      if (name !== target.full_name) fact.full_name = name;
    }
    if (c.role !== undefined && c.role !== target.role) {
      if (!ROLES.includes(c.role)) throw badRequest('Invalid role');
      if ((c.role === Role.OWNER || target.role === Role.OWNER) && actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      if (target.role === Role.OWNER && [...ctx.users.values()].filter((u) => u.is_active && u.role === Role.OWNER).length <= 1) {
        throw badRequest('The owner permission cannot be removed from the only organization owner.');
      }
      if (target.is_bot && c.role === Role.OWNER) throw badRequest('Bots cannot be organization owners');
      fact.role = c.role as RoleNumber;
      fact.from_role = target.role;
      fact.from_probation = target.probation === true;
      fact.probation = onProbation({ role: fact.role, date_joined: target.date_joined }, realmSettings(ctx).waiting_period_threshold, env.now());
    }
    if (c.new_email !== undefined) {
      if (actor.role !== Role.OWNER || actor.can_change_user_emails !== true) throw badRequest('User not authorized to change user emails');
      const email = checkEmail(c.new_email);
      const holder = ctx.byEmail.get(email.toLowerCase());
      if (holder !== undefined && holder !== target.user_id) throw badRequest(`Email '${email}' already in use`);
      if (email !== target.email) fact.email = email;
    }
    const facts: AnyFact[] = [];
    if (fact.full_name !== undefined || fact.role !== undefined || fact.email !== undefined) facts.push(fact);
    if (c.profile_data) {
      const data = profileDataChange(ctx, c.actor_id, c.user_id, c.profile_data);
      if (data) facts.push(data);
    }
    return { facts, value: {} };
  },
});

const userUpdated = orgFact<UserUpdated>({
  type: 'UserUpdated',
  apply(ctx, f) {
    const user = ctx.users.get(f.user_id);
    if (!user) return;
    const next: UserRecord = { ...user };
    if (f.full_name !== undefined) next.full_name = f.full_name;
    if (f.role !== undefined) next.role = f.role;
    if (f.probation === true) next.probation = true;
    else if (f.probation === false) delete next.probation;
    if (f.email !== undefined) {
      ctx.byEmail.delete(user.email.toLowerCase());
      ctx.byEmail.set(f.email.toLowerCase(), f.user_id);
      next.email = f.email;
      next.delivery_email = f.email;
    }
    ctx.users.set(f.user_id, next);
  },
  notify(f, seq, view) {
    // Zulip's get_user_ids_who_can_access_user: limited guests hear only of users they may access.
    const target = view.org(f.org)?.users.get(f.user_id);
    const everyone = target ? usersWhoCanAccess(view, f.org, target) : [];
    const person = (fields: Record<string, unknown>): Delivery => ({ org: f.org, seq, type: 'realm_user', user_ids: everyone, event: eventJson('realm_user', { op: 'update', person: { user_id: f.user_id, ...fields } }) });
    const out: Delivery[] = [];
    if (f.full_name !== undefined) out.push(person({ full_name: f.full_name }));
    if (f.role !== undefined) out.push(person({ role: f.role }));
    const user = view.org(f.org)?.users.get(f.user_id);
    if (f.role !== undefined && f.from_role !== undefined && user?.is_active) {
      out.push(...systemGroupDeliveries(f.org, seq, view, f.user_id, directSystemGroups({ ...user, role: f.from_role, probation: f.from_probation }), directSystemGroups(user)));
      out.push(...deliveryEmailsForRole(view, f.org, seq, user, f.from_role));
      // Becoming a limited guest, or ceasing to be one, changes whom the user may access.
      const org = view.org(f.org)!;
      const limited = !canAccessAllUsers(org, user);
      if (limited !== !canAccessAllUsers(org, { ...user, role: f.from_role, probation: f.from_probation })) out.push(...accessChangeDeliveries(view, f.org, seq, user, limited));
    }
    if (f.email !== undefined) {
      out.push(person({ new_email: f.email }));
      if (user) out.push(deliveryEmailDelivery(view, f.org, seq, user));
    }
    return out;
  },
});

/**
 * Deactivate a user and the bots they own, and, with `delete_profile`, rename each
 * account "Deleted User <id>" (`DELETE /users/{id}`): one decision, so its facts land in
 * one durable batch, and a `kill -9` never leaves an account deactivated with its profile
 * kept (a repeated request is refused: the user is already deactivated). Deleting their
 * messages spans channels: the same decision records it as a durable job of the
 * organization (deletion_jobs.ts), which the runtime runs and, after a restart, resumes.
 */
export interface DeactivateUser {
  type: 'DEACTIVATE_USER';
  org: number;
  actor_id: number;
  user_id: number;
  delete_profile: boolean;
  delete_public_channel_messages?: boolean;
  delete_private_channel_messages?: boolean;
  delete_direct_messages?: boolean;
}

export const deactivateUser = command({
  type: 'DEACTIVATE_USER',
  actor: 'org',
  decide(ctx: OrgContext, c: DeactivateUser, env: DecideEnv, view: StateView): Decision<{ accounts: number[]; job: number | null }, AnyFact> {
    const deactivated = setUserActive.decide(ctx, { type: 'SET_USER_ACTIVE', org: c.org, actor_id: c.actor_id, user_id: c.user_id, active: false }, env, view);
    // The bots first, then the user, as Zulip's do_deactivate_user orders them.
    const accounts = deactivated.facts.map((f) => f.user_id);
    const facts: AnyFact[] = [...deactivated.facts];
    if (c.delete_profile) {
      for (const id of accounts) facts.push(...updateUser.decide(ctx, { type: 'UPDATE_USER', org: c.org, actor_id: c.actor_id, user_id: id, full_name: `Deleted User ${id}` }, env, view).facts);
    }
    const job = deletionJobStart(ctx, view, {
      actor_id: c.actor_id, sender_ids: accounts,
      public_channels: c.delete_public_channel_messages === true, private_channels: c.delete_private_channel_messages === true, direct_messages: c.delete_direct_messages === true,
    });
    if (job) facts.push(job);
    return { facts, value: { accounts, job: job ? job.job.id : null } };
  },
});

export const userAdmin = area({
  name: 'user administration',
  commands: [updateUser, grantEmailChanges, deactivateUser],
  facts: [userUpdated, emailChangesGranted],
});
