/**
 * Changing a channel (Zulip's `zerver/views/streams.py` `update_stream_backend` and
 * `zerver/actions/streams.py`): its name, description, privacy and history, folder,
 * topics policy, retention and permission groups, and archiving and unarchiving it
 * (`DELETE /streams/{id}` archives), and its default status (`is_default_stream`, for
 * the organization's administrators alone; `default_streams` event as in
 * `default_channels.ts`). Channel administrators only: the organization's
 * administrators and the channel's `can_administer_channel_group`. One `stream`
 * `update` event per property, in Zulip's form, to everyone who can see the channel;
 * those who start or stop seeing it get `stream` `create` or `delete`. A rename and a
 * new description are announced by the notification bot in the channel.
 *
 * Also the channel directory's reads (`GET /streams`, `/streams/{id}`, topics, members,
 * lookups by name) and the `stream` section of `/register`.
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { AnyFact, Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, ApiError, badRequest } from '../shared/errors.js';
import { groupSettingChange, hasGroupPermission } from '../rules/group_settings.js';
import { isChannelAdmin } from '../rules/message_edits.js';
import { canAccessChannel, channelGroupSetting, CHANNEL_GROUP_DEFAULTS, hasContentAccess, received, type ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { renderMarkdown } from '../engines/markdown/index.js';
import { CHANNEL_EVENTS_TOPIC, checkChannelName, codePointLength, EMPTY_TOPIC_DISPLAY_NAME, LIMITS } from '../rules/messages.js';
import { eventJson, listEvent } from '../render/events.js';
import { channelView } from '../render/views.js';
import { Role, type ChannelGroupSettingKey, type ChannelRecord, type GroupSettingValue, type TopicsPolicy, type UserRecord } from '../shared/types.js';
import { mentionResolver, notificationBotMessage } from './messages.js';
import { COLORS, defaultSubscriptionProps, type SubscriptionsAdded } from './subscriptions.js';
import { DEFAULT_CHANNEL_PRIVATE, defaultChannelsDelivery } from './default_channels.js';
import { realmSettings } from '../rules/realm_settings.js';
import { checkNewChannelSettings, TOPICS_POLICIES } from '../rules/channel_settings.js';


/** What changed in a channel: the record's fields, as they are now. */
export type ChannelChanges = Partial<Pick<ChannelRecord, 'name' | 'description' | 'rendered_description' | 'invite_only' | 'history_public_to_subscribers' | 'is_web_public' | 'folder_id' | 'topics_policy' | 'message_retention_days' | 'is_archived' | 'is_default'>> & {
  groups?: Partial<Record<ChannelGroupSettingKey, GroupSettingValue>>;
};

/** A channel was changed. */
export interface ChannelUpdated { type: 'ChannelUpdated'; org: number; stream_id: number; old_name: string; changes: ChannelChanges }

/** Change a channel (its administrators). Group settings come as `{new, old?}`. */
export interface UpdateChannel {
  type: 'UPDATE_CHANNEL';
  stream_id: number;
  org: number;
  actor_id: number;
  new_name?: string;
  description?: string;
  is_private?: boolean;
  history_public_to_subscribers?: boolean;
  is_web_public?: boolean;
  folder_id?: number | null;
  topics_policy?: string;
  message_retention_days?: number | 'realm_default' | 'unlimited';
  is_archived?: boolean;
  /** Add the channel to the default channels or take it out (organization administrators only). */
  is_default_stream?: boolean;
  groups?: Record<string, unknown>;
}



