/**
 * Who may edit, move and delete which messages, and when (Zulip's
 * `zerver/actions/message_edit.py` `check_update_message`,
 * `zerver/lib/message.py` `validate_can_delete_message` and the `can_*` rules of
 * `zerver/lib/streams.py`). Pure functions of the organization's settings, the
 * channel's permission settings and the acting user.
 */
import { ApiError, badRequest } from '../shared/errors.js';
import { hasGroupPermission, type GroupDirectory } from './group_settings.js';
import { channelGroupSetting } from '../kinds/channel.js';
import { EDIT_LIMIT_BUFFER_SECONDS, type RealmMessageSettings, type RealmSettings } from './realm_settings.js';
import { Role, type ChannelRecord, type GroupSettingValue, type MessageMeta, type UserRecord } from '../shared/types.js';

/** What a resolved topic's name starts with. */
export const RESOLVED_TOPIC_PREFIX = '✔ ';

/** Moderators, administrators and owners: exempt from the move time limits. */
export function isModerator(user: UserRecord): boolean {
  return user.role <= Role.MODERATOR;
}

/** Whether `user` administers the channel: the organization's administrators and the channel's `can_administer_channel_group`. */
export function isChannelAdmin(org: GroupDirectory, user: UserRecord, channel: ChannelRecord): boolean {
  return user.is_active && (user.role <= Role.ADMIN || hasGroupPermission(org, user, channelGroupSetting(channel, 'can_administer_channel_group')));
}

/**
 * Whether `editor` may edit a message's content now (`validate_user_can_edit_message`):
 * only its sender, only while editing is on, within the edit time limit (plus a
 * grace for slow networks on an edit; none for the "is editing" typing notice).
 */
export function checkCanEditContent(editor: UserRecord, m: MessageMeta, nowSeconds: number, settings: RealmMessageSettings, buffer = EDIT_LIMIT_BUFFER_SECONDS): void {
  if (!settings.allow_message_editing) throw badRequest('Your organization has turned off message editing');
  if (m.sender_id !== editor.user_id) throw badRequest("You don't have permission to edit this message");
  const limit = settings.message_content_edit_limit_seconds;
  if (limit !== null && nowSeconds - m.timestamp > limit + buffer) {
    throw badRequest('The time limit for editing this message has passed');
  }
}

/** `can_edit_topic`: the organization's topic movers, the channel's, and channel administrators. */
export function canMoveWithinChannel(org: GroupDirectory, user: UserRecord, channel: ChannelRecord, settings: RealmMessageSettings): boolean {
  return hasGroupPermission(org, user, settings.can_move_messages_between_topics_group)
    || hasGroupPermission(org, user, channelGroupSetting(channel, 'can_move_messages_within_channel_group'))
    || isChannelAdmin(org, user, channel);
}

/** `can_move_messages_out_of_channel`. */
export function canMoveOutOfChannel(org: GroupDirectory, user: UserRecord, channel: ChannelRecord, settings: RealmMessageSettings): boolean {
  return hasGroupPermission(org, user, settings.can_move_messages_between_channels_group)
    || hasGroupPermission(org, user, channelGroupSetting(channel, 'can_move_messages_out_of_channel_group'))
    || isChannelAdmin(org, user, channel);
}

/** `can_resolve_topics`. */
export function canResolveTopics(org: GroupDirectory, user: UserRecord, channel: ChannelRecord, settings: RealmMessageSettings): boolean {
  return hasGroupPermission(org, user, settings.can_resolve_topics_group)
    || hasGroupPermission(org, user, channelGroupSetting(channel, 'can_resolve_topics_group'))
    || isChannelAdmin(org, user, channel);
}

/** Whether a move older than `limit` seconds (plus the grace) is refused to `user`. */
export function pastMoveLimit(user: UserRecord, m: MessageMeta, nowSeconds: number, limit: number | null): boolean {
  return limit !== null && !isModerator(user) && nowSeconds - m.timestamp > limit + EDIT_LIMIT_BUFFER_SECONDS;
}

