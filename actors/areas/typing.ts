/**
 * Typing notifications (Zulip's `zerver/actions/typing.py`): someone is composing a
 * direct message, a message to a channel topic, or an edit of a message. Nothing is
 * stored, but the notification is a fact all the same: queue contents are a
 * function of the fact sequence, so a queue replayed after a crash holds the same
 * events with the same ids. Clients expire a `start` they hear nothing more about
 * after `server_typing_started_expiry_period_milliseconds` (in `/register`).
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { canAccessChannel, hasContentAccess } from '../kinds/channel.js';
import type { UserContext } from '../kinds/user.js';
import { EMPTY_TOPIC_DISPLAY_NAME, topicNamed } from '../rules/messages.js';
import { eventJson } from '../render/events.js';
import { checkCanAccessRecipients } from '../rules/user_access.js';

/** Channels with more active subscribers than this get no typing notifications (Zulip's `MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS`). */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/** Where the typing happens. */
export type TypingWhere = { kind: 'direct'; user_ids: number[] } | { kind: 'channel'; stream_id: number; topic: string };

/** Someone started or stopped typing a new message, or an edit of message `message_id`. */
export interface TypingNotified {
  type: 'TypingNotified';
  org: number;
  sender_id: number;
  op: 'start' | 'stop';
  where: TypingWhere;
  /** Set when the typing is an edit of this message (`typing_edit_message`). */
  message_id: number | null;
}

/** Notify the recipients that the sender (this user actor) is typing. */
export interface SendTyping {
  type: 'SEND_TYPING';
  user_id: number;
  org: number;
  op: 'start' | 'stop';
  where: TypingWhere;
  message_id: number | null;
}

export const sendTyping = command({
  type: 'SEND_TYPING',
  actor: 'user',
  decide(ctx: UserContext, c: SendTyping, _env: DecideEnv, view: StateView): Decision<Record<string, never>, TypingNotified> {
    const org = view.org(c.org)!;
    const sender = org.users.get(ctx.user_id);
    if (!sender || !sender.is_active) throw badRequest('Invalid sender');
    let where = c.where;
    if (where.kind === 'direct') {
      if (where.user_ids.length === 0) throw badRequest("Empty 'to' list");
      const recipients = where.user_ids.map((id) => {
        const user = org.users.get(id);
        if (!user) throw badRequest(`Invalid user ID ${id}`);
        return user;
      });
      // As Zulip's check_send_typing_notification; typing an edit needs access to the message only.
      if (c.message_id === null) checkCanAccessRecipients(view, c.org, sender, recipients);
      where = { kind: 'direct', user_ids: [...new Set([...where.user_ids, sender.user_id])] };
    } else {
      const ch = view.channel(c.org, where.stream_id);
      if (!ch) throw badRequest('Invalid channel ID');
      // Typing a new message needs the right to send there; typing an edit, the right to edit (checked by the caller).
      if (c.message_id === null) {
        if (!canAccessChannel(sender, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
        if (ch.channel.is_archived || !hasContentAccess(ch, sender)) {
          throw badRequest(`Not authorized to send to channel '${ch.channel.name}'`);
        }
      }
      where = { kind: 'channel', stream_id: where.stream_id, topic: topicNamed(where.topic) };
    }
    return { facts: [{ type: 'TypingNotified', org: c.org, sender_id: sender.user_id, op: c.op, where, message_id: c.message_id }], value: {} };
  },
});

/** Who hears of typing in a channel: its active subscribers, unless there are too many. */
function channelAudience(view: StateView, org: number, streamId: number): number[] {
  const ch = view.channel(org, streamId);
  const users = view.org(org)?.users;
  if (!ch || !users) return [];
  const ids = [...ch.subscribers].filter((id) => users.get(id)?.is_active);
  return ids.length > MAX_CHANNEL_SIZE_FOR_TYPING ? [] : ids;
}

function notifyTyping(f: TypingNotified, seq: number, view: StateView): Delivery[] {
  const users = view.org(f.org)!.users;
  const person = (id: number) => ({ user_id: id, email: users.get(id)?.email ?? '' });
  const where = f.where;
  if (where.kind === 'direct') {
    const audience = where.user_ids.filter((id) => users.get(id)?.is_active);
    const event = f.message_id === null
      ? eventJson('typing', { op: f.op, message_type: 'direct', sender: person(f.sender_id), recipients: where.user_ids.map(person) })
      : eventJson('typing_edit_message', { op: f.op, sender_id: f.sender_id, message_id: f.message_id, recipient: { type: 'direct', user_ids: audience } });
    return [{ org: f.org, seq, type: event.type, user_ids: audience, event }];
  }
  const audience = channelAudience(view, f.org, where.stream_id);
  if (audience.length === 0) return [];
  // Clients that do not show the empty topic as "" get its display name.
  const built: ReturnType<typeof eventJson>[] = [];
  const type = f.message_id === null ? 'typing' : 'typing_edit_message';
  return [{
    org: f.org,
    seq,
    type,
    user_ids: audience,
    event: (_userId, { empty_topic_name: emptyTopicName }) => {
      const variant = emptyTopicName || where.topic !== '' ? 0 : 1;
      const topic = variant === 1 ? EMPTY_TOPIC_DISPLAY_NAME : where.topic;
      return (built[variant] ??= f.message_id === null
        ? eventJson('typing', { op: f.op, message_type: 'stream', sender: person(f.sender_id), stream_id: where.stream_id, topic })
        : eventJson('typing_edit_message', { op: f.op, sender_id: f.sender_id, message_id: f.message_id, recipient: { type: 'channel', channel_id: where.stream_id, topic } }));
    },
  }];
}

const typingNotified = fact<TypingNotified>({
  type: 'TypingNotified',
  // Nothing keeps it: it only becomes events.
  apply: {},
  route: () => {},
  notify: notifyTyping,
});

export const typing = area({
  name: 'typing',
  commands: [sendTyping],
  facts: [typingNotified],
});
