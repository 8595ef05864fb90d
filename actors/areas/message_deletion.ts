/**
 * Deleting messages (Zulip's `do_delete_messages`): one at a time by its sender or a
 * moderator of it (`DELETE /messages/{id}`, who may is `checkCanDelete` in
 * rules/message_edits.ts), every message of some senders (a user's deactivation with `actions`,
 * deletion_jobs.ts), and the batches of a topic's deletion (topic_deletion.ts); the `delete_message`
 * events, in the bulk form for clients that declared `bulk_message_deletion`.
 */
import { area, fact, messageCommand, type OutgoingEvent, type UserDelivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { checkCanDelete } from '../rules/message_edits.js';
import { badRequest } from '../shared/errors.js';
import { dropMessages, received, type ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { EMPTY_TOPIC_DISPLAY_NAME, messageActor } from '../rules/messages.js';
import { realmSettings } from '../rules/realm_settings.js';
import { eventJson } from '../render/events.js';
import type { StoredMessage } from '../shared/types.js';
import { bodyOf } from '../core/bodies.js';
import { linkChanges, type AttachmentLinksChanged } from './attachments.js';

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

/** Delete a message: decided by its channel's actor, or the organization's for a direct message. */
export interface DeleteMessage {
  type: 'DELETE_MESSAGE';
  org: number;
  actor_id: number;
  message_id: number;
}

export const deleteMessage = messageCommand({
  type: 'DELETE_MESSAGE',
  address: messageActor,
  decide: {
    channel: (ctx: ChannelContext, c: DeleteMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageDeleted | AttachmentLinksChanged> => {
      const m = ctx.messages.get(c.message_id);
      if (!m) throw badRequest('Invalid message(s)');
      const org = view.org(c.org)!;
      checkCanDelete(org, realmSettings(org), org.users.get(c.actor_id), m, env.now(), ctx.channel);
      return { facts: channelMessageDeletion(ctx, view, org, m), value: {} };
    },
    org: (ctx: OrgContext, c: DeleteMessage, env: DecideEnv, view: StateView): Decision<Record<string, never>, MessageDeleted | AttachmentLinksChanged> => {
      const m = ctx.directMessages.get(c.message_id);
      if (!m) throw badRequest('Invalid message(s)');
      checkCanDelete(ctx, realmSettings(ctx), ctx.users.get(c.actor_id), m, env.now(), null);
      const holders = [...(m.dm_user_ids ?? [])];
      return { facts: withUnlinks({ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }, view, ctx, m), value: {} };
    },
  },
});

/**
 * The facts that delete a channel message: it goes from everyone who received it, and
 * everyone who holds it or (with shared history) is subscribed is told.
 */
export function channelMessageDeletion(ctx: ChannelContext, view: StateView, org: OrgContext, m: StoredMessage): Array<MessageDeleted | AttachmentLinksChanged> {
  const holders = [...ctx.history.keys()].filter((id) => received(ctx, id, m.id)).sort((a, b) => a - b);
  const told = new Set(holders);
  if (ctx.channel.history_public_to_subscribers) for (const id of ctx.subscribers) told.add(id);
  const notify = [...told].sort((a, b) => a - b);
  return withUnlinks({ type: 'MessageDeleted', org: org.org.id, message_id: m.id, stream_id: ctx.channel.stream_id, topic: m.topic, holders, notify }, view, org, m);
}

/** A deletion, then the uploads it lets go of: those it alone linked are deleted with it. */
export function withUnlinks(deleted: MessageDeleted, view: StateView, org: OrgContext, m: StoredMessage): Array<MessageDeleted | AttachmentLinksChanged> {
  const sender = org.users.get(m.sender_id);
  const links = sender ? linkChanges(view, org, sender, m.id, m.timestamp, bodyOf(org.bodies, m).content, null) : undefined;
  return links ? [deleted, links] : [deleted];
}


const messageDeleted = fact<MessageDeleted>({
  type: 'MessageDeleted',
  // Every reducer is idempotent: a snapshot slice taken after the delete already lacks the message.
  apply: {
    org(ctx, f) {
      ctx.messageChannel.delete(f.message_id);
      const m = ctx.directMessages.get(f.message_id);
      if (!m) return;
      ctx.directMessages.delete(f.message_id);
      ctx.bodies.release(m.body);
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
 * one: the first tells everyone of them all, and the acting user if there is one, in
 * Zulip's two forms (`batchDeletionDeliveries`).
 */
export function asDeletionBatch(facts: Array<MessageDeleted | AttachmentLinksChanged>, actorId?: number): Array<MessageDeleted | AttachmentLinksChanged> {
  const deleted = facts.filter((x): x is MessageDeleted => x.type === 'MessageDeleted');
  if (deleted.length === 0) return facts;
  const told = new Set<number>(actorId === undefined ? [] : [actorId]);
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

export const messageDeletion = area({
  name: 'message_deletion',
  commands: [deleteMessage],
  facts: [messageDeleted],
});
