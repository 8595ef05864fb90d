/**
 * Messages: send, fetch with narrows and anchors, fetch one.
 */
import { linkedPathIds } from '../../../actors/areas/attachments.js';
import { collectUploads } from '../../uploads/collect.js';
import { messagesByIds, messagesMatchingNarrow, queryMessages, withBodies, type MessageQuery } from '../../../actors/engines/message_query.js';
import { readReceipts } from '../../../actors/areas/flags.js';
import { checkReport, REPORTING_DISABLED } from '../../../actors/areas/message_reports.js';
import { realmSettings } from '../../../actors/rules/realm_settings.js';
import { highlighter } from '../../../actors/render/highlight.js';
import { mapInSlices } from '../../http/slices.js';
import { checkNarrow, searchWords as operandWords, type NarrowTerm } from '../../../actors/engines/narrow.js';
import type { MessageRecord } from '../../../actors/shared/types.js';
import { accessMessage, messageForViewer, renderPreview } from '../../../actors/areas/messages.js';
import { userAccessOf } from '../../../actors/rules/user_access.js';
import { channelIdByName, checkChannelId } from '../../../actors/areas/channels.js';
import { resolveUserIds } from '../../../actors/areas/users.js';
import { ApiError, badRequest } from '../../../actors/shared/errors.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import { Enum, OneOf, route, S } from '../../http/route.js';

/** Clients that show a message to its sender as they send it (lower case); their sends start out read. */
export const INTERACTIVE_CLIENTS = new Set(['website', 'zulipweb', 'zulipmobile', 'zulipandroid', 'zulipios', 'zulipelectron', 'zulipdesktop', 'zulipflutter', 'zulipterminal']);

/**
 * A channel name or id, or a list of ids or emails. The types are disjoint, so one `type`
 * list says it: a `oneOf` would try every branch of every send and allocate an error for
 * each branch that does not match.
 */
const recipientSchema = Type.Unsafe<string | number | Array<number | string>>({ type: ['string', 'integer', 'array'], items: { type: ['integer', 'string'] } });

export const sendMessage = route({
  method: 'POST',
  path: '/api/v1/messages',
  operationId: 'sendMessage',
  auth: 'user',
  summary: 'Send a channel message or a direct message',
  params: {
    type: { schema: Enum(['stream', 'channel', 'private', 'direct']), required: true },
    to: { schema: recipientSchema, required: true, json: true },
    topic: { schema: S.str, aliases: ['subject'] },
    content: { schema: S.str, required: true },
    queue_id: { schema: S.str },
    local_id: { schema: S.str },
    read_by_sender: { schema: S.bool },
    widget_content: { schema: S.str, description: 'A widget to attach, as JSON (Zulip accepts only a `zform` of choices here)' },
  },
  async handler({ params, org, user, runtime, client }) {
    const readBySender = params.read_by_sender ?? INTERACTIVE_CLIENTS.has(client.toLowerCase());
    const hints = params.queue_id !== undefined && params.local_id !== undefined ? { localEcho: { queue_id: params.queue_id, local_id: params.local_id } } : undefined;
    if (params.type === 'stream' || params.type === 'channel') {
      const to = Array.isArray(params.to) ? params.to : [params.to];
      if (to.length !== 1) throw badRequest('Expected exactly one channel');
      const target = to[0];
      // Digits are an id; too many of them for one (Number would give Infinity, which has no
      // JSON form for the error's stream_id) are looked up as the name they also are.
      const streamId = typeof target === 'number' ? checkChannelId(runtime, org.id, target) : /^\d+$/.test(target) && Number.isSafeInteger(Number(target)) ? checkChannelId(runtime, org.id, Number(target)) : channelIdByName(runtime, org.id, target);
      if (params.topic === undefined) throw new ApiError('BAD_REQUEST', 'Missing topic', { var_name: 'topic' });
      const value = await runtime.execute(
        { type: 'SEND_MESSAGE', org: org.id, sender_id: user.user_id, to: { stream_id: streamId, topic: params.topic }, content: params.content, client, read_by_sender: readBySender, widget_content: params.widget_content },
        hints,
      );
      return { json: { id: value.id } };
    }
    const items = Array.isArray(params.to) ? params.to : typeof params.to === 'number' ? [params.to] : params.to.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    const to = resolveUserIds(runtime, org.id, items);
    const value = await runtime.execute(
      { type: 'SEND_MESSAGE', org: org.id, sender_id: user.user_id, to: { user_ids: to }, content: params.content, client, read_by_sender: readBySender, widget_content: params.widget_content },
      hints,
    );
    return { json: { id: value.id } };
  },
});

