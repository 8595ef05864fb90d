/**
 * Sending messages, to a channel topic or directly to users (Zulip's
 * `zerver/actions/message_send.py`), the `message` event, and the `message` section
 * of `/register`.
 *
 * A channel message is decided by its channel's actor, so that sends to different
 * channels never queue behind each other; a direct message by the organization
 * actor, which stores direct messages and each participant's list of them.
 */
import { area, command, fact, type UserDelivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../errors.js';
import { hasContentAccess, type ChannelContext } from '../kinds/channel.js';
import { addDirectMessage, userByEmail, type OrgContext } from '../kinds/organization.js';
import { renderMarkdown, type MarkdownEnv, type Rendered } from '../markdown/index.js';
import { checkContent, checkTopic, CONTENT_EDIT_LIMIT_SECONDS, EMPTY_TOPIC_DISPLAY_NAME } from '../message_rules.js';
import { eventJson } from '../render/events.js';
import type { OutgoingEvent } from '../event_queues/queue_actor.js';
import { messageView, type MessageViewOptions } from '../render/views.js';
import { Role, type MessageRecord, type UserRecord } from '../types.js';
import { canReadChannelMessage } from '../message_query.js';
import { received } from '../kinds/channel.js';
import { flagsOf } from '../kinds/user.js';

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
}
/** Send a direct message to one or more users. */
export interface SendDirect {
  type: 'SEND_DIRECT';
  sender_id: number;
  to: number[];
  content: string;
  client: string;
  read_by_sender: boolean;
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
    group: () => undefined,
    channel(name) {
      const id = org.channelsByName.get(name.toLowerCase());
      return id === undefined ? undefined : { stream_id: id, name: channelName?.(id) ?? name };
    },
  };
}

/** Where a new message goes: a channel topic, or its direct-message participants. */
type Destination = Pick<MessageRecord, 'stream_id' | 'topic' | 'dm_user_ids' | 'recipient_id'>;

/** The decision of a send: the new message, with its id and time chosen now, as one `MessageSent`. */
function sent(
  env: DecideEnv,
  org: number,
  command: { client: string; read_by_sender: boolean },
  senderId: number,
  content: string,
  rendered: Rendered,
  mentioned: number[],
  to: Destination,
): Decision<{ id: number }, MessageSent> {
  const message: MessageRecord = { id: env.nextMessageId(), sender_id: senderId, content, rendered: rendered.html, timestamp: env.now(), client: command.client, ...to };
  return {
    facts: [{ type: 'MessageSent', org, message, mentioned, wildcard: rendered.wildcard, read_by_sender: command.read_by_sender }],
    value: { id: message.id },
  };
}