export const updateChannel = command({
  type: 'UPDATE_CHANNEL',
  actor: 'channel',
  decide(ch: ChannelContext, c: UpdateChannel, env: DecideEnv, view: StateView): Decision<Record<string, never>, AnyFact> {
    const org = view.org(c.org)!;
    const actor = org.users.get(c.actor_id);
    if (!actor || !actor.is_active || !canAccessChannel(actor, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
    if (!isChannelAdmin(org, actor, ch.channel)) throw badRequest('You do not have permission to administer this channel.');
    const record = ch.channel;
    const changes: ChannelChanges = {};
    if (record.is_archived && c.is_archived !== false) throw badRequest('Channel is archived.');
    if (c.is_archived !== undefined && c.is_archived !== record.is_archived) {
      changes.is_archived = c.is_archived;
      // Archiving takes a channel out of the default channels (Zulip's do_deactivate_stream), and unarchiving does not put it back.
      if (record.is_default) changes.is_default = false;
    }
    if (c.new_name !== undefined) {
      const name = checkChannelName(c.new_name);
      const holder = org.channelsByName.get(name.toLowerCase());
      if (holder !== undefined && holder !== record.stream_id) throw badRequest(`Channel '${name}' already exists`);
      if (name !== record.name) changes.name = name;
    }
    if (c.description !== undefined) {
      const description = c.description.replace(/\s+/g, ' ').trim();
      if (codePointLength(description) > LIMITS.max_stream_description_length) throw badRequest(`description is too long (limit: ${LIMITS.max_stream_description_length} characters)`);
      if (description !== record.description) {
        changes.description = description;
        changes.rendered_description = description === '' ? '' : renderMarkdown(description, mentionResolver(org)).html;
      }
    }
    if (c.is_web_public === true && !record.is_web_public) throw badRequest('Web-public channels are not enabled.');
    if (c.is_web_public === false && record.is_web_public) changes.is_web_public = false;
    if (c.is_private !== undefined && c.is_private !== record.invite_only) {
      changes.invite_only = c.is_private;
      // Zulip's defaults: a channel made public shares its history.
      if (!c.is_private && c.history_public_to_subscribers === undefined) changes.history_public_to_subscribers = true;
    }
    if (c.history_public_to_subscribers !== undefined && c.history_public_to_subscribers !== record.history_public_to_subscribers) {
      changes.history_public_to_subscribers = c.history_public_to_subscribers;
    }
    if (!(changes.invite_only ?? record.invite_only) && !(changes.history_public_to_subscribers ?? record.history_public_to_subscribers)) {
      throw badRequest('Invalid parameters: public channels must have history available to subscribers.');
    }
    // Zulip's update_stream_backend: the privacy and default status the request leads to may not be both, whichever
    // of the two the request changes (a default channel made private, or a private one made default).
    const proposedDefault = c.is_default_stream ?? changes.is_default ?? record.is_default ?? false;
    if ((changes.invite_only ?? record.invite_only) && proposedDefault) throw badRequest(DEFAULT_CHANNEL_PRIVATE);
    if (c.is_default_stream !== undefined) {
      if (actor.role > Role.ADMIN) throw adminRequired();
      // Adding a default channel again tells no one; removing always tells, as in Zulip (and as DELETE /default_streams).
      if (c.is_default_stream !== (changes.is_default ?? record.is_default ?? false) || !c.is_default_stream) changes.is_default = c.is_default_stream;
    }
    if (c.folder_id !== undefined && c.folder_id !== (record.folder_id ?? null)) {
      if (c.folder_id !== null) {
        const folder = org.folders.get(c.folder_id);
        if (!folder) throw badRequest('Invalid channel folder ID');
        if (folder.is_archived) throw badRequest('Channel folder is archived');
      }
      changes.folder_id = c.folder_id;
    }
    if (c.topics_policy !== undefined && c.topics_policy !== (record.topics_policy ?? 'inherit')) {
      if (!(TOPICS_POLICIES as readonly string[]).includes(c.topics_policy)) throw badRequest('Invalid topics_policy');
      if (c.topics_policy === 'empty_topic_only' && [...ch.topics.keys()].some((k) => k !== '')) {
        throw badRequest('To enable this configuration, all messages in this channel must be in the general chat topic. Consider renaming or deleting other topics.');
      }
      changes.topics_policy = c.topics_policy as TopicsPolicy;
    }
    if (c.message_retention_days !== undefined) {
      if (actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      const days = c.message_retention_days === 'realm_default' ? null : c.message_retention_days === 'unlimited' ? -1 : c.message_retention_days;
      if (typeof days === 'number' && days !== -1 && (!Number.isInteger(days) || days <= 0)) throw badRequest('Bad value for \'message_retention_days\'');
      if (days !== record.message_retention_days) changes.message_retention_days = days;
    }
    if (c.groups) {
      const groups: Partial<Record<ChannelGroupSettingKey, GroupSettingValue>> = {};
      for (const [key, request] of Object.entries(c.groups)) {
        if (!(key in CHANNEL_GROUP_DEFAULTS)) continue;
        const k = key as ChannelGroupSettingKey;
        const value = groupSettingChange(org, k, request, channelGroupSetting(record, k));
        if (JSON.stringify(value) !== JSON.stringify(channelGroupSetting(record, k))) groups[k] = value;
      }
      if (Object.keys(groups).length > 0) changes.groups = groups;
    }
    if (Object.keys(changes).length === 0) return { facts: [], value: {} };
    const updated: ChannelUpdated = { type: 'ChannelUpdated', org: c.org, stream_id: record.stream_id, old_name: record.name, changes };
    const facts: AnyFact[] = [updated];
    // The notification bot tells the channel of a new name or description, as Zulip does.
    const mention = `@_**${actor.full_name}|${actor.user_id}**`;
    const after: ChannelRecord = { ...record, ...changes, groups: record.groups };
    if (changes.name !== undefined && !after.is_archived) {
      facts.push(notificationBotMessage(env, org, after, CHANNEL_EVENTS_TOPIC, `${mention} renamed channel **${record.name}** to **${changes.name}**.`));
    }
    if (changes.description !== undefined && !after.is_archived) {
      const quote = (text: string): string => `\`\`\`\` quote\n${text === '' ? '*No description.*' : text}\n\`\`\`\``;
      facts.push(notificationBotMessage(env, org, after, CHANNEL_EVENTS_TOPIC,
        `${mention} changed the description for this channel.\n\n* **Old description:**\n${quote(record.description)}\n* **New description:**\n${quote(changes.description)}`));
    }
    return { facts, value: {} };
  },
});

/** Who sees a channel's metadata: its subscribers, and per `canAccessChannel` everyone else. */
function viewers(view: StateView, org: number, channel: ChannelRecord, subscribers: Set<number>): Set<number> {
  const out = new Set<number>();
  for (const u of view.org(org)!.users.values()) if (u.is_active && canAccessChannel(u, channel, subscribers)) out.add(u.user_id);
  return out;
}

const channelUpdated = fact<ChannelUpdated>({
  type: 'ChannelUpdated',
  apply: {
    channel(ctx, f) {
      const { groups, ...fields } = f.changes;
      const next: ChannelRecord = { ...ctx.channel, ...fields };
      if (groups) next.groups = { ...(ctx.channel.groups ?? {}), ...groups };
      ctx.channel = next;
    },
    org(ctx, f) {
      if (f.changes.name === undefined) return;
      ctx.channelsByName.delete(f.old_name.toLowerCase());
      ctx.channelsByName.set(f.changes.name.toLowerCase(), f.stream_id);
    },
  },
  route(f, to) {
    to.channel(f.org, f.stream_id);
    to.org(f.org);
  },
  notify(f, seq, view) {
    const ch = view.channel(f.org, f.stream_id)!;
    const now = viewers(view, f.org, ch.channel, ch.subscribers);
    const before: ChannelRecord = { ...ch.channel, invite_only: f.changes.invite_only !== undefined ? !f.changes.invite_only : ch.channel.invite_only };
    const earlier = f.changes.invite_only !== undefined ? viewers(view, f.org, before, ch.subscribers) : now;
    const out: Delivery[] = [];
    const gained = [...now].filter((id) => !earlier.has(id));
    const lost = [...earlier].filter((id) => !now.has(id));
    if (lost.length > 0) out.push({ org: f.org, seq, type: 'stream', user_ids: lost, event: streamDeleted(f.stream_id) });
    const stayed = [...now].filter((id) => earlier.has(id));
    const update = (property: string, value: unknown, extra: Record<string, unknown> = {}): void => {
      out.push({ org: f.org, seq, type: 'stream', user_ids: stayed, event: eventJson('stream', { op: 'update', stream_id: f.stream_id, name: f.old_name, property, value, ...extra }) });
    };
    const c = f.changes;
    if (c.name !== undefined) update('name', c.name);
    if (c.description !== undefined) update('description', c.description, { rendered_description: c.rendered_description ?? '' });
    if (c.invite_only !== undefined) update('invite_only', c.invite_only, { history_public_to_subscribers: ch.channel.history_public_to_subscribers, is_web_public: ch.channel.is_web_public });
    else if (c.history_public_to_subscribers !== undefined) update('history_public_to_subscribers', c.history_public_to_subscribers);
    if (c.is_web_public !== undefined) update('is_web_public', c.is_web_public);
    if (c.folder_id !== undefined) update('folder_id', c.folder_id);
    if (c.topics_policy !== undefined) update('topics_policy', c.topics_policy);
    if (c.message_retention_days !== undefined) update('message_retention_days', c.message_retention_days);
    if (c.is_archived !== undefined) {
      // As Zulip since feature level 378: an update to clients that keep archived channels;
      // to the others the channel goes (archived) or comes back (unarchived).
      const updated = eventJson('stream', { op: 'update', stream_id: f.stream_id, name: f.old_name, property: 'is_archived', value: c.is_archived });
      const listed = c.is_archived ? streamDeleted(f.stream_id) : listEvent('stream', 'create', 'streams', [JSON.stringify(channelView(ch))]);
      out.push({ org: f.org, seq, type: 'stream', user_ids: stayed, event: (_userId, caps) => (caps.archived_channels ? updated : listed) });
    }
    for (const [key, value] of Object.entries(c.groups ?? {})) update(key, value);
    if (c.is_default !== undefined) out.push(defaultChannelsDelivery(view, f.org, seq));
    if (gained.length > 0) out.push({ org: f.org, seq, type: 'stream', user_ids: gained, event: listEvent('stream', 'create', 'streams', [JSON.stringify(channelView(ch))]) });
    return out;
  },
});

/** A channel gone from a user's view: ids only, as Zulip sends since feature level 343 (`streams` keeps only `stream_id`). */
function streamDeleted(streamId: number): ReturnType<typeof eventJson> {
  return eventJson('stream', { op: 'delete', streams: [{ stream_id: streamId }], stream_ids: [streamId] });
}

/** Create a channel (`POST /channels/create`). Group settings are plain values here. */
export interface CreateChannel {
  type: 'CREATE_CHANNEL';
  org: number;
  actor_id: number;
  name: string;
  description: string;
  subscribers: number[];
  announce: boolean;
  invite_only: boolean;
  is_web_public: boolean;
  is_default_stream: boolean;
  folder_id: number | null;
  topics_policy?: string;
  history_public_to_subscribers?: boolean;
  message_retention_days?: number | 'realm_default' | 'unlimited';
  groups: Record<string, unknown>;
}

export const createChannel = command({
  type: 'CREATE_CHANNEL',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateChannel, env: DecideEnv, view: StateView): Decision<{ id: number }, AnyFact> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active) throw badRequest('Invalid user');
    const settings = realmSettings(ctx);
    const allowed = hasGroupPermission(ctx, actor, c.invite_only ? settings.can_create_private_channel_group : settings.can_create_public_channel_group);
    if (!allowed) throw badRequest('Insufficient permission');
    const name = checkChannelName(c.name);
    if (ctx.channelsByName.has(name.toLowerCase())) throw new ApiError('CHANNEL_ALREADY_EXISTS', `Channel '${name}' already exists`);
    const description = c.description.replace(/\s+/g, ' ').trim();
    if (codePointLength(description) > LIMITS.max_stream_description_length) throw badRequest(`description is too long (limit: ${LIMITS.max_stream_description_length} characters)`);
    if (c.is_web_public) throw badRequest('Web-public channels are not enabled.');
    if (c.is_default_stream && actor.role > Role.ADMIN) throw badRequest('Insufficient permission');
    if (c.is_default_stream && c.invite_only) throw badRequest(DEFAULT_CHANNEL_PRIVATE);
    const history = c.history_public_to_subscribers ?? !c.invite_only;
    if (!c.invite_only && !history) throw badRequest('Invalid parameters: public channels must have history available to subscribers.');
    let retention: number | null = null;
    if (c.message_retention_days !== undefined && c.message_retention_days !== 'realm_default') {
      if (actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
      retention = c.message_retention_days === 'unlimited' ? -1 : c.message_retention_days;
      if (retention !== -1 && (!Number.isInteger(retention) || retention <= 0)) throw badRequest("Bad value for 'message_retention_days'");
    }
    const { folder_id: folderId, topics_policy: policy, groups } = checkNewChannelSettings(ctx, actor, { invite_only: c.invite_only, history_public_to_subscribers: history, folder_id: c.folder_id, topics_policy: c.topics_policy, groups: c.groups });
    const subscribers = [...new Set(c.subscribers)];
    for (const id of subscribers) {
      const user = ctx.users.get(id);
      if (!user || !user.is_active) throw badRequest(`Invalid user ID: ${id}`);
    }
    if (subscribers.some((id) => id !== actor.user_id) && !hasGroupPermission(ctx, actor, settings.can_add_subscribers_group)) {
      throw badRequest('Insufficient permission');
    }
    const channel: ChannelRecord = {
      stream_id: ctx.nextChannelId, name, description, rendered_description: description === '' ? '' : renderMarkdown(description, mentionResolver(ctx)).html,
      invite_only: c.invite_only, is_web_public: false, history_public_to_subscribers: history, date_created: env.now(), creator_id: actor.user_id,
      is_archived: false, message_retention_days: retention, recipient_id: ctx.nextRecipientId, is_default: c.is_default_stream, groups,
      folder_id: folderId, topics_policy: policy,
    };
    const props = subscribers.map((id) => defaultSubscriptionProps(COLORS[(view.user(ctx.org.id, id)?.subs.size ?? 0) % COLORS.length]));
    const added: SubscriptionsAdded = {
      type: 'SubscriptionsAdded', org: ctx.org.id, created: [channel], additions: subscribers.length > 0 ? [{ stream_id: channel.stream_id, user_ids: subscribers, props }] : [], acting_user_id: actor.user_id,
    };
    const facts: AnyFact[] = [added];
    // Zulip posts the channel's creation in its "channel events" topic.
    // Its policy as Zulip's `get_stream_permission_policy_key` names it (web-public channels are off).
    const kind = !c.invite_only ? '**Public**' : history ? '**Private, shared history**' : '**Private, protected history**';
    facts.push(notificationBotMessage(env, ctx, channel, CHANNEL_EVENTS_TOPIC,
      `${kind} channel created by @_**${actor.full_name}|${actor.user_id}**. **Description:**\n\`\`\`\` quote\n${description === '' ? '*No description.*' : description}\n\`\`\`\``));
    return { facts, value: { id: channel.stream_id } };
  },
});

/** Days without a message after which a channel is no longer recently active (Zulip's `LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE`). */
export const RECENTLY_ACTIVE_DAYS = 180;

/** Channels became, or stopped being, recently active. */
export interface ChannelActivityChanged { type: 'ChannelActivityChanged'; org: number; changes: Array<{ stream_id: number; active: boolean }> }
/** The periodic check of which channels are recently active (Zulip's daily job); a message wakes a channel at once. */
export interface CheckChannelActivity { type: 'CHECK_CHANNEL_ACTIVITY'; org: number }

export const checkChannelActivity = command({
  type: 'CHECK_CHANNEL_ACTIVITY',
  actor: 'org',
  decide(ctx: OrgContext, c: CheckChannelActivity, env: DecideEnv, view: StateView): Decision<{ changed: number }, ChannelActivityChanged> {
    const since = env.now() - RECENTLY_ACTIVE_DAYS * 24 * 3600;
    const changes: ChannelActivityChanged['changes'] = [];
    for (const id of view.channelIdsOf(ctx.org.id)) {
      const ch = view.channel(ctx.org.id, id)!;
      const last = ch.messages.lastId;
      const newest = last !== undefined ? ch.messages.get(last)!.timestamp : ch.channel.date_created;
      const active = newest >= since;
      if (active !== (ch.channel.is_recently_active ?? true)) changes.push({ stream_id: id, active });
    }
    return { facts: changes.length === 0 ? [] : [{ type: 'ChannelActivityChanged', org: c.org, changes }], value: { changed: changes.length } };
  },
});

const channelActivityChanged = fact<ChannelActivityChanged>({
  type: 'ChannelActivityChanged',
  apply: {
    channel(ctx, f) {
      const change = f.changes.find((x) => x.stream_id === ctx.channel.stream_id);
      if (change) ctx.channel = { ...ctx.channel, is_recently_active: change.active };
    },
  },
  route(f, to) {
    for (const change of f.changes) to.channel(f.org, change.stream_id);
  },
  notify(f, seq, view) {
    return f.changes.map((change) => {
      const ch = view.channel(f.org, change.stream_id)!;
      return {
        org: f.org, seq, type: 'stream', user_ids: [...viewers(view, f.org, ch.channel, ch.subscribers)],
        event: eventJson('stream', { op: 'update', stream_id: change.stream_id, name: ch.channel.name, property: 'is_recently_active', value: change.active }),
      };
    });
  },
});

// Reads: the channel directory, as route handlers ask it, answered from actor state without changing it.

/** The channels a user can see, as `GET /streams` lists them. */
export function listChannels(rt: StateView, org: number, viewer: UserRecord, opts: { include_public: boolean; include_subscribed: boolean; include_all: boolean; include_default?: boolean; include_archived?: boolean }): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const id of rt.channelIdsOf(org)) {
    const ch = rt.channel(org, id)!;
    const subscribed = ch.subscribers.has(viewer.user_id);
    const isPublic = !ch.channel.invite_only && viewer.role !== Role.GUEST;
    const visible = (opts.include_all && viewer.role <= Role.ADMIN) || (opts.include_subscribed && subscribed) || (opts.include_public && isPublic);
    if (visible && (opts.include_archived === true || !ch.channel.is_archived)) out.push(opts.include_default ? { ...channelView(ch), is_default: ch.channel.is_default } : channelView(ch));
  }
  return out.sort((a, b) => (a.stream_id as number) - (b.stream_id as number));
}

