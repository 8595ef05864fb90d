/**
 * Deleting every message some accounts sent (`DELETE /users/{id}` with `actions`: a user
 * and the bots they own, in the public channels, the private ones, the direct messages)
 * as a durable job of the organization, since it spans every channel and so many decisions:
 *
 * - the decision that deactivates the accounts (DEACTIVATE_USER, user_admin.ts) also
 *   records the job (`DeletionJobStarted`), with every channel still to go through, in
 *   the same durable batch;
 * - each channel's actor then deletes their messages there (DELETE_MESSAGES_BY_SENDERS),
 *   and in the same decision, so the same batch, crosses the channel off the job
 *   (`DeletionJobStepped`); a step for a channel already crossed off does nothing;
 * - last, the organization's actor deletes their direct messages and removes the job
 *   (DELETE_DIRECT_MESSAGES_BY_SENDERS, `DeletionJobFinished`), in one decision.
 *
 * Their messages moved meanwhile into a channel already gone through put that channel
 * back on the job (`revisitMovedInto`).
 *
 * The job is organization state, in snapshots with it; the runtime's `DeletionJobs`
 * (actors/runtime/deletion_jobs.ts) runs the steps, and after a restart resumes every job
 * still recorded, so a `kill -9` never leaves the work half done for good. The steps
 * check no permission: the administrator's was checked when the job was decided.
 * Each message goes as `DELETE /messages/{id}` deletes it (`MessageDeleted`), with its
 * own `delete_message` event.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import type { ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import type { AttachmentLinksChanged } from './attachments.js';
import { channelMessageDeletion, withUnlinks, type MessageDeleted } from './message_deletion.js';
import { orgState, recordsById } from '../core/state_slices.js';

/**
 * A durable job deleting every message some accounts sent, of the kinds asked for (a
 * user's deactivation with `actions`): recorded by the decision that deactivates them,
 * advanced one channel per decision, and removed by the decision that deletes the direct
 * messages last (the runtime's `DeletionJobs` runs it).
 */
export interface MessageDeletionJob {
  id: number;
  /** The administrator who asked. */
  actor_id: number;
  /** The accounts whose messages go: the user and the bots they own. */
  sender_ids: number[];
  public_channels: boolean;
  private_channels: boolean;
  direct_messages: boolean;
  /** The channels still to go through, ascending; then the direct messages, and the job is done. */
  channels: number[];
}

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Message deletions still under way, by id; finished ones leave. */
    deletionJobs: Map<number, MessageDeletionJob>;
    /** The highest deletion job id ever used. */
    lastDeletionJobId: number;
  }
}

orgState({ deletionJobs: recordsById(), lastDeletionJobId: { empty: () => 0 } });

/** A deletion job was recorded (with the deactivation that asked for it). */
export interface DeletionJobStarted { type: 'DeletionJobStarted'; org: number; job: MessageDeletionJob }
/** One channel of a job was gone through (in the batch of that channel's deletions). */
export interface DeletionJobStepped { type: 'DeletionJobStepped'; org: number; job_id: number; stream_id: number }
/** A job is done (in the batch of its direct messages' deletions). */
export interface DeletionJobFinished { type: 'DeletionJobFinished'; org: number; job_id: number }

/** What a deletion job is to delete: whose messages, and of which kinds. */
export interface DeletionRequest {
  actor_id: number;
  sender_ids: number[];
  public_channels: boolean;
  private_channels: boolean;
  direct_messages: boolean;
}

/**
 * The fact recording a job for `request`, with every channel of the organization to go
 * through (its kind is checked at each step, as it is then), or null when nothing is asked.
 */
export function deletionJobStart(ctx: OrgContext, view: StateView, request: DeletionRequest): DeletionJobStarted | null {
  if (!request.public_channels && !request.private_channels && !request.direct_messages) return null;
  const orgId = ctx.org.id;
  const channels = request.public_channels || request.private_channels
    ? [...ctx.channelsByName.values()].filter((id) => view.channel(orgId, id) !== undefined).sort((a, b) => a - b)
    : [];
  return { type: 'DeletionJobStarted', org: orgId, job: { id: ctx.lastDeletionJobId + 1, ...request, sender_ids: [...request.sender_ids], channels } };
}

/** One step of a job: its senders' messages in this channel, if of a kind asked for (decided by the channel). */
export interface DeleteMessagesBySenders { type: 'DELETE_MESSAGES_BY_SENDERS'; org: number; stream_id: number; job_id: number }
/** A job's last step: its senders' direct messages, if asked for, and the job's end (decided by the organization). */
export interface DeleteDirectMessagesBySenders { type: 'DELETE_DIRECT_MESSAGES_BY_SENDERS'; org: number; job_id: number }