export const sendChannelMessage = command({
  type: 'SEND_CHANNEL_MESSAGE',
  actor: 'channel',
  decide(ctx: ChannelContext, command: SendToChannel, env: DecideEnv, world: StateView): Decision<{ id: number }, MessageSent> {
    const org = world.org(command.org)!;
    const sender = org.users.get(command.sender_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    const channel = ctx.channel;
    if (channel.is_archived) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    if (!hasContentAccess(ctx, sender)) {
      throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    }
    const topic = checkTopic(command.topic);
    const content = checkContent(command.content);
    const rendered = renderMarkdown(content, mentionResolver(org));
    const to = { stream_id: channel.stream_id, topic, dm_user_ids: null, recipient_id: channel.recipient_id };
    return sent(env, command.org, command, sender.user_id, content, rendered, rendered.mentioned, to);
  }
});

export const sendDirect = command({
  type: 'SEND_DIRECT',
  actor: 'org',
  decide(ctx: OrgContext, command: SendDirect, env: DecideEnv): Decision<{ id: number }, MessageSent> {
    const sender = ctx.users.get(command.sender_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    if (command.to.length === 0) throw badRequest('Message must have recipients');
    const participants = new Set<number>([sender.user_id]);
    for (const id of command.to) {
      const user = ctx.users.get(id);
      if (!user) throw badRequest(`Invalid user ID ${id}`);
      if (!user.is_active) throw badRequest(`'${user.email}' is no longer using Zulip.`);
      participants.add(id);
    }
    const dmUserIds = [...participants].sort((a, b) => a - b);
    const content = checkContent(command.content);
    const rendered = renderMarkdown(content, mentionResolver(ctx));
    let recipientId: number;
    if (dmUserIds.length === 1) recipientId = sender.recipient_id;
    else if (dmUserIds.length === 2) recipientId = ctx.users.get(dmUserIds[0] === sender.user_id ? dmUserIds[1] : dmUserIds[0])!.recipient_id;
    else recipientId = ctx.groupRecipients.get(dmUserIds.join(',')) ?? ctx.nextRecipientId;
    const to = { stream_id: null, topic: '', dm_user_ids: dmUserIds, recipient_id: recipientId };
    return sent(env, ctx.org.id, command, sender.user_id, content, rendered, rendered.mentioned.filter((id) => participants.has(id)), to);
  },
});

const messageSent = fact<MessageSent>({
  type: 'MessageSent',
  apply: {
    server(ctx, f) {
      if (f.message.id > ctx.maxMessageId) ctx.maxMessageId = f.message.id;
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
      ctx.ids.push(m.id);
      ctx.messages.set(m.id, m);
      const key = m.topic.toLowerCase();
      const entry = ctx.topics.get(key);
      if (entry) entry.max_id = m.id;
      else ctx.topics.set(key, { name: m.topic, max_id: m.id });
    },
    user(ctx, f) {
      const id = f.message.id;
      if (!(f.read_by_sender && f.message.sender_id === ctx.user_id)) ctx.unread.add(id);
      if (f.mentioned.includes(ctx.user_id)) ctx.flags.mentioned.add(id);
      if (f.wildcard === 'stream') ctx.flags.stream_wildcard_mentioned.add(id);
      if (f.wildcard === 'topic') ctx.flags.topic_wildcard_mentioned.add(id);
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
  },
  notify: (f, seq, view) => [notifyMessage(view, f, seq)],
});

function notifyMessage(world: StateView, fact: MessageSent, seq: number): UserDelivery {
  const m = fact.message;
  const org = world.org(fact.org)!;
  const channel = m.stream_id === null ? undefined : world.channel(fact.org, m.stream_id);
  const channelName = channel?.channel.name ?? '';
  // The shared part is serialized once per variant, however many recipients there are.
  const shared: string[] = [];
  const sharedFor = (emptyTopicName: boolean): string => {
    const key = emptyTopicName || m.topic !== '' ? 0 : 1;
    return (shared[key] ??= '"type":"message","message":' + JSON.stringify(messageView(org, m, channelName, { allowEmptyTopicName: emptyTopicName })) + ',"flags":');
  };
  const recipients = channel ? [...channel.subscribers] : (m.dm_user_ids ?? []);
  // A new message's flags follow from the fact alone (the same rule the user actor applies),
  // so recipients share a handful of prebuilt events instead of one each.
  const mentioned = new Set(fact.mentioned);
  const wildcardFlags = fact.wildcard === 'stream' ? ['stream_wildcard_mentioned', 'wildcard_mentioned'] : fact.wildcard === 'topic' ? ['topic_wildcard_mentioned', 'wildcard_mentioned'] : [];
  const built: OutgoingEvent[] = [];
  return {
    org: fact.org,
    seq,
    type: 'message',
    user_ids: recipients,
    message: m,
    event: (userId, emptyTopicName) => {
      const read = fact.read_by_sender && userId === m.sender_id;
      const isMentioned = mentioned.has(userId);
      const key = (emptyTopicName ? 4 : 0) + (read ? 2 : 0) + (isMentioned ? 1 : 0);
      let event = built[key];
      if (!event) {
        const flags = [...(read ? ['read'] : []), ...(isMentioned ? ['mentioned'] : []), ...wildcardFlags];
        event = built[key] = { type: 'message', json: sharedFor(emptyTopicName) + JSON.stringify(flags) };
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
 * viewer never received is `historical` (and read), as in Zulip.
 */
export function messageForViewer(rt: StateView, org: number, viewerId: number, m: MessageRecord, opts: MessageViewOptions): Record<string, unknown> {
  const orgCtx = rt.org(org)!;
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
 * Whether `editor` may edit a message's content now (Zulip's
 * `validate_user_can_edit_message`): only its sender, within the edit time limit.
 */
export function checkCanEditContent(editor: UserRecord, m: MessageRecord, nowSeconds: number): void {
  if (m.sender_id !== editor.user_id) throw badRequest("You don't have permission to edit this message");
  if (nowSeconds - m.timestamp > CONTENT_EDIT_LIMIT_SECONDS) throw badRequest('The time limit for editing this message has passed');
}

/** Renders Markdown as a message would be (`POST /messages/render`), resolving mentions in the organization. */
export function renderPreview(rt: StateView, org: number, content: string): string {
  return renderMarkdown(content, mentionResolver(rt.org(org)!)).html;
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
 * Who may delete a message (Zulip's `validate_can_delete_message`): administrators
 * any message (`realm_can_delete_any_message_group`), everyone else their own
 * (`realm_can_delete_own_message_group`, with no time limit by default).
 */
function checkCanDelete(actor: UserRecord | undefined, m: MessageRecord): void {
  if (!actor || !actor.is_active) throw badRequest('Invalid sender');
  if (actor.role <= Role.ADMIN || m.sender_id === actor.user_id) return;
  throw badRequest("You don't have permission to delete this message");
}

export const deleteChannelMessage = command({
  type: 'DELETE_CHANNEL_MESSAGE',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteChannelMessage, _env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageDeleted> {
    const m = ctx.messages.get(c.message_id);
    if (!m) throw badRequest('Invalid message(s)');
    checkCanDelete(view.org(c.org)?.users.get(c.actor_id), m);
    const holders = [...ctx.history.keys()].filter((id) => received(ctx, id, m.id)).sort((a, b) => a - b);
    const told = new Set(holders);
    if (ctx.channel.history_public_to_subscribers) for (const id of ctx.subscribers) told.add(id);
    const notify = [...told].sort((a, b) => a - b);
    return { facts: [{ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: ctx.channel.stream_id, topic: m.topic, holders, notify }], value: {} };
  },
});

export const deleteDirectMessage = command({
  type: 'DELETE_DIRECT_MESSAGE',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteDirectMessage): Decision<Record<string, never>, MessageDeleted> {
    const m = ctx.directMessages.get(c.message_id);
    if (!m) throw badRequest('Invalid message(s)');
    checkCanDelete(ctx.users.get(c.actor_id), m);
    const holders = [...(m.dm_user_ids ?? [])];
    return { facts: [{ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }], value: {} };
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
      const m = ctx.messages.get(f.message_id);
      if (!m) return;
      ctx.messages.delete(f.message_id);
      // Replaced, not changed: a paused scan and a snapshot being written keep the list they hold.
      ctx.ids = ctx.ids.filter((id) => id !== m.id);
      const key = m.topic.toLowerCase();
      const entry = ctx.topics.get(key);
      if (!entry || entry.max_id !== m.id) return;
      for (let i = ctx.ids.length - 1; i >= 0; i--) {
        const other = ctx.messages.get(ctx.ids[i]);
        if (other && other.topic.toLowerCase() === key) {
          entry.max_id = other.id;
          entry.name = other.topic;
          return;
        }
      }
      ctx.topics.delete(key);
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
    const users = view.org(f.org)?.users;
    const audience = f.notify.filter((id) => users?.get(id)?.is_active);
    const built: OutgoingEvent[] = [];
    return [{
      org: f.org,
      seq,
      type: 'delete_message',
      user_ids: audience,
      event: (_userId, emptyTopicName, bulk = false) => {
        const variant = (emptyTopicName ? 1 : 0) + (bulk ? 2 : 0);
        const ids = bulk ? { message_ids: [f.message_id] } : { message_id: f.message_id };
        const where = f.stream_id === null
          ? { message_type: 'private' }
          : { message_type: 'stream', stream_id: f.stream_id, topic: f.topic === '' && !emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : f.topic };
        return (built[variant] ??= eventJson('delete_message', { ...ids, ...where }));
      },
    }];
  },
});

export const messages = area({
  name: 'messages',
  commands: [sendChannelMessage, sendDirect, deleteChannelMessage, deleteDirectMessage],
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
