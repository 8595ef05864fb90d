/**
 * Channels and subscriptions: list channels, fetch one by id, look one up by name, list, add and
 * remove subscriptions. Subscribing to a missing channel creates it where permitted.
 */
import { listSubscriptions, MAX_PROPERTY_CHANGES_PER_REQUEST } from '../../../actors/areas/subscription_settings.js';
import { channelEmailAddress, channelMembers, getChannel, listChannels, listTopics, subscriptionStatus, visibleChannelId } from '../../../actors/areas/channels.js';
import { resolveUserIds } from '../../../actors/areas/users.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import { CHANNEL_GROUP_DEFAULTS } from '../../../actors/kinds/channel.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { TOPIC_DELETION_TIME_LIMIT_MS } from '../../../actors/areas/topic_deletion.js';
import { OneOf, route, S, Types } from '../../http/route.js';

export const listStreams = route({
  method: 'GET',
  path: '/api/v1/streams',
  operationId: 'getStreams',
  auth: 'user',
  summary: 'List the channels the user can see',
  params: {
    include_public: { schema: S.bool },
    include_web_public: { schema: S.bool },
    include_subscribed: { schema: S.bool },
    exclude_archived: { schema: S.bool },
    include_all: { schema: S.bool },
    include_all_active: { schema: S.bool },
    include_default: { schema: S.bool },
    include_owner_subscribed: { schema: S.bool },
    include_can_access_content: { schema: S.bool },
  },
  handler({ params, org, user, runtime }) {
    const streams = listChannels(runtime, org.id, user, {
      include_public: params.include_public ?? true,
      include_subscribed: params.include_subscribed ?? true,
      include_all: params.include_all ?? params.include_all_active ?? false,
      include_default: params.include_default ?? false,
    });
    return { json: { streams } };
  },
});

export const getStreamById = route({
  method: 'GET',
  path: '/api/v1/streams/{stream_id}',
  operationId: 'getStreamById',
  auth: 'user',
  summary: 'Fetch one channel by id',
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true } },
  handler({ params, org, user, runtime }) {
    return { json: { stream: getChannel(runtime, org.id, user, params.stream_id) } };
  },
});

export const getStreamEmailAddress = route({
  method: 'GET',
  path: '/api/v1/streams/{stream_id}/email_address',
  operationId: 'getStreamEmailAddress',
  auth: 'user',
  summary: "A channel's email address: empty, as Zulip's without an email gateway",
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true }, sender_id: { schema: S.nonNegInt } },
  handler({ params, org, user, runtime }) {
    return { json: { email: channelEmailAddress(runtime, org.id, user, params.stream_id, params.sender_id) } };
  },
});

export const getSubscriptionStatus = route({
  method: 'GET',
  path: '/api/v1/users/{user_id}/subscriptions/{stream_id}',
  operationId: 'getSubscriptionStatus',
  auth: 'user',
  summary: 'Whether a user is subscribed to a channel',
  params: { user_id: { schema: S.nonNegInt, in: 'path', required: true }, stream_id: { schema: S.nonNegInt, in: 'path', required: true } },
  handler({ params, org, user, runtime }) {
    return { json: { is_subscribed: subscriptionStatus(runtime, org.id, user, params.user_id, params.stream_id) } };
  },
});

export const getStreamMembers = route({
  method: 'GET',
  path: '/api/v1/streams/{stream_id}/members',
  operationId: 'getSubscribers',
  auth: 'user',
  summary: "List a channel's subscribers",
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true } },
  handler({ params, org, user, runtime }) {
    return { json: { subscribers: channelMembers(runtime, org.id, user, params.stream_id) } };
  },
});

export const getStreamTopics = route({
  method: 'GET',
  path: '/api/v1/users/me/{stream_id}/topics',
  operationId: 'getStreamTopics',
  auth: 'user',
  summary: 'List the topics of a channel, newest first',
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true }, allow_empty_topic_name: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    return { json: { topics: listTopics(runtime, org.id, user, params.stream_id, params.allow_empty_topic_name ?? false) } };
  },
});

