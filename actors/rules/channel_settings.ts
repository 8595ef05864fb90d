/**
 * The settings a new channel is created with, checked as Zulip checks them for
 * `POST /channels/create` and for the channels `POST /users/me/subscriptions` creates
 * (`zerver/lib/streams.py` `create_stream_if_needed`, with the settings of
 * `stream_dicts`): its folder, topics policy and permission groups.
 */
import { badRequest } from '../shared/errors.js';
import { groupSettingChange, SYSTEM_GROUPS } from './group_settings.js';
import { CHANNEL_GROUP_DEFAULTS } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import type { ChannelGroupSettingKey, GroupSettingValue, TopicsPolicy, UserRecord } from '../shared/types.js';

/** Zulip's `StreamTopicsPolicyEnum`, by name. */
export const TOPICS_POLICIES: readonly TopicsPolicy[] = ['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'];

/** What a creation request asks for: group settings as the request gives them. */
export interface NewChannelRequest {
  invite_only: boolean;
  history_public_to_subscribers: boolean;
  folder_id: number | null;
  topics_policy?: string;
  groups: Record<string, unknown>;
}

/** The checked settings, as a `ChannelRecord` holds them. */
export interface NewChannelSettings {
  folder_id: number | null;
  topics_policy: TopicsPolicy;
  groups: Partial<Record<ChannelGroupSettingKey, GroupSettingValue>>;
}

/** Checks a creation request's folder, topics policy and group settings; the creator administers the channel unless told otherwise. */
export function checkNewChannelSettings(ctx: OrgContext, creator: UserRecord, c: NewChannelRequest): NewChannelSettings {
  if (c.folder_id !== null) {
    const folder = ctx.folders.get(c.folder_id);
    if (!folder) throw badRequest('Invalid channel folder ID');
    if (folder.is_archived) throw badRequest('Channel folder is archived');
  }
  const policy = c.topics_policy ?? 'inherit';
  if (!(TOPICS_POLICIES as readonly string[]).includes(policy)) throw badRequest('Invalid topics_policy');
  const groups: Partial<Record<ChannelGroupSettingKey, GroupSettingValue>> = {
    // The creator administers the channel they made, as in Zulip.
    can_administer_channel_group: { direct_members: [creator.user_id], direct_subgroups: [] },
  };
  for (const [key, raw] of Object.entries(c.groups)) {
    if (!(key in CHANNEL_GROUP_DEFAULTS)) continue;
    groups[key as ChannelGroupSettingKey] = groupSettingChange(ctx, key, { new: raw }, CHANNEL_GROUP_DEFAULTS[key as ChannelGroupSettingKey]);
  }
  if (c.invite_only && !c.history_public_to_subscribers && groups.can_create_topic_group !== undefined && groups.can_create_topic_group !== SYSTEM_GROUPS.everyone) {
    throw badRequest("'can_create_topic_group' must be the everyone group for private channels with protected history.");
  }
  return { folder_id: c.folder_id, topics_policy: policy as TopicsPolicy, groups };
}

