/**
 * Reporting a message for moderation (Zulip's `zerver/views/message_report.py` and
 * `zerver/lib/message_report.py`): the notification bot posts the report, with the
 * reported message quoted under a spoiler, to the organization's moderation request
 * channel (`moderation_request_channel_id`), in the topic "<sender> moderation". The
 * report is an ordinary message (`MessageSent`), decided by that channel's actor.
 */
import { area, command } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { ChannelContext } from '../kinds/channel.js';
import { checkContent, checkTopic, codePointLength, EMPTY_TOPIC_DISPLAY_NAME, LIMITS, truncateCodePoints } from '../rules/messages.js';
import { realmSettings } from '../rules/realm_settings.js';
import { unusedFence } from '../rules/scheduled.js';
import { senderOf } from '../rules/system_bots.js';
import type { MessageRecord, UserRecord } from '../shared/types.js';
import { accessMessage, notificationBotMessage, type MessageSent } from './messages.js';
import { globalTime } from './scheduled_messages.js';

/** Zulip's `Realm.REPORT_MESSAGE_REASONS`: the report types and how a report names them. */
export const REPORT_REASONS: Readonly<Record<string, string>> = Object.freeze({
  spam: 'Spam',
  harassment: 'Harassment',
  inappropriate: 'Inappropriate content',
  norms: 'Violates community norms',
  other: 'Other reason',
});

/** Zulip's `Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH`. */
export const MAX_REPORT_DESCRIPTION_LENGTH = 1000;

/** How much of the reported message a report quotes, leaving room for the rest (Zulip's `MAX_REPORT_MESSAGE_SNIPPET_LENGTH`). */
export const MAX_REPORT_SNIPPET_LENGTH = LIMITS.max_message_length - MAX_REPORT_DESCRIPTION_LENGTH - 500;

export const REPORTING_DISABLED = 'Message reporting is not enabled in this organization.';

/** Report a message (decided by the moderation request channel's actor). */
export interface ReportMessage {
  type: 'REPORT_MESSAGE';
  stream_id: number;
  org: number;
  reporter_id: number;
  message_id: number;
  report_type: string;
  description: string;
}

/** The checks of the request itself, in Zulip's order. */
export function checkReport(reportType: string, description: string): void {
  if (!Object.hasOwn(REPORT_REASONS, reportType)) throw badRequest('Invalid report_type');
  if (codePointLength(description) > MAX_REPORT_DESCRIPTION_LENGTH) throw badRequest(`description is too long (limit: ${MAX_REPORT_DESCRIPTION_LENGTH} characters)`);
  if (reportType === 'other' && description === '') throw badRequest('An explanation is required.');
}

const silentMention = (u: Pick<UserRecord, 'full_name' | 'user_id'>): string => `@_**${u.full_name}|${u.user_id}**`;

/** "A, B and C". */
function listed(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Zulip's `get_message_link_syntax`: `#**channel>topic@id**`, or a plain link where that syntax would break. */
function messageLinkSyntax(streamId: number, channelName: string, topic: string, id: number): string {
  if (/[`>*&[\]]|\$\$/.test(channelName) || /[`*&[\]]|\$\$/.test(topic)) {
    const slug = (s: string): string => encodeURIComponent(s.replace(/ /g, '-')).replace(/%/g, '.');
    return `[#${channelName} > ${topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : topic} @ 💬](#narrow/channel/${streamId}-${slug(channelName)}/topic/${slug(topic)}/near/${id})`;
  }
  return `#**${channelName}>${topic}@${id}**`;
}

/** The report's content, as Zulip's `send_message_report` writes it. */
export function reportContent(view: StateView, org: number, reporter: UserRecord, m: MessageRecord, reportType: string, description: string): string {
  const orgCtx = view.org(org)!;
  const user = (id: number): Pick<UserRecord, 'full_name' | 'user_id'> => senderOf(orgCtx, id) ?? { full_name: 'Unknown user', user_id: id };
  const sender = user(m.sender_id);
  const when = globalTime(m.timestamp);
  const who = `${silentMention(reporter)} reported a message sent by ${silentMention(sender)}`;
  let header: string;
  let original: string;
  if (m.stream_id === null) {
    const ids = m.dm_user_ids ?? [];
    if (ids.length <= 2 && sender.user_id === reporter.user_id) {
      // Reporting one's own one-on-one message: say to whom it went.
      const other = ids.find((id) => id !== reporter.user_id);
      header = `${who} to ${silentMention(other === undefined ? reporter : user(other))} at ${when}.`;
    } else if (ids.length <= 2) {
      header = `${who} at ${when}.`;
    } else {
      header = `${who} to ${listed(ids.filter((id) => id !== sender.user_id).map((id) => silentMention(user(id))))} at ${when}.`;
    }
    original = `[Original message](#narrow/dm/${ids.join(',')}-${ids.length > 2 ? 'group' : 'dm'}/near/${m.id})`;
  } else {
    const name = view.channel(org, m.stream_id)?.channel.name ?? '';
    header = `${who} at ${when}.`;
    original = `Original message at ${messageLinkSyntax(m.stream_id, name, m.topic, m.id)}`;
  }
  const quoted = truncateCodePoints(m.content, MAX_REPORT_SNIPPET_LENGTH, '\n[message truncated]');
  const fence = unusedFence(quoted);
  return `${header}\n\`\`\`quote\n**${REPORT_REASONS[reportType]}**. ${description}\n\`\`\`\n\n${fence} spoiler ${original}\n${quoted}\n${fence}\n`;
}

export const reportMessage = command({
  type: 'REPORT_MESSAGE',
  actor: 'channel',
  decide(ctx: ChannelContext, c: ReportMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageSent> {
    const org = view.org(c.org)!;
    const reporter = org.users.get(c.reporter_id);
    if (!reporter || !reporter.is_active) throw badRequest('Invalid user');
    checkReport(c.report_type, c.description);
    if (realmSettings(org).moderation_request_channel_id !== ctx.channel.stream_id) throw badRequest(REPORTING_DISABLED);
    const m = accessMessage(view, c.org, reporter, c.message_id);
    // Zulip's internal send fails on an archived channel.
    if (ctx.channel.is_archived) throw badRequest('Failed to send the message report.');
    const sender = senderOf(org, m.sender_id);
    const topic = ctx.channel.topics_policy === 'empty_topic_only' ? '' : checkTopic(`${sender?.full_name ?? 'Unknown user'} moderation`);
    const content = checkContent(reportContent(view, c.org, reporter, m, c.report_type, c.description));
    return { facts: [notificationBotMessage(env, org, ctx.channel, topic, content)], value: {} };
  },
});

export const messageReports = area({
  name: 'message reports',
  commands: [reportMessage],
  facts: [],
});
