/**
 * Changing the organization's settings (`PATCH /realm`, Zulip's
 * `zerver/views/realm.py` `update_realm`): its name and description, and the
 * settings Parley's features read (`actors/rules/realm_settings.ts`): message editing and
 * moving, deletion limits, the waiting period, and the organization's permission
 * groups. One `realm` event per setting, in Zulip's form: `update` with the value,
 * or, for message editing and the group settings, `update_dict` with
 * `property: "default"`.
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { canAccessChannel } from '../kinds/channel.js';
import { ApiError, adminRequired, badRequest } from '../shared/errors.js';
import { groupSettingChange, hasGroupPermission, isSystemGroup, SYSTEM_GROUP_INFO, SYSTEM_GROUPS } from '../rules/group_settings.js';
import { canAccessAllUsers } from '../rules/presence.js';
import { accessChangeDeliveries } from '../render/access_events.js';
import type { OrgContext } from '../kinds/organization.js';
import { codePointLength } from '../rules/messages.js';
import { checkRealmValue, isChannelSetting, isGroupSetting, realmSettings, REALM_SETTING_NAMES, UPDATE_DICT_SETTINGS, type RealmSettingName } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type GroupSettingValue, type UserRecord } from '../shared/types.js';
import { WELCOME_BOT } from '../rules/system_bots.js';
import { fullMemberChanges, type FullMembersChanged } from './full_members.js';
import { systemBotChannelMessage, systemBotDirect, type MessageSent } from './messages.js';
import { orgState } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** The organization's settings that differ from Zulip's defaults (`actors/rules/realm_settings.ts`). */
    realmSettings: Record<string, unknown>;
  }
}

orgState({ realmSettings: { empty: () => ({}) } });

export const MAX_REALM_NAME_LENGTH = 40;
export const MAX_REALM_DESCRIPTION_LENGTH = 1000;
/** Zulip's `Realm.MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH`. */
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;

/** Settings only owners may change. */
const OWNER_ONLY = new Set<string>(['can_create_web_public_channel_group', 'can_manage_billing_group', 'can_manage_all_groups', 'message_retention_days']);

/** The organization's settings changed: only those that did, name and description included. */
/** `previous_access_group`: the `can_access_all_users_group` a change of it replaced. */
export interface RealmSettingsChanged { type: 'RealmSettingsChanged'; org: number; changes: Record<string, unknown>; previous_access_group?: GroupSettingValue }

/** Change settings (administrators; some owners only). Group settings come as `{new, old?}`. */
/**
 * Change the organization's name, description or settings. `video_chat_providers`:
 * the ids of the providers the server offers (a server setting; only `0` without it).
 */
export interface UpdateRealm { type: 'UPDATE_REALM'; org: number; actor_id: number; name?: string; description?: string; settings: Record<string, unknown>; video_chat_providers?: number[] }

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}


/**
 * The moderation request channel (Zulip's `update_realm`): a private channel the
 * administrator can see, or any negative id for none (kept as `-1`, which is what
 * `/register` and the event show).
 */
