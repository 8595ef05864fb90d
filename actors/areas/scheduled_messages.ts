/**
 * Scheduled messages (Zulip's `zerver/actions/scheduled_messages.py`): create, edit,
 * delete, and delivery when due, with the `scheduled_messages` events and the
 * `scheduled_messages` section of `/register`. Reminders (`reminders.ts`) share the
 * records, the facts and delivery.
 *
 * The owner's user actor holds them and decides everything about them, delivery
 * included: a delivery is one `MessageSent` that names the scheduled item it ends,
 * with its message id chosen in that decision, so the log can never hold the message
 * without the end of the item, or the reverse. The message is checked as a send is
 * (the channel's or the organization's own send decision, run against their state),
 * and a message that can no longer be sent enters the failed state instead.
 */
import { area, command, userFact } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest, notFound } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { checkTopic } from '../rules/messages.js';
import { addedEvent, removedEvent, scheduledMessageView, scheduledOfKind, updatedEvent, type ScheduledKind, type ScheduledMessageAdded, type ScheduledRecord } from '../rules/scheduled.js';
import { notificationBotDirect, decideChannelSend, decideDirectSend, type MessageSent } from './messages.js';
import type { AttachmentLinksChanged } from './attachments.js';
import { reminderDelivery } from './reminders.js';
import { recordsById, userState } from '../core/state_slices.js';

declare module '../kinds/user.js' {
  interface UserContext {
    /** Undelivered scheduled messages and reminders, by id. */
    scheduled: Map<number, ScheduledRecord>;
    /** The id the next scheduled message or reminder gets. */
    nextScheduledId: number;
  }
}

userState({ scheduled: recordsById(), nextScheduledId: { empty: () => 1, chunkKey: 'next_scheduled_id' } });

/** A scheduled message now reads as `record` (edited, or failed and rescheduled). */
export interface ScheduledMessageEdited { type: 'ScheduledMessageEdited'; org: number; user_id: number; record: ScheduledRecord }
/** A scheduled message or reminder was deleted by its owner. */
export interface ScheduledMessageDeleted { type: 'ScheduledMessageDeleted'; org: number; user_id: number; id: number; kind: ScheduledKind }
/** Delivery was tried and failed; `notice`: the owner is told (not when they or the organization are deactivated). */
export interface ScheduledMessageFailed { type: 'ScheduledMessageFailed'; org: number; user_id: number; id: number; failure_message: string; notice: boolean }

/** Where a scheduled message goes and what it says: the parts a `PATCH` may change. */
interface Addressed {
  type: 'stream' | 'private';
  /** A channel id, or user ids. */
  to: number | number[];
  topic: string | undefined;
  content: string;
}

/** Schedule a message (`POST /scheduled_messages`). */
export interface CreateScheduledMessage {
  type: 'SCHEDULE_MESSAGE';
  org: number;
  user_id: number;
  message: Addressed;
  deliver_at: number;
  read_by_sender: boolean;
  client: string;
}
/** Edit a scheduled message (`PATCH /scheduled_messages/{id}`); absent fields are kept. */
export interface EditScheduledMessage {
  type: 'EDIT_SCHEDULED_MESSAGE';
  org: number;
  user_id: number;
  id: number;
  message_type?: 'stream' | 'private';
  to?: number | number[];
  topic?: string;
  content?: string;
  deliver_at?: number;
  client: string;
}
/** Delete a scheduled message or a reminder. */
export interface DeleteScheduled { type: 'DELETE_SCHEDULED'; org: number; user_id: number; id: number; kind: ScheduledKind }
/** Deliver an item if it is due and still pending (the delivery schedule sends this). */
export interface DeliverScheduled { type: 'DELIVER_SCHEDULED'; org: number; user_id: number; id: number }

const NOT_IN_FUTURE = 'Scheduled delivery time must be in the future.';

/** Zulip's message for an id that is not one of the caller's undelivered items of `kind`. */
export function missingMessage(kind: ScheduledKind): string {
  return kind === 'reminder' ? 'Reminder does not exist' : 'Scheduled message does not exist';
}

