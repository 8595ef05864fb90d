/**
 * Plain-data records held in actor contexts. They hold no class instances beyond
 * `Map` and `Set`, so that snapshots and replay stay trivial.
 */

/** Zulip role numbers. */
export const Role = { OWNER: 100, ADMIN: 200, MODERATOR: 300, MEMBER: 400, GUEST: 600 } as const;
export type RoleNumber = 100 | 200 | 300 | 400 | 600;

/** One organization as the server actor knows it. */
export interface OrgRecord {
  id: number;
  name: string;
  /** `""` is the default organization, served on the bare host. */
  subdomain: string;
  description: string;
  date_created: number;
  deactivated: boolean;
}

/** A user account of an organization. */
export interface UserRecord {
  user_id: number;
  /** The API email, used for authentication. */
  email: string;
  delivery_email: string;
  full_name: string;
  role: RoleNumber;
  is_active: boolean;
  is_bot: boolean;
  bot_type: number | null;
  bot_owner_id: number | null;
  api_key: string;
  /** `scrypt$salt$hash` in hex (`scrypt$N=…,r=8,p=1$salt$hash` at a test cost: actors/rules/passwords.ts), or `""` when the account has no password. */
  password_hash: string;
  date_joined: number;
  timezone: string;
  /** The recipient id of this user's personal direct-message conversation. */
  recipient_id: number;
  /** Values of the organization's custom profile fields, by field id (absent: none set). */
  profile_data?: Record<number, ProfileValue>;
  /** Personal settings that differ from Zulip's defaults (`actors/rules/user_settings.ts`); the time zone is `timezone`. */
  settings?: Record<string, unknown>;
  /** The user's status (absent: none); "away" is the `presence_enabled` setting, inverted. */
  status?: UserStatus;
  /** A bot's defaults (absent: none): the channel it sends to and registers for, and whether it sees every public channel. */
  bot_defaults?: BotDefaults;
  /** The server operator's grant to change other users' emails (Zulip's `can_change_user_emails`; `parley user-email-changes`). */
  can_change_user_emails?: boolean;
  /** A member still within the organization's waiting period: not yet in `role:fullmembers` (absent: a full member). */
  probation?: boolean;
}

/** A bot's default channels (Zulip's `default_sending_stream`, `default_events_register_stream`, `default_all_public_streams`). */
export interface BotDefaults {
  sending_stream_id: number | null;
  events_register_stream_id: number | null;
  all_public_streams: boolean;
}