function checkModerationChannel(view: StateView, ctx: OrgContext, actor: UserRecord, request: unknown): number {
  if (typeof request !== 'number' || !Number.isInteger(request)) throw badRequest('moderation_request_channel_id is not an integer');
  if (request < 0) return -1;
  const ch = view.channel(ctx.org.id, request);
  if (!ch || ch.channel.is_archived || !canAccessChannel(actor, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
  if (!ch.channel.invite_only) throw badRequest('Moderation request channel must be private.');
  return request;
}

/**
 * Zulip's `GroupPermissionSetting` of `can_access_all_users_group` (`require_system_group`,
 * `allow_nobody_group: false`, `allowed_system_groups` everyone and members): whom guests
 * may access changes only with the setting or a role, the two changes that send the
 * `realm_user` events of `render/access_events.ts`, never with a group's membership.
 */
function checkSettingGroups(name: string, value: GroupSettingValue): GroupSettingValue {
  if (name !== 'can_access_all_users_group') return value;
  if (typeof value !== 'number' || !isSystemGroup(value)) throw badRequest(`'${name}' must be a system user group.`);
  if (value !== SYSTEM_GROUPS.everyone && value !== SYSTEM_GROUPS.members) throw badRequest(`'${name}' setting cannot be set to '${SYSTEM_GROUP_INFO[value].name}' group.`);
  return value;
}

export const updateRealm = command({
  type: 'UPDATE_REALM',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateRealm, env: DecideEnv, view: StateView): Decision<Record<string, never>, RealmSettingsChanged | FullMembersChanged> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    const changes: Record<string, unknown> = {};
    if (c.name !== undefined) {
      const name = c.name.trim();
      if (name === '') throw badRequest("Organization name can't be empty.");
      if (codePointLength(name) > MAX_REALM_NAME_LENGTH) throw badRequest('Organization name is too long.');
      if (name !== ctx.org.name) changes.name = name;
    }
    if (c.description !== undefined) {
      if (codePointLength(c.description) > MAX_REALM_DESCRIPTION_LENGTH) throw badRequest('Organization description is too long.');
      if (c.description !== ctx.org.description) changes.description = c.description;
    }
    const current = realmSettings(ctx);
    for (const [name, request] of Object.entries(c.settings)) {
      if (!(REALM_SETTING_NAMES as string[]).includes(name)) continue;
      const key = name as RealmSettingName;
      if (OWNER_ONLY.has(key) && actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      const value = isGroupSetting(key) ? checkSettingGroups(key, groupSettingChange(ctx, key, request, current[key] as GroupSettingValue))
        : isChannelSetting(key) ? checkModerationChannel(view, ctx, actor, request)
        : checkRealmValue(key, request);
      if (key === 'video_chat_provider' && !(c.video_chat_providers ?? [0]).includes(value as number)) throw badRequest(`Invalid video_chat_provider ${String(value)}`);
      if (!sameValue(value, current[key])) changes[key] = value;
    }
    if (Object.keys(changes).length === 0) return { facts: [], value: {} };
    const changed: RealmSettingsChanged = { type: 'RealmSettingsChanged', org: c.org, changes };
    if ('can_access_all_users_group' in changes) changed.previous_access_group = current.can_access_all_users_group;
    const facts: Array<RealmSettingsChanged | FullMembersChanged> = [changed];
    // A new waiting period moves members into or out of role:fullmembers at once.
    const moved = typeof changes.waiting_period_threshold === 'number' ? fullMemberChanges(ctx, changes.waiting_period_threshold, env.now()) : null;
    if (moved) facts.push(moved);
    return { facts, value: {} };
  },
});

/** Send the caller the Welcome Bot's custom message, as new users would get it (administrators). */
export interface TestWelcomeBotMessage { type: 'TEST_WELCOME_BOT_MESSAGE'; org: number; actor_id: number; text: string }

/**
 * Zulip's `send_test_welcome_bot_custom_message`: the text at most 8000 characters and
 * not empty; the message is an ordinary direct message from the cross-realm Welcome
 * Bot to the caller, unread for them.
 */
export const testWelcomeBotMessage = command({
  type: 'TEST_WELCOME_BOT_MESSAGE',
  actor: 'org',
  decide(ctx: OrgContext, c: TestWelcomeBotMessage, env: DecideEnv): Decision<{ message_id: number }, MessageSent> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    // Zulip checks the administrator first (its decorator), then the parameter's length, then emptiness.
    if (codePointLength(c.text) > MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH) throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH} characters)`);
    if (c.text.length === 0) throw badRequest('Message must not be empty');
    const sent = systemBotDirect(env, ctx, WELCOME_BOT, actor, c.text);
    return { facts: [sent], value: { message_id: sent.message.id } };
  },
});

/** Post an organization's first messages, as Welcome Bot (when it is created). */
export interface SendInitialRealmMessages { type: 'SEND_INITIAL_REALM_MESSAGES'; org: number; messages: Array<{ stream_id: number; topic: string; content: string }> }

/**
 * Zulip's `send_initial_realm_messages`: the messages a new organization starts with,
 * from the cross-realm Welcome Bot, unread for every recipient (the owner included),
 * decided together: they land all at once or not at all.
 */
export const sendInitialRealmMessages = command({
  type: 'SEND_INITIAL_REALM_MESSAGES',
  actor: 'org',
  decide(ctx: OrgContext, c: SendInitialRealmMessages, env: DecideEnv, view: StateView): Decision<{ message_ids: number[] }, MessageSent> {
    const facts = c.messages.map((m) => {
      const channel = view.channel(ctx.org.id, m.stream_id)?.channel;
      if (!channel || channel.is_archived) throw badRequest('Invalid channel ID');
      return systemBotChannelMessage(env, ctx, WELCOME_BOT, channel, m.topic, m.content);
    });
    return { facts, value: { message_ids: facts.map((f) => f.message.id) } };
  },
});

const realmSettingsChanged = fact<RealmSettingsChanged>({
  type: 'RealmSettingsChanged',
  apply: {
    server(ctx, f) {
      const org = ctx.orgs.get(f.org);
      if (!org) return;
      if (typeof f.changes.name === 'string') org.name = f.changes.name;
      if (typeof f.changes.description === 'string') org.description = f.changes.description;
    },
    org(ctx, f) {
      const { name, description, ...settings } = f.changes;
      if (typeof name === 'string' || typeof description === 'string') {
        ctx.org = { ...ctx.org, ...(typeof name === 'string' ? { name } : {}), ...(typeof description === 'string' ? { description } : {}) };
      }
      // Replaced, not changed: a snapshot being written keeps the object it holds.
      if (Object.keys(settings).length > 0) ctx.realmSettings = { ...ctx.realmSettings, ...settings };
    },
  },
  route(f, to) {
    to.server();
    to.org(f.org);
  },
  notify(f, seq, view) {
    const everyone = activeUsersWhere(view, f.org);
    const out: Delivery[] = Object.entries(f.changes).map(([property, value]) => ({
      org: f.org,
      seq,
      type: 'realm',
      user_ids: everyone,
      event: UPDATE_DICT_SETTINGS.has(property)
        ? eventJson('realm', { op: 'update_dict', property: 'default', data: { [property]: value } })
        : eventJson('realm', { op: 'update', property, value }),
    }));
    // Guests who gain or lose access to all users learn of the users that changes.
    const previous = f.previous_access_group;
    if (previous !== undefined) {
      const org = view.org(f.org)!;
      for (const u of org.users.values()) {
        if (u.role !== Role.GUEST || !u.is_active) continue;
        const limited = !canAccessAllUsers(org, u);
        if (limited === hasGroupPermission(org, u, previous)) out.push(...accessChangeDeliveries(view, f.org, seq, u, limited));
      }
    }
    return out;
  },
});

export const realm = area({
  name: 'realm',
  commands: [updateRealm, testWelcomeBotMessage, sendInitialRealmMessages],
  facts: [realmSettingsChanged],
});
