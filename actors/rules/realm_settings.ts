/**
 * The organization settings Parley's features read, with Zulip's defaults
 * (`zerver/models/realms.py`) and the checks `PATCH /realm` applies
 * (`zerver/views/realm.py`). Rules read them through `realmSettings(org)`, and
 * `/register` shows the same values as `realm_<name>`.
 */
import { badRequest } from '../shared/errors.js';
import { SYSTEM_GROUPS } from './group_settings.js';
import type { OrgContext } from '../kinds/organization.js';
import type { GroupSettingValue } from '../shared/types.js';

const DAY = 24 * 3600;

/** How a setting's new value is checked, and how its change is announced. */
type Kind =
  | { kind: 'bool' }
  | { kind: 'seconds'; unlimited: boolean }
  | { kind: 'int'; min: number }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'group' }
  /** Days, or `"unlimited"` (kept as `-1`). */
  | { kind: 'days' }
  /** A channel id, or `-1` for none (checked against the organization, see `areas/realm.ts`). */
  | { kind: 'channel' }
  | { kind: 'string' };

const bool: Kind = { kind: 'bool' };
const group: Kind = { kind: 'group' };

/** Every setting: Zulip's default and its kind. */
const TABLE = {
  allow_message_editing: { default: true as boolean, ...bool },
  message_edit_history_visibility_policy: { default: 'all' as 'all' | 'moves' | 'none', kind: 'enum', values: ['all', 'moves', 'none'] },
  message_content_edit_limit_seconds: { default: 600 as number | null, kind: 'seconds', unlimited: true },
  message_content_delete_limit_seconds: { default: null as number | null, kind: 'seconds', unlimited: true },
  move_messages_within_stream_limit_seconds: { default: 7 * DAY as number | null, kind: 'seconds', unlimited: true },
  move_messages_between_streams_limit_seconds: { default: 7 * DAY as number | null, kind: 'seconds', unlimited: true },
  waiting_period_threshold: { default: 0 as number, kind: 'int', min: 0 },
  // How long messages are kept (`actors/areas/message_retention.ts`); -1: forever. Owners only.
  message_retention_days: { default: -1 as number, kind: 'days' },
  // Zulip's default is Jitsi; Parley offers no provider unless the server is configured for one.
  video_chat_provider: { default: 0 as number, kind: 'int', min: 0 },
  emails_restricted_to_domains: { default: false as boolean, ...bool },
  // Zulip turns read receipts on when it creates a private organization; Parley has always reported them off.
  enable_read_receipts: { default: false as boolean, ...bool },
  moderation_request_channel_id: { default: -1 as number, kind: 'channel' },
  can_access_all_users_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  can_add_custom_emoji_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_add_subscribers_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_create_bots_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_create_groups: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_create_private_channel_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_create_public_channel_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_create_web_public_channel_group: { default: SYSTEM_GROUPS.owners as GroupSettingValue, ...group },
  can_create_write_only_bots_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_delete_any_message_group: { default: SYSTEM_GROUPS.administrators as GroupSettingValue, ...group },
  can_delete_own_message_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  can_invite_users_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_manage_all_groups: { default: SYSTEM_GROUPS.owners as GroupSettingValue, ...group },
  can_manage_billing_group: { default: SYSTEM_GROUPS.owners as GroupSettingValue, ...group },
  can_mention_many_users_group: { default: SYSTEM_GROUPS.administrators as GroupSettingValue, ...group },
  can_move_messages_between_channels_group: { default: SYSTEM_GROUPS.members as GroupSettingValue, ...group },
  can_move_messages_between_topics_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  can_resolve_topics_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  can_summarize_topics_group: { default: SYSTEM_GROUPS.nobody as GroupSettingValue, ...group },
  create_multiuse_invite_group: { default: SYSTEM_GROUPS.administrators as GroupSettingValue, ...group },
  direct_message_initiator_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  direct_message_permission_group: { default: SYSTEM_GROUPS.everyone as GroupSettingValue, ...group },
  // The language of code blocks that name none ('' for none); Zulip does not check it names a lexer.
  default_code_block_language: { default: '' as string, kind: 'string' },
} satisfies Record<string, { default: unknown } & Kind>;

