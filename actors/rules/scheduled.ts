/**
 * Scheduled messages and reminders as a user holds them (Zulip's `ScheduledMessage`,
 * with its two delivery types), and how clients see them. A reminder is a scheduled
 * direct message from the notification bot to its owner about another message.
 */
import type { OutgoingEvent } from '../core/area.js';
import { eventJson } from '../render/events.js';

/** What a scheduled item becomes when due: a message its owner sends, or a reminder the notification bot sends them. */
export type ScheduledKind = 'message' | 'reminder';

/** One undelivered scheduled message or reminder. Delivered ones are dropped. */
export interface ScheduledRecord {
  /** Unique among its owner's scheduled messages and reminders together, as in Zulip's one table. */
  id: number;
  kind: ScheduledKind;
  /** `stream` or `private`, as Zulip reports it. Reminders are always `private`. */
  type: 'stream' | 'private';
  /** Channel messages: the channel id. Direct messages: the recipients other than the owner (the owner alone when sent to self). */
  to: number | number[];
  /** Channel messages only; `''` otherwise. */
  topic: string;
  content: string;
  rendered: string;
  /** Unix seconds. */
  deliver_at: number;
  /** The server tried to deliver it and could not; a `PATCH` must then give a new time. */
  failed: boolean;
  /** Why it failed (absent unless `failed`). */
  failure_message?: string;
  read_by_sender: boolean;
  client: string;
  /** Reminders: the message they are about. */
  target_message_id?: number;
  /** Reminders: the owner's note, if any. */
  note?: string;
}

/**
 * A new scheduled message or reminder: the fact both areas write (scheduled_messages.ts
 * applies it; reminders.ts creates reminders with it), so it lives below both.
 */
export interface ScheduledMessageAdded { type: 'ScheduledMessageAdded'; org: number; user_id: number; record: ScheduledRecord }

/** Zulip's `MAX_REMINDER_NOTE_LENGTH`. */
export const MAX_REMINDER_NOTE_LENGTH = 1000;

/** A scheduled message as `GET /scheduled_messages` and its events show it. */
export function scheduledMessageView(r: ScheduledRecord): Record<string, unknown> {
  return {
    scheduled_message_id: r.id,
    type: r.type,
    to: r.to,
    ...(r.type === 'stream' ? { topic: r.topic } : {}),
    content: r.content,
    rendered_content: r.rendered,
    scheduled_delivery_timestamp: r.deliver_at,
    failed: r.failed,
  };
}

/** A reminder as `GET /reminders` and its events show it. */
export function reminderView(r: ScheduledRecord): Record<string, unknown> {
  return {
    reminder_id: r.id,
    type: 'private',
    to: r.to,
    content: r.content,
    rendered_content: r.rendered,
    scheduled_delivery_timestamp: r.deliver_at,
    failed: r.failed,
    reminder_target_message_id: r.target_message_id,
  };
}

/** A user's items of one kind, earliest first (ties by id), as Zulip orders them. */
export function scheduledOfKind(items: Iterable<ScheduledRecord>, kind: ScheduledKind): ScheduledRecord[] {
  return [...items].filter((r) => r.kind === kind).sort((a, b) => a.deliver_at - b.deliver_at || a.id - b.id);
}

/** The `add` event for a new item. */
export function addedEvent(r: ScheduledRecord): { type: string; event: OutgoingEvent } {
  return r.kind === 'reminder'
    ? { type: 'reminders', event: eventJson('reminders', { op: 'add', reminders: [reminderView(r)] }) }
    : { type: 'scheduled_messages', event: eventJson('scheduled_messages', { op: 'add', scheduled_messages: [scheduledMessageView(r)] }) };
}

/** The `update` event for a changed scheduled message (reminders are never edited). */
export function updatedEvent(r: ScheduledRecord): { type: string; event: OutgoingEvent } {
  return { type: 'scheduled_messages', event: eventJson('scheduled_messages', { op: 'update', scheduled_message: scheduledMessageView(r) }) };
}

/** The `remove` event for an item deleted or delivered. */
export function removedEvent(kind: ScheduledKind, id: number): { type: string; event: OutgoingEvent } {
  return kind === 'reminder'
    ? { type: 'reminders', event: eventJson('reminders', { op: 'remove', reminder_id: id }) }
    : { type: 'scheduled_messages', event: eventJson('scheduled_messages', { op: 'remove', scheduled_message_id: id }) };
}

/** Zulip's `get_unused_fence`: a code fence longer than any fence in `content`. */
export function unusedFence(content: string): string {
  let length = 3;
  for (const m of content.matchAll(/^ {0,3}(`{3,})/gm)) length = Math.max(length, m[1].length + 1);
  return '`'.repeat(length);
}
