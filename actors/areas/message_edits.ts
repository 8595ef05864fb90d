/**
 * Editing and moving messages (Zulip's `zerver/actions/message_edit.py`): a new
 * content, a new topic (resolving and unresolving included) or a new channel, for one
 * message or a topic's worth (`propagate_mode`), with the `update_message` events,
 * the notification bot's breadcrumbs, the topic visibility policies that follow a
 * moved topic, and the edit history (`GET /messages/{id}/history`).
 *
 * A channel message's edit is decided by the actor of the channel it is in; moving
 * to another channel is one fact that both channels apply. A direct message's edit
 * is decided by the organization actor.
 */
import { detachedUploads, linkChanges, type AttachmentLinksChanged, type AttachmentView } from './attachments.js';
import { createHash } from 'node:crypto';
import { area, fact, messageCommand, type Delivery, type UserDelivery } from '../core/area.js';
import type { AnyFact, Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import {
  canMoveOutOfChannel, canMoveWithinChannel, canResolveTopics, checkCanEditContent, checkWholeTopicMovable, moveDeadline, pastMoveLimit,
  RESOLVED_TOPIC_PREFIX, resolves, unresolves,
} from '../rules/message_edits.js';
import { ApiError, badRequest } from '../shared/errors.js';
import type { OutgoingEvent } from '../core/area.js';
import { hasGroupPermission } from '../rules/group_settings.js';
import { channelGroupSetting, dropMessages, hasContentAccess, putMessages, received, type ChannelContext } from '../kinds/channel.js';
import { replaceDirectMessage, type OrgContext } from '../kinds/organization.js';
import { flagsOf, userTopicKey } from '../kinds/user.js';
import { renderMarkdown } from '../engines/markdown/index.js';
import { canReadChannelMessage } from '../engines/message_query.js';
import { checkContent, checkTopic, checkTopicsPolicy, EMPTY_TOPIC_DISPLAY_NAME, messageActor, topicNamed } from '../rules/messages.js';
import { allowEditHistory, realmMessageSettings, RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS } from '../rules/realm_settings.js';
import { eventJson } from '../render/events.js';
import { htmlDiff } from '../render/html_diff.js';
import { topicLinks } from '../render/views.js';
import { Role, type EditHistoryEntry, type MessageMeta, type MessageRecord, type UserRecord } from '../shared/types.js';
import { wholeMessage } from '../core/bodies.js';
import { checkGroupMentions, notificationBotMessage, senderResolver } from './messages.js';
import { deletionDelivery, type MessageDeleted } from './message_deletion.js';
import { revisitMovedInto } from './deletion_jobs.js';
import { VisibilityPolicy, type UserTopicChanged } from './user_topics.js';
import { alertedUsers } from './alert_words.js';

export type PropagateMode = 'change_one' | 'change_later' | 'change_all';

/** An edit request, as `PATCH /messages/{message_id}` takes it. */
export interface EditRequest {
  org: number;
  editor_id: number;
  message_id: number;
  content?: string;
  topic?: string;
  stream_id?: number;
  propagate_mode: PropagateMode;
  send_notification_to_old_thread: boolean;
  send_notification_to_new_thread: boolean;
  prev_content_sha256?: string;
}
/**
 * Edit or move a message: decided by the channel it is in (`stream_id` is where it moves
 * to), or by the organization for a direct message.
 */
export interface EditMessage extends EditRequest { type: 'EDIT_MESSAGE' }

export interface EditResult {
  /** Uploads of the editor no message refers to any more (Zulip's `detached_uploads`). */
  detached_uploads: AttachmentView[];
}

/** A content change of the target message. */
export interface ContentChange {
  orig_content: string;
  orig_rendered_content: string;
  /** Mentions in the new content. */
  mentioned: number[];
  wildcard: 'stream' | 'topic' | null;
  /** Holders one of whose alert words the new content has. */
  alerted?: number[];
}

/**
 * Messages were edited or moved. `messages` are the records as they are after the
 * change (the target's new content, every moved message's new place and history), so
 * that each actor that keeps one replaces it.
 */
export interface MessagesEdited {
  type: 'MessagesEdited';
  org: number;
  editor_id: number;
  edit_timestamp: number;
  message_id: number;
  messages: MessageRecord[];
  /** Where the messages were: the channel (null for a direct message) and topic. */
  stream_id: number | null;
  orig_topic: string;
  /** Set when the messages moved. */
  move: { stream_id: number; topic: string; propagate_mode: PropagateMode; topic_changed: boolean } | null;
  content: ContentChange | null;
  /** Users who hold the target message (their mention flags follow a content change). */
  holders: number[];
  /** Users whose flags for the moved messages go: they are not subscribed where the messages went. */
  losing: number[];
  /** Users who can no longer read the moved messages: told as a deletion. */
  losing_access: number[];
  /** Users told of the edit. */
  notify: number[];
}

const ascending = (a: number, b: number): number => a - b;

function editorOf(org: OrgContext, id: number): UserRecord {
  const editor = org.users.get(id);
  if (!editor || !editor.is_active) throw badRequest('Invalid user');
  return editor;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Checks shared by both kinds of message (`validate_message_edit_payload`). */
function checkPayload(c: EditRequest, m: MessageRecord, topic: string | undefined): void {
  if (topic === undefined && c.content === undefined && c.stream_id === undefined) throw badRequest('Nothing to change');
  if (m.stream_id === null) {
    if (c.stream_id !== undefined) throw badRequest('Direct messages cannot be moved to channels.');
    if (c.topic !== undefined) throw badRequest('Direct messages cannot have topics.');
  }
  if (c.propagate_mode !== 'change_one' && topic === undefined && c.stream_id === undefined) throw badRequest('Invalid propagate_mode without topic edit');
  if (topic !== undefined && (topic === RESOLVED_TOPIC_PREFIX.trim() || topic === RESOLVED_TOPIC_PREFIX + EMPTY_TOPIC_DISPLAY_NAME)) {
    throw badRequest('General chat cannot be marked as resolved');
  }
  if (c.stream_id !== undefined && c.content !== undefined) throw badRequest('Cannot change message content while changing channel');
  // Zulip's `is_widget_message`: a message with any submessage keeps its content.
  if (c.content !== undefined && (m.submessages?.length ?? 0) > 0) throw badRequest('Widgets cannot be edited.');
  if (c.prev_content_sha256 !== undefined && c.prev_content_sha256 !== sha256(m.content)) {
    throw new ApiError('EXPECTATION_MISMATCH', "'prev_content_sha256' value does not match the expected value.");
  }
}

/** The new content, normalized as on send; blank content becomes `(deleted)`, as in Zulip. */
function newContent(content: string): string {
  return checkContent(content.trim() === '' ? '(deleted)' : content);
}

/** The topic asked for, or undefined when it is the message's own; with its name before truncation. */
function askedTopic(c: EditRequest, m: MessageRecord): { topic: string; untruncated: string } | undefined {
  if (c.topic === undefined) return undefined;
  const topic = checkTopic(c.topic);
  if (topic === m.topic) return undefined;
  return { topic, untruncated: topicNamed(c.topic) };
}

function decideDirectEdit(ctx: OrgContext, c: EditMessage, env: DecideEnv, view: StateView): Decision<EditResult, MessagesEdited | AttachmentLinksChanged> {
  const stored = ctx.directMessages.get(c.message_id);
  const m = stored && wholeMessage(ctx.bodies, stored);
  const editor = editorOf(ctx, c.editor_id);
  if (!m || !m.dm_user_ids!.includes(editor.user_id)) throw badRequest('Invalid message(s)');
  const settings = realmMessageSettings(ctx);
  if (c.content !== undefined) checkCanEditContent(editor, m, env.now(), settings);
  checkPayload(c, m, c.topic);
  const now = env.now();
  const content = newContent(c.content!);
  const rendered = renderMarkdown(content, senderResolver(ctx, m.sender_id));
  checkGroupMentions(ctx, editor, rendered);
  const participants = new Set(m.dm_user_ids);
  const entry: EditHistoryEntry = { user_id: editor.user_id, timestamp: now, prev_content: m.content, prev_rendered_content: m.rendered };
  const edited: MessageRecord = { ...m, content, rendered: rendered.html, last_edit_timestamp: now, edit_history: [entry, ...(m.edit_history ?? [])] };
  const holders = [...m.dm_user_ids!];
  const links = linkChanges(view, ctx, editor, m.id, m.timestamp, m.content, content);
  return {
    facts: [{
      type: 'MessagesEdited', org: c.org, editor_id: editor.user_id, edit_timestamp: now, message_id: m.id, messages: [edited],
      stream_id: null, orig_topic: '', move: null,
      content: {
        orig_content: m.content, orig_rendered_content: m.rendered, mentioned: rendered.mentioned.filter((id) => participants.has(id)), wildcard: rendered.wildcard,
        alerted: alertedUsers(ctx, content, (id) => participants.has(id)),
      },
      holders, losing: [], losing_access: [], notify: holders,
    }, ...(links ? [links] : [])],
    value: { detached_uploads: detachedUploads(ctx, editor.user_id, links) },
  };
}

/** The messages of a topic the editor can read, ascending. */
function topicMessages(ch: ChannelContext, editor: UserRecord, topic: string): MessageRecord[] {
  const key = topic.toLowerCase();
  const out: MessageRecord[] = [];
  const ids = ch.messages.ids;
  const inTopic = ch.messages.inTopic(key);
  for (let i = 0; i < ids.length; i++) {
    if (inTopic(i) && canReadChannelMessage(ch, editor, ids[i])) out.push(wholeMessage(ch.bodies, ch.messages.at(i)));
  }
  return out;
}

/** Who holds a channel message: its explicit holders, or who was subscribed when it was sent. */
function holdersOf(ch: ChannelContext, m: MessageMeta): number[] {
  if (m.received_by) return m.received_by;
  const out: number[] = [];
  for (const id of ch.history.keys()) if (received(ch, id, m.id)) out.push(id);
  return out.sort(ascending);
}

function decideChannelEdit(ch: ChannelContext, c: EditMessage, env: DecideEnv, view: StateView): Decision<EditResult, AnyFact> {
  const org = view.org(c.org)!;
  const editor = editorOf(org, c.editor_id);
  const stored = ch.messages.get(c.message_id);
  if (!stored || !canReadChannelMessage(ch, editor, stored.id)) throw badRequest('Invalid message(s)');
  const m = wholeMessage(ch.bodies, stored);
  const settings = realmMessageSettings(org);
  const now = env.now();
  if (c.content !== undefined) checkCanEditContent(editor, m, now, settings);
  const asked = askedTopic(c, m);
  checkPayload(c, m, asked?.topic);
  const target = c.stream_id === undefined || c.stream_id === ch.channel.stream_id ? ch : view.channel(c.org, c.stream_id);
  if (!target || target.channel.is_archived || !hasContentAccess(target, editor)) throw badRequest('Invalid channel ID');
  const channelChanged = target !== ch;
  const topicChanged = asked !== undefined;
  const newTopic = asked?.topic ?? m.topic;
  const resolved = topicChanged && resolves(m.topic, newTopic, asked!.untruncated);
  const unresolved = topicChanged && unresolves(m.topic, newTopic);
  const moved = topicChanged || channelChanged;
  if (c.content === undefined && !moved) throw badRequest('Nothing to change');
  if (moved || target.channel.topics_policy === 'empty_topic_only') checkTopicsPolicy(target.channel.topics_policy, newTopic);

  if (topicChanged) {
    if (resolved || unresolved) {
      if (!canResolveTopics(org, editor, ch.channel, settings)) throw badRequest("You don't have permission to resolve topics in this channel.");
    } else {
      if (!canMoveWithinChannel(org, editor, ch.channel, settings)) throw badRequest("You don't have permission to edit this message");
      if (pastMoveLimit(editor, m, now, settings.move_messages_within_stream_limit_seconds)) throw badRequest("The time limit for editing this message's topic has passed.");
    }
  }
  let rendered: ReturnType<typeof renderMarkdown> | null = null;
  let content = m.content;
  if (c.content !== undefined) {
    content = newContent(c.content);
    rendered = renderMarkdown(content, senderResolver(org, m.sender_id));
    checkGroupMentions(org, editor, rendered);
  }
  if (channelChanged) {
    if (!canMoveOutOfChannel(org, editor, ch.channel, settings)) throw badRequest("You don't have permission to move this message");
    if (!hasGroupPermission(org, editor, channelGroupSetting(target.channel, 'can_send_message_group'))) throw badRequest('You do not have permission to post in this channel.');
    if (pastMoveLimit(editor, m, now, settings.move_messages_between_streams_limit_seconds)) throw badRequest("The time limit for editing this message's channel has passed");
  }
  if (c.propagate_mode === 'change_all' && editor.role > Role.MODERATOR && moved && !resolved && !unresolved) {
    checkWholeTopicMovable(topicMessages(ch, editor, m.topic), now, moveDeadline(settings, topicChanged, channelChanged));
  }
  if (moved && !target.topics.has(newTopic.toLowerCase()) && !hasGroupPermission(org, editor, channelGroupSetting(target.channel, 'can_create_topic_group'))) {
    throw badRequest('You do not have permission to create new topics in this channel.');
  }

  // Which messages change: the target, and for a move the rest of the topic asked for.
  let changed: MessageRecord[] = [m];
  if (moved && c.propagate_mode !== 'change_one') {
    changed = topicMessages(ch, editor, m.topic).filter((other) => c.propagate_mode === 'change_all' || other.id >= m.id);
    if (!changed.some((x) => x.id === m.id)) changed.push(m);
    changed.sort((a, b) => a.id - b.id);
  }

  // Who gains and loses the messages when they change channel (Zulip moves UserMessage rows).
  let losing: number[] = [];
  let losingAccess: number[] = [];
  const newHolders = new Map<number, number[]>();
  if (channelChanged) {
    const targetSubs = target.subscribers;
    losing = [...ch.history.keys()].filter((id) => !targetSubs.has(id)).sort(ascending);
    const guest = (id: number): boolean => org.users.get(id)?.role === Role.GUEST;
    losingAccess = target.channel.invite_only ? losing : losing.filter(guest);
    const protectedHistory = !target.channel.history_public_to_subscribers;
    for (const x of changed) {
      const before = holdersOf(ch, x);
      newHolders.set(x.id, protectedHistory ? [...targetSubs].sort(ascending) : before.filter((id) => targetSubs.has(id)));
    }
  }

  const topicEntry = (x: MessageRecord): EditHistoryEntry => {
    const entry: EditHistoryEntry = { user_id: editor.user_id, timestamp: now };
    if (x.id === m.id && rendered) Object.assign(entry, { prev_content: m.content, prev_rendered_content: m.rendered });
    if (topicChanged) Object.assign(entry, { prev_topic: x.topic, topic: newTopic });
    if (channelChanged) Object.assign(entry, { prev_stream: ch.channel.stream_id, stream: target.channel.stream_id });
    return entry;
  };
  const records = changed.map((x): MessageRecord => {
    const next: MessageRecord = { ...x, edit_history: [topicEntry(x), ...(x.edit_history ?? [])] };
    if (x.id === m.id && rendered) Object.assign(next, { content, rendered: rendered.html, last_edit_timestamp: now });
    if (moved) {
      next.topic = newTopic;
      if (!(resolved || unresolved) || channelChanged) next.last_moved_timestamp = now;
    }
    if (channelChanged) {
      next.stream_id = target.channel.stream_id;
      next.recipient_id = target.channel.recipient_id;
      next.received_by = newHolders.get(x.id)!;
    }
    return next;
  });

  const holders = holdersOf(ch, m);
  const holderSet = new Set(holders);
  const losingSet = new Set(losing);
  const notify = new Set<number>(channelChanged ? holders.filter((id) => !losingSet.has(id)) : holders);
  if (ch.channel.history_public_to_subscribers) {
    const lost = new Set(losingAccess);
    for (const id of target.subscribers) {
      // A guest who only now can see the channel would not know the moved messages.
      if (channelChanged && org.users.get(id)?.role === Role.GUEST && !ch.subscribers.has(id)) continue;
      if (!lost.has(id)) notify.add(id);
    }
    if (channelChanged) for (const id of ch.subscribers) if (!lost.has(id)) notify.add(id);
  }

  const edited: MessagesEdited = {
    type: 'MessagesEdited', org: c.org, editor_id: editor.user_id, edit_timestamp: now, message_id: m.id, messages: records,
    stream_id: ch.channel.stream_id, orig_topic: m.topic,
    move: moved ? { stream_id: target.channel.stream_id, topic: newTopic, propagate_mode: c.propagate_mode, topic_changed: topicChanged } : null,
    content: rendered
      ? { orig_content: m.content, orig_rendered_content: m.rendered, mentioned: rendered.mentioned, wildcard: rendered.wildcard, alerted: alertedUsers(org, content, (id) => holderSet.has(id)) }
      : null,
    holders, losing, losing_access: losingAccess, notify: [...notify].sort(ascending),
  };
  const facts: AnyFact[] = inBudget(edited);
  const links = rendered ? linkChanges(view, org, editor, m.id, m.timestamp, m.content, content) : undefined;
  if (links) facts.push(links);
  if (moved) facts.push(...afterMove(env, view, org, ch, target, editor, c, m, changed, records, { resolved, unresolved, topicChanged, channelChanged }));
  return { facts, value: { detached_uploads: detachedUploads(org, editor.user_id, links) } };
}

export const editMessage = messageCommand({
  type: 'EDIT_MESSAGE',
  address: messageActor,
  decide: {
    channel: (ch: ChannelContext, c: EditMessage, env: DecideEnv, view: StateView): Decision<EditResult, AnyFact> => decideChannelEdit(ch, c, env, view),
    org: (ctx: OrgContext, c: EditMessage, env: DecideEnv, view: StateView): Decision<EditResult, AnyFact> => decideDirectEdit(ctx, c, env, view),
  },
  // A move reads every message of the topic it leaves (they move whole, and the checks read them).
  bodies(view, c) {
    if (c.topic === undefined && c.stream_id === undefined) return [];
    const streamId = view.org(c.org)?.messageChannel.get(c.message_id);
    const ch = streamId === undefined ? undefined : view.channel(c.org, streamId);
    const m = ch?.messages.get(c.message_id);
    return ch && m ? ch.messages.bodiesInTopic(m.topic.toLowerCase()) : [];
  },
});

/** What a log record of a moved topic may hold, well below the log's record limit. */
export const EDIT_FACT_BUDGET_BYTES = 16 * 1024 * 1024;

function recordBytes(m: MessageRecord): number {
  return 400 + 3 * (m.content.length + m.rendered.length + m.topic.length) + 8 * (m.received_by?.length ?? 0) + 200 * (m.edit_history?.length ?? 0);
}

/**
 * A move of a large topic as several facts, each within the budget. Every part holds
 * the target message (so that each event names it among its `message_ids`, as Zulip's
 * does); replacing it again is harmless.
 */
function inBudget(edited: MessagesEdited): MessagesEdited[] {
  const target = edited.messages.find((m) => m.id === edited.message_id)!;
  const parts: MessagesEdited[] = [];
  let batch: MessageRecord[] = [];
  let bytes = recordBytes(target);
  for (const m of edited.messages) {
    if (m === target) continue;
    const size = recordBytes(m);
    if (batch.length > 0 && bytes + size > EDIT_FACT_BUDGET_BYTES) {
      parts.push({ ...edited, messages: [...batch, target].sort((a, b) => a.id - b.id), content: parts.length === 0 ? edited.content : null });
      batch = [];
      bytes = recordBytes(target);
    }
    batch.push(m);
    bytes += size;
  }
  parts.push({ ...edited, messages: [...batch, target].sort((a, b) => a.id - b.id), content: parts.length === 0 ? edited.content : null });
  return parts;
}

interface MoveKind {
  resolved: boolean;
  unresolved: boolean;
  topicChanged: boolean;
  channelChanged: boolean;
}

/** `#**channel>topic**`: how the notification bot links a topic. */
function topicLink(channelName: string, topic: string): string {
  if (/[`>*&]|\$\$/.test(channelName) || /[`*&]|\$\$/.test(topic)) {
    return `[#${channelName} > ${topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : topic}](#narrow/channel/${encodeURIComponent(channelName)}/topic/${encodeURIComponent(topic)})`;
  }
  return `#**${channelName}>${topic}**`;
}

/**
 * What follows a move, in Zulip's order: topic policies moved with a whole topic,
 * the resolve notice (or the removal of a fresh one, to undo), and the breadcrumbs.
 */
function afterMove(
  env: DecideEnv, view: StateView, org: OrgContext, ch: ChannelContext, target: ChannelContext, editor: UserRecord, c: EditRequest,
  m: MessageRecord, changed: MessageRecord[], records: MessageRecord[], kind: MoveKind,
): AnyFact[] {
  const facts: AnyFact[] = [];
  const newTopic = records[0].topic;
  const movedIds = new Set(changed.map((x) => x.id));
  const left = topicMessages(ch, editor, m.topic).filter((x) => !movedIds.has(x.id));
  const movedAll = c.propagate_mode === 'change_all' || left.length === 0;
  const mention = `@_**${editor.full_name}|${editor.user_id}**`;

  // Topic visibility policies go with a whole topic; where both topics had one, the more visible wins.
  const following: number[] = [];
  if (movedAll) facts.push(...movePolicies(env, view, org, ch, target, m.topic, newTopic, following));

  let resolveNoticeId: number | null = null;
  if (kind.topicChanged && !kind.channelChanged && c.content === undefined && (kind.resolved || kind.unresolved)) {
    const last = records[records.length - 1];
    const newest = target.topics.get(newTopic.toLowerCase());
    const isLast = !newest || newest.max_id < last.id;
    if (last.kind === 'resolve_topic_notification' && isLast && env.now() - last.timestamp <= RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS) {
      // Undoing a fresh resolve: the notice goes rather than another one coming.
      const holders = last.received_by ?? holdersOf(ch, changed[changed.length - 1]);
      const told = new Set(holders);
      if (target.channel.history_public_to_subscribers) for (const id of target.subscribers) told.add(id);
      const deleted: MessageDeleted = {
        type: 'MessageDeleted', org: org.org.id, message_id: last.id, stream_id: target.channel.stream_id, topic: newTopic, holders, notify: [...told].sort(ascending),
      };
      facts.push(deleted);
    } else {
      const notice = kind.resolved ? `${mention} has marked this topic as resolved.` : `${mention} has marked this topic as unresolved.`;
      const sent = notificationBotMessage(env, org, target.channel, newTopic, notice, { read_by: [editor.user_id], unread_only: following, kind: 'resolve_topic_notification' });
      resolveNoticeId = sent.message.id;
      facts.push(sent);
    }
  }

  const count = changed.length;
  const oldLink = topicLink(ch.channel.name, m.topic);
  const newLink = topicLink(target.channel.name, newTopic);
  if (c.send_notification_to_new_thread && (kind.channelChanged || (kind.topicChanged && !kind.resolved && !kind.unresolved))) {
    const preexisting = topicMessages(target, editor, newTopic).filter((x) => !movedIds.has(x.id) && x.id !== resolveNoticeId);
    let text: string;
    if (preexisting.length === 0 && movedAll) text = `This topic was moved here from ${oldLink} by ${mention}.`;
    else if (count === 1) text = `[A message](${messageLink(target, newTopic, m.id)}) was moved here from ${oldLink} by ${mention}.`;
    else text = `${count} messages were moved here from ${oldLink} by ${mention}.`;
    facts.push(notificationBotMessage(env, org, target.channel, newTopic, text, { read_by: [editor.user_id] }));
  }
  if (c.send_notification_to_old_thread) {
    let text: string;
    if (movedAll) text = `This topic was moved to ${newLink} by ${mention}.`;
    else if (count === 1) text = `A message was moved from this topic to ${newLink} by ${mention}.`;
    else text = `${count} messages were moved from this topic to ${newLink} by ${mention}.`;
    facts.push(notificationBotMessage(env, org, ch.channel, m.topic, text, { read_by: [editor.user_id] }));
  }
  return facts;
}

/** The link to a message in its topic, as Zulip writes it (`stream_message_url`). */
export function messageLink(ch: ChannelContext, topic: string, id: number): string {
  const slug = (s: string): string => encodeURIComponent(s.replace(/ /g, '-')).replace(/%/g, '.');
  return `#narrow/channel/${ch.channel.stream_id}-${slug(ch.channel.name)}/topic/${slug(topic)}/near/${id}`;
}

/** Zulip's `get_visibility_policy_after_merge`: the more visible policy wins. */
function mergedPolicy(a: number, b: number): number {
  const both = new Set([a, b]);
  if (both.has(VisibilityPolicy.FOLLOWED)) return VisibilityPolicy.FOLLOWED;
  if (both.has(VisibilityPolicy.UNMUTED)) return VisibilityPolicy.UNMUTED;
  if (both.has(VisibilityPolicy.INHERIT)) return VisibilityPolicy.INHERIT;
  return VisibilityPolicy.MUTED;
}

/**
 * The `UserTopicChanged` facts that carry users' policies from the old topic to the
 * new one. Collects the users who followed the old topic into `following`.
 */
function movePolicies(env: DecideEnv, view: StateView, org: OrgContext, ch: ChannelContext, target: ChannelContext, from: string, to: string, following: number[]): UserTopicChanged[] {
  const facts: UserTopicChanged[] = [];
  const targetHasMessages = target.topics.has(to.toLowerCase()) && !(target === ch && from.toLowerCase() === to.toLowerCase());
  const fromKey = userTopicKey(ch.channel.stream_id, from);
  const toKey = userTopicKey(target.channel.stream_id, to);
  const now = env.now();
  for (const user of org.users.values()) {
    if (!user.is_active) continue;
    const ctx = view.user(org.org.id, user.user_id);
    if (!ctx) continue;
    const orig = ctx.topics.get(fromKey)?.visibility_policy ?? VisibilityPolicy.INHERIT;
    const there = ctx.topics.get(toKey)?.visibility_policy ?? VisibilityPolicy.INHERIT;
    if (orig === VisibilityPolicy.INHERIT && there === VisibilityPolicy.INHERIT) continue;
    if (orig === VisibilityPolicy.FOLLOWED) following.push(user.user_id);
    const canSeeTarget = hasContentAccess(target, user);
    const change = (stream_id: number, topic_name: string, visibility_policy: number): void => {
      facts.push({ type: 'UserTopicChanged', org: org.org.id, user_id: user.user_id, topic: { stream_id, topic_name, last_updated: now, visibility_policy } });
    };
    if (orig !== VisibilityPolicy.INHERIT) change(ch.channel.stream_id, from, VisibilityPolicy.INHERIT);
    if (!canSeeTarget) continue;
    const next = targetHasMessages ? mergedPolicy(orig, there) : orig;
    if (next !== there) change(target.channel.stream_id, to, next);
  }
  return facts;
}

/** The fact's user lists as sets, built once per fact however many user actors apply it. */
const sets = new WeakMap<MessagesEdited, { holders: Set<number>; losing: Set<number> }>();
function userSets(f: MessagesEdited): { holders: Set<number>; losing: Set<number> } {
  let got = sets.get(f);
  if (!got) sets.set(f, (got = { holders: new Set(f.holders), losing: new Set(f.losing) }));
  return got;
}

const messagesEdited = fact<MessagesEdited>({
  type: 'MessagesEdited',
  // Every reducer replaces records and sets flags from the fact alone: replaying it over
  // a snapshot that already reflects it changes nothing.
  apply: {
    org(ctx, f) {
      if (f.stream_id === null) {
        for (const m of f.messages) replaceDirectMessage(ctx, m);
      } else if (f.move && f.move.stream_id !== f.stream_id) {
        for (const m of f.messages) ctx.messageChannel.set(m.id, f.move.stream_id);
        if (ctx.deletionJobs.size > 0) revisitMovedInto(ctx, f.move.stream_id, f.messages.map((m) => m.sender_id));
      }
    },
    channel(ctx, f) {
      const here = ctx.channel.stream_id;
      const to = f.move?.stream_id ?? f.stream_id;
      if (f.stream_id === here && to !== here) dropMessages(ctx, f.messages.map((m) => m.id));
      if (to === here) putMessages(ctx, f.messages);
    },
    user(ctx, f) {
      const { holders, losing } = userSets(f);
      if (f.content && holders.has(ctx.user_id)) {
        const one = [f.message_id];
        const set = (on: boolean, flag: 'mentioned' | 'stream_wildcard_mentioned' | 'topic_wildcard_mentioned' | 'has_alert_word'): void => {
          if (on) ctx.flags[flag].addMany(one);
          else ctx.flags[flag].deleteMany(one);
        };
        set(f.content.mentioned.includes(ctx.user_id), 'mentioned');
        set(f.content.wildcard === 'stream', 'stream_wildcard_mentioned');
        set(f.content.wildcard === 'topic', 'topic_wildcard_mentioned');
        set(f.content.alerted?.includes(ctx.user_id) ?? false, 'has_alert_word');
      }
      if (losing.has(ctx.user_id)) {
        const ids = f.messages.map((m) => m.id);
        ctx.unread.deleteMany(ids);
        for (const set of Object.values(ctx.flags)) set.deleteMany(ids);
      }
    },
  },
  route(f, to) {
    to.org(f.org);
    if (f.stream_id !== null) to.channel(f.org, f.stream_id);
    if (f.move && f.move.stream_id !== f.stream_id) to.channel(f.org, f.move.stream_id);
    const users = new Set<number>(f.losing);
    if (f.content) for (const id of f.holders) users.add(id);
    for (const id of users) to.user(f.org, id);
  },
  notify(f, seq, view) {
    const out: Delivery[] = [updateMessageDelivery(view, f, seq)];
    if (f.losing_access.length > 0 && f.stream_id !== null) {
      for (const m of f.messages) out.push(deletionDelivery(view, f.org, seq, f.losing_access, m.id, f.stream_id, f.orig_topic));
    }
    return out;
  },
});

/** The `update_message` event, with each user's flags for the target message. */
function updateMessageDelivery(view: StateView, f: MessagesEdited, seq: number): UserDelivery {
  const org = view.org(f.org)!;
  const users = org.users;
  const target = f.messages.find((m) => m.id === f.message_id)!;
  const body = (emptyTopicName: boolean): Record<string, unknown> => {
    const shown = (topic: string): string => (topic === '' && !emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic);
    const event: Record<string, unknown> = { user_id: f.editor_id, edit_timestamp: f.edit_timestamp, message_id: f.message_id, rendering_only: false };
    if (f.stream_id !== null) {
      event.stream_name = view.channel(f.org, f.stream_id)?.channel.name ?? '';
      event.stream_id = f.stream_id;
    }
    if (f.move) {
      event.propagate_mode = f.move.propagate_mode;
      event.orig_subject = shown(f.orig_topic);
      if (f.move.topic_changed) {
        event.subject = shown(f.move.topic);
        event.topic_links = topicLinks(org, f.move.topic);
      }
      if (f.move.stream_id !== f.stream_id) event.new_stream_id = f.move.stream_id;
    }
    if (f.content) {
      Object.assign(event, {
        orig_content: f.content.orig_content,
        orig_rendered_content: f.content.orig_rendered_content,
        content: target.content,
        rendered_content: target.rendered,
        is_me_message: target.content.startsWith('/me '),
      });
    }
    event.message_ids = f.messages.map((m) => m.id).sort(ascending);
    return event;
  };
  const holders = new Set(f.holders);
  const bodies: string[] = [];
  const built = new Map<string, OutgoingEvent>();
  return {
    org: f.org,
    seq,
    type: 'update_message',
    user_ids: f.notify.filter((id) => users.get(id)?.is_active),
    event: (userId, { empty_topic_name: emptyTopicName }) => {
      const me = holders.has(userId) ? view.user(f.org, userId) : undefined;
      const flags = me ? flagsOf(me, f.message_id) : ['read'];
      const key = (emptyTopicName ? '1' : '0') + flags.join(',');
      let event = built.get(key);
      if (!event) {
        const json = (bodies[emptyTopicName ? 1 : 0] ??= eventJson('update_message', body(emptyTopicName)).json);
        event = { type: 'update_message', json: json + ',"flags":' + JSON.stringify(flags) };
        built.set(key, event);
      }
      return event;
    },
  };
}

// Reads.

/**
 * A message's edit history, oldest last, as `GET /messages/{id}/history` shows it
 * (Zulip's `fill_edit_history_entries`): each entry with the topic and content as
 * they were after it, the original message last.
 */
export function messageHistory(view: StateView, org: number, m: MessageRecord, asPolicy?: 'all'): Record<string, unknown>[] {
  const policy = asPolicy ?? realmMessageSettings(view.org(org)).message_edit_history_visibility_policy;
  if (!allowEditHistory({ message_edit_history_visibility_policy: policy })) throw badRequest('Message edit history is disabled in this organization');
  if (policy === 'moves') {
    // Only the moves: no earlier content is shown.
    const moves = (m.edit_history ?? []).filter((e) => e.prev_topic !== undefined || e.prev_stream !== undefined);
    return messageHistory(view, org, { ...m, edit_history: moves.map(({ prev_content: _c, prev_rendered_content: _r, ...move }) => move) }, 'all');
  }
  let content = m.content;
  let rendered = m.rendered;
  let topic = m.topic;
  const out: Record<string, unknown>[] = [];
  for (const e of m.edit_history ?? []) {
    const entry: Record<string, unknown> = { content, rendered_content: rendered, timestamp: e.timestamp, topic, user_id: e.user_id };
    if (e.prev_topic !== undefined) {
      topic = e.prev_topic;
      entry.prev_topic = e.prev_topic;
    }
    if (e.prev_content !== undefined) {
      entry.prev_content = e.prev_content;
      entry.prev_rendered_content = e.prev_rendered_content;
      entry.content_html_diff = htmlDiff(e.prev_rendered_content ?? '', rendered);
      content = e.prev_content;
      rendered = e.prev_rendered_content ?? '';
    }
    if (e.prev_stream !== undefined) {
      entry.prev_stream = e.prev_stream;
      entry.stream = e.stream;
    }
    out.push(entry);
  }
  out.push({ content, rendered_content: rendered, timestamp: m.timestamp, topic, user_id: m.sender_id });
  return out.reverse();
}

export const messageEdits = area({
  name: 'message edits',
  commands: [editMessage],
  facts: [messagesEdited],
});
