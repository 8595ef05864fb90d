/**
 * Code playgrounds (Zulip's `zerver/actions/realm_playgrounds.py` and
 * `zerver/models/realm_playgrounds.py`): for a Pygments language, a named URL template
 * with one variable, `code`, that a client opens a code block in. Administrators add
 * and remove them; `realm_playgrounds` events carry the whole list.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import { adminRequired, ApiError, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { templateVariables } from '../rules/linkifiers.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role } from '../shared/types.js';
import { orgState } from '../core/state_slices.js';

/** A code playground (Zulip's `RealmPlayground`): where a code block of a language opens. */
export interface Playground {
  id: number;
  name: string;
  pygments_language: string;
  /** An RFC 6570 URL template whose one variable is `code`. */
  url_template: string;
}

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Code playgrounds, in the order they were added. */
    playgrounds: Playground[];
    /** The highest playground id ever used. */
    lastPlaygroundId: number;
  }
}

orgState({ playgrounds: { empty: () => [] }, lastPlaygroundId: { empty: () => 0 } });

/** Zulip's `RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH`. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;
/** Zulip's `check_pygments_language`: a space, letters, digits and `_`, the range `+` to `.` (`+ , - .`), `/` and `#`. */
const PYGMENTS_LANGUAGE = /^[ a-zA-Z0-9_+-./#]*$/;

/** A playground was added or removed: the list as it is now. */
export interface PlaygroundsChanged { type: 'PlaygroundsChanged'; org: number; playgrounds: Playground[]; last_id: number }

export interface AddPlayground { type: 'ADD_PLAYGROUND'; org: number; actor_id: number; name: string; pygments_language: string; url_template: string }
export interface RemovePlayground { type: 'REMOVE_PLAYGROUND'; org: number; actor_id: number; playground_id: number }

function requireAdmin(ctx: OrgContext, actorId: number): void {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
}

/**
 * Zulip's checks, in its order: the language's length and characters (the view),
 * then the model's `full_clean`: blank fields, the URL template (RFC 6570), `code` its
 * one variable, and the name unique per language. Errors of the model's checks carry
 * `errors` by field, as Zulip's `ValidationFailureError`; `msg` is the first.
 */
export function checkPlayground(ctx: OrgContext, name: string, language: string, template: string): void {
  if (Array.from(language).length > MAX_PYGMENTS_LANGUAGE_LENGTH) throw badRequest(`pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`);
  if (!PYGMENTS_LANGUAGE.test(language)) throw badRequest('Invalid characters in pygments language');
  const errors: Record<string, string[]> = {};
  const add = (field: string, msg: string): void => void (errors[field] ??= []).push(msg);
  const blank = 'This field cannot be blank.';
  if (name === '') add('name', blank);
  if (language === '') add('pygments_language', blank);
  const variables = templateVariables(template);
  if (template === '') add('url_template', blank);
  else if (variables === null) add('url_template', 'Invalid URL template.');
  if (variables !== null) {
    const names = new Set(variables);
    if (!names.has('code')) add('__all__', 'Missing the required variable "code" in the URL template');
    else if (names.size !== 1) add('__all__', '"code" should be the only variable present in the URL template');
  }
  if (Object.keys(errors).length === 0 && ctx.playgrounds.some((p) => p.name === name && p.pygments_language === language)) {
    add('__all__', 'Realm playground with this Realm, Pygments language and Name already exists.');
  }
  const first = Object.values(errors)[0];
  if (first) throw new ApiError('BAD_REQUEST', first[0], { errors });
}

export const addPlayground = command({
  type: 'ADD_PLAYGROUND',
  actor: 'org',
  decide(ctx: OrgContext, c: AddPlayground): Decision<{ id: number }, PlaygroundsChanged> {
    requireAdmin(ctx, c.actor_id);
    // Zulip strips each value before it checks them.
    const name = c.name.trim();
    const language = c.pygments_language.trim();
    const template = c.url_template.trim();
    checkPlayground(ctx, name, language, template);
    const id = ctx.lastPlaygroundId + 1;
    const playgrounds = [...ctx.playgrounds, { id, name, pygments_language: language, url_template: template }];
    return { facts: [{ type: 'PlaygroundsChanged', org: ctx.org.id, playgrounds, last_id: id }], value: { id } };
  },
});

export const removePlayground = command({
  type: 'REMOVE_PLAYGROUND',
  actor: 'org',
  decide(ctx: OrgContext, c: RemovePlayground): Decision<Record<string, never>, PlaygroundsChanged> {
    requireAdmin(ctx, c.actor_id);
    if (!ctx.playgrounds.some((p) => p.id === c.playground_id)) throw badRequest('Invalid playground');
    const playgrounds = ctx.playgrounds.filter((p) => p.id !== c.playground_id);
    return { facts: [{ type: 'PlaygroundsChanged', org: ctx.org.id, playgrounds, last_id: ctx.lastPlaygroundId }], value: {} };
  },
});

/** The playgrounds as `realm_playgrounds` shows them, in id order. */
export function listPlaygrounds(ctx: OrgContext): Playground[] {
  return ctx.playgrounds.map((p) => ({ id: p.id, name: p.name, pygments_language: p.pygments_language, url_template: p.url_template }));
}

const playgroundsChanged = orgFact<PlaygroundsChanged>({
  type: 'PlaygroundsChanged',
  apply(ctx, f) {
    ctx.playgrounds = f.playgrounds.map((p) => ({ ...p }));
    if (f.last_id > ctx.lastPlaygroundId) ctx.lastPlaygroundId = f.last_id;
  },
  notify: (f, seq, view) => [{ org: f.org, seq, type: 'realm_playgrounds', user_ids: activeUsersWhere(view, f.org), event: eventJson('realm_playgrounds', { realm_playgrounds: listPlaygrounds(view.org(f.org)!) }) }],
});

export const playgrounds = area({
  name: 'playgrounds',
  commands: [addPlayground, removePlayground],
  facts: [playgroundsChanged],
  register: [{ types: ['realm_playgrounds'], fill: (state, r, view) => void (state.realm_playgrounds = listPlaygrounds(view.org(r.org.id)!)) }],
});
