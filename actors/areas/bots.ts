/**
 * Bots (Zulip's `zerver/views/users.py` bot views and `zerver/actions/bots.py`):
 * creating a generic or incoming-webhook bot, which is a user of the organization
 * (a `UserCreated` fact), changing one, regenerating its API key, deactivating it.
 * `realm_bot` events go to whoever administers the bot (its owner and the
 * organization's administrators); public changes also go out as `realm_user`.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { administeredBots, botAdministrators, botEmail, BOT_TYPES, botView, canAdministerBot } from '../rules/bots.js';
import { badRequest } from '../shared/errors.js';
import { hasGroupPermission } from '../rules/group_settings.js';
import { hasContentAccess } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type BotDefaults, type UserRecord } from '../shared/types.js';
import { checkFullName, makeUser } from '../rules/users.js';
import type { UserActivationChanged, UserCreated } from './users.js';

/** A bot's name, owner or defaults changed. */
export interface BotUpdated {
  type: 'BotUpdated';
  org: number;
  bot_id: number;
  full_name?: string;
  bot_owner_id?: number;
  /** The owner before, when it changed (they may lose the bot's events). */
  previous_owner_id?: number | null;
  bot_defaults?: BotDefaults;
}
/** A user's API key was replaced (a bot's, by someone who administers it). */
export interface ApiKeyRegenerated { type: 'ApiKeyRegenerated'; org: number; user_id: number; api_key: string }

/** Channel names for a bot's defaults: a name, `null` (none), or absent (unchanged). */
export interface BotDefaultsRequest {
  default_sending_stream?: string | null;
  default_events_register_stream?: string | null;
  default_all_public_streams?: boolean;
}
export interface CreateBot extends BotDefaultsRequest { type: 'CREATE_BOT'; org: number; actor_id: number; full_name: string; short_name: string; bot_type: number }
export interface UpdateBot extends BotDefaultsRequest { type: 'UPDATE_BOT'; org: number; actor_id: number; bot_id: number; full_name?: string; bot_owner_id?: number }
export interface RegenerateBotKey { type: 'REGENERATE_BOT_KEY'; org: number; actor_id: number; bot_id: number }
export interface DeactivateBot { type: 'DEACTIVATE_BOT'; org: number; actor_id: number; bot_id: number }

function activeActor(ctx: OrgContext, id: number): UserRecord {
  const actor = ctx.users.get(id);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  return actor;
}

/** A bot the actor administers, or "No such bot" (the same for a missing one). */
function administeredBot(ctx: OrgContext, actor: UserRecord, botId: number): UserRecord {
  const bot = ctx.users.get(botId);
  if (!bot || !bot.is_bot) throw badRequest('No such bot');
  if (!canAdministerBot(actor, bot)) throw badRequest('Insufficient permission');
  return bot;
}

/** Resolves a bot's default channels: names of channels the actor can post to, or none. */
function botDefaults(view: StateView, ctx: OrgContext, actor: UserRecord, req: BotDefaultsRequest, current: BotDefaults | undefined): BotDefaults {
  const channel = (name: string | null | undefined, now: number | null): number | null => {
    if (name === undefined) return now;
    if (name === null || name === '') return null;
    const id = ctx.channelsByName.get(name.trim().toLowerCase());
    const ch = id === undefined ? undefined : view.channel(ctx.org.id, id);
    if (!ch || ch.channel.is_archived || !hasContentAccess(ch, actor)) throw badRequest(`Invalid channel name '${name}'`);
    return id!;
  };
  return {
    sending_stream_id: channel(req.default_sending_stream, current?.sending_stream_id ?? null),
    events_register_stream_id: channel(req.default_events_register_stream, current?.events_register_stream_id ?? null),
    all_public_streams: req.default_all_public_streams ?? current?.all_public_streams ?? false,
  };
}

