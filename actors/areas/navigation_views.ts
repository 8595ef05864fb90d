/**
 * Navigation views (Zulip's `zerver/actions/navigation_views.py`): a user's settings
 * for the built-in views of the left sidebar (pinned or in the menu) and their own
 * custom views, each named by its URL fragment. The user actor keeps them;
 * `navigation_view` events (`add`, `update`, `remove`) tell the user's other clients.
 */
import { area, command, userFact } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { codePointLength } from '../rules/messages.js';
import type { NavigationView } from '../rules/personal.js';
import { toOwner } from '../render/events.js';

/** Zulip's `BUILT_IN_VIEW_FRAGMENTS`: views that exist without being added, and take no name. */
export const BUILT_IN_VIEW_FRAGMENTS: ReadonlySet<string> = new Set(['inbox', 'recent', 'feed', 'drafts', 'narrow/has/reaction/sender/me', 'narrow/is/mentioned', 'narrow/is/starred']);
/** Zulip's column sizes for `NavigationView.fragment` and `name`. */
export const MAX_FRAGMENT_LENGTH = 255;
export const MAX_VIEW_NAME_LENGTH = 128;

export interface NavigationViewAdded { type: 'NavigationViewAdded'; org: number; user_id: number; view: NavigationView }
/** A view changed; `data` holds what was given (`name`, `is_pinned`). */
export interface NavigationViewUpdated { type: 'NavigationViewUpdated'; org: number; user_id: number; fragment: string; data: { name?: string; is_pinned?: boolean } }
export interface NavigationViewRemoved { type: 'NavigationViewRemoved'; org: number; user_id: number; fragment: string }

export interface AddNavigationView { type: 'ADD_NAVIGATION_VIEW'; user_id: number; org: number; fragment: string; is_pinned: boolean; name?: string }
export interface UpdateNavigationView { type: 'UPDATE_NAVIGATION_VIEW'; user_id: number; org: number; fragment: string; is_pinned?: boolean; name?: string }
export interface RemoveNavigationView { type: 'REMOVE_NAVIGATION_VIEW'; user_id: number; org: number; fragment: string }

/** Stripped, not blank, at most `max` code points. */
function checkField(value: string, name: string, max: number): string {
  const v = value.trim();
  if (v === '') throw badRequest(`${name} cannot be blank`);
  if (codePointLength(v) > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
  return v;
}

function checkNameFree(ctx: UserContext, name: string | undefined): void {
  if (name === undefined) return;
  for (const v of ctx.personal.views.values()) if (v.name === name) throw badRequest('Navigation view already exists.');
}

function accessView(ctx: UserContext, fragment: string): NavigationView {
  const v = ctx.personal.views.get(fragment);
  if (!v) throw new ApiError('NOT_FOUND', 'Navigation view does not exist.');
  return v;
}

export const addNavigationView = command({
  type: 'ADD_NAVIGATION_VIEW',
  actor: 'user',
  decide(ctx: UserContext, c: AddNavigationView): Decision<Record<string, never>, NavigationViewAdded> {
    const fragment = checkField(c.fragment, 'fragment', MAX_FRAGMENT_LENGTH);
    const name = c.name === undefined ? undefined : checkField(c.name, 'name', MAX_VIEW_NAME_LENGTH);
    if (BUILT_IN_VIEW_FRAGMENTS.has(fragment)) {
      if (name !== undefined) throw badRequest('Built-in views cannot have a custom name.');
    } else if (name === undefined) throw badRequest('Custom views must have a valid name.');
    if (ctx.personal.views.has(fragment)) throw badRequest('Navigation view already exists.');
    checkNameFree(ctx, name);
    const view: NavigationView = { fragment, is_pinned: c.is_pinned, name: name ?? null };
    return { facts: [{ type: 'NavigationViewAdded', org: c.org, user_id: ctx.user_id, view }], value: {} };
  },
});

export const updateNavigationView = command({
  type: 'UPDATE_NAVIGATION_VIEW',
  actor: 'user',
  decide(ctx: UserContext, c: UpdateNavigationView): Decision<Record<string, never>, NavigationViewUpdated> {
    const name = c.name === undefined ? undefined : checkField(c.name, 'name', MAX_VIEW_NAME_LENGTH);
    if (BUILT_IN_VIEW_FRAGMENTS.has(c.fragment) && name !== undefined) throw badRequest('Built-in views cannot have a custom name.');
    checkNameFree(ctx, name);
    accessView(ctx, c.fragment);
    const data: NavigationViewUpdated['data'] = {};
    if (name !== undefined) data.name = name;
    if (c.is_pinned !== undefined) data.is_pinned = c.is_pinned;
    return { facts: [{ type: 'NavigationViewUpdated', org: c.org, user_id: ctx.user_id, fragment: c.fragment, data }], value: {} };
  },
});

export const removeNavigationView = command({
  type: 'REMOVE_NAVIGATION_VIEW',
  actor: 'user',
  decide(ctx: UserContext, c: RemoveNavigationView): Decision<Record<string, never>, NavigationViewRemoved> {
    accessView(ctx, c.fragment);
    return { facts: [{ type: 'NavigationViewRemoved', org: c.org, user_id: ctx.user_id, fragment: c.fragment }], value: {} };
  },
});

/** The user's views, in the order they were added. */
export function listNavigationViews(view: StateView, org: number, userId: number): NavigationView[] {
  return [...(view.user(org, userId)?.personal.views.values() ?? [])];
}

const navigationViewAdded = userFact<NavigationViewAdded>({
  type: 'NavigationViewAdded',
  apply: (ctx, f) => void ctx.personal.views.set(f.view.fragment, f.view),
  notify: (f, seq) => toOwner(f, seq, 'navigation_view', { op: 'add', navigation_view: f.view }),
});

const navigationViewUpdated = userFact<NavigationViewUpdated>({
  type: 'NavigationViewUpdated',
  apply(ctx, f) {
    const v = ctx.personal.views.get(f.fragment);
    // Replaced, not changed: a snapshot being written keeps the object it holds.
    if (v) ctx.personal.views.set(f.fragment, { ...v, ...f.data });
  },
  notify: (f, seq) => toOwner(f, seq, 'navigation_view', { op: 'update', fragment: f.fragment, data: f.data }),
});

const navigationViewRemoved = userFact<NavigationViewRemoved>({
  type: 'NavigationViewRemoved',
  apply: (ctx, f) => void ctx.personal.views.delete(f.fragment),
  notify: (f, seq) => toOwner(f, seq, 'navigation_view', { op: 'remove', fragment: f.fragment }),
});

export const navigationViews = area({
  name: 'navigation views',
  commands: [addNavigationView, updateNavigationView, removeNavigationView],
  facts: [navigationViewAdded, navigationViewUpdated, navigationViewRemoved],
  register: [{ types: ['navigation_view'], fill: (state, r, view) => void (state.navigation_views = listNavigationViews(view, r.org.id, r.user.user_id)) }],
});