/** Finds a channel id by name, or `STREAM_DOES_NOT_EXIST`. */
export function channelIdByName(rt: StateView, org: number, name: string): number {
  const id = rt.org(org)!.channelsByName.get(name.trim().toLowerCase());
  if (id === undefined) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel '${name}' does not exist`, { stream: name });
  return id;
}

/** A channel id by name, if the user may know the channel exists; else "Invalid channel name". */
export function visibleChannelId(rt: StateView, org: number, user: UserRecord, name: string): number {
  const id = rt.org(org)!.channelsByName.get(name.trim().toLowerCase());
  const ch = id === undefined ? undefined : rt.channel(org, id);
  if (!ch || !canAccessChannel(user, ch.channel, ch.subscribers)) throw badRequest(`Invalid channel name '${name}'`);
  return id!;
}

/** Checks that a channel id exists, or `STREAM_DOES_NOT_EXIST`. */
export function checkChannelId(rt: StateView, org: number, id: number): number {
  if (!rt.channel(org, id)) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel with ID '${id}' does not exist`, { stream_id: id });
  return id;
}

/**
 * One channel by id, as `GET /streams/{stream_id}` shows it, if the viewer may see
 * it exists (Zulip's `access_stream_by_id` without content access: subscribers, and
 * non-guests for public channels, administrators for private ones).
 */