export const createBot = command({
  type: 'CREATE_BOT',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateBot, env: DecideEnv, view: StateView): Decision<{ user: UserRecord }, UserCreated> {
    const actor = activeActor(ctx, c.actor_id);
    if (actor.is_bot) throw badRequest('Bots cannot create bots');
    const settings = realmSettings(ctx);
    if (c.bot_type !== BOT_TYPES.DEFAULT_BOT && c.bot_type !== BOT_TYPES.INCOMING_WEBHOOK_BOT) throw badRequest('Invalid bot type');
    const group = c.bot_type === BOT_TYPES.INCOMING_WEBHOOK_BOT ? settings.can_create_write_only_bots_group : settings.can_create_bots_group;
    if (!hasGroupPermission(ctx, actor, group)) throw badRequest('Insufficient permission');
    const email = botEmail(c.short_name, ctx.org.subdomain);
    if (ctx.byEmail.has(email)) throw badRequest('Username already in use');
    const user = makeUser(env, { user_id: ctx.nextUserId, recipient_id: ctx.nextRecipientId, email, password_hash: '', full_name: checkFullName(c.full_name), role: Role.MEMBER, waitingPeriodDays: settings.waiting_period_threshold });
    user.is_bot = true;
    user.bot_type = c.bot_type;
    user.bot_owner_id = actor.user_id;
    const defaults = botDefaults(view, ctx, actor, c, undefined);
    if (defaults.sending_stream_id !== null || defaults.events_register_stream_id !== null || defaults.all_public_streams) user.bot_defaults = defaults;
    return { facts: [{ type: 'UserCreated', org: ctx.org.id, user, acting_user_id: actor.user_id }], value: { user } };
  },
});

export const updateBot = command({
  type: 'UPDATE_BOT',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateBot, _env: DecideEnv, view: StateView): Decision<Record<string, never>, BotUpdated> {
    const actor = activeActor(ctx, c.actor_id);
    const bot = administeredBot(ctx, actor, c.bot_id);
    const fact: BotUpdated = { type: 'BotUpdated', org: c.org, bot_id: bot.user_id };
    if (c.full_name !== undefined) {
      const name = checkFullName(c.full_name);
      if (name !== bot.full_name) fact.full_name = name;
    }
    if (c.bot_owner_id !== undefined && c.bot_owner_id !== bot.bot_owner_id) {
      const owner = ctx.users.get(c.bot_owner_id);
      if (!owner || !owner.is_active || owner.is_bot) throw badRequest('Failed to change owner, no such user');
      fact.bot_owner_id = owner.user_id;
      fact.previous_owner_id = bot.bot_owner_id;
    }
    const defaults = botDefaults(view, ctx, actor, c, bot.bot_defaults);
    if (JSON.stringify(defaults) !== JSON.stringify(bot.bot_defaults ?? { sending_stream_id: null, events_register_stream_id: null, all_public_streams: false })) fact.bot_defaults = defaults;
    const changed = fact.full_name !== undefined || fact.bot_owner_id !== undefined || fact.bot_defaults !== undefined;
    return { facts: changed ? [fact] : [], value: {} };
  },
});

export const regenerateBotKey = command({
  type: 'REGENERATE_BOT_KEY',
  actor: 'org',
  decide(ctx: OrgContext, c: RegenerateBotKey, env: DecideEnv): Decision<{ api_key: string }, ApiKeyRegenerated> {
    const bot = administeredBot(ctx, activeActor(ctx, c.actor_id), c.bot_id);
    const apiKey = env.token(24);
    return { facts: [{ type: 'ApiKeyRegenerated', org: c.org, user_id: bot.user_id, api_key: apiKey }], value: { api_key: apiKey } };
  },
});

