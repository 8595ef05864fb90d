/**
 * Saved snippets (Zulip's `zerver/actions/saved_snippets.py`): titled Markdown a
 * user inserts into messages. The user actor keeps them; `saved_snippets` events
 * (`add`, `update`, `remove`) tell the user's other clients.
 */
import { area, command, userFact } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest, notFound } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { codePointLength, LIMITS } from '../rules/messages.js';
import type { SavedSnippet } from '../rules/personal.js';
import { toOwner } from '../render/events.js';

/** Zulip's `SavedSnippet.MAX_TITLE_LENGTH`. */
export const MAX_SNIPPET_TITLE_LENGTH = 60;

/** A snippet was created, or changed (the whole snippet, as it now is). */
export interface SavedSnippetSaved { type: 'SavedSnippetSaved'; org: number; user_id: number; op: 'add' | 'update'; snippet: SavedSnippet }
export interface SavedSnippetDeleted { type: 'SavedSnippetDeleted'; org: number; user_id: number; saved_snippet_id: number }

export interface CreateSavedSnippet { type: 'CREATE_SAVED_SNIPPET'; user_id: number; org: number; title: string; content: string }
export interface EditSavedSnippet { type: 'EDIT_SAVED_SNIPPET'; user_id: number; org: number; saved_snippet_id: number; title?: string; content?: string }
export interface DeleteSavedSnippet { type: 'DELETE_SAVED_SNIPPET'; user_id: number; org: number; saved_snippet_id: number }

/** Stripped, non-empty and within `max` code points. */
function checkText(value: string, what: 'Title' | 'Content', max: number): string {
  const v = value.trim();
  if (v === '') throw badRequest(`${what} cannot be empty.`);
  if (codePointLength(v) > max) throw badRequest(`${what.toLowerCase()} is too long (limit: ${max} characters)`);
  return v;
}

function accessSnippet(ctx: UserContext, id: number): SavedSnippet {
  const s = ctx.personal.snippets.get(id);
  if (!s) throw notFound('Saved snippet does not exist.');
  return s;
}

export const createSavedSnippet = command({
  type: 'CREATE_SAVED_SNIPPET',
  actor: 'user',
  decide(ctx: UserContext, c: CreateSavedSnippet, env: DecideEnv): Decision<{ saved_snippet_id: number }, SavedSnippetSaved> {
    const snippet: SavedSnippet = {
      id: ctx.personal.nextSnippetId,
      title: checkText(c.title, 'Title', MAX_SNIPPET_TITLE_LENGTH),
      content: checkText(c.content, 'Content', LIMITS.max_message_length),
      date_created: env.now(),
    };
    return { facts: [{ type: 'SavedSnippetSaved', org: c.org, user_id: ctx.user_id, op: 'add', snippet }], value: { saved_snippet_id: snippet.id } };
  },
});

export const editSavedSnippet = command({
  type: 'EDIT_SAVED_SNIPPET',
  actor: 'user',
  decide(ctx: UserContext, c: EditSavedSnippet): Decision<Record<string, never>, SavedSnippetSaved> {
    const title = c.title === undefined ? undefined : checkText(c.title, 'Title', MAX_SNIPPET_TITLE_LENGTH);
    const content = c.content === undefined ? undefined : checkText(c.content, 'Content', LIMITS.max_message_length);
    // Nothing asked for: no event, as in Zulip (which answers so before looking the snippet up).
    if (title === undefined && content === undefined) return { facts: [], value: {} };
    const current = accessSnippet(ctx, c.saved_snippet_id);
    const snippet: SavedSnippet = { ...current, title: title ?? current.title, content: content ?? current.content };
    return { facts: [{ type: 'SavedSnippetSaved', org: c.org, user_id: ctx.user_id, op: 'update', snippet }], value: {} };
  },
});

export const deleteSavedSnippet = command({
  type: 'DELETE_SAVED_SNIPPET',
  actor: 'user',
  decide(ctx: UserContext, c: DeleteSavedSnippet): Decision<Record<string, never>, SavedSnippetDeleted> {
    accessSnippet(ctx, c.saved_snippet_id);
    return { facts: [{ type: 'SavedSnippetDeleted', org: c.org, user_id: ctx.user_id, saved_snippet_id: c.saved_snippet_id }], value: {} };
  },
});

/** The user's snippets, by id. */
export function listSavedSnippets(view: StateView, org: number, userId: number): SavedSnippet[] {
  return [...(view.user(org, userId)?.personal.snippets.values() ?? [])].sort((a, b) => a.id - b.id);
}

const savedSnippetSaved = userFact<SavedSnippetSaved>({
  type: 'SavedSnippetSaved',
  apply(ctx, f) {
    ctx.personal.snippets.set(f.snippet.id, f.snippet);
    ctx.personal.nextSnippetId = Math.max(ctx.personal.nextSnippetId, f.snippet.id + 1);
  },
  notify: (f, seq) => toOwner(f, seq, 'saved_snippets', { op: f.op, saved_snippet: f.snippet }),
});

const savedSnippetDeleted = userFact<SavedSnippetDeleted>({
  type: 'SavedSnippetDeleted',
  apply: (ctx, f) => void ctx.personal.snippets.delete(f.saved_snippet_id),
  notify: (f, seq) => toOwner(f, seq, 'saved_snippets', { op: 'remove', saved_snippet_id: f.saved_snippet_id }),
});

export const savedSnippets = area({
  name: 'saved snippets',
  commands: [createSavedSnippet, editSavedSnippet, deleteSavedSnippet],
  facts: [savedSnippetSaved, savedSnippetDeleted],
  register: [{ types: ['saved_snippets'], fill: (state, r, view) => void (state.saved_snippets = listSavedSnippets(view, r.org.id, r.user.user_id)) }],
});
