/**
 * Bots (Zulip's `zerver/lib/bot_lib.py`, `zerver/views/users.py` bot views): the bot
 * types Parley serves, how a bot's email is made, who administers a bot, and the bot
 * dictionary `realm_bot` events and `GET /bots` show.
 */
import { badRequest } from '../shared/errors.js';
import type { StateView } from '../core/state_view.js';
import type { OrgContext } from '../kinds/organization.js';
import { avatarUrl } from '../render/views.js';
import { Role, type UserRecord } from '../shared/types.js';

/** Zulip's bot types: the ones Parley serves. */
export const BOT_TYPES = { DEFAULT_BOT: 1, INCOMING_WEBHOOK_BOT: 2 } as const;

/** The domain bot emails are made on (`realm_bot_domain`). */
export const BOT_DOMAIN = 'parley.invalid';

/** A bot's API email from its short name (Zulip's `check_short_name` and bot email rule). */
export function botEmail(shortName: string, subdomain: string): string {
  const name = shortName.trim().toLowerCase();
  if (name === '' || !/^[a-z0-9._-]+$/.test(name)) throw badRequest('Bad name or username');
  const local = name.endsWith('-bot') ? name : `${name}-bot`;
  return `${local}@${subdomain ? `${subdomain}.` : ''}${BOT_DOMAIN}`;
}

/** Whether `user` may administer `bot`: its owner and the organization's administrators. */
export function canAdministerBot(user: UserRecord, bot: UserRecord): boolean {
  return user.is_active && (user.role <= Role.ADMIN || bot.bot_owner_id === user.user_id);
}

/** Who hears of a bot's configuration (`realm_bot` `add`/`update`): its administrators. */
export function botAdministrators(org: OrgContext, bot: UserRecord): number[] {
  return [...org.users.values()].filter((u) => !u.is_bot && canAdministerBot(u, bot)).map((u) => u.user_id);
}

/** A bot as `realm_bot` events, `realm_bots` and `GET /bots` show it. */
export function botView(view: StateView, org: number, bot: UserRecord): Record<string, unknown> {
  const channelName = (id: number | null | undefined): string | null => (id === null || id === undefined ? null : view.channel(org, id)?.channel.name ?? null);
  return {
    user_id: bot.user_id,
    full_name: bot.full_name,
    api_key: bot.api_key,
    default_sending_stream: channelName(bot.bot_defaults?.sending_stream_id),
    default_events_register_stream: channelName(bot.bot_defaults?.events_register_stream_id),
    default_all_public_streams: bot.bot_defaults?.all_public_streams ?? false,
    avatar_url: avatarUrl(bot.email),
    owner_id: bot.bot_owner_id,
    services: [],
    email: bot.email,
    bot_type: bot.bot_type,
    is_active: bot.is_active,
  };
}

/** The bots `user` administers, as `realm_bots` lists them: every active bot for administrators, one's own otherwise. */
export function administeredBots(view: StateView, org: number, user: UserRecord): Record<string, unknown>[] {
  return [...view.org(org)!.users.values()].filter((u) => u.is_bot && u.is_active && canAdministerBot(user, u)).map((u) => botView(view, org, u));
}
