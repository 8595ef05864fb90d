/**
 * Zulip's cross-realm system bots. The notification bot posts the messages the server
 * writes itself: a topic moved or resolved, a channel created or renamed. It belongs
 * to no organization: it is not in any user directory, and `/register` lists it under
 * `cross_realm_bots`, as Zulip does.
 *
 * Organization user ids are counted from 1 in each organization, so the bot's id is
 * one no counter reaches.
 */
import type { OrgContext } from '../kinds/organization.js';
import { Role, type UserRecord } from '../shared/types.js';

/** The notification bot, the same in every organization. */
export const NOTIFICATION_BOT: Readonly<UserRecord> = Object.freeze({
  user_id: 2_000_000_001,
  email: 'notification-bot@zulip.com',
  delivery_email: 'notification-bot@zulip.com',
  full_name: 'Notification Bot',
  role: Role.MEMBER,
  is_active: true,
  is_bot: true,
  bot_type: 1,
  bot_owner_id: null,
  api_key: '',
  password_hash: '',
  date_joined: 0,
  timezone: '',
  recipient_id: 0,
});

/** The welcome bot: it greets new users, and sends administrators a test of the organization's custom welcome message. */
export const WELCOME_BOT: Readonly<UserRecord> = Object.freeze({
  ...NOTIFICATION_BOT,
  user_id: 2_000_000_002,
  email: 'welcome-bot@zulip.com',
  delivery_email: 'welcome-bot@zulip.com',
  full_name: 'Welcome Bot',
});

/** The realm system bots belong to (`sender_realm_str` of their messages). */
export const SYSTEM_BOT_REALM = 'zulipinternal';

/** Every cross-realm bot, by id. */
export const SYSTEM_BOTS: ReadonlyMap<number, Readonly<UserRecord>> = new Map([[NOTIFICATION_BOT.user_id, NOTIFICATION_BOT], [WELCOME_BOT.user_id, WELCOME_BOT]]);

/** A message sender: an organization's user, or a system bot. */
export function senderOf(org: OrgContext, userId: number): Readonly<UserRecord> | undefined {
  return org.users.get(userId) ?? SYSTEM_BOTS.get(userId);
}
