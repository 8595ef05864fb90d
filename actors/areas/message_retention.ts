/**
 * Message retention (Zulip's `zerver/lib/retention.py`, `archive_messages`): messages
 * older than their retention period are deleted for real. A channel's period is its
 * `message_retention_days`, or the organization's when it has none (`null`); direct
 * messages take the organization's; `-1` keeps them forever, the default.
 *
 * The server's retention pass (`src/retention.ts`) deletes them in batches of
 * `RETENTION_BATCH`, oldest first, each batch one decision of the channel's actor (or the
 * organization's, for direct messages), so that a large backlog makes progress and a
 * crash loses no more than the batch being decided; the next pass goes on from there.
 * Message ids are given in the order messages are sent, so a channel's oldest messages
 * are its first rows, and a batch stops at the first message still within the period.
 *
 * Zulip archives them first (and purges the archive after a delay) and tells clients
 * nothing. Parley has no archive: its body store drops the content at its next
 * compaction. It tells clients as a deletion would (`delete_message`), so that a client's
 * unread counts and message lists stay what a new `register` would give.
 */
import { area, command } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import type { ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from '../rules/realm_settings.js';
import type { MessageTable } from '../shared/message_table.js';
import type { StoredMessage } from '../shared/types.js';
import type { AttachmentLinksChanged } from './attachments.js';
import { asDeletionBatch, channelMessageDeletion, withUnlinks, type MessageDeleted } from './message_deletion.js';

/** Messages one decision deletes at most (Zulip's retention `STREAM_MESSAGE_BATCH_SIZE`). */
export const RETENTION_BATCH = 100;

const DAY_SECONDS = 24 * 3600;

/** Delete the oldest batch of a channel's messages past its retention period. */
export interface ExpireChannelMessages { type: 'EXPIRE_CHANNEL_MESSAGES'; org: number; stream_id: number }
/** Delete the oldest batch of an organization's direct messages past its retention period. */
export interface ExpireDirectMessages { type: 'EXPIRE_DIRECT_MESSAGES'; org: number }

/** What one batch did, and whether messages past the period remain. */
export interface ExpiryResult { deleted: number; more: boolean }

/** A channel's retention period in days, or -1 for forever. */
export function channelRetentionDays(ch: ChannelContext, org: OrgContext | undefined): number {
  return ch.channel.message_retention_days ?? realmSettings(org).message_retention_days;
}

/** The first rows of `table` sent before `cutoff` (Unix seconds): at most a batch, and whether more follow. */
function expiredRows(table: MessageTable, cutoff: number): { rows: StoredMessage[]; more: boolean } {
  const rows: StoredMessage[] = [];
  for (let i = 0; i < table.size && table.timestampAt(i) < cutoff; i++) {
    if (rows.length === RETENTION_BATCH) return { rows, more: true };
    rows.push(table.at(i));
  }
  return { rows, more: false };
}

function channelExpired(ch: ChannelContext, org: OrgContext | undefined, now: number): { rows: StoredMessage[]; more: boolean } {
  const days = channelRetentionDays(ch, org);
  return days <= 0 ? { rows: [], more: false } : expiredRows(ch.messages, now - days * DAY_SECONDS);
}

function directExpired(org: OrgContext, now: number): { rows: StoredMessage[]; more: boolean } {
  const days = realmSettings(org).message_retention_days;
  return days <= 0 ? { rows: [], more: false } : expiredRows(org.directMessages, now - days * DAY_SECONDS);
}

export const expireChannelMessages = command({
  type: 'EXPIRE_CHANNEL_MESSAGES',
  actor: 'channel',
  decide(ctx: ChannelContext, c: ExpireChannelMessages, env: DecideEnv, view: StateView): Decision<ExpiryResult, MessageDeleted | AttachmentLinksChanged> {
    const org = view.org(c.org)!;
    const { rows, more } = channelExpired(ctx, org, env.now());
    // Told as a topic's deletion is: one batch per topic, its messages ascending.
    const byTopic = new Map<string, StoredMessage[]>();
    for (const m of rows) {
      const key = m.topic.toLowerCase();
      const list = byTopic.get(key);
      if (list) list.push(m);
      else byTopic.set(key, [m]);
    }
    const facts = [...byTopic.values()].flatMap((batch) => asDeletionBatch(batch.flatMap((m) => channelMessageDeletion(ctx, view, org, m))));
    return { facts, value: { deleted: rows.length, more } };
  },
  // Each deletion reads its message's body (the uploads it links).
  bodies(view, c, env) {
    const ch = view.channel(c.org, c.stream_id);
    return ch ? channelExpired(ch, view.org(c.org), env.now()).rows.map((m) => m.body) : [];
  },
});

export const expireDirectMessages = command({
  type: 'EXPIRE_DIRECT_MESSAGES',
  actor: 'org',
  decide(ctx: OrgContext, c: ExpireDirectMessages, env: DecideEnv, view: StateView): Decision<ExpiryResult, MessageDeleted | AttachmentLinksChanged> {
    const { rows, more } = directExpired(ctx, env.now());
    const facts = rows.flatMap((m) => {
      const holders = [...(m.dm_user_ids ?? [])];
      return withUnlinks({ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }, view, ctx, m);
    });
    return { facts, value: { deleted: rows.length, more } };
  },
  bodies(view, c, env) {
    const org = view.org(c.org);
    return org ? directExpired(org, env.now()).rows.map((m) => m.body) : [];
  },
});

export const messageRetention = area({
  name: 'message_retention',
  commands: [expireChannelMessages, expireDirectMessages],
  facts: [],
});
