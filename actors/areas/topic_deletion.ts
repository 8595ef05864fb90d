/**
 * Deleting a topic (Zulip's `delete_in_topic` in zerver/views/streams.py): every message
 * of a channel topic the acting administrator can read goes, newest first, in batches of
 * `TOPIC_DELETION_BATCH` messages, each batch one decision of the channel's actor, so
 * that a large topic makes progress however the request ends. Each message is deleted as
 * `DELETE /messages/{id}` deletes it (`MessageDeleted`), but a batch is told at once, as
 * Zulip's do_delete_messages tells it: one `delete_message` event with every id
 * (`message_ids`) to clients with `bulk_message_deletion`, one per message (`message_id`)
 * to the others, each to everyone any of its messages tells and to the acting user.
 *
 * The batch that leaves nothing the administrator can read also sets back to the default
 * the topic visibility policies of the users who named the topic (with protected history:
 * those who no longer hold any of its messages), in the same decision: its facts land in
 * one durable batch, so a `kill -9` never leaves a deleted topic with stale policies. A
 * request stopped earlier (the time limit, a crash) has deleted whole batches, and the
 * client's next request goes on from there, as in Zulip.
 */
import { area, command } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import { hasContentAccess, received, type ChannelContext } from '../kinds/channel.js';
import { userTopicKey } from '../kinds/user.js';
import { topicNamed } from '../rules/messages.js';
import { Role, type StoredMessage } from '../shared/types.js';
import type { AttachmentLinksChanged } from './attachments.js';
import { asDeletionBatch, channelMessageDeletion, type MessageDeleted } from './message_deletion.js';
import { topicPolicyReset, type UserTopicChanged } from './user_topics.js';

/** Messages one batch deletes at most (Zulip's `STREAM_MESSAGE_BATCH_SIZE` of retention). */
export const TOPIC_DELETION_BATCH = 100;
/** After this long a request stops between batches and answers `complete: false` (Zulip's 50 s). */
export const TOPIC_DELETION_TIME_LIMIT_MS = 50_000;

/** Delete the newest batch of a topic's messages the actor can read. */
export interface DeleteTopicBatch { type: 'DELETE_TOPIC_BATCH'; stream_id: number; org: number; actor_id: number; topic: string }

/** What one batch did: how many it deleted, and whether the topic is done (nothing readable left, policies reset). */
export interface TopicBatchResult { deleted: number; done: boolean }

export const deleteTopicBatch = command({
  type: 'DELETE_TOPIC_BATCH',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteTopicBatch, env: DecideEnv, view: StateView): Decision<TopicBatchResult, MessageDeleted | AttachmentLinksChanged | UserTopicChanged> {
    const org = view.org(c.org)!;
    const actor = org.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    if (!hasContentAccess(ctx, actor) || ctx.channel.is_archived) throw badRequest('Invalid channel ID');
    const key = topicNamed(c.topic).toLowerCase();
    const { batch, more } = nextTopicBatch(ctx, actor.user_id, key);
    // One batch, told at once as Zulip's do_delete_messages tells it, its messages ascending.
    const facts: Array<MessageDeleted | AttachmentLinksChanged | UserTopicChanged> = asDeletionBatch(batch.flatMap((m) => channelMessageDeletion(ctx, view, org, m)), actor.user_id);
    if (!more) {
      const deleting = new Set(batch.map((m) => m.id));
      for (const userId of staleUserTopics(ctx, view, c.org, key, deleting)) {
        const reset = topicPolicyReset(view.user(c.org, userId)!, c.org, ctx.channel.stream_id, key, env.now());
        if (reset) facts.push(reset);
      }
    }
    return { facts, value: { deleted: batch.length, done: !more } };
  },
  // Each deletion reads its message's body (the uploads it links).
  bodies(view, c) {
    const ch = view.channel(c.org, c.stream_id);
    return ch ? nextTopicBatch(ch, c.actor_id, topicNamed(c.topic).toLowerCase()).batch.map((m) => m.body) : [];
  },
});

/**
 * The newest `TOPIC_DELETION_BATCH` messages of a topic that `userId` can read, ascending
 * by id, and whether more remain. With protected history, only the messages they received
 * (Zulip's bulk_access_stream_messages_query).
 */
function nextTopicBatch(ctx: ChannelContext, userId: number, key: string): { batch: StoredMessage[]; more: boolean } {
  const readable = (id: number): boolean => ctx.channel.history_public_to_subscribers || received(ctx, userId, id);
  const batch: StoredMessage[] = [];
  if (!ctx.topics.has(key)) return { batch, more: false };
  const messages = ctx.messages;
  const ids = messages.ids;
  const inTopic = messages.inTopic(key);
  for (let i = ids.length - 1; i >= 0; i--) {
    if (!inTopic(i) || !readable(ids[i])) continue;
    if (batch.length === TOPIC_DELETION_BATCH) return { batch: batch.reverse(), more: true };
    batch.push(messages.at(i));
  }
  return { batch: batch.reverse(), more: false };
}

/** Users with a visibility policy for the topic who will see none of its messages once `deleting` is gone. */
function staleUserTopics(ctx: ChannelContext, view: StateView, org: number, key: string, deleting: Set<number>): number[] {
  const remaining: number[] = [];
  if (!ctx.channel.history_public_to_subscribers) {
    const ids = ctx.messages.ids;
    const inTopic = ctx.messages.inTopic(key);
    for (let i = 0; i < ids.length; i++) if (!deleting.has(ids[i]) && inTopic(i)) remaining.push(ids[i]);
  }
  const out: number[] = [];
  for (const user of view.org(org)!.users.values()) {
    if (!view.user(org, user.user_id)?.topics.has(userTopicKey(ctx.channel.stream_id, key))) continue;
    if (remaining.some((id) => received(ctx, user.user_id, id))) continue;
    out.push(user.user_id);
  }
  return out;
}

export const topicDeletion = area({ name: 'topic_deletion', commands: [deleteTopicBatch], facts: [] });
