/**
 * Drafts (Zulip's `zerver/lib/drafts.py`): unsent messages a user keeps on the
 * server so that their clients share them, while the `enable_drafts_synchronization`
 * setting is on. The user actor keeps them; `drafts` events (`add`, `update`,
 * `remove`) tell the user's other clients. Turning the setting off deletes them
 * without draft events, as Zulip does: the clients keep their local copies and
 * learn of the change from the `user_settings` event.
 */
import { area, command, userFact } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest, notFound } from '../shared/errors.js';
import { canAccessChannel } from '../kinds/channel.js';
import type { UserContext } from '../kinds/user.js';
import { checkContent, LIMITS, truncateCodePoints } from '../rules/messages.js';
import type { Draft } from '../rules/personal.js';
import { toOwner } from '../render/events.js';
import { effectiveSettings } from '../rules/user_settings.js';

/** At most this many drafts, the most recently edited, are in `/register` (Zulip's `MAX_DRAFTS_IN_REGISTER_RESPONSE`). */
export const MAX_DRAFTS_IN_REGISTER = 1000;

/**
 * The most drafts one `POST /drafts` may create (Parley's own cap; Zulip has none).
 * A client creates a draft at a time; 10,000 in one request were checked, logged and
 * told in one tick of the event loop (about 200 ms). The route's schema refuses more,
 * before any is checked.
 */
export const MAX_DRAFTS_PER_REQUEST = 1000;

/** A draft as a client sends it (validated in shape by the route). */
export interface DraftInput {
  type: '' | 'stream' | 'private';
  to: number[];
  topic: string;
  content: string;
  timestamp?: number;
}

/** Drafts were created. */
export interface DraftsCreated { type: 'DraftsCreated'; org: number; user_id: number; drafts: Draft[] }
/** A draft was replaced by a new version. */
export interface DraftEdited { type: 'DraftEdited'; org: number; user_id: number; draft: Draft }
/** A draft was deleted. */
export interface DraftDeleted { type: 'DraftDeleted'; org: number; user_id: number; draft_id: number }

export interface CreateDrafts { type: 'CREATE_DRAFTS'; user_id: number; org: number; drafts: DraftInput[] }
export interface EditDraft { type: 'EDIT_DRAFT'; user_id: number; org: number; draft_id: number; draft: DraftInput }
export interface DeleteDraft { type: 'DELETE_DRAFT'; user_id: number; org: number; draft_id: number }

/** Refuses draft requests of a user who turned synchronization off. */
export function checkDraftsSynchronized(view: StateView, org: number, userId: number): void {
  const user = view.org(org)?.users.get(userId);
  if (!user || effectiveSettings(user.settings).enable_drafts_synchronization !== true) throw badRequest('User has disabled synchronizing drafts.');
}

/** Zulip's `further_validated_draft_dict`: the stored form of a draft, or the error it deserves. */
function checkDraft(view: StateView, org: number, userId: number, input: DraftInput, id: number, now: number): Draft {
  const content = checkContent(input.content);
  const timestamp = input.timestamp ?? now;
  if (timestamp < 0) throw badRequest('Timestamp must not be negative.');
  const draft: Draft = { id, type: input.type, to: [], topic: '', content, timestamp: Math.floor(timestamp) };
  if (input.type === 'stream') {
    const topic = truncateCodePoints(input.topic, LIMITS.max_topic_length, '...');
    if (topic.includes('\u0000')) throw badRequest('Topic must not contain null bytes');
    if (input.to.length !== 1) throw badRequest('Must specify exactly 1 channel ID for channel messages');
    const ch = view.channel(org, input.to[0]);
    const user = view.org(org)!.users.get(userId)!;
    if (!ch || !canAccessChannel(user, ch.channel, ch.subscribers)) throw badRequest('Invalid channel ID');
    draft.topic = topic;
    draft.to = [input.to[0]];
  } else if (input.type === 'private' && input.to.length > 0) {
    draft.to = directRecipients(view, org, userId, input.to);
  } else {
    // A direct-message draft to no one has no recipient, so Zulip shows it as unaddressed.
    draft.type = '';
  }
  return draft;
}

/** The other participants of a direct-message draft (the user alone for a draft to self), as Zulip's `get_recipient_ids`. */
function directRecipients(view: StateView, org: number, userId: number, to: number[]): number[] {
  const users = view.org(org)!.users;
  const ids = [...new Set(to)];
  for (const id of ids) {
    const u = users.get(id);
    if (!u) throw badRequest(`Invalid user ID ${id}`);
    if (!u.is_active && !u.is_bot) throw badRequest(`'${u.email}' is no longer using Zulip.`);
  }
  const others = ids.filter((id) => id !== userId).sort((a, b) => a - b);
  return others.length === 0 ? [userId] : others;
}