/** A user's status text and emoji (Zulip's `UserStatus`); an empty text or name is none. */
export interface UserStatus {
  status_text: string;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

/** A user's value of a custom profile field; `rendered_value` for the Markdown text types. */
export interface ProfileValue {
  value: string;
  rendered_value?: string;
}

/** A custom profile field of an organization (Zulip's `CustomProfileField`). */
export interface ProfileFieldRecord {
  id: number;
  name: string;
  hint: string;
  /** 1 short text, 2 long text, 3 list of options, 4 date, 5 link, 6 users, 7 external account, 8 pronouns. */
  type: number;
  /** JSON text: the options of a list field, the subtype of an external account; `""` otherwise. */
  field_data: string;
  order: number;
  required: boolean;
  editable_by_user: boolean;
  display_in_profile_summary: boolean;
}

/** A channel's own settings. */
export interface ChannelRecord {
  stream_id: number;
  name: string;
  description: string;
  rendered_description: string;
  invite_only: boolean;
  is_web_public: boolean;
  history_public_to_subscribers: boolean;
  date_created: number;
  creator_id: number | null;
  is_archived: boolean;
  message_retention_days: number | null;
  recipient_id: number;
  is_default: boolean;
  /** The channel's permission settings; absent ones have their defaults (`channelGroupSetting`). */
  groups?: Partial<Record<ChannelGroupSettingKey, GroupSettingValue>>;
  /** The channel folder it is in (absent: none). */
  folder_id?: number | null;
  /** Whether the empty topic is allowed here (absent: `inherit`). */
  topics_policy?: TopicsPolicy;
  /** Whether the channel had messages lately (absent: yes, as a new channel is). */
  is_recently_active?: boolean;
}

/** Zulip's channel `topics_policy`. */
export type TopicsPolicy = 'inherit' | 'allow_empty_topic' | 'disable_empty_topic' | 'empty_topic_only';

/** A group-setting value: a user group's id, or an anonymous group. */
export type GroupSettingValue = number | { direct_members: number[]; direct_subgroups: number[] };

/** The permission settings of a named user group. */
export const USER_GROUP_SETTINGS = ['can_add_members_group', 'can_join_group', 'can_leave_group', 'can_manage_group', 'can_mention_group', 'can_remove_members_group'] as const;
export type UserGroupSettingName = (typeof USER_GROUP_SETTINGS)[number];

/** A user group the organization made (system groups are derived from roles). */
export interface UserGroupRecord {
  id: number;
  name: string;
  description: string;
  /** Direct members, ascending. Deactivated users stay, and count again once reactivated. */
  members: number[];
  /** Direct subgroups, ascending. */
  subgroups: number[];
  creator_id: number | null;
  date_created: number | null;
  deactivated: boolean;
  settings: Record<UserGroupSettingName, GroupSettingValue>;
}

/** The group-setting permissions of a channel. */
export type ChannelGroupSettingKey =
  | 'can_add_subscribers_group'
  | 'can_administer_channel_group'
  | 'can_create_topic_group'
  | 'can_delete_any_message_group'
  | 'can_delete_own_message_group'
  | 'can_move_messages_out_of_channel_group'
  | 'can_move_messages_within_channel_group'
  | 'can_remove_subscribers_group'
  | 'can_resolve_topics_group'
  | 'can_send_message_group'
  | 'can_subscribe_group';

/**
 * What decisions, narrows, unread counts and fan-out need of a message, channel or
 * direct: everything but its body. Actors hold this, with a locator of the body
 * (`StoredMessage`); the body lives in the runtime's body store (`actors/core/bodies.ts`).
 */
export interface MessageMeta {
  id: number;
  sender_id: number;
  timestamp: number;
  client: string;
  /** Channel id for channel messages, `null` for direct messages. */
  stream_id: number | null;
  topic: string;
  /** Sorted user ids of every participant of a direct message (sender included). */
  dm_user_ids: number[] | null;
  recipient_id: number;
  /** Emoji reactions, in the order they were added (absent: none). */
  reactions?: Reaction[];
  /** Widget data and its updates (a poll and its votes), ascending by id (absent: none). */
  submessages?: Submessage[];
  /** When the content was last edited (absent: never). */
  last_edit_timestamp?: number;
  /** When the message was last moved to another topic or channel, resolving aside (absent: never). */
  last_moved_timestamp?: number;
  /**
   * Sorted ids of the users who hold this channel message, for a message moved from
   * another channel: who received it no longer follows from this channel's
   * subscription periods (Zulip moves and prunes its UserMessage rows). Absent: the
   * subscription periods say.
   */
  received_by?: number[];
  /** A message the server posted with a role: the notice that a topic was resolved. */
  kind?: 'resolve_topic_notification';
  /**
   * `HAS_LINK` | `HAS_IMAGE` (`actors/engines/message_has.ts`), derived from `rendered` wherever
   * the record enters state (absent only in records written before the bits existed).
   */
  has?: number;
}

/** A message's body: what only reads need, and the bulk of its bytes. */
export interface MessageBody {
  /** Markdown source as sent. */
  content: string;
  /** HTML rendering of `content`. */
  rendered: string;
  /** Edits and moves, newest first, as Zulip stores them (absent: never edited or moved). */
  edit_history?: EditHistoryEntry[];
}

/** A whole message, body included: what facts carry and views render. */
export interface MessageRecord extends MessageMeta, MessageBody {}

/** A message as an actor holds it: its metadata and where its body is (`Bodies.read`). */
export interface StoredMessage extends MessageMeta {
  /** The body store's locator of this message's current body. */
  body: number;
}

/** One edit or move of a message, as Zulip's raw edit history keeps it. */
export interface EditHistoryEntry {
  user_id: number;
  timestamp: number;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_topic?: string;
  topic?: string;
  prev_stream?: number;
  stream?: number;
}

/**
 * A submessage (Zulip's `SubMessage`): a message's widget, or one update to it. Its
 * message is the record that holds it.
 */
export interface Submessage {
  /** Server-wide, as in Zulip: ascending in the order submessages were attached. */
  id: number;
  sender_id: number;
  /** `widget` for the widget a send attached; any string a client sends after that. */
  msg_type: string;
  /** JSON text, as stored and as clients get it. */
  content: string;
}

/** One user's emoji reaction on a message. */
export interface Reaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';
  user_id: number;
}

/** A user's own settings for one channel subscription. */
export interface SubscriptionProps {
  color: string;
  is_muted: boolean;
  pin_to_top: boolean;
  desktop_notifications: boolean | null;
  audible_notifications: boolean | null;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
}

/** A channel folder: a named group of channels in the left sidebar. */
export interface ChannelFolderRecord {
  id: number;
  name: string;
  description: string;
  rendered_description: string;
  creator_id: number | null;
  date_created: number;
  is_archived: boolean;
  /** Position among the organization's folders (`PATCH /channel_folders`). */
  order: number;
}
