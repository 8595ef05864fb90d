/**
 * The organization settings that govern editing, moving and deleting messages, with
 * Zulip's defaults (`zerver/models/realms.py`). Rules read them through
 * `realmMessageSettings(org)`, and `/register` shows the same values, so that the
 * day they become editable (`PATCH /realm`) only this accessor changes.
 */
import type { OrgContext } from './kinds/organization.js';
import { SYSTEM_GROUPS } from './group_settings.js';
import type { GroupSettingValue } from './types.js';

export interface RealmMessageSettings {
  allow_message_editing: boolean;
  allow_edit_history: boolean;
  message_edit_history_visibility_policy: 'all' | 'moves' | 'none';
  /** `null`: no limit. */
  message_content_edit_limit_seconds: number | null;
  move_messages_within_stream_limit_seconds: number | null;
  move_messages_between_streams_limit_seconds: number | null;
  can_move_messages_between_topics_group: GroupSettingValue;
  can_move_messages_between_channels_group: GroupSettingValue;
  can_resolve_topics_group: GroupSettingValue;
}

const DAY = 24 * 3600;

export const REALM_MESSAGE_DEFAULTS: Readonly<RealmMessageSettings> = Object.freeze({
  allow_message_editing: true,
  allow_edit_history: true,
  message_edit_history_visibility_policy: 'all',
  message_content_edit_limit_seconds: 600,
  move_messages_within_stream_limit_seconds: 7 * DAY,
  move_messages_between_streams_limit_seconds: 7 * DAY,
  can_move_messages_between_topics_group: SYSTEM_GROUPS.everyone,
  can_move_messages_between_channels_group: SYSTEM_GROUPS.members,
  can_resolve_topics_group: SYSTEM_GROUPS.everyone,
});

/** An organization's message settings. */
export function realmMessageSettings(_org: OrgContext | undefined): Readonly<RealmMessageSettings> {
  return REALM_MESSAGE_DEFAULTS;
}

/** Seconds of grace Zulip adds to every edit and move time limit, for slow networks. */
export const EDIT_LIMIT_BUFFER_SECONDS = 20;

/** Seconds within which unresolving a topic deletes the "marked as resolved" notice instead of posting another. */
export const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;