export const getStreamId = route({
  method: 'GET',
  path: '/api/v1/get_stream_id',
  operationId: 'getStreamId',
  auth: 'user',
  summary: 'Look a channel id up by name',
  params: { stream: { schema: S.str, required: true } },
  handler({ params, org, user, runtime }) {
    return { json: { stream_id: visibleChannelId(runtime, org.id, user, params.stream) } };
  },
});

export const listOwnSubscriptions = route({
  method: 'GET',
  path: '/api/v1/users/me/subscriptions',
  operationId: 'getSubscriptions',
  auth: 'user',
  summary: "List the user's subscriptions",
  params: { include_subscribers: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    return { json: { subscriptions: listSubscriptions(runtime, org.id, user.user_id, params.include_subscribers ?? false) } };
  },
});

const principalsSchema = Type.Array(Types(S.int, S.str));

/** The channel permission groups a creation request may set, each a group id or a group-setting object. */
const NEW_CHANNEL_GROUPS = ['can_add_subscribers_group', 'can_create_topic_group', 'can_delete_any_message_group', 'can_delete_own_message_group', 'can_remove_subscribers_group', 'can_administer_channel_group',
  'can_move_messages_out_of_channel_group', 'can_move_messages_within_channel_group', 'can_resolve_topics_group', 'can_send_message_group', 'can_subscribe_group'] as const;

type NewChannelGroup = (typeof NEW_CHANNEL_GROUPS)[number];
const groupParam = { schema: Type.Union([Type.Integer(), S.obj]) };

/** The settings of a channel a request creates (`POST /channels/create`, and `POST /users/me/subscriptions` for the channels it creates). */
const NEW_CHANNEL_PARAMS = {
  folder_id: { schema: S.nonNegInt },
  topics_policy: { schema: S.str, json: true },
  ...(Object.fromEntries(NEW_CHANNEL_GROUPS.map((k) => [k, groupParam])) as Record<NewChannelGroup, typeof groupParam>),
};

/** A request's new-channel settings, as the actors take them. */
function newChannelSettings(params: { folder_id?: number; topics_policy?: string } & Partial<Record<NewChannelGroup, unknown>>): { folder_id: number | null; topics_policy?: string; groups: Record<string, unknown> } {
  const groups: Record<string, unknown> = {};
  for (const key of NEW_CHANNEL_GROUPS) if (params[key] !== undefined) groups[key] = params[key];
  return { folder_id: params.folder_id ?? null, topics_policy: params.topics_policy, groups };
}

export const subscribe = route({
  method: 'POST',
  path: '/api/v1/users/me/subscriptions',
  operationId: 'subscribe',
  auth: 'user',
  summary: 'Subscribe users to channels, creating channels that do not exist (at most 1000 channels a request)',
  params: {
    subscriptions: {
      schema: Type.Array(Type.Object({ name: S.str, description: Type.Optional(S.str) })),
      required: true,
    },
    principals: { schema: principalsSchema },
    authorization_errors_fatal: { schema: S.bool },
    announce: { schema: S.bool },
    invite_only: { schema: S.bool },
    is_web_public: { schema: S.bool },
    is_default_stream: { schema: S.bool },
    history_public_to_subscribers: { schema: S.bool },
    message_retention_days: { schema: OneOf(S.str, S.int), json: true },
    send_new_subscription_messages: { schema: S.bool },
    ...NEW_CHANNEL_PARAMS,
  },
  async handler({ params, org, user, runtime }) {
    const principals = params.principals ? resolveUserIds(runtime, org.id, params.principals) : null;
    const value = await runtime.execute({ type: 'SUBSCRIBE', org: org.id, actor_id: user.user_id, channels: params.subscriptions, principals, invite_only: params.invite_only ?? false, history_public_to_subscribers: params.history_public_to_subscribers ?? null, is_web_public: params.is_web_public ?? false, authorization_errors_fatal: params.authorization_errors_fatal ?? true, new_channel: newChannelSettings(params), send_new_subscription_messages: params.send_new_subscription_messages ?? true });
    return { json: { ...value } };
  },
});