export function getChannel(rt: StateView, org: number, viewer: UserRecord, streamId: number): Record<string, unknown> {
  return channelView(visibleChannel(rt, org, viewer, streamId));
}

/**
 * A channel's email address (`GET /streams/{stream_id}/email_address`): for a channel
 * the caller may read, with a sender who is the caller or a bot the caller owns. Parley
 * has no email gateway, and Zulip without one (`EMAIL_GATEWAY_PATTERN` unset) answers
 * an empty address; so does Parley.
 */
export function channelEmailAddress(rt: StateView, org: number, viewer: UserRecord, streamId: number, senderId: number | undefined): string {
  readableChannel(rt, org, viewer, streamId);
  if (senderId !== undefined && senderId !== viewer.user_id) {
    const sender = rt.org(org)!.users.get(senderId);
    if (!sender || !sender.is_bot || sender.bot_owner_id !== viewer.user_id) throw badRequest('Invalid user ID');
  }
  return '';
}

/**
 * Whether a user is subscribed to a channel (`GET /users/{user_id}/subscriptions/{stream_id}`):
 * asked by someone who may know the channel exists, about a user of the organization.
 */
export function subscriptionStatus(rt: StateView, org: number, viewer: UserRecord, userId: number, streamId: number): boolean {
  if (!rt.org(org)!.users.has(userId)) throw badRequest('No such user');
  return visibleChannel(rt, org, viewer, streamId).subscribers.has(userId);
}

