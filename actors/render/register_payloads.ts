/**
 * Payload shapes of `/register` and `server_settings` that are not built from one
 * record: the version fields and the organization's settings.
 */
import { EMPTY_TOPIC_DISPLAY_NAME, LIMITS } from '../rules/messages.js';
import { allowEditHistory, type RealmSettings } from '../rules/realm_settings.js';
import { escapeHtml } from '../engines/markdown/index.js';
import { DEFAULT_EXTERNAL_ACCOUNTS } from '../rules/external_accounts.js';
import type { OrgRecord } from '../shared/types.js';
import { EMOJI_API_PATH } from '../engines/emoji.js';

/**
 * The API version Parley reports, under both the Zulip and the service names: the highest
 * feature level whose every change Parley serves (docs/api.md's "Feature level" says why
 * 427, and which change above it is not served). Zulip's 11.0 ended at 421; 426 and 427
 * are from 12.0's development.
 */
export const API_VERSION = { feature_level: 427, version: '12.0-dev-parley', merge_base: '' } as const;

/** Version fields every register response and server_settings carry. */
export function versionFields(): Record<string, unknown> {
  return {
    zulip_version: API_VERSION.version,
    zulip_feature_level: API_VERSION.feature_level,
    zulip_merge_base: API_VERSION.merge_base,
    service_version: API_VERSION.version,
    service_feature_level: API_VERSION.feature_level,
    service_merge_base: API_VERSION.merge_base,
  };
}

/** The long-poll timeout clients should use; it exceeds the heartbeat interval by more than 10 s. */
export const LONGPOLL_TIMEOUT_SECONDS = 90;

/** Organization settings as the `realm` section of `register` shows them. */
export function realmSection(org: OrgRecord, realmUrl: string, heartbeatMaxMs: number, settings: Readonly<RealmSettings>): Record<string, unknown> {
  return {
    ...Object.fromEntries(Object.entries(settings).map(([key, value]) => ['realm_' + key, value])),
    realm_allow_edit_history: allowEditHistory(settings),
    realm_name: org.name,
    realm_description: org.description ? `<p>${escapeHtml(org.description)}</p>` : '',
    realm_url: realmUrl,
    realm_uri: realmUrl,
    realm_date_created: org.date_created,
    realm_icon_url: `${realmUrl}/static/images/logo/zulip-icon-128x128.png`,
    realm_icon_source: 'G',
    realm_logo_url: '',
    realm_logo_source: 'D',
    realm_night_logo_url: '',
    realm_night_logo_source: 'D',
    realm_empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME,
    realm_mandatory_topics: false,
    realm_default_language: 'en',
    realm_invite_required: true,
    realm_disallow_disposable_email_addresses: true,
    realm_email_auth_enabled: true,
    realm_password_auth_enabled: true,
    realm_authentication_methods: { password: { enabled: true, available: true }, email: { enabled: true, available: true } },
    // Parley renders no image or link previews (no image proxy, no thumbnails): clients are told so.
    realm_inline_image_preview: false,
    realm_inline_url_embed_preview: false,
    realm_presence_disabled: false,
    realm_send_welcome_emails: false,
    realm_digest_emails_enabled: false,
    realm_digest_weekday: 1,
    realm_push_notifications_enabled: false,
    realm_push_notifications_enabled_end_timestamp: null,
    realm_enable_spectator_access: false,
    realm_enable_guest_user_indicator: true,
    realm_enable_guest_user_dm_warning: true,
    realm_require_unique_names: false,
    realm_name_changes_disabled: false,
    realm_email_changes_disabled: true,
    realm_avatar_changes_disabled: false,
    realm_org_type: 0,
    realm_plan_type: 1,
    realm_upload_quota_mib: null,
    realm_jitsi_server_url: null,
    realm_giphy_rating: 2,
    realm_want_advertise_in_communities_directory: false,
    realm_new_stream_announcements_stream_id: -1,
    realm_signup_announcements_stream_id: -1,
    realm_zulip_update_announcements_stream_id: -1,
    realm_bot_domain: 'parley.invalid',
    realm_default_external_accounts: DEFAULT_EXTERNAL_ACCOUNTS,
    realm_available_video_chat_providers: {},
    realm_message_content_allowed_in_email_notifications: true,
    realm_name_in_email_notifications_policy: 1,
    ...Object.fromEntries(Object.entries(LIMITS).filter(([k]) => k !== 'max_user_name_length')),
    max_avatar_file_size_mib: 5,
    max_icon_file_size_mib: 5,
    max_logo_file_size_mib: 5,
    server_generation: 1,
    server_inline_image_preview: false,
    server_inline_url_embed_preview: false,
    server_avatar_changes_disabled: false,
    server_name_changes_disabled: false,
    server_needs_upgrade: false,
    server_web_public_streams_enabled: false,
    server_can_summarize_topics: false,
    server_jitsi_server_url: null,
    server_emoji_data_url: `${realmUrl}${EMOJI_API_PATH}`,
    server_thumbnail_formats: [],
    server_supported_permission_settings: {},
    server_presence_ping_interval_seconds: 60,
    server_presence_offline_threshold_seconds: 200,
    server_typing_started_expiry_period_milliseconds: 45000,
    server_typing_stopped_wait_period_milliseconds: 12000,
    server_typing_started_wait_period_milliseconds: 30000,
    server_min_deactivated_realm_deletion_days: 14,
    server_max_deactivated_realm_deletion_days: null,
    zulip_plan_is_not_limited: true,
    event_queue_longpoll_timeout_seconds: Math.max(LONGPOLL_TIMEOUT_SECONDS, Math.ceil(heartbeatMaxMs / 1000) + 11),
  };
}

