/**
 * Linkifiers (Zulip's `zerver/actions/realm_linkifiers.py`): patterns that Markdown
 * turns into links, kept in order by the organization actor; administrators add,
 * change, remove and reorder them; `realm_linkifiers` events carry the whole list.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, ApiError, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { checkLinkifier } from '../rules/linkifiers.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role } from '../shared/types.js';
import { orgState } from '../core/state_slices.js';

/** A pattern that Markdown turns into links (Zulip's `RealmFilter`). */
export interface Linkifier {
  id: number;
  /** An RE2 pattern with Python-style named groups, as Zulip takes it. */
  pattern: string;
  /** An RFC 6570 URL template over the pattern's named groups. */
  url_template: string;
}

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Linkifiers, in the order they apply. */
    linkifiers: Linkifier[];
    /** The highest linkifier id ever used. */
    lastLinkifierId: number;
  }
}

orgState({ linkifiers: { empty: () => [] }, lastLinkifierId: { empty: () => 0 } });

/** The linkifier list changed: one added, changed or removed, or all reordered. The list as it is now. */
export interface LinkifiersChanged { type: 'LinkifiersChanged'; org: number; linkifiers: Linkifier[]; last_id: number }

export interface SetLinkifier { type: 'SET_LINKIFIER'; org: number; actor_id: number; op: 'add' | 'update' | 'remove'; id?: number; pattern?: string; url_template?: string }
export interface ReorderLinkifiers { type: 'REORDER_LINKIFIERS'; org: number; actor_id: number; order: number[] }

function requireAdmin(ctx: OrgContext, actorId: number): void {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
}

const changed = (ctx: OrgContext, linkifiers: Linkifier[], lastId = ctx.lastLinkifierId): LinkifiersChanged => ({ type: 'LinkifiersChanged', org: ctx.org.id, linkifiers, last_id: lastId });

export const setLinkifier = command({
  type: 'SET_LINKIFIER',
  actor: 'org',
  decide(ctx: OrgContext, c: SetLinkifier): Decision<{ id: number }, LinkifiersChanged> {
    requireAdmin(ctx, c.actor_id);
    const existing = c.id === undefined ? undefined : ctx.linkifiers.find((l) => l.id === c.id);
    if (c.op !== 'add' && !existing) throw badRequest('Linkifier not found.');
    if (c.op === 'remove') return { facts: [changed(ctx, ctx.linkifiers.filter((l) => l.id !== c.id))], value: { id: c.id! } };
    const pattern = c.pattern ?? '';
    const urlTemplate = c.url_template ?? '';
    checkLinkifier(pattern, urlTemplate);
    if (ctx.linkifiers.some((l) => l.pattern === pattern && l.id !== c.id)) {
      const msg = 'Linkifier with this Realm and Pattern already exists.';
      throw new ApiError('BAD_REQUEST', msg, { errors: { __all__: [msg] } });
    }
    if (c.op === 'add') {
      const id = ctx.lastLinkifierId + 1;
      return { facts: [changed(ctx, [...ctx.linkifiers, { id, pattern, url_template: urlTemplate }], id)], value: { id } };
    }
    return { facts: [changed(ctx, ctx.linkifiers.map((l) => (l.id === c.id ? { id: l.id, pattern, url_template: urlTemplate } : l)))], value: { id: c.id! } };
  },
});

export const reorderLinkifiers = command({
  type: 'REORDER_LINKIFIERS',
  actor: 'org',
  decide(ctx: OrgContext, c: ReorderLinkifiers): Decision<Record<string, never>, LinkifiersChanged> {
    requireAdmin(ctx, c.actor_id);
    if (new Set(c.order).size !== c.order.length) throw badRequest('The ordered list must not contain duplicated linkifiers');
    const byId = new Map(ctx.linkifiers.map((l) => [l.id, l]));
    if (c.order.length !== byId.size || c.order.some((id) => !byId.has(id))) throw badRequest('The ordered list must enumerate all existing linkifiers exactly once');
    return { facts: [changed(ctx, c.order.map((id) => byId.get(id)!))], value: {} };
  },
});

/** The ids of the organization's linkifiers, in their order (none for no such organization). */
export function linkifierIds(view: StateView, org: number): number[] {
  return view.org(org)?.linkifiers.map((l) => l.id) ?? [];
}

/** The linkifiers as `realm_linkifiers` and `GET /realm/linkifiers` show them. */
export function listLinkifiers(ctx: OrgContext): Array<{ pattern: string; url_template: string; id: number }> {
  return ctx.linkifiers.map((l) => ({ pattern: l.pattern, url_template: l.url_template, id: l.id }));
}

const linkifiersChanged = orgFact<LinkifiersChanged>({
  type: 'LinkifiersChanged',
  apply(ctx, f) {
    ctx.linkifiers = f.linkifiers.map((l) => ({ ...l }));
    if (f.last_id > ctx.lastLinkifierId) ctx.lastLinkifierId = f.last_id;
  },
  notify: (f, seq, view) => [{ org: f.org, seq, type: 'realm_linkifiers', user_ids: activeUsersWhere(view, f.org), event: eventJson('realm_linkifiers', { realm_linkifiers: listLinkifiers(view.org(f.org)!) }) }],
});

export const linkifiers = area({
  name: 'linkifiers',
  commands: [setLinkifier, reorderLinkifiers],
  facts: [linkifiersChanged],
  register: [{ types: ['realm_linkifiers'], fill: (state, r, view) => void (state.realm_linkifiers = listLinkifiers(view.org(r.org.id)!)) }],
});
