/**
 * Deleting a topic (Zulip's `delete_in_topic` in zerver/views/streams.py): every message
 * of a channel topic the acting administrator can read goes, newest first, in batches of
 * `TOPIC_DELETION_BATCH` messages, each batch one decision of the channel's actor, so
 * that a large topic makes progress however the request ends. Each message is deleted as
 * `DELETE /messages/{id}` deletes it (`MessageDeleted`), but a batch is told at once, as
 * Zulip's do_delete_messages tells it: one `delete_message` event with every id
 * (`message_ids`) to clients with `bulk_message_deletion`, one per message (`message_id`)
 * to the others, each to everyone any of its messages tells and to the acting user. Once
 * nothing the administrator can read is left, the users whose topic visibility policy
 * named the topic (with protected history: those who no longer hold any of its messages)
 * are reported, for their policies to go back to the default.
 */
import { area, command } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../errors.js';
import { hasContentAccess, received, type ChannelContext } from '../kinds/channel.js';
import { userTopicKey } from '../kinds/user.js';
import { topicNamed } from '../message_rules.js';
import { Role, type MessageRecord } from '../types.js';
import type { AttachmentLinksChanged } from './attachments.js';
import { asDeletionBatch, channelMessageDeletion, type MessageDeleted } from './message_deletion.js';

/** Messages one batch deletes at most (Zulip's `STREAM_MESSAGE_BATCH_SIZE` of retention). */
export const TOPIC_DELETION_BATCH = 100;
/** After this long a request stops between batches and answers `complete: false` (Zulip's 50 s). */
export const TOPIC_DELETION_TIME_LIMIT_MS = 50_000;

/** Delete the newest batch of a topic's messages the actor can read. */
export interface DeleteTopicBatch { type: 'DELETE_TOPIC_BATCH'; org: number; actor_id: number; topic: string }

/** What one batch did: how many it deleted; when none were left, whose topic policies to clear. */
export interface TopicBatchResult { deleted: number; stale_user_topics: number[] }

export const deleteTopicBatch = command({
  type: 'DELETE_TOPIC_BATCH',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteTopicBatch, _env: DecideEnv, view: StateView): Decision<TopicBatchResult, MessageDeleted | AttachmentLinksChanged> {
    const org = view.org(c.org)!;
    const actor = org.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    if (!hasContentAccess(ctx, actor) || ctx.channel.is_archived) throw badRequest('Invalid channel ID');
    const key = topicNamed(c.topic).toLowerCase();
    // With protected history, only the messages the administrator received (Zulip's bulk_access_stream_messages_query).
    const readable = (id: number): boolean => ctx.channel.history_public_to_subscribers || received(ctx, actor.user_id, id);
    const batch: MessageRecord[] = [];
    if (ctx.topics.has(key)) {
      for (let i = ctx.ids.length - 1; i >= 0 && batch.length < TOPIC_DELETION_BATCH; i--) {
        const m = ctx.messages.get(ctx.ids[i]);
        if (m && m.topic.toLowerCase() === key && readable(m.id)) batch.push(m);
      }
    }
    if (batch.length > 0) {
      // One batch, told at once as Zulip's do_delete_messages tells it, its messages ascending.
      batch.reverse();
      const facts = asDeletionBatch(batch.flatMap((m) => channelMessageDeletion(ctx, view, org, m)), actor.user_id);
      return { facts, value: { deleted: batch.length, stale_user_topics: [] } };
    }
    return { facts: [], value: { deleted: 0, stale_user_topics: staleUserTopics(ctx, view, c.org, key) } };
  },
});

/** Users with a visibility policy for the topic who no longer see any of its messages. */
function staleUserTopics(ctx: ChannelContext, view: StateView, org: number, key: string): number[] {
  const remaining = ctx.channel.history_public_to_subscribers ? [] : ctx.ids.filter((id) => ctx.messages.get(id)?.topic.toLowerCase() === key);
  const out: number[] = [];
  for (const user of view.org(org)!.users.values()) {
    if (!view.user(org, user.user_id)?.topics.has(userTopicKey(ctx.channel.stream_id, key))) continue;
    if (remaining.some((id) => received(ctx, user.user_id, id))) continue;
    out.push(user.user_id);
  }
  return out;
}

export const topicDeletion = area({ name: 'topic_deletion', commands: [deleteTopicBatch], facts: [] });
