/**
 * Personal preference settings (Zulip's `UserBaseSettings`): each setting's default
 * and the values it accepts. A user's settings are the organization's defaults for
 * new users at the time they joined (`PATCH /realm/user_settings_defaults`), then
 * their own changes (`PATCH /settings`). Only values that differ from Zulip's
 * defaults are stored.
 */
import { badRequest } from '../shared/errors.js';

type Check = (value: unknown, name: string) => unknown;

const bool: Check = (v, name) => {
  if (typeof v !== 'boolean') throw badRequest(`${name} is not a boolean`);
  return v;
};
const oneOf = (...allowed: Array<string | number>): Check => (v, name) => {
  if (!allowed.includes(v as string | number)) throw badRequest(`Invalid ${name}`);
  return v;
};
const intIn = (min: number, max: number): Check => (v, name) => {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`${name} is not an integer`);
  if (v < min || v > max) throw badRequest(`Invalid ${name}`);
  return v;
};

/** Sounds a client may play (`available_notification_sounds`). */
export const NOTIFICATION_SOUNDS = ['chime', 'ding', 'zulip'];
/** Emoji sets (`emojiset_choices`). */
export const EMOJISETS = [
  { key: 'google', text: 'Google' },
  { key: 'twitter', text: 'Twitter' },
  { key: 'text', text: 'Plain text' },
];
/** Languages a user may choose, with the names `user_settings` events carry for `default_language`. */
export const LANGUAGES: Record<string, string> = {
  en: 'English', de: 'Deutsch', es: 'español', fr: 'français', it: 'italiano', ja: '日本語', ko: '한국어', nl: 'Nederlands',
  pl: 'polski', pt: 'Português', 'pt-br': 'Português (Brasil)', ru: 'Русский', sv: 'svenska', tr: 'Türkçe', uk: 'українська', 'zh-hans': '简体中文',
};

const TIMEZONES = new Set(Intl.supportedValuesOf('timeZone'));
const timezone: Check = (v, name) => {
  if (typeof v !== 'string') throw badRequest(`${name} is not a string`);
  if (v !== '' && !TIMEZONES.has(v) && v !== 'UTC') throw badRequest(`${name} is not a recognized time zone`);
  return v;
};

/** Every personal setting: Zulip's default and its check. */
export const USER_SETTINGS: Record<string, { default: unknown; check: Check; perUserOnly?: boolean }> = {
  twenty_four_hour_time: { default: false, check: bool },
  web_mark_read_on_scroll_policy: { default: 1, check: oneOf(1, 2, 3) },
  web_channel_default_view: { default: 1, check: oneOf(1, 2, 3, 4) },
  starred_message_counts: { default: true, check: bool },
  receives_typing_notifications: { default: true, check: bool },
  web_suggest_update_timezone: { default: true, check: bool },
  fluid_layout_width: { default: false, check: bool },
  high_contrast_mode: { default: false, check: bool },
  web_font_size_px: { default: 16, check: intIn(12, 24) },
  web_line_height_percent: { default: 140, check: intIn(100, 200) },
  color_scheme: { default: 1, check: oneOf(1, 2, 3) },
  translate_emoticons: { default: false, check: bool },
  display_emoji_reaction_users: { default: true, check: bool },
  default_language: { default: 'en', check: oneOf(...Object.keys(LANGUAGES)), perUserOnly: true },
  web_home_view: { default: 'inbox', check: oneOf('recent', 'inbox', 'all_messages') },
  web_escape_navigates_to_home_view: { default: true, check: bool },
  left_side_userlist: { default: false, check: bool },
  emojiset: { default: 'google', check: oneOf(...EMOJISETS.map((e) => e.key)) },
  demote_inactive_streams: { default: 1, check: oneOf(1, 2, 3) },
  user_list_style: { default: 2, check: oneOf(1, 2, 3) },
  web_animate_image_previews: { default: 'on_hover', check: oneOf('always', 'on_hover', 'never') },
  web_stream_unreads_count_display_policy: { default: 2, check: oneOf(1, 2, 3) },
  hide_ai_features: { default: false, check: bool },
  web_left_sidebar_show_channel_folders: { default: true, check: bool },
  web_left_sidebar_unreads_count_summary: { default: true, check: bool },
  timezone: { default: '', check: timezone, perUserOnly: true },
  enter_sends: { default: false, check: bool },
  enable_drafts_synchronization: { default: true, check: bool },
  enable_stream_desktop_notifications: { default: false, check: bool },
  enable_stream_email_notifications: { default: false, check: bool },
  enable_stream_push_notifications: { default: false, check: bool },
  enable_stream_audible_notifications: { default: false, check: bool },
  notification_sound: { default: 'zulip', check: oneOf('none', ...NOTIFICATION_SOUNDS) },
  enable_desktop_notifications: { default: true, check: bool },
  enable_sounds: { default: true, check: bool },
  enable_followed_topic_desktop_notifications: { default: true, check: bool },
  enable_followed_topic_email_notifications: { default: true, check: bool },
  enable_followed_topic_push_notifications: { default: true, check: bool },
  enable_followed_topic_audible_notifications: { default: true, check: bool },
  email_notifications_batching_period_seconds: { default: 120, check: intIn(120, 7 * 24 * 3600) },
  enable_offline_email_notifications: { default: true, check: bool },
  enable_offline_push_notifications: { default: true, check: bool },
  enable_online_push_notifications: { default: true, check: bool },
  enable_digest_emails: { default: true, check: bool },
  enable_marketing_emails: { default: true, check: bool, perUserOnly: true },
  enable_login_emails: { default: true, check: bool, perUserOnly: true },
  message_content_in_email_notifications: { default: true, check: bool },
  pm_content_in_desktop_notifications: { default: true, check: bool },
  wildcard_mentions_notify: { default: true, check: bool },
  enable_followed_topic_wildcard_mentions_notify: { default: true, check: bool },
  desktop_icon_count_display: { default: 1, check: oneOf(1, 2, 3, 4) },
  realm_name_in_email_notifications_policy: { default: 1, check: oneOf(1, 2, 3) },
  automatically_follow_topics_policy: { default: 3, check: oneOf(1, 2, 3, 4) },
  automatically_unmute_topics_in_muted_streams_policy: { default: 2, check: oneOf(1, 2, 3, 4) },
  automatically_follow_topics_where_mentioned: { default: true, check: bool },
  resolved_topic_notice_auto_read_policy: { default: 'except_followed', check: oneOf('always', 'except_followed', 'never') },
  presence_enabled: { default: true, check: bool },
  send_private_typing_notifications: { default: true, check: bool },
  send_stream_typing_notifications: { default: true, check: bool },
  send_read_receipts: { default: true, check: bool },
  allow_private_data_export: { default: false, check: bool, perUserOnly: true },
  email_address_visibility: { default: 1, check: oneOf(1, 2, 3, 4, 5) },
  web_navigate_to_sent_message: { default: true, check: bool },
};

/** Settings the organization's defaults for new users cover. */
export const DEFAULTABLE_SETTINGS = Object.keys(USER_SETTINGS).filter((k) => !USER_SETTINGS[k].perUserOnly);

/** A full settings object: the stored values over Zulip's defaults. */
export function effectiveSettings(stored: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, def] of Object.entries(USER_SETTINGS)) out[key] = stored && key in stored ? stored[key] : def.default;
  return out;
}

/** Stored form: only what differs from Zulip's defaults. */
export function storedSettings(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) if (key in USER_SETTINGS && value !== USER_SETTINGS[key].default) out[key] = value;
  return out;
}