export const deleteMessagesBySenders = command({
  type: 'DELETE_MESSAGES_BY_SENDERS',
  actor: 'channel',
  decide(ctx: ChannelContext, c: DeleteMessagesBySenders, _env: DecideEnv, view: StateView): Decision<{ deleted: number }, MessageDeleted | AttachmentLinksChanged | DeletionJobStepped> {
    const org = view.org(c.org)!;
    const job = org.deletionJobs.get(c.job_id);
    const streamId = ctx.channel.stream_id;
    // Done already (a repeated step): nothing more to do here.
    if (!job || !job.channels.includes(streamId)) return { facts: [], value: { deleted: 0 } };
    const facts: Array<MessageDeleted | AttachmentLinksChanged | DeletionJobStepped> = [];
    let deleted = 0;
    if (ctx.channel.invite_only ? job.private_channels : job.public_channels) {
      const senders = new Set(job.sender_ids);
      for (const m of ctx.messages.values()) {
        if (!senders.has(m.sender_id)) continue;
        facts.push(...channelMessageDeletion(ctx, view, org, m));
        deleted++;
      }
    }
    facts.push({ type: 'DeletionJobStepped', org: c.org, job_id: job.id, stream_id: streamId });
    return { facts, value: { deleted } };
  },
  // Each deletion reads its message's body (the uploads it links).
  bodies(view, c) {
    const job = view.org(c.org)?.deletionJobs.get(c.job_id);
    const ch = view.channel(c.org, c.stream_id);
    return job && ch ? ch.messages.bodiesBy(job.sender_ids) : [];
  },
});

export const deleteDirectMessagesBySenders = command({
  type: 'DELETE_DIRECT_MESSAGES_BY_SENDERS',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteDirectMessagesBySenders, _env: DecideEnv, view: StateView): Decision<{ deleted: number }, MessageDeleted | AttachmentLinksChanged | DeletionJobFinished> {
    const job = ctx.deletionJobs.get(c.job_id);
    // Done already, or a channel to go through again first (messages moved into it): nothing yet.
    if (!job || job.channels.length > 0) return { facts: [], value: { deleted: 0 } };
    const facts: Array<MessageDeleted | AttachmentLinksChanged | DeletionJobFinished> = [];
    let deleted = 0;
    if (job.direct_messages) {
      const senders = new Set(job.sender_ids);
      for (const m of ctx.directMessages.values()) {
        if (!senders.has(m.sender_id)) continue;
        const holders = [...(m.dm_user_ids ?? [])];
        facts.push(...withUnlinks({ type: 'MessageDeleted', org: c.org, message_id: m.id, stream_id: null, topic: '', holders, notify: holders }, view, ctx, m));
        deleted++;
      }
    }
    facts.push({ type: 'DeletionJobFinished', org: c.org, job_id: job.id });
    return { facts, value: { deleted } };
  },
  bodies(view, c) {
    const org = view.org(c.org);
    const job = org?.deletionJobs.get(c.job_id);
    return org && job?.direct_messages ? org.directMessages.bodiesBy(job.sender_ids) : [];
  },
});

/**
 * Messages of a job's senders moved into a channel the job has already gone through: it
 * goes through that channel again (from the organization's reducer of the move, so the
 * same on replay). Without it, a message moved out of a channel yet to come would escape.
 */
export function revisitMovedInto(ctx: OrgContext, streamId: number, senderIds: readonly number[]): void {
  for (const job of ctx.deletionJobs.values()) {
    if ((!job.public_channels && !job.private_channels) || job.channels.includes(streamId)) continue;
    if (!senderIds.some((id) => job.sender_ids.includes(id))) continue;
    ctx.deletionJobs.set(job.id, { ...job, channels: [...job.channels, streamId].sort((a, b) => a - b) });
  }
}

// Records are replaced, never changed in place: a snapshot being written may hold the old one.
const deletionJobStarted = orgFact<DeletionJobStarted>({
  type: 'DeletionJobStarted',
  apply(ctx, f) {
    ctx.deletionJobs.set(f.job.id, f.job);
    if (f.job.id > ctx.lastDeletionJobId) ctx.lastDeletionJobId = f.job.id;
  },
});

const deletionJobStepped = orgFact<DeletionJobStepped>({
  type: 'DeletionJobStepped',
  apply(ctx, f) {
    const job = ctx.deletionJobs.get(f.job_id);
    if (job) ctx.deletionJobs.set(job.id, { ...job, channels: job.channels.filter((id) => id !== f.stream_id) });
  },
});

const deletionJobFinished = orgFact<DeletionJobFinished>({
  type: 'DeletionJobFinished',
  apply(ctx, f) {
    ctx.deletionJobs.delete(f.job_id);
  },
});

export const deletionJobs = area({
  name: 'deletion_jobs',
  commands: [deleteMessagesBySenders, deleteDirectMessagesBySenders],
  facts: [deletionJobStarted, deletionJobStepped, deletionJobFinished],
});
