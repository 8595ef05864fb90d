/**
 * API shapes of users, channels, subscriptions and messages, built from actor state
 * exactly as Zulip renders them. Routes and event derivation share these, so a fetch
 * and an event always agree.
 */
import { createHash } from 'node:crypto';
import { CHANNEL_GROUP_DEFAULTS, channelGroupSetting, type ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../rules/messages.js';
import { senderOf, SYSTEM_BOT_REALM, SYSTEM_BOTS } from '../rules/system_bots.js';
import { realmSettings } from '../rules/realm_settings.js';
import { compileLinkifiers, linkifierMatches } from '../rules/linkifiers.js';
import { Role, type EditHistoryEntry, type MessageRecord, type SubscriptionProps, type UserRecord } from '../shared/types.js';

export { SYSTEM_GROUPS } from '../rules/group_settings.js';

const avatarUrls = new Map<string, string>();

/** Gravatar URL of an email address, Zulip's default avatar (memoized: every message view needs its sender's). */
export function avatarUrl(email: string): string {
  let url = avatarUrls.get(email);
  if (url === undefined) {
    const hash = createHash('md5').update(email.trim().toLowerCase()).digest('hex');
    url = `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=1`;
    if (avatarUrls.size >= 100000) avatarUrls.clear();
    avatarUrls.set(email, url);
  }
  return url;
}

/** A user's custom profile field values, as `profile_data` in user objects shows them. */
export function profileDataView(user: UserRecord): Record<string, { value: string; rendered_value?: string }> {
  const out: Record<string, { value: string; rendered_value?: string }> = {};
  for (const [id, v] of Object.entries(user.profile_data ?? {})) out[id] = v.rendered_value !== undefined ? { value: v.value, rendered_value: v.rendered_value } : { value: v.value };
  return out;
}

/** Who may see a user's delivery email, by their `email_address_visibility` setting (Zulip's values). */
const EMAIL_VISIBLE_TO: Readonly<Record<number, (viewer: UserRecord) => boolean>> = {
  1: () => true,
  2: (viewer) => viewer.role <= Role.MEMBER,
  3: (viewer) => viewer.role <= Role.ADMIN,
  4: () => false,
  5: (viewer) => viewer.role <= Role.MODERATOR,
};

/**
 * A user's delivery email as `viewer` may see it, or null: the user's own, a bot's,
 * and others' as their `email_address_visibility` allows.
 */
export function deliveryEmailFor(user: UserRecord, viewer: UserRecord): string | null {
  if (viewer.user_id === user.user_id || user.is_bot) return user.delivery_email;
  const visibility = (user.settings?.email_address_visibility as number | undefined) ?? 1;
  return EMAIL_VISIBLE_TO[visibility]?.(viewer) === true ? user.delivery_email : null;
}

/**
 * A user as `GET /users` and `realm_users` show it to `viewer` (the delivery email as
 * its owner's visibility setting allows; without a viewer, as the system sees it);
 * with `profile_data` when asked (`include_custom_profile_fields`), for humans only
 * (Zulip's `format_user_row` gives a bot `bot_type` and `bot_owner_id` instead); `avatar_url` null
 * for a client that computes Gravatar URLs itself (`client_gravatar`: every Parley
 * avatar is a Gravatar).
 */
export function userView(user: UserRecord, opts: { profileData?: boolean; clientGravatar?: boolean; viewer?: UserRecord } = {}): Record<string, unknown> {
  const view: Record<string, unknown> = {
    user_id: user.user_id,
    email: user.email,
    delivery_email: opts.viewer ? deliveryEmailFor(user, opts.viewer) : user.delivery_email,
    full_name: user.full_name,
    date_joined: new Date(user.date_joined * 1000).toISOString(),
    is_active: user.is_active,
    is_owner: user.role === Role.OWNER,
    is_admin: user.role <= Role.ADMIN,
    is_guest: user.role === Role.GUEST,
    is_bot: user.is_bot,
    bot_type: user.bot_type,
    role: user.role,
    timezone: user.timezone,
    avatar_url: opts.clientGravatar ? null : avatarUrl(user.email),
    avatar_version: 1,
    is_imported_stub: false,
  };
  if (user.is_bot) view.bot_owner_id = user.bot_owner_id;
  else if (opts.profileData) view.profile_data = profileDataView(user);
  return view;
}

const CHANNEL_GROUP_KEYS = Object.keys(CHANNEL_GROUP_DEFAULTS) as Array<keyof typeof CHANNEL_GROUP_DEFAULTS>;

/** Settings every channel dictionary carries. */
function channelFields(ch: ChannelContext): Record<string, unknown> {
  const c = ch.channel;
  return {
    stream_id: c.stream_id,
    name: c.name,
    description: c.description,
    rendered_description: c.rendered_description,
    date_created: c.date_created,
    creator_id: c.creator_id,
    invite_only: c.invite_only,
    is_web_public: c.is_web_public,
    history_public_to_subscribers: c.history_public_to_subscribers,
    first_message_id: ch.messages.size > 0 ? ch.messages.ids[0] : null,
    folder_id: c.folder_id ?? null,
    is_announcement_only: false,
    stream_post_policy: 1,
    message_retention_days: c.message_retention_days,
    is_archived: c.is_archived,
    is_recently_active: c.is_recently_active ?? true,
    topics_policy: c.topics_policy ?? 'inherit',
    ...Object.fromEntries(CHANNEL_GROUP_KEYS.map((key) => [key, channelGroupSetting(c, key)])),
    stream_weekly_traffic: null,
  };
}

/**
 * A channel as `GET /streams` shows it. `is_default` is not part of it: Zulip adds it
 * only for `GET /streams?include_default=true`; clients learn default channels from
 * `realm_default_streams` and `default_streams` events.
 */
export function channelView(ch: ChannelContext): Record<string, unknown> {
  return { ...channelFields(ch), subscriber_count: ch.subscribers.size };
}

/** A user's own settings of a subscription, as every subscription dictionary carries them. */
function settingsFields(props: SubscriptionProps): Record<string, unknown> {
  return {
    color: props.color,
    is_muted: props.is_muted,
    in_home_view: !props.is_muted,
    pin_to_top: props.pin_to_top,
    desktop_notifications: props.desktop_notifications,
    audible_notifications: props.audible_notifications,
    push_notifications: props.push_notifications,
    email_notifications: props.email_notifications,
    wildcard_mentions_notify: props.wildcard_mentions_notify,
  };
}

/** A subscription as `GET /users/me/subscriptions`, `register` and subscription events show it. */
export function subscriptionView(ch: ChannelContext, props: SubscriptionProps, withSubscribers: boolean): Record<string, unknown> {
  const view: Record<string, unknown> = { ...channelFields(ch), subscriber_count: ch.subscribers.size, ...settingsFields(props) };
  if (withSubscribers) view.subscribers = [...ch.subscribers].sort((a, b) => a - b);
  return view;
}

/**
 * `JSON.stringify(subscriptionView(ch, props, true))`, with the channel's part (its
 * fields and sorted subscribers) serialized once and only the settings per user: a
 * request adding many users to a channel serializes its subscriber list once, not
 * once per user.
 */
export class SubscriptionJson {
  private readonly head: string;
  private readonly tail: string;
  constructor(ch: ChannelContext) {
    this.head = JSON.stringify({ ...channelFields(ch), subscriber_count: ch.subscribers.size }).slice(0, -1) + ',';
    this.tail = ',"subscribers":' + JSON.stringify([...ch.subscribers].sort((a, b) => a - b)) + '}';
  }
  render(props: SubscriptionProps): string {
    return this.head + JSON.stringify(settingsFields(props)).slice(1, -1) + this.tail;
  }
}

/** How a message names its recipient: a channel name, or the participants of a direct message. */
function displayRecipient(org: OrgContext, m: MessageRecord, channelName: string): unknown {
  if (m.stream_id !== null) return channelName;
  const people = (m.dm_user_ids ?? []).map((id) => {
    // A system bot (the notification bot) may be one of the two.
    const u = senderOf(org, id)!;
    return { id: u.user_id, email: u.email, full_name: u.full_name, is_mirror_dummy: false };
  });
  // Zulip lists the two people of a one-to-one conversation in email order.
  if (people.length === 2) people.sort((a, b) => a.email.localeCompare(b.email));
  return people;
}

/**
 * The edit history a user may see (`message_edit_history_visibility_policy`): all of
 * it, only the moves (without the content changes), or none.
 */
export function visibleHistory(history: EditHistoryEntry[], policy: 'all' | 'moves' | 'none'): EditHistoryEntry[] {
  if (policy === 'all') return history;
  if (policy === 'none') return [];
  return history
    .filter((e) => e.prev_topic !== undefined || e.prev_stream !== undefined)
    .map(({ prev_content: _c, prev_rendered_content: _r, ...move }) => move);
}

/**
 * The links in a topic name (Zulip's `topic_links`): the organization's linkifiers'
 * matches and bare web URLs, in the order they appear.
 */
export function topicLinks(org: OrgContext, topic: string): Array<{ text: string; url: string }> {
  if (topic === '' || (org.linkifiers.length === 0 && !topic.includes('://'))) return [];
  // A page of messages repeats a few topics, and each search runs every linkifier:
  // 2,500 messages under 100 linkifiers were 250,000 searches (~90 ms) without this.
  let known = topicLinksCache.get(org.linkifiers);
  if (!known) topicLinksCache.set(org.linkifiers, (known = new Map()));
  let links = known.get(topic);
  if (!links) {
    if (known.size >= TOPIC_LINKS_CACHE_SIZE) known.clear();
    links = findTopicLinks(org, topic);
    known.set(topic, links);
  }
  return links.map((l) => ({ text: l.text, url: l.url }));
}

/**
 * Topic links by topic, for each version of an organization's linkifier list (a change
 * replaces the list, so the old entries go with it). A copy is handed out each time.
 */
const topicLinksCache = new WeakMap<OrgContext['linkifiers'], Map<string, ReadonlyArray<{ text: string; url: string }>>>();
const TOPIC_LINKS_CACHE_SIZE = 4096;

function findTopicLinks(org: OrgContext, topic: string): Array<{ text: string; url: string }> {
  const found = linkifierMatches(topic, compileLinkifiers(org.linkifiers)).map((m) => ({ start: m.start, text: topic.slice(m.start, m.end), url: m.url }));
  for (const m of topic.matchAll(/https?:\/\/[^\s]+/g)) {
    if (!found.some((f) => m.index >= f.start && m.index < f.start + f.text.length)) found.push({ start: m.index, text: m[0], url: m[0] });
  }
  return found.sort((a, b) => a.start - b.start).map(({ text, url }) => ({ text, url }));
}

/** How a client wants messages rendered. */
export interface MessageViewOptions {
  /** HTML (true, the default) or the Markdown source. */
  applyMarkdown?: boolean;
  /** Whether the client shows the empty topic as `""`; otherwise it gets its display name. */
  allowEmptyTopicName?: boolean;
  /** The client computes Gravatar URLs itself: `avatar_url` is null. */
  clientGravatar?: boolean;
  /** How to name a sender the viewer may not access (`user_access.ts`'s `inaccessibleSender`). */
  hiddenSender?: { full_name: string; email: string; avatar_url: string };
}

/** A message as Zulip renders it, without the per-user `flags`. */
export function messageView(org: OrgContext, m: MessageRecord, channelName: string, opts: MessageViewOptions = {}): Record<string, unknown> {
  const sender = senderOf(org, m.sender_id)!;
  const applyMarkdown = opts.applyMarkdown ?? true;
  const topic = m.stream_id !== null && m.topic === '' && !opts.allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : m.topic;
  const view: Record<string, unknown> = {
    id: m.id,
    sender_id: m.sender_id,
    content: applyMarkdown ? m.rendered : m.content,
    recipient_id: m.recipient_id,
    timestamp: m.timestamp,
    client: m.client,
    subject: topic,
    topic_links: m.stream_id !== null ? topicLinks(org, m.topic) : [],
    is_me_message: m.content.startsWith('/me '),
    reactions: (m.reactions ?? []).map((r) => ({ emoji_name: r.emoji_name, emoji_code: r.emoji_code, reaction_type: r.reaction_type, user_id: r.user_id })),
    submessages: (m.submessages ?? []).map((s) => ({ msg_type: s.msg_type, content: s.content, message_id: m.id, sender_id: s.sender_id, id: s.id })),
    sender_full_name: opts.hiddenSender?.full_name ?? sender.full_name,
    sender_email: opts.hiddenSender?.email ?? sender.email,
    sender_realm_str: SYSTEM_BOTS.has(m.sender_id) ? SYSTEM_BOT_REALM : org.org.subdomain,
    display_recipient: displayRecipient(org, m, channelName),
    type: m.stream_id !== null ? 'stream' : 'private',
    avatar_url: opts.hiddenSender ? opts.hiddenSender.avatar_url : opts.clientGravatar ? null : avatarUrl(sender.email),
    content_type: applyMarkdown ? 'text/html' : 'text/x-markdown',
  };
  if (m.stream_id !== null) view.stream_id = m.stream_id;
  if (m.last_edit_timestamp !== undefined) view.last_edit_timestamp = m.last_edit_timestamp;
  if (m.last_moved_timestamp !== undefined) view.last_moved_timestamp = m.last_moved_timestamp;
  if (m.edit_history) {
    const history = visibleHistory(m.edit_history, realmSettings(org).message_edit_history_visibility_policy);
    if (history.length > 0) view.edit_history = history;
  }
  return view;
}