/** The caller's pending item of `kind`, or Zulip's "does not exist". */
function accessScheduled(ctx: UserContext, id: number, kind: ScheduledKind): ScheduledRecord {
  const r = ctx.scheduled.get(id);
  if (!r || r.kind !== kind) throw notFound(missingMessage(kind));
  return r;
}

/** A direct message's recipients as a scheduled message lists them: the others, or the owner alone. */
function directTo(ownerId: number, to: number[]): number[] {
  const others = [...new Set(to)].filter((id) => id !== ownerId).sort((a, b) => a - b);
  return others.length > 0 ? others : [ownerId];
}

/** A channel id from `to` (Zulip's `extract_stream_id`: one id, alone or in a list). */
function channelTo(to: number | number[]): number {
  if (typeof to === 'number') return to;
  if (to.length !== 1) throw badRequest('Expected exactly one channel');
  return to[0];
}

/**
 * The message `owner` would send now (Zulip's `check_message`): the channel's or the
 * organization's own send decision, run against their current state. Every check of
 * a send applies; `env` chooses the id (a probe passes one that chooses none).
 */
function sendNow(view: StateView, env: DecideEnv, org: number, ownerId: number, m: Addressed, client: string, readBySender: boolean): SendFacts {
  if (m.type === 'stream') {
    const streamId = channelTo(m.to);
    const ch = view.channel(org, streamId);
    if (!ch) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel with ID '${streamId}' does not exist`, { stream_id: streamId });
    if (m.topic === undefined) throw badRequest('Missing topic');
    const command = { type: 'SEND_MESSAGE' as const, org, sender_id: ownerId, to: { stream_id: streamId, topic: m.topic }, content: m.content, client, read_by_sender: readBySender };
    return asSendFacts(decideChannelSend(ch, command, env, view).facts);
  }
  const to = typeof m.to === 'number' ? [m.to] : m.to;
  const command = { type: 'SEND_MESSAGE' as const, org, sender_id: ownerId, to: { user_ids: to }, content: m.content, client, read_by_sender: readBySender };
  return asSendFacts(decideDirectSend(view.org(org)!, command, env, view).facts);
}

/** A send's facts: the message, then the uploads its content claims (if any). */
type SendFacts = [MessageSent, ...AttachmentLinksChanged[]];

function asSendFacts(facts: Array<MessageSent | AttachmentLinksChanged>): SendFacts {
  const [sent, ...links] = facts;
  if (sent?.type !== 'MessageSent' || links.some((f) => f.type !== 'AttachmentLinksChanged')) throw new Error('a send decides a message and its upload links');
  return [sent, ...(links as AttachmentLinksChanged[])];
}

/** A decision environment that chooses no message or submessage id: for checking a message that is not sent yet. */
function probe(env: DecideEnv): DecideEnv {
  return { ...env, nextMessageId: () => 0, nextSubmessageId: () => 0 };
}

/** A scheduled record for `m`, checked as a send now would be. */
function checkedRecord(view: StateView, env: DecideEnv, org: number, ownerId: number, m: Addressed, base: Omit<ScheduledRecord, 'type' | 'to' | 'topic' | 'content' | 'rendered'>): ScheduledRecord {
  const sent = sendNow(view, probe(env), org, ownerId, m, base.client, base.read_by_sender)[0].message;
  return {
    ...base,
    type: m.type,
    to: m.type === 'stream' ? sent.stream_id! : directTo(ownerId, typeof m.to === 'number' ? [m.to] : m.to),
    topic: m.type === 'stream' ? sent.topic : '',
    content: sent.content,
    rendered: sent.rendered,
  };
}

export const scheduleMessage = command({
  type: 'SCHEDULE_MESSAGE',
  actor: 'user',
  decide(ctx: UserContext, c: CreateScheduledMessage, env: DecideEnv, view: StateView): Decision<{ scheduled_message_id: number }, ScheduledMessageAdded> {
    if (c.deliver_at <= env.now()) throw badRequest(NOT_IN_FUTURE);
    const id = ctx.nextScheduledId;
    const record = checkedRecord(view, env, c.org, ctx.user_id, c.message, { id, kind: 'message', deliver_at: c.deliver_at, failed: false, read_by_sender: c.read_by_sender, client: c.client });
    return { facts: [{ type: 'ScheduledMessageAdded', org: c.org, user_id: ctx.user_id, record }], value: { scheduled_message_id: id } };
  },
});

export const editScheduledMessage = command({
  type: 'EDIT_SCHEDULED_MESSAGE',
  actor: 'user',
  decide(ctx: UserContext, c: EditScheduledMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, ScheduledMessageEdited> {
    if (c.message_type === undefined && c.to === undefined && c.topic === undefined && c.content === undefined && c.deliver_at === undefined) throw badRequest('Nothing to change');
    if (c.message_type !== undefined && c.to === undefined) throw badRequest('Recipient required when updating type of scheduled message.');
    if (c.message_type === 'stream' && c.topic === undefined) throw badRequest('Topic required when updating scheduled message type to stream.');
    if (c.deliver_at !== undefined && c.deliver_at <= env.now()) throw badRequest(NOT_IN_FUTURE);
    const old = accessScheduled(ctx, c.id, 'message');
    // A message the server failed to send needs a new time.
    if (old.failed && c.deliver_at === undefined) throw badRequest(NOT_IN_FUTURE);
    let next: ScheduledRecord = { ...old, client: c.client, failed: false };
    delete next.failure_message;
    if (c.message_type !== undefined || c.to !== undefined || c.content !== undefined) {
      const type = c.message_type ?? old.type;
      const m: Addressed = {
        type,
        to: c.to ?? (type === old.type ? old.to : []),
        topic: c.topic ?? old.topic,
        content: c.content ?? old.content,
      };
      next = checkedRecord(view, env, c.org, ctx.user_id, m, { ...next });
    } else if (c.topic !== undefined && old.type === 'stream') {
      // Only the topic changes (ignored for direct messages, as in Zulip).
      next.topic = checkTopic(c.topic);
    }
    if (c.deliver_at !== undefined) next.deliver_at = c.deliver_at;
    return { facts: [{ type: 'ScheduledMessageEdited', org: c.org, user_id: ctx.user_id, record: next }], value: {} };
  },
});

export const deleteScheduled = command({
  type: 'DELETE_SCHEDULED',
  actor: 'user',
  decide(ctx: UserContext, c: DeleteScheduled): Decision<Record<string, never>, ScheduledMessageDeleted> {
    accessScheduled(ctx, c.id, c.kind);
    return { facts: [{ type: 'ScheduledMessageDeleted', org: c.org, user_id: ctx.user_id, id: c.id, kind: c.kind }], value: {} };
  },
});

/** Zulip's `datetime_to_global_time`: a `<time:…>` Markdown tag. */
export function globalTime(seconds: number): string {
  return `<time:${new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;
}

/** An error a failed delivery is recorded with, and whether its owner is told (Zulip: not when they or their organization are deactivated). */
class SilentFailure extends Error {}

export const deliverScheduled = command({
  type: 'DELIVER_SCHEDULED',
  actor: 'user',
  decide(ctx: UserContext, c: DeliverScheduled, env: DecideEnv, view: StateView): Decision<{ message_id: number | null }, MessageSent | AttachmentLinksChanged | ScheduledMessageFailed> {
    const r = ctx.scheduled.get(c.id);
    // Already delivered, deleted, failed or moved later: nothing to do. (The schedule may ask twice.)
    if (!r || r.failed || r.deliver_at > env.now()) return { facts: [], value: { message_id: null } };
    const org = view.org(c.org)!;
    const owner = org.users.get(ctx.user_id);
    try {
      if (org.org.deactivated) throw new SilentFailure('This organization has been deactivated');
      if (!owner || !owner.is_active) throw new SilentFailure('Account is deactivated');
      const [sent, ...links] = r.kind === 'reminder'
        ? [reminderDelivery(view, env, c.org, owner, r)]
        : sendNow(view, env, c.org, ctx.user_id, { type: r.type, to: r.to, topic: r.topic, content: r.content }, r.client, r.read_by_sender);
      sent.scheduled = { owner_id: ctx.user_id, id: r.id, kind: r.kind };
      return { facts: [sent, ...links], value: { message_id: sent.message.id } };
    } catch (e) {
      const failure_message = e instanceof ApiError || e instanceof SilentFailure ? e.message : 'Internal server error';
      // Reminders have no failure notice in Zulip; the owner sees `failed` on their next fetch.
      const notice = !(e instanceof SilentFailure) && r.kind === 'message';
      const failed: ScheduledMessageFailed = { type: 'ScheduledMessageFailed', org: c.org, user_id: ctx.user_id, id: r.id, failure_message, notice };
      if (!notice) return { facts: [failed], value: { message_id: null } };
      const content =
        `The message you scheduled for ${globalTime(r.deliver_at)} was not sent because of the following error:\n\n` +
        `> ${failure_message}\n\n[View scheduled messages](#scheduled)\n\n`;
      return { facts: [failed, notificationBotDirect(env, org, owner!, content)], value: { message_id: null } };
    }
  },
});

const scheduledMessageAdded = userFact<ScheduledMessageAdded>({
  type: 'ScheduledMessageAdded',
  apply(ctx, f) {
    ctx.scheduled.set(f.record.id, f.record);
    ctx.nextScheduledId = Math.max(ctx.nextScheduledId, f.record.id + 1);
  },
  notify: (f, seq) => [{ org: f.org, seq, user_ids: [f.user_id], ...addedEvent(f.record) }],
});

const scheduledMessageEdited = userFact<ScheduledMessageEdited>({
  type: 'ScheduledMessageEdited',
  apply(ctx, f) {
    if (ctx.scheduled.has(f.record.id)) ctx.scheduled.set(f.record.id, f.record);
  },
  notify: (f, seq) => [{ org: f.org, seq, user_ids: [f.user_id], ...updatedEvent(f.record) }],
});

const scheduledMessageDeleted = userFact<ScheduledMessageDeleted>({
  type: 'ScheduledMessageDeleted',
  apply(ctx, f) {
    ctx.scheduled.delete(f.id);
  },
  notify: (f, seq) => [{ org: f.org, seq, user_ids: [f.user_id], ...removedEvent(f.kind, f.id) }],
});

const scheduledMessageFailed = userFact<ScheduledMessageFailed>({
  type: 'ScheduledMessageFailed',
  apply(ctx, f) {
    const r = ctx.scheduled.get(f.id);
    if (r) ctx.scheduled.set(f.id, { ...r, failed: true, failure_message: f.failure_message });
  },
  notify(f, seq, view) {
    const r = view.user(f.org, f.user_id)?.scheduled.get(f.id);
    return f.notice && r ? [{ org: f.org, seq, user_ids: [f.user_id], ...updatedEvent(r) }] : [];
  },
});

/** The facts that add or change a pending item, with its owner: what the delivery schedule must look at again. */
export function pendingTouchedBy(fact: { type: string }): { org: number; user_id: number; id: number } | null {
  if (fact.type !== 'ScheduledMessageAdded' && fact.type !== 'ScheduledMessageEdited') return null;
  const f = fact as ScheduledMessageAdded | ScheduledMessageEdited;
  return { org: f.org, user_id: f.user_id, id: f.record.id };
}

/** The caller's undelivered scheduled messages, earliest first (`GET /scheduled_messages`). */
export function scheduledMessagesOf(view: StateView, org: number, userId: number): Record<string, unknown>[] {
  return scheduledOfKind(view.user(org, userId)?.scheduled.values() ?? [], 'message').map(scheduledMessageView);
}

/** Why each of the user's failed scheduled messages failed (told in a notice, if at all: `GET /scheduled_messages` shows only that it did), by id. */
export function scheduledFailures(view: StateView, org: number, userId: number): Array<{ id: number; failure_message: string }> {
  return scheduledOfKind(view.user(org, userId)?.scheduled.values() ?? [], 'message').filter((r) => r.failed).map((r) => ({ id: r.id, failure_message: r.failure_message ?? '' }));
}

export const scheduledMessages = area({
  name: 'scheduled messages',
  commands: [scheduleMessage, editScheduledMessage, deleteScheduled, deliverScheduled],
  facts: [scheduledMessageAdded, scheduledMessageEdited, scheduledMessageDeleted, scheduledMessageFailed],
  register: [{ types: ['scheduled_messages'], fill: (state, r, view) => void (state.scheduled_messages = scheduledMessagesOf(view, r.org.id, r.user.user_id)) }],
});