/** A channel the viewer may know exists (`canAccessChannel`), or "Invalid channel ID". */
function visibleChannel(rt: StateView, org: number, viewer: UserRecord, streamId: number): ChannelContext {
  const ch = rt.channel(org, streamId);
  if (!ch || !canAccessChannel(viewer, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
  return ch;
}

/**
 * A channel whose messages the viewer may read (Zulip's `access_stream_by_id` with
 * content access): subscribers, and non-guests for public channels. Anything else
 * is "Invalid channel ID", as for a channel that does not exist.
 */
function readableChannel(rt: StateView, org: number, viewer: UserRecord, streamId: number): ChannelContext {
  const ch = rt.channel(org, streamId);
  if (!ch || !hasContentAccess(ch, viewer)) throw badRequest('Invalid channel ID');
  return ch;
}

/**
 * The topics of a channel, newest first, as `GET /users/me/{stream_id}/topics` lists
 * them (Zulip's `get_topic_history_for_stream`): each with the id of its newest
 * message and the spelling that message used. With protected history, only topics
 * of messages the viewer received.
 */
export function listTopics(rt: StateView, org: number, viewer: UserRecord, streamId: number, allowEmptyTopicName: boolean): Array<{ name: string; max_id: number }> {
  const ch = readableChannel(rt, org, viewer, streamId);
  const newest = new Map<string, number>();
  if (ch.channel.history_public_to_subscribers) {
    for (const [key, entry] of ch.topics) newest.set(key, entry.max_id);
  } else {
    const ids = ch.messages.ids;
    for (let i = 0; i < ids.length; i++) {
      if (received(ch, viewer.user_id, ids[i])) newest.set(ch.messages.topicAt(i).toLowerCase(), ids[i]);
    }
  }
  const out = [...newest.values()].map((id) => {
    const name = ch.messages.get(id)?.topic ?? '';
    return { name: name === '' && !allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : name, max_id: id };
  });
  return out.sort((a, b) => b.max_id - a.max_id);
}

/** The subscribers of a channel the viewer may see exist (`GET /streams/{stream_id}/members`). */
export function channelMembers(rt: StateView, org: number, viewer: UserRecord, streamId: number): number[] {
  return [...visibleChannel(rt, org, viewer, streamId).subscribers].sort((a, b) => a - b);
}

export const channels = area({
  name: 'channels',
  commands: [updateChannel, createChannel, checkChannelActivity],
  facts: [channelUpdated, channelActivityChanged],
  register: [
    {
      types: ['stream'],
      fill(state, r, view) {
        state.streams = listChannels(view, r.org.id, r.user, { include_public: true, include_subscribed: true, include_all: false, include_archived: r.caps.archived_channels });
      },
    },
  ],
});