/**
 * The stricter of the move limits that apply to a move (`check_time_limit_for_change_all_propagate_mode`):
 * the within-channel one when the topic changes, the between-channels one when the channel does.
 */
export function moveDeadline(settings: RealmMessageSettings, topicChanged: boolean, channelChanged: boolean): number | null {
  const limits: number[] = [];
  if (topicChanged && settings.move_messages_within_stream_limit_seconds !== null) limits.push(settings.move_messages_within_stream_limit_seconds);
  if (channelChanged && settings.move_messages_between_streams_limit_seconds !== null) limits.push(settings.move_messages_between_streams_limit_seconds);
  return limits.length === 0 ? null : Math.min(...limits) + EDIT_LIMIT_BUFFER_SECONDS;
}

/**
 * `MOVE_MESSAGES_TIME_LIMIT_EXCEEDED` for a `change_all` move whose topic holds
 * messages older than the deadline: which part of the topic the user may move.
 */
export function checkWholeTopicMovable(topicMessages: MessageMeta[], nowSeconds: number, deadline: number | null): void {
  if (deadline === null) return;
  const allowed = topicMessages.filter((m) => nowSeconds - m.timestamp <= deadline);
  if (allowed.length === topicMessages.length) return;
  throw new ApiError('MOVE_MESSAGES_TIME_LIMIT_EXCEEDED', `You only have permission to move the ${allowed.length}/${topicMessages.length} most recent messages in this topic.`, {
    first_message_id_allowed_to_move: allowed.length > 0 ? allowed[0].id : null,
    total_messages_in_topic: topicMessages.length,
    total_messages_allowed_to_move: allowed.length,
  });
}

/** Whether renaming `from` to `to` resolves the topic (`✔ T` from `T`). */
export function resolves(from: string, to: string, untruncatedTo: string): boolean {
  return to.startsWith(RESOLVED_TOPIC_PREFIX) && !from.startsWith(RESOLVED_TOPIC_PREFIX) && untruncatedTo.slice(RESOLVED_TOPIC_PREFIX.length) === from;
}

/** Whether renaming `from` to `to` unresolves the topic (`T` from `✔ T`). */
export function unresolves(from: string, to: string): boolean {
  return from.startsWith(RESOLVED_TOPIC_PREFIX) && !to.startsWith(RESOLVED_TOPIC_PREFIX) && from.replace(/^[✔ ]+/u, '') === to;
}

/** The settings deleting reads. */
export type RealmDeleteSettings = Pick<RealmSettings, 'can_delete_any_message_group' | 'can_delete_own_message_group' | 'message_content_delete_limit_seconds'>;

/**
 * Who may delete a message (Zulip's `validate_can_delete_message`): members of the
 * organization's or the channel's `can_delete_any_message_group` any message; others
 * their own (or their bots'), as members of a `can_delete_own_message_group`, within
 * `message_content_delete_limit_seconds`.
 */
export function checkCanDelete(org: GroupDirectory, settings: Readonly<RealmDeleteSettings>, actor: UserRecord | undefined, m: MessageMeta, now: number, channel: ChannelRecord | null): void {
  if (!actor || !actor.is_active) throw badRequest('Invalid sender');
  const inGroup = (realmValue: GroupSettingValue, key: 'can_delete_any_message_group' | 'can_delete_own_message_group'): boolean =>
    hasGroupPermission(org, actor, realmValue) || (channel !== null && hasGroupPermission(org, actor, channelGroupSetting(channel, key)));
  if (inGroup(settings.can_delete_any_message_group, 'can_delete_any_message_group')) return;
  const sender = org.users.get(m.sender_id);
  if (m.sender_id !== actor.user_id && sender?.bot_owner_id !== actor.user_id) throw badRequest("You don't have permission to delete this message");
  if (!inGroup(settings.can_delete_own_message_group, 'can_delete_own_message_group')) throw badRequest("You don't have permission to delete this message");
  const limit = settings.message_content_delete_limit_seconds;
  if (limit !== null && now - m.timestamp > limit) throw badRequest('The time limit for deleting this message has passed');
}
