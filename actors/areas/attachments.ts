/**
 * Uploaded files and the messages that link them (Zulip's `zerver/lib/attachments.py`
 * and `zerver/actions/uploads.py`): recording an upload, claiming it for the messages
 * whose content links `/user_uploads/<path_id>`, letting go of it when a message stops
 * linking it, deleting it (by its owner, with its last linking message, or when it
 * was never used for a configurable number of weeks), and the `attachment` events,
 * which go to the file's owner only.
 *
 * The organization actor keeps the attachments. Which files a message links is decided
 * by the actor that decides the message (its channel's, or the organization's for a
 * direct message), which puts an `AttachmentLinksChanged` fact beside the message's own.
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { canReadChannelMessage } from '../engines/message_query.js';
import { eventJson } from '../render/events.js';
import type { UserRecord } from '../shared/types.js';
import { orgState, recordsById } from '../core/state_slices.js';

/**
 * An uploaded file (Zulip's `Attachment`). The bytes live in the upload store under
 * the organization, named by their SHA-256 (`src/uploads/store.ts`); `path_id` is the
 * URL path the client sees. Times are Unix seconds.
 */
export interface AttachmentRecord {
  id: number;
  owner_id: number;
  name: string;
  path_id: string;
  size: number;
  content_type: string;
  sha256: string;
  create_time: number;
  /** Messages whose content links the file, ascending by id. */
  messages: Array<{ id: number; date_sent: number }>;
}

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Uploaded files, by attachment id (a snapshot's list names the files it covers). */
    attachments: Map<number, AttachmentRecord>;
    /** Attachment id by `path_id`; derived from `attachments`, never persisted. */
    attachmentByPath: Map<string, number>;
    /** The highest attachment id ever used. */
    lastAttachmentId: number;
  }
}

orgState({
  attachments: recordsById(),
  lastAttachmentId: { empty: () => 0 },
  attachmentByPath: { derive: (ctx) => new Map([...ctx.attachments.values()].map((a) => [a.path_id, a.id])) },
});

/** A file was uploaded and stored durably. */
export interface AttachmentAdded {
  type: 'AttachmentAdded';
  org: number;
  attachment: AttachmentRecord;
}

/** Attachments were deleted: by their owner, or unused for too long. */
export interface AttachmentsRemoved {
  type: 'AttachmentsRemoved';
  org: number;
  removed: Removed[];
}

/** A deleted attachment and its owner, who is told. */
export interface Removed {
  id: number;
  owner_id: number;
}

/**
 * A message started or stopped linking files. `removed` are attachments deleted with
 * it: the message itself was deleted and was the last to link them.
 */
export interface AttachmentLinksChanged {
  type: 'AttachmentLinksChanged';
  org: number;
  message_id: number;
  date_sent: number;
  linked: number[];
  unlinked: number[];
  removed: Removed[];
}

/** Record an upload whose file is already stored and synced. */
export interface AddAttachment {
  type: 'ADD_ATTACHMENT';
  org: number;
  owner_id: number;
  name: string;
  size: number;
  content_type: string;
  sha256: string;
}
/** Delete an attachment (its owner only). */
export interface DeleteAttachment { type: 'DELETE_ATTACHMENT'; org: number; actor_id: number; attachment_id: number }
/** Delete attachments no message has linked for `weeks` weeks since upload. */
export interface SweepAttachments { type: 'SWEEP_ATTACHMENTS'; org: number; weeks: number }

/** Zulip's `sanitize_name`: word characters, spaces, dots and dashes; runs of spaces and dashes as one dash. */
export function sanitizeFilename(raw: string): string {
  const cleaned = raw.normalize('NFKC').replace(/[^\p{L}\p{N}\p{M}_\s.-]/gu, '').trim().replace(/[-\s]+/g, '-');
  const cut = Array.from(cleaned).slice(-200).join('');
  return cut === '' || cut === '.' || cut === '..' ? 'uploaded-file' : cut;
}

