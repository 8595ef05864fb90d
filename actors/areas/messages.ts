/**
 * Sending messages, to a channel topic or directly to users (Zulip's
 * `zerver/actions/message_send.py`), the `message` event, and the `message` section
 * of `/register`.
 *
 * A channel message is decided by its channel's actor, so that sends to different
 * channels never queue behind each other; a direct message by the organization
 * actor, which stores direct messages and each participant's list of them.
 */
import { area, command, fact, type Delivery, type UserDelivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../errors.js';
import { canAccessChannel, hasContentAccess, type ChannelContext } from '../kinds/channel.js';
import { addDirectMessage, userByEmail, type OrgContext } from '../kinds/organization.js';
import { renderMarkdown, type MarkdownEnv, type Rendered } from '../markdown/index.js';
import { checkContent, checkTopic, checkTopicsPolicy, EMPTY_TOPIC_DISPLAY_NAME, LIMITS, MESSAGE_TRUNCATED, truncateCodePoints } from '../message_rules.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import type { OutgoingEvent } from '../core/area.js';
import { messageView, userView, type MessageViewOptions } from '../render/views.js';
import { Role, type ChannelRecord, type GroupSettingValue, type MessageRecord, type UserRecord } from '../types.js';
import { groupMemberIds, hasGroupPermission, SYSTEM_GROUP_INFO, SYSTEM_GROUPS } from '../group_settings.js';
import { realmSettings } from '../realm_settings.js';
import { NOTIFICATION_BOT } from '../system_bots.js';
import { compileLinkifiers } from '../linkifier_rules.js';
import { alertedUsers } from './alert_words.js';
import { activeEmojiNamed, emojiSourceUrl } from './realm_emoji.js';
import { canReadChannelMessage } from '../message_query.js';
import { stampHas } from '../message_has.js';
import { channelGroupSetting, dropMessages, received } from '../kinds/channel.js';
import { flagsOf } from '../kinds/user.js';
import { linkChanges, type AttachmentLinksChanged } from './attachments.js';
import { removedEvent, type ScheduledKind } from '../scheduled_rules.js';
import { checkCanAccessRecipients, inaccessibleSender, revealedByDirectMessage, usersWhoCanAccess, type AccessCheck } from '../user_access.js';
import { checkWidgetContent, widgetOfContent, widgetSubmessageContent, type WidgetContent } from '../widgets.js';

/**
 * A message was sent. Its channel recipients are the channel's subscribers at this
 * point of the log, so they are not repeated here.
 */
export interface MessageSent {
  type: 'MessageSent';
  org: number;
  message: MessageRecord;
  /** Users mentioned by name. */
  mentioned: number[];
  /** A wildcard mention (`@**all**`, `@**topic**`), if any. */
  wildcard: 'stream' | 'topic' | null;
  /** Whether the message arrives already read for its sender. */
  read_by_sender: boolean;
  /** Users for whom it also arrives read (the user whose action the notification bot reports). */
  read_by?: number[];
  /** When present, the only users for whom it arrives unread (a resolve notice: those following the topic). */
  unread_only?: number[];
  /** Recipients one of whose alert words it contains (absent: none). */
  alerted?: number[];
  /** The message wakes a channel that was not recently active. */
  reactivates?: boolean;
  /**
   * The sender's scheduled message or reminder this message delivers. Delivery and
   * the end of the scheduled item are this one fact, so that a crash can never keep
   * one without the other (`actors/areas/scheduled_messages.ts`).
   */
  scheduled?: { owner_id: number; id: number; kind: ScheduledKind };
}

/**
 * Whether a new message arrives unread for `userId`. A message from a user they
 * muted arrives read, as in Zulip (`muted_sender_user_ids`); whether they muted the
 * sender is their user actor's state when the fact is applied, the same on replay.
 */
function arrivesUnread(f: MessageSent, userId: number, mutedSender: boolean): boolean {
  if (mutedSender) return false;
  if (f.read_by_sender && f.message.sender_id === userId) return false;
  if (f.read_by?.includes(userId)) return false;
  return f.unread_only === undefined || f.unread_only.includes(userId);
}

/** Send a message to a topic of this channel. */
export interface SendToChannel {
  type: 'SEND_CHANNEL_MESSAGE';
  org: number;
  sender_id: number;
  topic: string;
  content: string;
  client: string;
  read_by_sender: boolean;
  /** A widget an API client attaches (Zulip's `widget_content`), as JSON text. */
  widget_content?: string;
}
/** Send a direct message to one or more users. */
export interface SendDirect {
  type: 'SEND_DIRECT';
  sender_id: number;
  to: number[];
  content: string;
  client: string;
  read_by_sender: boolean;
  /** A widget an API client attaches (Zulip's `widget_content`), as JSON text. */
  widget_content?: string;
}

/**
 * What Markdown may look up for a message of `sender`: the organization's names, and
 * the sender's `translate_emoticons` setting (Zulip renders with the sender's).
 */
export function senderResolver(org: OrgContext, sender: Readonly<UserRecord>): MarkdownEnv {
  const lookup = mentionResolver(org);
  if (sender.settings?.translate_emoticons === true) lookup.translateEmoticons = true;
  return lookup;
}

/** What Markdown may look up in an organization: its active users (`@**Name**`, `@**Name|id**`) and channels (`#**channel**`). */
export function mentionResolver(org: OrgContext, channelName?: (id: number) => string | undefined): MarkdownEnv {
  return {
    user(name, id) {
      if (id !== null) {
        const user = org.users.get(id);
        return user && user.is_active ? user : undefined;
      }
      const lower = name.toLowerCase();
      for (const user of org.users.values()) if (user.is_active && user.full_name.toLowerCase() === lower) return user;
      return userByEmail(org, name);
    },
    group(name) {
      const id = groupByName(org, name);
      if (id === undefined) return undefined;
      const group = org.userGroups.get(id);
      return { id, name: group?.name ?? SYSTEM_GROUP_INFO[id].name, members: groupMemberIds(org, id) };
    },
    linkifiers: compileLinkifiers(org.linkifiers),
    defaultCodeBlockLanguage: realmSettings(org).default_code_block_language,
    realmEmoji(name) {
      const e = activeEmojiNamed(org, name);
      return e && { source_url: emojiSourceUrl(org.org.id, e) };
    },
    channel(name) {
      const id = org.channelsByName.get(name.toLowerCase());
      return id === undefined ? undefined : { stream_id: id, name: channelName?.(id) ?? name };
    },
  };
}

/** An active group by name, for `@*group*`: the organization's own, or a system group other than nobody and internet. */
function groupByName(org: OrgContext, name: string): number | undefined {
  for (const g of org.userGroups.values()) if (!g.deactivated && g.name === name) return g.id;
  for (const [id, info] of Object.entries(SYSTEM_GROUP_INFO)) {
    if (info.name === name && Number(id) !== SYSTEM_GROUPS.nobody && Number(id) !== SYSTEM_GROUPS.internet) return Number(id);
  }
  return undefined;
}

/**
 * Refuses a message that mentions a group its sender may not mention (the group's
 * `can_mention_group`; Zulip's `check_user_group_mention_allowed`). Silent mentions are free.
 */
export function checkGroupMentions(org: OrgContext, sender: UserRecord, rendered: Rendered): void {
  for (const id of rendered.mentionedGroups) {
    const group = org.userGroups.get(id);
    const allowed = group ? group.settings.can_mention_group : SYSTEM_GROUPS.everyone;
    if (!hasGroupPermission(org, sender, allowed)) throw badRequest(`You are not allowed to mention user group '${group?.name ?? SYSTEM_GROUP_INFO[id].name}'.`);
  }
}

/** Where a new message goes: a channel topic, or its direct-message participants. */
type Destination = Pick<MessageRecord, 'stream_id' | 'topic' | 'dm_user_ids' | 'recipient_id'>;

/**
 * The widget a send attaches (Zulip's `do_widget_post_save_actions`): the one its
 * `widget_content` names, checked, or else the one its content asks for (`/poll`, `/todo`).
 */
function widgetOfSend(command: { widget_content?: string }, content: string): WidgetContent | null {
  return command.widget_content !== undefined ? checkWidgetContent(command.widget_content) : widgetOfContent(content);
}

/**
 * The decision of a send: the new message, with its id and time chosen now (and its
 * widget's submessage, if it has one), as one `MessageSent`.
 */
function sent(
  env: DecideEnv,
  org: number,
  command: { client: string; read_by_sender: boolean },
  senderId: number,
  content: string,
  rendered: Rendered,
  mentioned: number[],
  alerted: number[],
  to: Destination,
  widget: WidgetContent | null,
): Decision<{ id: number }, MessageSent> {
  const message: MessageRecord = { id: env.nextMessageId(), sender_id: senderId, content, rendered: rendered.html, timestamp: env.now(), client: command.client, ...to };
  if (widget) message.submessages = [{ id: env.nextSubmessageId(), sender_id: senderId, msg_type: 'widget', content: widgetSubmessageContent(widget) }];
  const fact: MessageSent = { type: 'MessageSent', org, message, mentioned, wildcard: rendered.wildcard, read_by_sender: command.read_by_sender };
  if (alerted.length > 0) fact.alerted = alerted;
  return { facts: [fact], value: { id: message.id } };
}

/**
 * A message the notification bot posts to a channel topic (Zulip's
 * `internal_send_stream_message`): a move or resolve notice, a channel announcement.
 * It is an ordinary message to its recipients, unread for all of them.
 */
export function notificationBotMessage(
  env: DecideEnv,
  org: OrgContext,
  channel: ChannelRecord,
  topic: string,
  content: string,
  options: Pick<MessageSent, 'read_by' | 'unread_only'> & Pick<MessageRecord, 'kind'> = {},
): MessageSent {
  return systemBotChannelMessage(env, org, NOTIFICATION_BOT, channel, topic, content, options);
}

/** A message a system bot (`actors/system_bots.ts`) posts to a channel topic, unread for all its recipients. */
export function systemBotChannelMessage(
  env: DecideEnv,
  org: OrgContext,
  bot: Readonly<UserRecord>,
  channel: ChannelRecord,
  topic: string,
  content: string,
  options: Pick<MessageSent, 'read_by' | 'unread_only'> & Pick<MessageRecord, 'kind'> = {},
): MessageSent {
  const rendered = renderMarkdown(content, mentionResolver(org));
  const message: MessageRecord = {
    id: env.nextMessageId(), sender_id: bot.user_id, content, rendered: rendered.html, timestamp: env.now(), client: 'Internal',
    stream_id: channel.stream_id, topic, dm_user_ids: null, recipient_id: channel.recipient_id,
    ...(options.kind ? { kind: options.kind } : {}),
  };
  const fact: MessageSent = { type: 'MessageSent', org: org.org.id, message, mentioned: rendered.mentioned, wildcard: rendered.wildcard, read_by_sender: false };
  if (options.read_by) fact.read_by = options.read_by;
  if (options.unread_only) fact.unread_only = options.unread_only;
  return fact;
}

/**
 * A direct message from the notification bot to one user (Zulip's
 * `internal_prep_private_message`); `lookup` resolves its mentions (by default, the
 * organization's users as they are now).
 */
export function notificationBotDirect(env: DecideEnv, org: OrgContext, to: UserRecord, content: string, lookup: MarkdownEnv = mentionResolver(org)): MessageSent {
  return systemBotDirect(env, org, NOTIFICATION_BOT, to, content, lookup);
}

/** A direct message from a system bot (`actors/system_bots.ts`) to one user, unread for them. */
export function systemBotDirect(env: DecideEnv, org: OrgContext, bot: Readonly<UserRecord>, to: UserRecord, content: string, lookup: MarkdownEnv = mentionResolver(org)): MessageSent {
  const rendered = renderMarkdown(content, lookup);
  const message: MessageRecord = {
    id: env.nextMessageId(), sender_id: bot.user_id, content, rendered: rendered.html, timestamp: env.now(), client: 'Internal',
    stream_id: null, topic: '', dm_user_ids: [to.user_id, bot.user_id].sort((a, b) => a - b), recipient_id: to.recipient_id,
  };
  return { type: 'MessageSent', org: org.org.id, message, mentioned: rendered.mentioned.filter((id) => id === to.user_id), wildcard: null, read_by_sender: false };
}

export const sendChannelMessage = command({
  type: 'SEND_CHANNEL_MESSAGE',
  actor: 'channel',
  decide(ctx: ChannelContext, command: SendToChannel, env: DecideEnv, world: StateView): Decision<{ id: number }, MessageSent | AttachmentLinksChanged> {
    const org = world.org(command.org)!;
    const sender = org.users.get(command.sender_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    const channel = ctx.channel;
    if (channel.is_archived) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    if (!hasContentAccess(ctx, sender)) {
      throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    }
    if (channel.groups?.can_send_message_group !== undefined && !hasGroupPermission(org, sender, channel.groups.can_send_message_group)) {
      throw badRequest('You do not have permission to post in this channel.');
    }
    const topic = checkTopic(command.topic);
    checkTopicsPolicy(channel.topics_policy, topic);
    const content = checkContent(command.content);
    const widget = widgetOfSend(command, content);
    const rendered = renderMarkdown(content, senderResolver(org, sender));
    checkGroupMentions(org, sender, rendered);
    const to = { stream_id: channel.stream_id, topic, dm_user_ids: null, recipient_id: channel.recipient_id };
    const decision = sent(env, command.org, command, sender.user_id, content, rendered, rendered.mentioned, alertedUsers(org, content, (id) => ctx.subscribers.has(id)), to, widget);
    if (channel.is_recently_active === false) decision.facts[0].reactivates = true;
    return withLinks(decision, world, org, sender);
  }
});

export const sendDirect = command({
  type: 'SEND_DIRECT',
  actor: 'org',
  decide(ctx: OrgContext, command: SendDirect, env: DecideEnv, world: StateView): Decision<{ id: number }, MessageSent | AttachmentLinksChanged> {
    const sender = ctx.users.get(command.sender_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    if (command.to.length === 0) throw badRequest('Message must have recipients');
    const participants = new Set<number>([sender.user_id]);
    const recipients: UserRecord[] = [];
    for (const id of command.to) {
      const user = ctx.users.get(id);
      if (!user) throw badRequest(`Invalid user ID ${id}`);
      if (!user.is_active) throw badRequest(`'${user.email}' is no longer using Zulip.`);
      participants.add(id);
      recipients.push(user);
    }
    checkCanAccessRecipients(world, ctx.org.id, sender, recipients);
    const dmUserIds = [...participants].sort((a, b) => a - b);
    const content = checkContent(command.content);
    const widget = widgetOfSend(command, content);
    const rendered = renderMarkdown(content, senderResolver(ctx, sender));
    checkGroupMentions(ctx, sender, rendered);
    let recipientId: number;
    if (dmUserIds.length === 1) recipientId = sender.recipient_id;
    else if (dmUserIds.length === 2) recipientId = ctx.users.get(dmUserIds[0] === sender.user_id ? dmUserIds[1] : dmUserIds[0])!.recipient_id;
    else recipientId = ctx.groupRecipients.get(dmUserIds.join(',')) ?? ctx.nextRecipientId;
    const to = { stream_id: null, topic: '', dm_user_ids: dmUserIds, recipient_id: recipientId };
    return withLinks(sent(env, ctx.org.id, command, sender.user_id, content, rendered, rendered.mentioned.filter((id) => participants.has(id)), alertedUsers(ctx, content, (id) => participants.has(id)), to, widget), world, ctx, sender);
  },
});

/** A send with the uploads its content links claimed for it, after the message's own fact. */
function withLinks(decision: Decision<{ id: number }, MessageSent>, view: StateView, org: OrgContext, sender: UserRecord): Decision<{ id: number }, MessageSent | AttachmentLinksChanged> {
  const m = decision.facts[0].message;
  const links = linkChanges(view, org, sender, m.id, m.timestamp, null, m.content);
  return links ? { ...decision, facts: [...decision.facts, links] } : decision;
}

const messageSent = fact<MessageSent>({
  type: 'MessageSent',
  apply: {
    server(ctx, f) {
      if (f.message.id > ctx.maxMessageId) ctx.maxMessageId = f.message.id;
      for (const s of f.message.submessages ?? []) if (s.id > ctx.maxSubmessageId) ctx.maxSubmessageId = s.id;
    },
    org(ctx, f) {
      const m = f.message;
      if (m.stream_id !== null) {
        ctx.messageChannel.set(m.id, m.stream_id);
        return;
      }
      addDirectMessage(ctx, m);
      if ((m.dm_user_ids?.length ?? 0) > 2) ctx.groupRecipients.set(m.dm_user_ids!.join(','), m.recipient_id);
      ctx.nextRecipientId = Math.max(ctx.nextRecipientId, m.recipient_id + 1);
    },
    channel(ctx, f) {
      const m = f.message;
      if (f.reactivates) ctx.channel = { ...ctx.channel, is_recently_active: true };
      ctx.ids.push(m.id);
      ctx.messages.set(m.id, stampHas(m));
      const key = m.topic.toLowerCase();
      const entry = ctx.topics.get(key);
      if (entry) entry.max_id = m.id;
      else ctx.topics.set(key, { name: m.topic, max_id: m.id });
    },
    user(ctx, f) {
      if (f.scheduled && f.scheduled.owner_id === ctx.user_id) {
        ctx.scheduled.delete(f.scheduled.id);
        // The owner of a delivered channel message need not be subscribed: then it holds no flags for it.
        if (f.message.stream_id !== null && !ctx.subs.has(f.message.stream_id)) return;
      }
      const id = f.message.id;
      if (arrivesUnread(f, ctx.user_id, ctx.personal.muted.has(f.message.sender_id))) ctx.unread.add(id);
      if (f.mentioned.includes(ctx.user_id)) ctx.flags.mentioned.add(id);
      if (f.wildcard === 'stream') ctx.flags.stream_wildcard_mentioned.add(id);
      if (f.wildcard === 'topic') ctx.flags.topic_wildcard_mentioned.add(id);
      if (f.alerted?.includes(ctx.user_id)) ctx.flags.has_alert_word.add(id);
    },
  },
  route(f, to) {
    to.server();
    to.org(f.org);
    const m = f.message;
    if (m.stream_id !== null) {
      to.channel(f.org, m.stream_id);
      for (const id of to.view.channel(f.org, m.stream_id)!.subscribers) to.user(f.org, id);
    } else {
      for (const id of m.dm_user_ids ?? []) to.user(f.org, id);
    }
    if (f.scheduled) to.user(f.org, f.scheduled.owner_id);
  },
  notify(f, seq, view) {
    const out: Delivery[] = [];
    // A limited guest meeting someone through this message learns of them first (Zulip's notify_created_user).
    if (f.message.dm_user_ids) {
      for (const [guestId, users] of revealedByDirectMessage(view, f.org, f.message.id, f.message.sender_id, f.message.dm_user_ids)) {
        const viewer = view.org(f.org)!.users.get(guestId)!;
        for (const u of users) {
          out.push({ org: f.org, seq, type: 'realm_user', user_ids: [guestId], event: (_id, { client_gravatar: clientGravatar }) => eventJson('realm_user', { op: 'add', person: userView(u, { profileData: true, clientGravatar, viewer }) }) });
        }
      }
    }
    out.push(notifyMessage(view, f, seq));
    if (f.scheduled) out.push({ org: f.org, seq, user_ids: [f.scheduled.owner_id], ...removedEvent(f.scheduled.kind, f.scheduled.id) });
    // A channel's first message: clients learn its `first_message_id` (Zulip sends this update too).
    const ch = f.message.stream_id === null ? undefined : view.channel(f.org, f.message.stream_id);
    if (ch && f.reactivates) {
      out.push({
        org: f.org, seq, type: 'stream',
        user_ids: activeUsersWhere(view, f.org, (u) => canAccessChannel(u, ch.channel, ch.subscribers)),
        event: eventJson('stream', { op: 'update', stream_id: ch.channel.stream_id, name: ch.channel.name, property: 'is_recently_active', value: true }),
      });
    }
    if (ch && ch.ids[0] === f.message.id) {
      out.push({
        org: f.org, seq, type: 'stream',
        user_ids: activeUsersWhere(view, f.org, (u) => canAccessChannel(u, ch.channel, ch.subscribers)),
        event: eventJson('stream', { op: 'update', stream_id: ch.channel.stream_id, name: ch.channel.name, property: 'first_message_id', value: f.message.id }),
      });
    }
    return out;
  },
});

function notifyMessage(world: StateView, fact: MessageSent, seq: number): UserDelivery {
  const m = fact.message;
  const org = world.org(fact.org)!;
  const channel = m.stream_id === null ? undefined : world.channel(fact.org, m.stream_id);
  const channelName = channel?.channel.name ?? '';
  // The shared part is serialized once per variant, however many recipients there are.
  const shared: string[] = [];
  const sharedFor = (emptyTopicName: boolean, clientGravatar: boolean, hidden: boolean): string => {
    const key = (emptyTopicName || m.topic !== '' ? 0 : 1) + (clientGravatar ? 2 : 0) + (hidden ? 4 : 0);
    const hiddenSender = hidden ? inaccessibleSender(org.org, m.sender_id) : undefined;
    return (shared[key] ??= '"type":"message","message":' + JSON.stringify(messageView(org, m, channelName, { allowEmptyTopicName: emptyTopicName, clientGravatar, hiddenSender })) + ',"flags":');
  };
  const recipients = channel ? [...channel.subscribers] : (m.dm_user_ids ?? []);
  // A sender outside the channel may be one its limited guests cannot access: they get
  // the sender as "Unknown user" (Zulip's user_ids_without_access_to_sender).
  const sender = org.users.get(m.sender_id);
  let hiddenFrom: Set<number> | null = null;
  const restricted = realmSettings(org).can_access_all_users_group !== SYSTEM_GROUPS.everyone;
  if (restricted && channel && sender && !sender.is_bot && !channel.subscribers.has(m.sender_id)) {
    const can = new Set(usersWhoCanAccess(world, fact.org, sender));
    const without = recipients.filter((id) => !can.has(id));
    if (without.length > 0) hiddenFrom = new Set(without);
  }
  // A new message's flags follow from the fact alone (the same rule the user actor applies),
  // so recipients share a handful of prebuilt events instead of one each.
  const mentioned = new Set(fact.mentioned);
  const alerted = fact.alerted ? new Set(fact.alerted) : null;
  const wildcardFlags = fact.wildcard === 'stream' ? ['stream_wildcard_mentioned', 'wildcard_mentioned'] : fact.wildcard === 'topic' ? ['topic_wildcard_mentioned', 'wildcard_mentioned'] : [];
  const built: OutgoingEvent[] = [];
  return {
    org: fact.org,
    seq,
    type: 'message',
    user_ids: recipients,
    message: m,
    event: (userId, { empty_topic_name: emptyTopicName, client_gravatar: clientGravatar }) => {
      // Built as the fact is applied, so the recipient's mutes are those the user actor applied it with.
      const read = !arrivesUnread(fact, userId, world.user(fact.org, userId)?.personal.muted.has(m.sender_id) ?? false);
      const isMentioned = mentioned.has(userId);
      const isAlerted = alerted !== null && alerted.has(userId);
      const hidden = hiddenFrom !== null && hiddenFrom.has(userId);
      const key = (hidden ? 32 : 0) + (clientGravatar ? 16 : 0) + (isAlerted ? 8 : 0) + (emptyTopicName ? 4 : 0) + (read ? 2 : 0) + (isMentioned ? 1 : 0);
      let event = built[key];
      if (!event) {
        const flags = [...(read ? ['read'] : []), ...(isMentioned ? ['mentioned'] : []), ...wildcardFlags, ...(isAlerted ? ['has_alert_word'] : [])];
        event = built[key] = { type: 'message', json: sharedFor(emptyTopicName, clientGravatar, hidden) + JSON.stringify(flags) };
      }
      return event;
    },
  };
}


// Reads: what route handlers ask, answered from actor state without changing it.

/** A stored message the user may read, or `BAD_REQUEST` "Invalid message(s)". */
export function accessMessage(rt: StateView, org: number, viewer: UserRecord, id: number): MessageRecord {
  const ctx = rt.org(org)!;
  const streamId = ctx.messageChannel.get(id);
  if (streamId !== undefined) {
    const ch = rt.channel(org, streamId);
    const m = ch?.messages.get(id);
    if (m && canReadChannelMessage(ch!, viewer, id)) return m;
  } else {
    const m = ctx.directMessages.get(id);
    if (m && m.dm_user_ids!.includes(viewer.user_id)) return m;
  }
  throw badRequest('Invalid message(s)');
}

/**
 * A message with the viewer's flags, as `GET /messages` shows it. A channel message the
 * viewer never received is `historical` (and read), as in Zulip. `access`: the viewer's
 * (`userAccessOf`), under which a sender they may not access is "Unknown user" (Zulip's
 * `messages_for_ids` with `get_inaccessible_user_ids`).
 */
export function messageForViewer(rt: StateView, org: number, viewerId: number, m: MessageRecord, opts: MessageViewOptions, access?: AccessCheck | null): Record<string, unknown> {
  const orgCtx = rt.org(org)!;
  const sender = access ? orgCtx.users.get(m.sender_id) : undefined;
  if (sender && !access!(sender)) opts = { ...opts, hiddenSender: inaccessibleSender(orgCtx.org, m.sender_id) };
  const ch = m.stream_id === null ? undefined : rt.channel(org, m.stream_id);
  const me = rt.user(org, viewerId);
  const flags = me ? flagsOf(me, m.id) : ['read'];
  if (ch && !received(ch, viewerId, m.id)) {
    if (!flags.includes('read')) flags.unshift('read');
    flags.push('historical');
  }
  return { ...messageView(orgCtx, m, ch?.channel.name ?? '', opts), flags };
}

/**
 * Renders Markdown as a message of `userId` would be (`POST /messages/render`), resolving
 * mentions in the organization. Content over `max_message_length` is cut as a send cuts it: rendering
 * costs grow with the text (12 MB of `[` held the loop for seconds), and no message is longer.
 */
export function renderPreview(rt: StateView, org: number, userId: number, content: string): string {
  const bounded = truncateCodePoints(content, LIMITS.max_message_length, MESSAGE_TRUNCATED);
  const ctx = rt.org(org)!;
  const user = ctx.users.get(userId);
  return renderMarkdown(bounded, user ? senderResolver(ctx, user) : mentionResolver(ctx)).html;
}

// Deletion (Zulip's `do_delete_messages`).

/**
 * A message was deleted, with the users who held it (received it, or could read it
 * in a public-history channel), so that their actors drop it and they are told.
 */
export interface MessageDeleted {
  type: 'MessageDeleted';
  org: number;
  message_id: number;
  /** The channel and topic it was in, or null for a direct message. */
  stream_id: number | null;
  topic: string;
  /** Users whose personal flags held it. */
  holders: number[];
  /** Users to tell: the holders, and the subscribers of a public-history channel. */
  notify: number[];
  /**
   * Deleted with others at once (a batch of a topic's deletion, Zulip's do_delete_messages):
   * the batch's first fact carries its ids, ascending, and everyone to tell (every message's
   * `notify` and the acting user), and tells them all; the others carry `true` and tell no one.
   * Absent in facts written before batches were told at once.
   */
  batch?: { message_ids: number[]; notify: number[] } | true;
}

/** Delete a channel message (decided by its channel's actor). */
export interface DeleteChannelMessage {
  type: 'DELETE_CHANNEL_MESSAGE';
  org: number;
  actor_id: number;
  message_id: number;
}
/** Delete a direct message (decided by the organization actor). */
export interface DeleteDirectMessage {
  type: 'DELETE_DIRECT_MESSAGE';
  org: number;
  actor_id: number;
  message_id: number;
}

/**
 * Who may delete a message (Zulip's `validate_can_delete_message`): members of the
 * organization's or the channel's `can_delete_any_message_group` any message; others
 * their own (or their bots'), as members of a `can_delete_own_message_group`, within
 * `message_content_delete_limit_seconds`.
 */
function checkCanDelete(org: OrgContext, actor: UserRecord | undefined, m: MessageRecord, now: number, channel: ChannelRecord | null): void {
  if (!actor || !actor.is_active) throw badRequest('Invalid sender');
  const settings = realmSettings(org);
  const inGroup = (realmValue: GroupSettingValue, key: 'can_delete_any_message_group' | 'can_delete_own_message_group'): boolean =>
    hasGroupPermission(org, actor, realmValue) || (channel !== null && hasGroupPermission(org, actor, channelGroupSetting(channel, key)));
  if (inGroup(settings.can_delete_any_message_group, 'can_delete_any_message_group')) return;
  const sender = org.users.get(m.sender_id);
  if (m.sender_id !== actor.user_id && sender?.bot_owner_id !== actor.user_id) throw badRequest("You don't have permission to delete this message");
  if (!inGroup(settings.can_delete_own_message_group, 'can_delete_own_message_group')) throw badRequest("You don't have permission to delete this message");
  const limit = settings.message_content_delete_limit_seconds;
  if (limit !== null && now - m.timestamp > limit) throw badRequest('The time limit for deleting this message has passed');
}

export const deleteChannelMessage = command({
  type: 'DELETE_CHANNEL_MESSAGE',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteChannelMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageDeleted | AttachmentLinksChanged> {
    const m = ctx.messages.get(c.message_id);
    if (!m) throw badRequest('Invalid message(s)');
    const org = view.org(c.org)!;
    checkCanDelete(org, org.users.get(c.actor_id), m, env.now(), ctx.channel);
    return { facts: channelMessageDeletion(ctx, view, org, m), value: {} };
  },
});

export const deleteDirectMessage = command({
  type: 'DELETE_DIRECT_MESSAGE',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteDirectMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageDeleted | AttachmentLinksChanged> {
    const m = ctx.directMessages.get(c.message_id);
    if (!m) throw badRequest('Invalid message(s)');
    checkCanDelete(ctx, ctx.users.get(c.actor_id), m, env.now(), null);
    const holders = [...(m.dm_user_ids ?? [])];
    return { facts: withUnlinks({ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }, view, ctx, m), value: {} };
  },
});

/**
 * The facts that delete a channel message: it goes from everyone who received it, and
 * everyone who holds it or (with shared history) is subscribed is told.
 */
export function channelMessageDeletion(ctx: ChannelContext, view: StateView, org: OrgContext, m: MessageRecord): Array<MessageDeleted | AttachmentLinksChanged> {
  const holders = [...ctx.history.keys()].filter((id) => received(ctx, id, m.id)).sort((a, b) => a - b);
  const told = new Set(holders);
  if (ctx.channel.history_public_to_subscribers) for (const id of ctx.subscribers) told.add(id);
  const notify = [...told].sort((a, b) => a - b);
  return withUnlinks({ type: 'MessageDeleted', org: org.org.id, message_id: m.id, stream_id: ctx.channel.stream_id, topic: m.topic, holders, notify }, view, org, m);
}

/** A deletion, then the uploads it lets go of: those it alone linked are deleted with it. */
function withUnlinks(deleted: MessageDeleted, view: StateView, org: OrgContext, m: MessageRecord): Array<MessageDeleted | AttachmentLinksChanged> {
  const sender = org.users.get(m.sender_id);
  const links = sender ? linkChanges(view, org, sender, m.id, m.timestamp, m.content, null) : undefined;
  return links ? [deleted, links] : [deleted];
}


/**
 * Delete every message some users sent in a channel, if the channel is of a kind asked
 * for (`DELETE /users/{id}` with `actions`; administrators only). Decided by the channel.
 */
export interface DeleteMessagesBySenders {
  type: 'DELETE_MESSAGES_BY_SENDERS';
  org: number;
  actor_id: number;
  sender_ids: number[];
  public_channels: boolean;
  private_channels: boolean;
}
/** The same for the direct messages of the organization. */
export interface DeleteDirectMessagesBySenders { type: 'DELETE_DIRECT_MESSAGES_BY_SENDERS'; org: number; actor_id: number; sender_ids: number[] }

function checkAdministrator(org: OrgContext, actorId: number): void {
  const actor = org.users.get(actorId);
  if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
}

export const deleteMessagesBySenders = command({
  type: 'DELETE_MESSAGES_BY_SENDERS',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteMessagesBySenders, _env: DecideEnv, view: StateView): Decision<{ deleted: number }, MessageDeleted | AttachmentLinksChanged> {
    const org = view.org(c.org)!;
    checkAdministrator(org, c.actor_id);
    if (!(ctx.channel.invite_only ? c.private_channels : c.public_channels)) return { facts: [], value: { deleted: 0 } };
    const senders = new Set(c.sender_ids);
    const facts: Array<MessageDeleted | AttachmentLinksChanged> = [];
    let deleted = 0;
    for (const id of ctx.ids) {
      const m = ctx.messages.get(id);
      if (!m || !senders.has(m.sender_id)) continue;
      facts.push(...channelMessageDeletion(ctx, view, org, m));
      deleted++;
    }
    return { facts, value: { deleted } };
  },
});

export const deleteDirectMessagesBySenders = command({
  type: 'DELETE_DIRECT_MESSAGES_BY_SENDERS',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteDirectMessagesBySenders, _env: DecideEnv, view: StateView): Decision<{ deleted: number }, MessageDeleted | AttachmentLinksChanged> {
    checkAdministrator(ctx, c.actor_id);
    const senders = new Set(c.sender_ids);
    const facts: Array<MessageDeleted | AttachmentLinksChanged> = [];
    let deleted = 0;
    for (const m of ctx.directMessages.values()) {
      if (!senders.has(m.sender_id)) continue;
      const holders = [...(m.dm_user_ids ?? [])];
      facts.push(...withUnlinks({ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }, view, ctx, m));
      deleted++;
    }
    return { facts, value: { deleted } };
  },
});

const messageDeleted = fact<MessageDeleted>({
  type: 'MessageDeleted',
  // Every reducer is idempotent: a snapshot slice taken after the delete already lacks the message.
  apply: {
    org(ctx, f) {
      ctx.messageChannel.delete(f.message_id);
      const m = ctx.directMessages.get(f.message_id);
      if (!m) return;
      ctx.directMessages.delete(f.message_id);
      // Id lists are replaced, not changed: a paused scan keeps reading the list it started on.
      for (const uid of m.dm_user_ids ?? []) {
        const ids = ctx.directIdsByUser.get(uid);
        if (ids) ctx.directIdsByUser.set(uid, ids.filter((id) => id !== m.id));
      }
    },
    channel(ctx, f) {
      dropMessages(ctx, [f.message_id]);
    },
    user(ctx, f) {
      const one = [f.message_id];
      ctx.unread.deleteMany(one);
      for (const set of Object.values(ctx.flags)) set.deleteMany(one);
    },
  },
  route(f, to) {
    to.org(f.org);
    if (f.stream_id !== null) to.channel(f.org, f.stream_id);
    for (const id of f.holders) to.user(f.org, id);
  },
  notify(f, seq, view) {
    if (f.batch === true) return [];
    if (f.batch) return batchDeletionDeliveries(view, f.org, seq, f.batch.notify, f.batch.message_ids, f.stream_id, f.topic);
    return [deletionDelivery(view, f.org, seq, f.notify, f.message_id, f.stream_id, f.topic)];
  },
});

/**
 * Marks the deletion facts of one batch (channel messages of one topic, ascending by id) as
 * one: the first tells everyone of them all, in Zulip's two forms (`batchDeletionDeliveries`).
 */
export function asDeletionBatch(facts: Array<MessageDeleted | AttachmentLinksChanged>, actorId: number): Array<MessageDeleted | AttachmentLinksChanged> {
  const deleted = facts.filter((x): x is MessageDeleted => x.type === 'MessageDeleted');
  if (deleted.length === 0) return facts;
  const told = new Set<number>([actorId]);
  for (const d of deleted) for (const id of d.notify) told.add(id);
  const first = deleted[0];
  const batch = { message_ids: deleted.map((d) => d.message_id).sort((a, b) => a - b), notify: [...told].sort((a, b) => a - b) };
  return facts.map((x) => (x.type !== 'MessageDeleted' ? x : { ...x, batch: x === first ? batch : true }));
}

/**
 * The `delete_message` events of a batch, as Zulip's do_delete_messages sends them: one
 * event listing every id (`message_ids`, ascending) to clients that declared
 * `bulk_message_deletion`, and to the others one event per message (`message_id`), in the
 * same order, as Zulip's event queues split the bulk event for them. Everyone told gets
 * every id of the batch.
 */
export function batchDeletionDeliveries(view: StateView, org: number, seq: number, users: number[], messageIds: number[], streamId: number | null, topic: string): UserDelivery[] {
  const directory = view.org(org)?.users;
  const active = users.filter((id) => directory?.get(id)?.is_active);
  const where = (emptyTopicName: boolean): Record<string, unknown> => (streamId === null
    ? { message_type: 'private' }
    : { message_type: 'stream', stream_id: streamId, topic: topic === '' && !emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic });
  const bulkBuilt: OutgoingEvent[] = [];
  const out: UserDelivery[] = [{
    org, seq, type: 'delete_message', user_ids: active,
    event: (_userId, { empty_topic_name: emptyTopicName, bulk_message_deletion: bulk }) =>
      (bulk ? (bulkBuilt[emptyTopicName ? 1 : 0] ??= eventJson('delete_message', { message_ids: messageIds, ...where(emptyTopicName) })) : null),
  }];
  for (const messageId of messageIds) {
    const built: OutgoingEvent[] = [];
    out.push({
      org, seq, type: 'delete_message', user_ids: active,
      event: (_userId, { empty_topic_name: emptyTopicName, bulk_message_deletion: bulk }) =>
        (bulk ? null : (built[emptyTopicName ? 1 : 0] ??= eventJson('delete_message', { message_id: messageId, ...where(emptyTopicName) }))),
    });
  }
  return out;
}

/**
 * The `delete_message` event for one message, to those of `users` who are active: in
 * the bulk form (`message_ids`) for clients that declared `bulk_message_deletion`.
 */
export function deletionDelivery(view: StateView, org: number, seq: number, users: number[], messageId: number, streamId: number | null, topic: string): UserDelivery {
  const directory = view.org(org)?.users;
  const built: OutgoingEvent[] = [];
  return {
    org,
    seq,
    type: 'delete_message',
    user_ids: users.filter((id) => directory?.get(id)?.is_active),
    event: (_userId, { empty_topic_name: emptyTopicName, bulk_message_deletion: bulk }) => {
      const variant = (emptyTopicName ? 1 : 0) + (bulk ? 2 : 0);
      const ids = bulk ? { message_ids: [messageId] } : { message_id: messageId };
      const where = streamId === null
        ? { message_type: 'private' }
        : { message_type: 'stream', stream_id: streamId, topic: topic === '' && !emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic };
      return (built[variant] ??= eventJson('delete_message', { ...ids, ...where }));
    },
  };
}

export const messages = area({
  name: 'messages',
  commands: [sendChannelMessage, sendDirect, deleteChannelMessage, deleteDirectMessage, deleteMessagesBySenders, deleteDirectMessagesBySenders],
  facts: [messageSent, messageDeleted],
  register: [
    {
      types: ['message'],
      fill(state, _r, view) {
        state.max_message_id = view.server().maxMessageId;
      },
    },
  ],
});