/** An anchor as `GET /messages` and `POST /messages/flags/narrow` take it. */
export function parseAnchor(raw: string | number | undefined, useFirstUnread: boolean): MessageQuery['anchor'] {
  if (useFirstUnread) return 'first_unread';
  if (raw === undefined) throw new ApiError('BAD_REQUEST', "Missing 'anchor' argument.", { var_name: 'anchor' });
  // Zulip reads a negative anchor as the oldest possible one.
  if (typeof raw === 'number') return Math.max(0, raw);
  if (raw === 'newest' || raw === 'oldest' || raw === 'first_unread') return raw;
  throw new ApiError('BAD_REQUEST', 'Invalid anchor', { var_name: 'anchor' });
}

/** The distinct words of every search term of a narrow, for highlighting. */
function searchWords(narrow: NarrowTerm[]): string[] {
  return [...new Set(narrow.filter((t) => t.operator === 'search' && !t.negated).flatMap((t) => operandWords(t.operand)))];
}

/** The parameters Zulip names when `message_ids` comes with an anchored range. */
const MESSAGE_IDS_EXCLUSIVE = ['num_before', 'num_after', 'anchor', 'message_ids', 'include_anchor', 'use_first_unread_anchor'];

export const getMessages = route({
  method: 'GET',
  path: '/api/v1/messages',
  operationId: 'getMessages',
  auth: 'user',
  summary: 'Fetch messages around an anchor, filtered by a narrow',
  params: {
    anchor: { schema: OneOf(S.int, S.str) },
    num_before: { schema: S.nonNegInt },
    num_after: { schema: S.nonNegInt },
    narrow: { schema: S.list },
    include_anchor: { schema: S.bool },
    apply_markdown: { schema: S.bool },
    client_gravatar: { schema: S.bool },
    use_first_unread_anchor: { schema: S.bool },
    allow_empty_topic_name: { schema: S.bool },
    message_ids: { schema: S.nonNegIntArray },
  },
  async handler({ params, org, user, runtime, exchange }) {
    const narrow = checkNarrow(params.narrow ?? []);
    const view = { applyMarkdown: params.apply_markdown ?? true, allowEmptyTopicName: params.allow_empty_topic_name ?? false, clientGravatar: params.client_gravatar ?? true };
    const access = userAccessOf(runtime, org.id, user);
    const words = searchWords(narrow);
    const highlight = words.length > 0 ? highlighter(words) : null;
    const render = (m: MessageRecord): Record<string, unknown> => {
      const out = messageForViewer(runtime, org.id, user.user_id, m, view, access);
      if (highlight) {
        out.match_content = highlight.html(m.rendered);
        out.match_subject = highlight.text(out.subject as string);
      }
      return out;
    };
    if (params.message_ids !== undefined) {
      // Zulip's get_messages_backend: ids, or an anchored range, not both.
      if (params.num_before || params.num_after || params.anchor !== undefined || params.use_first_unread_anchor) {
        throw new ApiError('BAD_REQUEST', `Unsupported parameter combination: ${MESSAGE_IDS_EXCLUSIVE.join(', ')}`, { parameters: MESSAGE_IDS_EXCLUSIVE.join(', ') });
      }
      const found = await withBodies(runtime, org.id, messagesByIds(runtime, org.id, user.user_id, params.message_ids, narrow));
      return { json: { messages: await mapInSlices(found, render, () => exchange.aborted), history_limited: false, found_anchor: false, found_oldest: false, found_newest: false } };
    }
    // The scan yields to the event loop between slices, so a long search never holds it.
    const page = await queryMessages(
      runtime,
      {
        org: org.id,
        user_id: user.user_id,
        anchor: parseAnchor(params.anchor, params.use_first_unread_anchor ?? false),
        num_before: params.num_before ?? 0,
        num_after: params.num_after ?? 0,
        include_anchor: params.include_anchor ?? true,
        narrow,
      },
      { aborted: () => exchange.aborted },
    );
    return {
      json: {
        // Built in slices too: a page of 2,500 messages is tens of milliseconds of views.
        messages: await mapInSlices(await withBodies(runtime, org.id, page.messages), render, () => exchange.aborted),
        anchor: page.anchor,
        found_anchor: page.found_anchor,
        found_oldest: page.found_oldest,
        found_newest: page.found_newest,
        history_limited: page.history_limited,
      },
    };
  },
});