export const unsubscribe = route({
  method: 'DELETE',
  path: '/api/v1/users/me/subscriptions',
  operationId: 'unsubscribe',
  auth: 'user',
  summary: 'Unsubscribe users from channels',
  params: { subscriptions: { schema: S.strArray, required: true }, principals: { schema: principalsSchema } },
  async handler({ params, org, user, runtime }) {
    const principals = params.principals ? resolveUserIds(runtime, org.id, params.principals) : null;
    const value = await runtime.execute({ type: 'UNSUBSCRIBE', org: org.id, actor_id: user.user_id, names: params.subscriptions, principals });
    return { json: { ...value } };
  },
});

export const updateSubscriptions = route({
  method: 'PATCH',
  path: '/api/v1/users/me/subscriptions',
  operationId: 'updateSubscriptions',
  auth: 'user',
  summary: 'Subscribe to some channels and unsubscribe from others in one request (both or neither)',
  params: {
    add: { schema: Type.Array(Type.Object({ name: S.str, color: Type.Optional(S.str), description: Type.Optional(S.str) }, { additionalProperties: false })) },
    delete: { schema: S.strArray },
  },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'UPDATE_SUBSCRIPTIONS', org: org.id, actor_id: user.user_id, add: params.add ?? [], delete: params.delete ?? [] });
    return { json: { ...value } };
  },
});

export const updateSubscriptionProperties = route({
  method: 'POST',
  path: '/api/v1/users/me/subscriptions/properties',
  operationId: 'updateSubscriptionSettings',
  auth: 'user',
  summary: `Change settings of the user's own subscriptions (color, muting, pinning, notifications; at most ${MAX_PROPERTY_CHANGES_PER_REQUEST} changes a request)`,
  params: {
    subscription_data: {
      schema: Type.Array(Type.Object({ stream_id: Type.Integer(), property: Type.String(), value: Type.Unknown() }, { additionalProperties: true }), { maxItems: MAX_PROPERTY_CHANGES_PER_REQUEST }),
      required: true,
    },
  },
  async handler({ params, org, user, runtime }) {
    const changes = params.subscription_data.map((c) => ({ stream_id: c.stream_id, property: c.property, value: c.value }));
    await runtime.execute({ type: 'CHANGE_SUBSCRIPTION_PROPERTIES', user_id: user.user_id, org: org.id, changes });
    // Zulip's update_subscription_properties_backend answers a bare success.
    return { json: {} };
  },
});

const CHANNEL_GROUP_PARAMS = Object.fromEntries(Object.keys(CHANNEL_GROUP_DEFAULTS).map((key) => [key, { schema: S.obj }])) as Record<string, { schema: typeof S.obj }>;

export const updateStream = route({
  method: 'PATCH',
  path: '/api/v1/streams/{stream_id}',
  operationId: 'updateStream',
  auth: 'user',
  summary: "Change a channel's name, description, privacy, default status, folder, topics policy, retention or permission groups, or unarchive it (its administrators)",
  params: {
    stream_id: { schema: S.nonNegInt, in: 'path', required: true },
    new_name: { schema: S.str },
    description: { schema: S.str },
    is_private: { schema: S.bool },
    history_public_to_subscribers: { schema: S.bool },
    is_web_public: { schema: S.bool },
    folder_id: { schema: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]) },
    topics_policy: { schema: S.str },
    message_retention_days: { schema: Type.Union([Type.Integer(), Type.Literal('realm_default'), Type.Literal('unlimited')]), json: true },
    is_archived: { schema: S.bool },
    is_default_stream: { schema: S.bool },
    ...CHANNEL_GROUP_PARAMS,
  },
  async handler({ params, org, user, runtime }) {
    const { stream_id, ...rest } = params as typeof params & Record<string, unknown>;
    const groups: Record<string, unknown> = {};
    for (const key of Object.keys(CHANNEL_GROUP_DEFAULTS)) if (rest[key] !== undefined) groups[key] = rest[key];
    getChannel(runtime, org.id, user, stream_id);
    await runtime.execute({ type: 'UPDATE_CHANNEL', stream_id, org: org.id, actor_id: user.user_id, new_name: params.new_name, description: params.description, is_private: params.is_private, history_public_to_subscribers: params.history_public_to_subscribers, is_web_public: params.is_web_public, folder_id: params.folder_id, topics_policy: params.topics_policy, message_retention_days: params.message_retention_days, is_archived: params.is_archived, is_default_stream: params.is_default_stream, groups });
    return { json: {} };
  },
});