export const deactivateBot = command({
  type: 'DEACTIVATE_BOT',
  actor: 'org',
  decide(ctx: OrgContext, c: DeactivateBot): Decision<Record<string, never>, UserActivationChanged> {
    const actor = activeActor(ctx, c.actor_id);
    const bot = administeredBot(ctx, actor, c.bot_id);
    if (!bot.is_active) throw badRequest('No such bot');
    return { facts: [{ type: 'UserActivationChanged', org: c.org, user_id: bot.user_id, active: false, acting_user_id: actor.user_id }], value: {} };
  },
});

const botEvent = (org: number, seq: number, users: number[], op: string, bot: Record<string, unknown>): Delivery => ({ org, seq, type: 'realm_bot', user_ids: users, event: eventJson('realm_bot', { op, bot }) });

const botUpdated = orgFact<BotUpdated>({
  type: 'BotUpdated',
  apply(ctx, f) {
    const bot = ctx.users.get(f.bot_id);
    if (!bot) return;
    const next: UserRecord = { ...bot };
    if (f.full_name !== undefined) next.full_name = f.full_name;
    if (f.bot_owner_id !== undefined) next.bot_owner_id = f.bot_owner_id;
    if (f.bot_defaults !== undefined) next.bot_defaults = { ...f.bot_defaults };
    ctx.users.set(f.bot_id, next);
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const bot = org.users.get(f.bot_id)!;
    const admins = botAdministrators(org, bot);
    const shown = botView(view, f.org, bot);
    const out: Delivery[] = [];
    const update = (fields: Record<string, unknown>): void => void out.push(botEvent(f.org, seq, admins, 'update', { user_id: f.bot_id, ...fields }));
    if (f.full_name !== undefined) {
      update({ full_name: f.full_name });
      out.push({ org: f.org, seq, type: 'realm_user', user_ids: activeUsersWhere(view, f.org), event: eventJson('realm_user', { op: 'update', person: { user_id: f.bot_id, full_name: f.full_name } }) });
    }
    if (f.bot_owner_id !== undefined) {
      // The previous owner, unless an administrator, no longer administers the bot; the new one starts to.
      const previous = f.previous_owner_id === null || f.previous_owner_id === undefined ? undefined : org.users.get(f.previous_owner_id);
      if (previous && previous.role > Role.ADMIN) out.push(botEvent(f.org, seq, [previous.user_id], 'delete', { user_id: f.bot_id }));
      const owner = org.users.get(f.bot_owner_id)!;
      if (owner.role > Role.ADMIN) out.push(botEvent(f.org, seq, [owner.user_id], 'add', shown));
      update({ owner_id: f.bot_owner_id });
      out.push({ org: f.org, seq, type: 'realm_user', user_ids: activeUsersWhere(view, f.org), event: eventJson('realm_user', { op: 'update', person: { user_id: f.bot_id, bot_owner_id: f.bot_owner_id } }) });
    }
    if (f.bot_defaults !== undefined) {
      update({
        default_sending_stream: shown.default_sending_stream,
        default_events_register_stream: shown.default_events_register_stream,
        default_all_public_streams: shown.default_all_public_streams,
      });
    }
    return out;
  },
});

const apiKeyRegenerated = orgFact<ApiKeyRegenerated>({
  type: 'ApiKeyRegenerated',
  apply(ctx, f) {
    const user = ctx.users.get(f.user_id);
    if (user) ctx.users.set(f.user_id, { ...user, api_key: f.api_key });
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const user = org.users.get(f.user_id)!;
    return user.is_bot ? [botEvent(f.org, seq, botAdministrators(org, user), 'update', { user_id: f.user_id, api_key: f.api_key })] : [];
  },
});

export const bots = area({
  name: 'bots',
  commands: [createBot, updateBot, regenerateBotKey, deactivateBot],
  facts: [botUpdated, apiKeyRegenerated],
  register: [
    {
      types: ['realm_bot'],
      fill(state, r, view) {
        const me = view.org(r.org.id)!.users.get(r.user.user_id) ?? r.user;
        state.realm_bots = administeredBots(view, r.org.id, me);
      },
    },
  ],
});
