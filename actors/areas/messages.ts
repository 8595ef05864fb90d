/**
 * Sending messages, to a channel topic or directly to users (Zulip's
 * `zerver/actions/message_send.py`), the `message` event, and the `message` section
 * of `/register`.
 *
 * A channel message is decided by its channel's actor, so that sends to different
 * channels never queue behind each other; a direct message by the organization
 * actor, which stores direct messages and each participant's list of them.
 */
import { area, fact, messageCommand, type Address, type Delivery, type UserDelivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { canAccessChannel, hasContentAccess, type ChannelContext } from '../kinds/channel.js';
import { addDirectMessage, userByEmail, type OrgContext } from '../kinds/organization.js';
import { renderMarkdown, type MarkdownEnv, type Rendered } from '../engines/markdown/index.js';
import { checkContent, checkTopic, checkTopicsPolicy, LIMITS, MESSAGE_TRUNCATED, truncateCodePoints } from '../rules/messages.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import type { OutgoingEvent } from '../core/area.js';
import { messageView, userView, type MessageViewOptions } from '../render/views.js';
import type { ChannelRecord, MessageRecord, UserRecord } from '../shared/types.js';
import { groupMemberIds, hasGroupPermission, SYSTEM_GROUP_INFO, SYSTEM_GROUPS } from '../rules/group_settings.js';
import { realmSettings } from '../rules/realm_settings.js';
import { NOTIFICATION_BOT } from '../rules/system_bots.js';
import { compileLinkifiers } from '../rules/linkifiers.js';
import { alertedUsers } from './alert_words.js';
import { activeEmojiNamed, emojiSourceUrl } from './realm_emoji.js';
import { accessibleMessage } from '../engines/message_query.js';
import { stampHas } from '../engines/message_has.js';
import { storeMessage, wholeMessage } from '../core/bodies.js';
import { newestReceived, received } from '../kinds/channel.js';
import { flagsOf } from '../kinds/user.js';
import { linkChanges, type AttachmentLinksChanged } from './attachments.js';
import { removedEvent, type ScheduledKind } from '../rules/scheduled.js';
import { checkCanAccessRecipients, inaccessibleSender, revealedByDirectMessage, usersWhoCanAccess, type AccessCheck } from '../rules/user_access.js';
import { checkWidgetContent, widgetOfContent, widgetSubmessageContent, type WidgetContent } from '../rules/widgets.js';

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

/**
 * Send a message: to a topic of a channel (decided by the channel's actor), or to one or
 * more users (a direct message, decided by the organization's).
 */
export interface SendMessage {
  type: 'SEND_MESSAGE';
  org: number;
  sender_id: number;
  to: { stream_id: number; topic: string } | { user_ids: number[] };
  content: string;
  client: string;
  read_by_sender: boolean;
  /** A widget an API client attaches (Zulip's `widget_content`), as JSON text. */
  widget_content?: string;
}
/** A send to a channel, as its actor decides it. */
export type SendToChannel = SendMessage & { to: { stream_id: number; topic: string } };
/** A direct message, as the organization's actor decides it. */
export type SendDirect = SendMessage & { to: { user_ids: number[] } };

/**
 * What Markdown may look up for a message of `senderId`: the organization's names, and
 * the sender's `translate_emoticons` setting (Zulip renders with the sender's).
 */
export function senderResolver(org: OrgContext, senderId: number): MarkdownEnv {
  const lookup = mentionResolver(org);
  if (org.users.get(senderId)?.settings?.translate_emoticons === true) lookup.translateEmoticons = true;
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

/** A message a system bot (`actors/rules/system_bots.ts`) posts to a channel topic, unread for all its recipients. */
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

/** A direct message from a system bot (`actors/rules/system_bots.ts`) to one user, unread for them. */
export function systemBotDirect(env: DecideEnv, org: OrgContext, bot: Readonly<UserRecord>, to: UserRecord, content: string, lookup: MarkdownEnv = mentionResolver(org)): MessageSent {
  const rendered = renderMarkdown(content, lookup);
  const message: MessageRecord = {
    id: env.nextMessageId(), sender_id: bot.user_id, content, rendered: rendered.html, timestamp: env.now(), client: 'Internal',
    stream_id: null, topic: '', dm_user_ids: [to.user_id, bot.user_id].sort((a, b) => a - b), recipient_id: to.recipient_id,
  };
  return { type: 'MessageSent', org: org.org.id, message, mentioned: rendered.mentioned.filter((id) => id === to.user_id), wildcard: null, read_by_sender: false };
}

/** A send to a channel, decided by its actor: Zulip's `check_message` for a channel. */
export function decideChannelSend(ctx: ChannelContext, command: SendToChannel, env: DecideEnv, world: StateView): Decision<{ id: number }, MessageSent | AttachmentLinksChanged> {
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
  const topic = checkTopic(command.to.topic);
  checkTopicsPolicy(channel.topics_policy, topic);
  const content = checkContent(command.content);
  const widget = widgetOfSend(command, content);
  const rendered = renderMarkdown(content, senderResolver(org, sender.user_id));
  checkGroupMentions(org, sender, rendered);
  const to = { stream_id: channel.stream_id, topic, dm_user_ids: null, recipient_id: channel.recipient_id };
  const decision = sent(env, command.org, command, sender.user_id, content, rendered, rendered.mentioned, alertedUsers(org, content, (id) => ctx.subscribers.has(id)), to, widget);
  if (channel.is_recently_active === false) decision.facts[0].reactivates = true;
  return withLinks(decision, world, org, sender);
}

/** A direct message, decided by the organization's actor. */
export function decideDirectSend(ctx: OrgContext, command: SendDirect, env: DecideEnv, world: StateView): Decision<{ id: number }, MessageSent | AttachmentLinksChanged> {
  const sender = ctx.users.get(command.sender_id);
  if (!sender || !sender.is_active) throw badRequest('Invalid sender');
  if (command.to.user_ids.length === 0) throw badRequest('Message must have recipients');
  const participants = new Set<number>([sender.user_id]);
  const recipients: UserRecord[] = [];
  for (const id of command.to.user_ids) {
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
  const rendered = renderMarkdown(content, senderResolver(ctx, sender.user_id));
  checkGroupMentions(ctx, sender, rendered);
  let recipientId: number;
  if (dmUserIds.length === 1) recipientId = sender.recipient_id;
  else if (dmUserIds.length === 2) recipientId = ctx.users.get(dmUserIds[0] === sender.user_id ? dmUserIds[1] : dmUserIds[0])!.recipient_id;
  else recipientId = ctx.groupRecipients.get(dmUserIds.join(',')) ?? ctx.nextRecipientId;
  const to = { stream_id: null, topic: '', dm_user_ids: dmUserIds, recipient_id: recipientId };
  return withLinks(sent(env, ctx.org.id, command, sender.user_id, content, rendered, rendered.mentioned.filter((id) => participants.has(id)), alertedUsers(ctx, content, (id) => participants.has(id)), to, widget), world, ctx, sender);
}

export const sendMessage = messageCommand({
  type: 'SEND_MESSAGE',
  address: (_view: StateView, c: SendMessage): Address<'channel' | 'org'> => ('stream_id' in c.to ? { kind: 'channel', org: c.org, stream_id: c.to.stream_id } : { kind: 'org', org: c.org }),
  decide: {
    channel: (ctx: ChannelContext, c: SendMessage, env: DecideEnv, view: StateView) => decideChannelSend(ctx, c as SendToChannel, env, view),
    org: (ctx: OrgContext, c: SendMessage, env: DecideEnv, view: StateView) => decideDirectSend(ctx, c as SendDirect, env, view),
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
      const held = ctx.messages.bodyOf(m.id);
      if (held !== undefined) ctx.bodies.release(held);
      ctx.messages.set(m.id, storeMessage(ctx.bodies, stampHas(m)));
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
    if (ch && ch.messages.size > 0 && ch.messages.ids[0] === f.message.id) {
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
  const m = accessibleMessage(rt, org, viewer.user_id, id);
  if (!m) throw badRequest('Invalid message(s)');
  return wholeMessage(rt.org(org)!.bodies, m);
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
  return renderMarkdown(bounded, senderResolver(rt.org(org)!, userId)).html;
}

/**
 * The newest message a user received, or -1 (Zulip's `max_message_id`: the newest of their
 * UserMessage rows): the last of their direct messages, and in each channel they were ever
 * subscribed to, the newest message of their subscription periods that they hold
 * (`newestReceived`). Never another user's or organization's.
 */
export function maxReceivedMessageId(view: StateView, org: number, userId: number): number {
  const dms = view.org(org)?.directIdsByUser.get(userId);
  let best = dms && dms.length > 0 ? dms[dms.length - 1] : -1;
  for (const streamId of view.channelIdsOf(org)) best = newestReceived(view.channel(org, streamId)!, userId, best);
  return best;
}

export const messages = area({
  name: 'messages',
  commands: [sendMessage],
  facts: [messageSent],
  register: [
    {
      types: ['message'],
      fill(state, r, view) {
        state.max_message_id = maxReceivedMessageId(view, r.org.id, r.user.user_id);
      },
    },
  ],
});