/** `/user_uploads/<realm>/<a>/<b>/<name>` anywhere in message content (Markdown links or bare URLs). */
const UPLOAD_LINK = /\/user_uploads\/(\d+\/[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+\/[^\s)\]>"'?#]+)/g;

/** The path ids a message's content links, as Zulip's renderer collects `potential_attachment_path_ids`. */
export function linkedPathIds(content: string): string[] {
  if (!content.includes('/user_uploads/')) return [];
  const out = new Set<string>();
  for (const m of content.matchAll(UPLOAD_LINK)) {
    let path = m[1];
    try {
      path = decodeURIComponent(path);
    } catch {
      // Malformed escapes: keep the text as written; it then matches no attachment.
    }
    out.add(path);
  }
  return [...out];
}

/**
 * Whether `user` may read the file (Zulip's `validate_attachment_request`): its owner,
 * or anyone who can read a message that links it.
 */
export function canReadAttachment(view: StateView, org: OrgContext, user: UserRecord, a: AttachmentRecord): boolean {
  if (a.owner_id === user.user_id) return true;
  for (const { id } of a.messages) {
    const dm = org.directMessages.get(id);
    if (dm) {
      if (dm.dm_user_ids?.includes(user.user_id)) return true;
      continue;
    }
    const streamId = org.messageChannel.get(id);
    const ch = streamId === undefined ? undefined : view.channel(org.org.id, streamId);
    if (ch && canReadChannelMessage(ch, user, id)) return true;
  }
  return false;
}

/**
 * The link changes of a message whose content goes from `before` to `after` (null:
 * none, as for a new or deleted message), as Zulip's `do_claim_attachments` and
 * `check_attachment_reference_change` make them: a newly linked file is claimed when
 * the sender owns it or can read it already; a deleted message takes with it the
 * files it alone linked. Undefined when nothing changes.
 */
export function linkChanges(
  view: StateView, org: OrgContext, sender: UserRecord, messageId: number, dateSent: number, before: string | null, after: string | null,
): AttachmentLinksChanged | undefined {
  // Most messages link no file, before or after: nothing to compare.
  if (!before?.includes('/user_uploads/') && !after?.includes('/user_uploads/')) return undefined;
  const idsOf = (content: string | null): Set<number> => {
    const ids = new Set<number>();
    if (content === null) return ids;
    for (const path of linkedPathIds(content)) {
      const id = org.attachmentByPath.get(path);
      if (id !== undefined) ids.add(id);
    }
    return ids;
  };
  const old = new Set([...idsOf(before)].filter((id) => org.attachments.get(id)!.messages.some((m) => m.id === messageId)));
  const now = idsOf(after);
  const linked = [...now].filter((id) => !old.has(id) && canReadAttachment(view, org, sender, org.attachments.get(id)!)).sort(ascending);
  const gone = [...old].filter((id) => !now.has(id)).sort(ascending);
  if (linked.length === 0 && gone.length === 0) return undefined;
  const deleted = after === null;
  const removedIds = deleted ? gone.filter((id) => org.attachments.get(id)!.messages.every((m) => m.id === messageId)) : [];
  const unlinked = gone.filter((id) => !removedIds.includes(id));
  const removed = removedIds.map((id) => ({ id, owner_id: org.attachments.get(id)!.owner_id }));
  return { type: 'AttachmentLinksChanged', org: org.org.id, message_id: messageId, date_sent: dateSent, linked, unlinked, removed };
}

/**
 * Zulip's `detached_uploads` of an edit: the editor's files that the edit left linked
 * by no message, as they are after it.
 */
export function detachedUploads(org: OrgContext, editorId: number, change: AttachmentLinksChanged | undefined): AttachmentView[] {
  if (!change) return [];
  return change.unlinked
    .map((id) => org.attachments.get(id)!)
    .filter((a) => a.owner_id === editorId && a.messages.every((m) => m.id === change.message_id))
    .map((a) => attachmentView({ ...a, messages: [] }));
}

const ascending = (a: number, b: number): number => a - b;

/** An attachment as the API shows it (feature level 420: times in milliseconds). */
export interface AttachmentView {
  id: number;
  name: string;
  path_id: string;
  size: number;
  create_time: number;
  messages: Array<{ id: number; date_sent: number }>;
}

export function attachmentView(a: AttachmentRecord): AttachmentView {
  return { id: a.id, name: a.name, path_id: a.path_id, size: a.size, create_time: a.create_time * 1000, messages: a.messages.map((m) => ({ id: m.id, date_sent: m.date_sent * 1000 })) };
}

/** Zulip's `upload_space_used`: bytes of every file uploaded in the organization. */
export function uploadSpaceUsed(org: OrgContext): number {
  let n = 0;
  for (const a of org.attachments.values()) n += a.size;
  return n;
}

/**
 * The media type an attachment was stored with, as its uploader declared it (downloads show
 * it only for inline types), or undefined for no such attachment of the organization.
 */
export function attachmentContentType(view: StateView, org: number, attachmentId: number): string | undefined {
  return view.org(org)?.attachments.get(attachmentId)?.content_type;
}

/** The owner's attachments, newest first, as `GET /attachments` lists them. */
export function attachmentsOf(org: OrgContext, ownerId: number): AttachmentView[] {
  return [...org.attachments.values()].filter((a) => a.owner_id === ownerId).sort((a, b) => b.id - a.id).map(attachmentView);
}

export const addAttachment = command({
  type: 'ADD_ATTACHMENT',
  actor: 'org',
  decide(ctx: OrgContext, c: AddAttachment, env: DecideEnv): Decision<{ attachment: AttachmentRecord }, AttachmentAdded> {
    const owner = ctx.users.get(c.owner_id);
    if (!owner || !owner.is_active) throw badRequest('Invalid user');
    // Zulip's local backend path: realm id, two random characters, a random name, the file name.
    const path_id = `${ctx.org.id}/${env.token(2).slice(0, 2)}/${env.token(18)}/${sanitizeFilename(c.name)}`;
    const attachment: AttachmentRecord = {
      id: ctx.lastAttachmentId + 1, owner_id: owner.user_id, name: sanitizeFilename(c.name), path_id, size: c.size,
      content_type: c.content_type, sha256: c.sha256, create_time: env.now(), messages: [],
    };
    return { facts: [{ type: 'AttachmentAdded', org: ctx.org.id, attachment }], value: { attachment } };
  },
});

export const deleteAttachment = command({
  type: 'DELETE_ATTACHMENT',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteAttachment): Decision<Record<string, never>, AttachmentsRemoved> {
    const a = ctx.attachments.get(c.attachment_id);
    // Zulip's `access_attachment_by_id(..., needs_owner=True)`.
    if (!a || a.owner_id !== c.actor_id) throw badRequest('Invalid attachment');
    return { facts: [{ type: 'AttachmentsRemoved', org: ctx.org.id, removed: [{ id: a.id, owner_id: a.owner_id }] }], value: {} };
  },
});

