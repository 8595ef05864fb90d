/**
 * User accounts: `check_*` rules for names and emails, and how a new account is made.
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { badRequest } from '../shared/errors.js';
import type { DecideEnv } from '../core/domain_logic.js';
import { codePointLength, LIMITS } from './messages.js';

import { Role, type RoleNumber, type UserRecord } from '../shared/types.js';

/** Zulip's longest email (`UserProfile.MAX_EMAIL_LENGTH`, as RFC 5321 allows). */
export const MAX_EMAIL_LENGTH = 254;

// Django's EmailValidator, which Zulip's user forms use: a dot-atom local part, and a
// domain of LDH labels with at least one dot, `localhost`, or an address literal.
const DOT_ATOM = /^[-!#$%&'*+/=?^_`{}|~0-9A-Z]+(\.[-!#$%&'*+/=?^_`{}|~0-9A-Z]+)*$/i;
const DOMAIN = /^(?:[A-Z0-9](?:[A-Z0-9-]{0,61}[A-Z0-9])?\.)+[A-Z0-9-]{1,62}[A-Z0-9]$/i;
const LITERAL = /^\[([A-F0-9:.]+)\]$/i;
/** Control, format (zero-width, bidi overrides), unassigned-surrogate and whitespace characters. */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zs}\p{Zl}\p{Zp}]/u;

function validDomain(domain: string): boolean {
  if (domain === 'localhost' || DOMAIN.test(domain)) return true;
  const literal = LITERAL.exec(domain);
  if (literal) return isIP(literal[1]) !== 0;
  // An internationalized domain is checked in its ASCII (punycode) form, as Django does.
  if (/^[\x00-\x7f]*$/.test(domain)) return false;
  const ascii = domainToASCII(domain);
  return ascii.length > 0 && DOMAIN.test(ascii);
}

/**
 * Whether `email` is exactly one well-formed address, as Zulip accepts it: Django's
 * EmailValidator (`local@domain`, split at the last `@`, dot-atom local part) with no
 * control, format or whitespace characters anywhere, at most 254 characters. Stricter
 * than Django in one way: a quoted local part (`"a b"@example.com`) is refused, since
 * it may hold the commas and spaces that separate addresses in `to` and narrows.
 */
export function isValidEmail(email: string): boolean {
  if (email.length === 0 || email.length > MAX_EMAIL_LENGTH || FORBIDDEN.test(email)) return false;
  const at = email.lastIndexOf('@');
  if (at <= 0) return false;
  return DOT_ATOM.test(email.slice(0, at)) && validDomain(email.slice(at + 1));
}

/** An email as an error message may quote it: control, format and separator characters escaped, cut short. */
function quoted(email: string): string {
  const cut = email.length > 100 ? `${email.slice(0, 100)}...` : email;
  return cut.replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Validates an email address for a new account and returns it without the blanks around
 * it (as Django's EmailField strips its input); 400 `Invalid email '...'` otherwise.
 */
export function checkEmail(email: string): string {
  const cleaned = email.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
  if (!isValidEmail(cleaned)) throw badRequest(`Invalid email '${quoted(email)}'`);
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

/** Whether a user is a member still within the organization's waiting period (`thresholdDays`) at `now` (Unix seconds). */
export function onProbation(user: Pick<UserRecord, 'role' | 'date_joined'>, thresholdDays: number, now: number): boolean {
  return user.role === Role.MEMBER && user.date_joined + thresholdDays * 24 * 3600 > now;
}

/**
 * A new account, its key and join time chosen now. A member starts on probation
 * (outside `role:fullmembers`) when the organization has a waiting period.
 */
export function makeUser(
  env: DecideEnv,
  fields: { user_id: number; recipient_id: number; email: string; password_hash: string; full_name: string; role: RoleNumber; waitingPeriodDays: number },
): UserRecord {
  const email = checkEmail(fields.email);
  const user: UserRecord = {
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
  if (onProbation(user, fields.waitingPeriodDays, user.date_joined)) user.probation = true;
  return user;
}
