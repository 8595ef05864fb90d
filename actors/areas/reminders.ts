/**
 * Reminders (Zulip's `zerver/actions/reminders.py`, `zerver/lib/reminders.py`): a
 * user asks to be reminded of a message at a time, and the notification bot then
 * sends them a direct message quoting it. A reminder is a scheduled item of kind
 * `reminder`: it is stored, deleted, failed and delivered as scheduled messages are
 * (`scheduled_messages.ts`); this module adds its creation, its content, and the
 * `reminders` section of `/register`.
 */
import { area, command } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { renderMarkdown } from '../engines/markdown/index.js';
import { checkContent, codePointLength, EMPTY_TOPIC_DISPLAY_NAME, LIMITS, truncateCodePoints } from '../rules/messages.js';
import { MAX_REMINDER_NOTE_LENGTH, reminderView, scheduledOfKind, unusedFence, type ScheduledMessageAdded, type ScheduledRecord } from '../rules/scheduled.js';
import type { MessageRecord, UserRecord } from '../shared/types.js';
import { messageLink } from './message_edits.js';
import { accessMessage, mentionResolver, notificationBotDirect, type MessageSent } from './messages.js';

/** Remind the caller of a message they can read (`POST /reminders`). */
export interface CreateReminder {
  type: 'CREATE_REMINDER';
  org: number;
  user_id: number;
  message_id: number;
  deliver_at: number;
  note?: string;
  client: string;
}

/** Zulip's `normalize_note_text`. */
function checkNote(note: string): string {
  const body = note.trimEnd().replace(/^\n+/, '');
  if (codePointLength(body) > MAX_REMINDER_NOTE_LENGTH) throw badRequest(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return body;
}

const silentMention = (u: Pick<UserRecord, 'full_name' | 'user_id'>): string => `@_**${u.full_name}|${u.user_id}**`;

/** "A, B and C". */
function listed(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * Zulip's `get_reminder_formatted_content`: who said what where, with a link to the
 * message, and the message quoted (or, for a poll or a to-do list, named).
 */
export function reminderContent(view: StateView, org: number, m: MessageRecord, note: string | undefined): string {
  const orgCtx = view.org(org)!;
  const sender = orgCtx.users.get(m.sender_id);
  const who = sender ? silentMention(sender) : `@_**Unknown user|${m.sender_id}**`;
  const ch = m.stream_id === null ? undefined : view.channel(org, m.stream_id);
  const what = ch ? 'message' : 'direct message';
  let content = note ? `You requested a reminder for the following ${what}. Note:\n > ${note}` : `You requested a reminder for the following ${what}.`;
  content += '\n\n';
  let url: string;
  let where: string;
  if (ch) {
    url = messageLink(ch, m.topic, m.id);
    where = `in #**${ch.channel.name}>${m.topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : m.topic}@${m.id}**`;
  } else {
    const ids = m.dm_user_ids ?? [];
    url = `#narrow/dm/${ids.join(',')}-${ids.length > 2 ? 'group' : 'dm'}/near/${m.id}`;
    const others = ids.filter((id) => id !== m.sender_id).map((id) => orgCtx.users.get(id)).filter((u) => u !== undefined);
    where = `to ${listed((others.length > 0 ? others : sender ? [sender] : []).map(silentMention))}`;
  }
  const widget = m.content.startsWith('/poll') ? 'poll' : m.content.startsWith('/todo') ? 'todo list' : null;
  if (widget) return content + `${who} [sent](${url}) a ${widget} ${where}.`;
  content += `${who} [said](${url}) ${where}:\n`;
  const fence = unusedFence(content);
  const room = LIMITS.max_message_length - codePointLength(content + `${fence}quote\n\n${fence}`);
  return content + `${fence}quote\n${truncateCodePoints(m.content, Math.max(0, room), '\n[message truncated]')}\n${fence}`;
}

export const createReminder = command({
  type: 'CREATE_REMINDER',
  actor: 'user',
  decide(ctx: UserContext, c: CreateReminder, env: DecideEnv, view: StateView): Decision<{ reminder_id: number }, ScheduledMessageAdded> {
    if (c.deliver_at <= env.now()) throw badRequest('Scheduled delivery time must be in the future.');
    const org = view.org(c.org)!;
    const me = org.users.get(ctx.user_id);
    if (!me || !me.is_active) throw badRequest('Invalid sender');
    const m = accessMessage(view, c.org, me, c.message_id);
    const note = c.note === undefined ? undefined : checkNote(c.note);
    const content = checkContent(reminderContent(view, c.org, m, note));
    const id = ctx.nextScheduledId;
    const record: ScheduledRecord = {
      id, kind: 'reminder', type: 'private', to: [ctx.user_id], topic: '', content, rendered: renderMarkdown(content, mentionResolver(org)).html,
      deliver_at: c.deliver_at, failed: false, read_by_sender: false, client: c.client, target_message_id: m.id,
      ...(note ? { note } : {}),
    };
    return { facts: [{ type: 'ScheduledMessageAdded', org: c.org, user_id: ctx.user_id, record }], value: { reminder_id: id } };
  },
});

/**
 * The notification bot's message for a due reminder (Zulip's `send_reminder`): the
 * message as it reads now, or, when the owner can no longer read it, the content
 * recorded when the reminder was made.
 */
export function reminderDelivery(view: StateView, env: DecideEnv, org: number, owner: UserRecord, r: ScheduledRecord): MessageSent {
  let content = r.content;
  try {
    content = checkContent(reminderContent(view, org, accessMessage(view, org, owner, r.target_message_id!), r.note));
  } catch {
    // Access lost (or the message deleted): the recorded content stands.
  }
  return notificationBotDirect(env, view.org(org)!, owner, content);
}

/** The caller's undelivered reminders, earliest first (`GET /reminders`). */
export function remindersOf(view: StateView, org: number, userId: number): Record<string, unknown>[] {
  return scheduledOfKind(view.user(org, userId)?.scheduled.values() ?? [], 'reminder').map(reminderView);
}

export const reminders = area({
  name: 'reminders',
  commands: [createReminder],
  facts: [],
  register: [{ types: ['reminders'], fill: (state, r, view) => void (state.reminders = remindersOf(view, r.org.id, r.user.user_id)) }],
});