export const archiveStream = route({
  method: 'DELETE',
  path: '/api/v1/streams/{stream_id}',
  operationId: 'archiveStream',
  auth: 'user',
  summary: 'Archive a channel: it stays, read-only, with its messages (its administrators)',
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    getChannel(runtime, org.id, user, params.stream_id);
    if (runtime.channel(org.id, params.stream_id)!.channel.is_archived) throw badRequest('Channel is already deactivated');
    await runtime.execute({ type: 'UPDATE_CHANNEL', stream_id: params.stream_id, org: org.id, actor_id: user.user_id, is_archived: true });
    return { json: {} };
  },
});

export const createChannel = route({
  method: 'POST',
  path: '/api/v1/channels/create',
  operationId: 'createChannel',
  auth: 'user',
  summary: 'Create a channel and subscribe users to it',
  params: {
    name: { schema: S.str, required: true },
    description: { schema: S.str },
    subscribers: { schema: S.intArray, required: true },
    announce: { schema: S.bool },
    invite_only: { schema: S.bool },
    is_web_public: { schema: S.bool },
    is_default_stream: { schema: S.bool },
    history_public_to_subscribers: { schema: S.bool },
    message_retention_days: { schema: Type.Union([Type.Integer(), Type.Literal('realm_default'), Type.Literal('unlimited')]), json: true },
    // Zulip: no Notification Bot DMs for a channel created by the request, whatever this says.
    send_new_subscription_messages: { schema: S.bool },
    ...NEW_CHANNEL_PARAMS,
  },
  async handler({ params, org, user, runtime }) {
    const { folder_id: folderId, topics_policy: topicsPolicy, groups } = newChannelSettings(params);
    const { id } = await runtime.execute({ type: 'CREATE_CHANNEL', org: org.id, actor_id: user.user_id, name: params.name, description: params.description ?? '', subscribers: params.subscribers, announce: params.announce ?? false, invite_only: params.invite_only ?? false, is_web_public: params.is_web_public ?? false, is_default_stream: params.is_default_stream ?? false, folder_id: folderId, topics_policy: topicsPolicy, history_public_to_subscribers: params.history_public_to_subscribers, message_retention_days: params.message_retention_days, groups });
    return { json: { id } };
  },
});

export const deleteTopic = route({
  method: 'POST',
  path: '/api/v1/streams/{stream_id}/delete_topic',
  // Deleting frees memory: allowed under memory pressure.
  grows: false,
  operationId: 'deleteTopic',
  auth: 'user',
  requires: 'admin',
  summary: 'Delete every message of a topic the administrator can read, in batches; `complete` is false when the time limit stopped it first',
  params: { stream_id: { schema: S.nonNegInt, in: 'path', required: true }, topic_name: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    if (!runtime.channel(org.id, params.stream_id)) throw badRequest('Invalid channel ID');
    const started = runtime.nowMs();
    const batch = { type: 'DELETE_TOPIC_BATCH', org: org.id, stream_id: params.stream_id, actor_id: user.user_id, topic: params.topic_name } as const;
    for (;;) {
      // Checked before each batch, as Zulip does: the client repeats the request to go on.
      if (runtime.nowMs() >= started + TOPIC_DELETION_TIME_LIMIT_MS) return { json: { complete: false } };
      // The last batch also sets the topic's visibility policies back to the default, in the same decision.
      const { done } = await runtime.execute(batch);
      if (done) return { json: { complete: true } };
    }
  },
});
