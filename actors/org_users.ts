/**
 * User accounts: `check_*` rules for names and emails, and the CREATE_USER decision.
 */
import { adminRequired, badRequest } from '../src/http/errors.js';
import type { Decision, DecideEnv } from './logic.js';
import { codePointLength, LIMITS } from './message_rules.js';
import type { OrgContext } from './organization.js';
import { Role, type RoleNumber, type UserRecord } from './types.js';

/** Create a user; `actor_id` is null only for operator bootstrap. */
export interface CreateUser {
  type: 'CREATE_USER';
  actor_id: number | null;
  email: string;
  password_hash: string;
  full_name: string;
  role: RoleNumber;
}

/** Deactivate or reactivate a user (administrators only). */
export interface SetUserActive {
  type: 'SET_USER_ACTIVE';
  actor_id: number | null;
  user_id: number;
  active: boolean;
}

const EMAIL = /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+\.[^\s@<>(),;:"\\[\]]+$|^[^\s@<>(),;:"\\[\]]+@localhost$/i;

/** Validates an email address for a new account. */
export function checkEmail(email: string): string {
  const cleaned = email.trim();
  if (cleaned.length > 254 || !EMAIL.test(cleaned)) throw badRequest(`Invalid email '${email}'`);
  return cleaned;
}

/** Validates a user's full name. */
export function checkFullName(name: string): string {
  const cleaned = name.trim();
  if (cleaned.length === 0) throw badRequest('Name too short!');
  if (codePointLength(cleaned) > LIMITS.max_user_name_length) throw badRequest('Name too long!');
  if (/[\u0000-\u001f\u007f]/.test(cleaned)) throw badRequest('Invalid characters in name!');
  return cleaned;
}

/** Builds a new user record, choosing its API key and join time. */
export function makeUser(
  env: DecideEnv,
  fields: { user_id: number; recipient_id: number; email: string; password_hash: string; full_name: string; role: RoleNumber },
): UserRecord {
  const email = checkEmail(fields.email);
  return {
    user_id: fields.user_id,
    email,
    delivery_email: email,
    full_name: checkFullName(fields.full_name),
    role: fields.role,
    is_active: true,
    is_bot: false,
    bot_type: null,
    bot_owner_id: null,
    api_key: env.token(24),
    password_hash: fields.password_hash,
    date_joined: env.now(),
    timezone: '',
    recipient_id: fields.recipient_id,
  };
}

export function decideCreateUser(ctx: OrgContext, command: CreateUser, env: DecideEnv): Decision {
  if (command.actor_id !== null) {
    const actor = ctx.users.get(command.actor_id);
    if (!actor || actor.role > Role.ADMIN) throw adminRequired();
    if (command.role === Role.OWNER && actor.role !== Role.OWNER) throw badRequest('Only organization owners can create owners');
  }
  const email = checkEmail(command.email);
  if (ctx.byEmail.has(email.toLowerCase())) throw badRequest(`Email '${email}' already in use`);
  const user = makeUser(env, {
    user_id: ctx.nextUserId,
    recipient_id: ctx.nextRecipientId,
    email,
    password_hash: command.password_hash,
    full_name: command.full_name,
    role: command.role,
  });
  return { facts: [{ type: 'UserCreated', org: ctx.org.id, user, acting_user_id: command.actor_id }], value: { user_id: user.user_id, user } };
}

export function decideSetUserActive(ctx: OrgContext, command: SetUserActive): Decision {
  if (command.actor_id !== null) {
    const actor = ctx.users.get(command.actor_id);
    if (!actor || actor.role > Role.ADMIN) throw adminRequired();
  }
  const target = ctx.users.get(command.user_id);
  if (!target) throw badRequest('No such user');
  if (command.active === target.is_active) {
    throw badRequest(command.active ? 'User is already active' : 'User is already deactivated');
  }
  if (!command.active && target.role === Role.OWNER) {
    const owners = [...ctx.users.values()].filter((u) => u.is_active && u.role === Role.OWNER);
    if (owners.length <= 1) throw badRequest('Cannot deactivate the only organization owner');
  }
  return {
    facts: [{ type: 'UserActivationChanged', org: ctx.org.id, user_id: target.user_id, active: command.active, acting_user_id: command.actor_id }],
    value: {},
  };
}