export const sweepAttachments = command({
  type: 'SWEEP_ATTACHMENTS',
  actor: 'org',
  decide(ctx: OrgContext, c: SweepAttachments, env: DecideEnv): Decision<{ removed: number }, AttachmentsRemoved> {
    const before = env.now() - c.weeks * 7 * 86400;
    const removed = [...ctx.attachments.values()].filter((a) => a.messages.length === 0 && a.create_time < before).map((a) => ({ id: a.id, owner_id: a.owner_id }));
    return { facts: removed.length > 0 ? [{ type: 'AttachmentsRemoved', org: ctx.org.id, removed }] : [], value: { removed: removed.length } };
  },
});

function dropAttachment(ctx: OrgContext, id: number): void {
  const a = ctx.attachments.get(id);
  if (!a) return;
  ctx.attachments.delete(id);
  ctx.attachmentByPath.delete(a.path_id);
}

/** `attachment` events (`add`, `update`) to the owners of `ids`, in the state after the fact. */
function ownerEvents(view: StateView, orgId: number, seq: number, op: 'add' | 'update', ids: number[]): Delivery[] {
  const org = view.org(orgId);
  if (!org) return [];
  const used = uploadSpaceUsed(org);
  const out: Delivery[] = [];
  for (const id of ids) {
    const a = org.attachments.get(id);
    if (!a || !org.users.get(a.owner_id)?.is_active) continue;
    out.push({ org: orgId, seq, type: 'attachment', user_ids: [a.owner_id], event: eventJson('attachment', { op, attachment: attachmentView(a), upload_space_used: used }) });
  }
  return out;
}

/** `attachment` events (`remove`) to the owners of deleted attachments. */
function removalEvents(view: StateView, orgId: number, seq: number, removed: Removed[]): Delivery[] {
  const org = view.org(orgId);
  if (!org) return [];
  const used = uploadSpaceUsed(org);
  return removed
    .filter((r) => org.users.get(r.owner_id)?.is_active)
    .map((r) => ({ org: orgId, seq, type: 'attachment', user_ids: [r.owner_id], event: eventJson('attachment', { op: 'remove', attachment: { id: r.id }, upload_space_used: used }) }));
}

const attachmentAdded = fact<AttachmentAdded>({
  type: 'AttachmentAdded',
  apply: {
    org(ctx, f) {
      ctx.attachments.set(f.attachment.id, f.attachment);
      ctx.attachmentByPath.set(f.attachment.path_id, f.attachment.id);
      ctx.lastAttachmentId = Math.max(ctx.lastAttachmentId, f.attachment.id);
    },
  },
  route(f, to) {
    to.org(f.org);
  },
  notify: (f, seq, view) => ownerEvents(view, f.org, seq, 'add', [f.attachment.id]),
});

const attachmentsRemoved = fact<AttachmentsRemoved>({
  type: 'AttachmentsRemoved',
  apply: {
    org(ctx, f) {
      for (const r of f.removed) dropAttachment(ctx, r.id);
    },
  },
  route(f, to) {
    to.org(f.org);
  },
  notify: (f, seq, view) => removalEvents(view, f.org, seq, f.removed),
});

const attachmentLinksChanged = fact<AttachmentLinksChanged>({
  type: 'AttachmentLinksChanged',
  apply: {
    // Idempotent, for replay over a fuzzy snapshot.
    org(ctx, f) {
      for (const id of f.linked) {
        const a = ctx.attachments.get(id);
        if (!a || a.messages.some((m) => m.id === f.message_id)) continue;
        ctx.attachments.set(id, { ...a, messages: [...a.messages, { id: f.message_id, date_sent: f.date_sent }].sort((x, y) => x.id - y.id) });
      }
      for (const id of f.unlinked) {
        const a = ctx.attachments.get(id);
        if (a) ctx.attachments.set(id, { ...a, messages: a.messages.filter((m) => m.id !== f.message_id) });
      }
      for (const r of f.removed) dropAttachment(ctx, r.id);
    },
  },
  route(f, to) {
    to.org(f.org);
  },
  notify: (f, seq, view) => [...ownerEvents(view, f.org, seq, 'update', [...f.linked, ...f.unlinked]), ...removalEvents(view, f.org, seq, f.removed)],
});

export const attachments = area({
  name: 'attachments',
  commands: [addAttachment, deleteAttachment, sweepAttachments],
  facts: [attachmentAdded, attachmentsRemoved, attachmentLinksChanged],
});