export const getMessage = route({
  method: 'GET',
  path: '/api/v1/messages/{message_id}',
  operationId: 'getMessage',
  auth: 'user',
  summary: 'Fetch one message',
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true }, apply_markdown: { schema: S.bool }, allow_empty_topic_name: { schema: S.bool } },
  handler({ params, org, user, runtime }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    // Zulip answers this one with client_gravatar always on.
    const view = { applyMarkdown: params.apply_markdown ?? true, allowEmptyTopicName: params.allow_empty_topic_name ?? false, clientGravatar: true };
    return { json: { raw_content: m.content, message: messageForViewer(runtime, org.id, user.user_id, m, view, userAccessOf(runtime, org.id, user)) } };
  },
});

export const renderMessage = route({
  method: 'POST',
  path: '/api/v1/messages/render',
  // A preview: rendered and answered, never stored.
  grows: false,
  operationId: 'renderMessage',
  auth: 'user',
  summary: 'Render Markdown as a message would be, without sending it',
  params: { content: { schema: S.str, required: true } },
  handler({ params, org, user, runtime }) {
    return { json: { rendered: renderPreview(runtime, org.id, user.user_id, params.content) } };
  },
});

export const deleteMessage = route({
  method: 'DELETE',
  path: '/api/v1/messages/{message_id}',
  operationId: 'deleteMessage',
  auth: 'user',
  summary: 'Delete a message (its sender, or an administrator)',
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime, config }) {
    const m = accessMessage(runtime, org.id, user, params.message_id);
    await runtime.execute({ type: 'DELETE_MESSAGE', org: org.id, actor_id: user.user_id, message_id: m.id });
    // Uploads only this message linked went with it; their files go once the deletion is durable.
    if (linkedPathIds(m.content).length > 0) await collectUploads(runtime, config.dataDir);
    return { json: {} };
  },
});

export const getReadReceipts = route({
  method: 'GET',
  path: '/api/v1/messages/{message_id}/read_receipts',
  operationId: 'getReadReceipts',
  auth: 'user',
  summary: "Who has read a message (if the organization enables read receipts; each user's send_read_receipts decides for them)",
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true } },
  handler({ params, org, user, runtime }) {
    // Access first, then the setting, as in Zulip.
    const m = accessMessage(runtime, org.id, user, params.message_id);
    if (!realmSettings(runtime.org(org.id)).enable_read_receipts) throw badRequest('Read receipts are disabled in this organization.');
    return { json: { user_ids: readReceipts(runtime, org.id, user, m) } };
  },
});

export const checkMessagesMatchNarrow = route({
  method: 'GET',
  path: '/api/v1/messages/matches_narrow',
  operationId: 'checkMessagesMatchNarrow',
  auth: 'user',
  summary: 'Which of some messages match a narrow, with search highlighting',
  params: { msg_ids: { schema: S.intArray, required: true }, narrow: { schema: S.list, required: true } },
  async handler({ params, org, user, runtime }) {
    const narrow = checkNarrow(params.narrow);
    const highlight = highlighter(searchWords(narrow));
    const messages: Record<string, { match_content: string; match_subject: string }> = {};
    for (const m of await withBodies(runtime, org.id, messagesMatchingNarrow(runtime, org.id, user.user_id, params.msg_ids, narrow))) {
      messages[m.id] = { match_content: highlight.html(m.rendered), match_subject: highlight.text(m.topic) };
    }
    return { json: { messages } };
  },
});

export const reportMessage = route({
  method: 'POST',
  path: '/api/v1/messages/{message_id}/report',
  operationId: 'reportMessage',
  auth: 'user',
  summary: "Report a message to the organization's moderation request channel",
  params: { message_id: { schema: S.nonNegInt, in: 'path', required: true }, report_type: { schema: S.str, required: true }, description: { schema: S.str } },
  async handler({ params, org, user, runtime }) {
    const description = params.description ?? '';
    checkReport(params.report_type, description);
    const channel = realmSettings(runtime.org(org.id)).moderation_request_channel_id;
    if (channel < 0 || !runtime.channel(org.id, channel)) throw badRequest(REPORTING_DISABLED);
    await runtime.execute({ type: 'REPORT_MESSAGE', org: org.id, stream_id: channel, reporter_id: user.user_id, message_id: params.message_id, report_type: params.report_type, description });
    return { json: {} };
  },
});