export type RealmSettingName = keyof typeof TABLE;
export type RealmSettings = { [K in RealmSettingName]: (typeof TABLE)[K]['default'] };

/** Zulip's defaults for a new organization. */
export const REALM_DEFAULTS: Readonly<RealmSettings> = Object.freeze(Object.fromEntries(Object.entries(TABLE).map(([k, v]) => [k, v.default])) as RealmSettings);

/** The names of the settings `PATCH /realm` takes. */
export const REALM_SETTING_NAMES = Object.keys(TABLE) as RealmSettingName[];

/** The settings whose change Zulip announces as `update_dict` (their history), not `update`. */
export const UPDATE_DICT_SETTINGS = new Set<string>(['allow_message_editing', 'message_content_edit_limit_seconds', ...REALM_SETTING_NAMES.filter((k) => TABLE[k].kind === 'group')]);

/** An organization's settings: its own over Zulip's defaults. */
export function realmSettings(org: OrgContext | undefined): Readonly<RealmSettings> {
  const own = org?.realmSettings;
  return own && Object.keys(own).length > 0 ? { ...REALM_DEFAULTS, ...own } : REALM_DEFAULTS;
}

/** The settings message rules read (kept as its own name: rules say what they depend on). */
export type RealmMessageSettings = Pick<RealmSettings,
  'allow_message_editing' | 'message_edit_history_visibility_policy' | 'message_content_edit_limit_seconds' | 'move_messages_within_stream_limit_seconds'
  | 'move_messages_between_streams_limit_seconds' | 'can_move_messages_between_topics_group' | 'can_move_messages_between_channels_group' | 'can_resolve_topics_group'>;
export const realmMessageSettings: (org: OrgContext | undefined) => Readonly<RealmMessageSettings> = realmSettings;

/** Whether users may see edit history at all (Zulip's `allow_edit_history`, derived from the visibility policy). */
export function allowEditHistory(settings: Pick<RealmSettings, 'message_edit_history_visibility_policy'>): boolean {
  return settings.message_edit_history_visibility_policy !== 'none';
}

/**
 * Checks a new value of a setting (not group settings: those need the
 * organization, see `areas/realm.ts`). Time limits take `"unlimited"` for none.
 */
export function checkRealmValue(name: RealmSettingName, value: unknown): unknown {
  const def = TABLE[name] as { kind: Kind['kind'] } & Partial<{ values: readonly string[]; min: number; unlimited: boolean }>;
  switch (def.kind) {
    case 'bool':
      if (typeof value !== 'boolean') throw badRequest(`${name} is not a boolean`);
      return value;
    case 'enum':
      if (typeof value !== 'string' || !def.values!.includes(value)) throw badRequest(`Invalid ${name}`);
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw badRequest(`${name} is not an integer`);
      if (value < def.min!) throw badRequest(`Invalid ${name}`);
      return value;
    case 'days':
      // Zulip's parse_message_retention_days.
      if (value === 'unlimited') return -1;
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw badRequest(`Bad value for 'message_retention_days': ${typeof value === 'string' ? value : JSON.stringify(value)}`);
      return value;
    case 'seconds':
      if (value === 'unlimited' && def.unlimited) return null;
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw badRequest(`Bad value for '${name}': ${JSON.stringify(value)}`);
      return value;
    case 'string':
      if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
      return value;
    case 'group':
    case 'channel':
      return value;
  }
}

/** Whether a setting names a channel (`-1` for none). */
export function isChannelSetting(name: RealmSettingName): boolean {
  return TABLE[name].kind === 'channel';
}

/** Whether a setting is a group setting. */
export function isGroupSetting(name: RealmSettingName): boolean {
  return TABLE[name].kind === 'group';
}

/** Seconds of grace Zulip adds to every edit and move time limit, for slow networks. */
export const EDIT_LIMIT_BUFFER_SECONDS = 20;

/** Seconds within which unresolving a topic deletes the "marked as resolved" notice instead of posting another. */
export const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;