export const createDrafts = command({
  type: 'CREATE_DRAFTS',
  actor: 'user',
  decide(ctx: UserContext, c: CreateDrafts, env: DecideEnv, view: StateView): Decision<{ ids: number[] }, DraftsCreated> {
    checkDraftsSynchronized(view, c.org, ctx.user_id);
    const now = env.now();
    const drafts = c.drafts.map((d, i) => checkDraft(view, c.org, ctx.user_id, d, ctx.personal.nextDraftId + i, now));
    const facts: DraftsCreated[] = drafts.length === 0 ? [] : [{ type: 'DraftsCreated', org: c.org, user_id: ctx.user_id, drafts }];
    return { facts, value: { ids: drafts.map((d) => d.id) } };
  },
});

/** The user's draft, or Zulip's error. */
function accessDraft(ctx: UserContext, id: number): Draft {
  const draft = ctx.personal.drafts.get(id);
  if (!draft) throw notFound('Draft does not exist');
  return draft;
}

export const editDraft = command({
  type: 'EDIT_DRAFT',
  actor: 'user',
  decide(ctx: UserContext, c: EditDraft, env: DecideEnv, view: StateView): Decision<Record<string, never>, DraftEdited> {
    checkDraftsSynchronized(view, c.org, ctx.user_id);
    accessDraft(ctx, c.draft_id);
    const draft = checkDraft(view, c.org, ctx.user_id, c.draft, c.draft_id, env.now());
    return { facts: [{ type: 'DraftEdited', org: c.org, user_id: ctx.user_id, draft }], value: {} };
  },
});

export const deleteDraft = command({
  type: 'DELETE_DRAFT',
  actor: 'user',
  decide(ctx: UserContext, c: DeleteDraft, _env: DecideEnv, view: StateView): Decision<Record<string, never>, DraftDeleted> {
    checkDraftsSynchronized(view, c.org, ctx.user_id);
    accessDraft(ctx, c.draft_id);
    return { facts: [{ type: 'DraftDeleted', org: c.org, user_id: ctx.user_id, draft_id: c.draft_id }], value: {} };
  },
});

/** The id the user's next draft gets (ids are never reused): 1 for no such user. */
export function nextDraftId(view: StateView, org: number, userId: number): number {
  return view.user(org, userId)?.personal.nextDraftId ?? 1;
}

/** The user's drafts, oldest edit first (`GET /drafts`), or newest first (`/register`). */
export function listDrafts(view: StateView, org: number, userId: number, newestFirst = false): Draft[] {
  const all = [...(view.user(org, userId)?.personal.drafts.values() ?? [])].sort((a, b) => a.timestamp - b.timestamp || a.id - b.id);
  return newestFirst ? all.reverse() : all;
}

const draftsCreated = userFact<DraftsCreated>({
  type: 'DraftsCreated',
  apply(ctx, f) {
    for (const d of f.drafts) {
      ctx.personal.drafts.set(d.id, d);
      ctx.personal.nextDraftId = Math.max(ctx.personal.nextDraftId, d.id + 1);
    }
  },
  notify: (f, seq) => toOwner(f, seq, 'drafts', { op: 'add', drafts: f.drafts }),
});

const draftEdited = userFact<DraftEdited>({
  type: 'DraftEdited',
  apply: (ctx, f) => void ctx.personal.drafts.set(f.draft.id, f.draft),
  notify: (f, seq) => toOwner(f, seq, 'drafts', { op: 'update', draft: f.draft }),
});

const draftDeleted = userFact<DraftDeleted>({
  type: 'DraftDeleted',
  apply: (ctx, f) => void ctx.personal.drafts.delete(f.draft_id),
  notify: (f, seq) => toOwner(f, seq, 'drafts', { op: 'remove', draft_id: f.draft_id }),
});

export const drafts = area({
  name: 'drafts',
  commands: [createDrafts, editDraft, deleteDraft],
  facts: [draftsCreated, draftEdited, draftDeleted],
  register: [{ types: ['drafts'], fill: (state, r, view) => void (state.drafts = listDrafts(view, r.org.id, r.user.user_id, true).slice(0, MAX_DRAFTS_IN_REGISTER)) }],
});
