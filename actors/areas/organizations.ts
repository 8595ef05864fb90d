/**
 * Organizations: creating one with its first owner, deactivating and reactivating
 * it (operators only, from the CLI), and the organization's sections of `/register`:
 * its settings, and the sections of features it has none of yet.
 */
import { area, command, fact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest } from '../shared/errors.js';
import { addUser } from '../kinds/organization.js';
import type { ServerContext } from '../kinds/server.js';
import { realmSection } from '../render/register_payloads.js';
import { realmSettings } from '../rules/realm_settings.js';
import { Role, type OrgRecord, type UserRecord } from '../shared/types.js';
import { makeUser } from '../rules/users.js';

/** An organization and its first owner came into being. */
export interface OrgCreated { type: 'OrgCreated'; org: OrgRecord; owner: UserRecord }
/** An organization was deactivated (`active` false) or reactivated by an operator. */
export interface OrgActivationChanged { type: 'OrgActivationChanged'; org: number; active: boolean }

/** Create an organization together with its first owner. */
export interface CreateOrg {
  type: 'CREATE_ORG';
  name: string;
  subdomain: string;
  owner_email: string;
  owner_password_hash: string;
  owner_name: string;
}
/** Deactivate or reactivate an organization (operators only, from the CLI). */
export interface SetOrgActive {
  type: 'SET_ORG_ACTIVE';
  subdomain: string;
  active: boolean;
}

/** Subdomains are DNS labels, or `""` for the default organization. */
const SUBDOMAIN = /^(|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)$/;

export const createOrg = command({
  type: 'CREATE_ORG',
  actor: 'server',
  decide(ctx: ServerContext, c: CreateOrg, env: DecideEnv): Decision<{ org: OrgRecord; owner: UserRecord }, OrgCreated> {
    const subdomain = c.subdomain.toLowerCase();
    if (!SUBDOMAIN.test(subdomain)) throw badRequest(`Invalid subdomain: '${c.subdomain}'`);
    if (ctx.bySubdomain.has(subdomain)) throw new ApiError('BAD_REQUEST', `Subdomain '${subdomain}' is already in use`);
    if (c.name.trim().length === 0 || c.name.length > 40) throw badRequest('Organization name must be 1 to 40 characters');
    let id = 1;
    for (const existing of ctx.orgs.keys()) id = Math.max(id, existing + 1);
    const org: OrgRecord = { id, name: c.name.trim(), subdomain, description: '', date_created: env.now(), deactivated: false };
    const owner = makeUser(env, {
      user_id: 1,
      recipient_id: 1,
      email: c.owner_email,
      password_hash: c.owner_password_hash,
      full_name: c.owner_name,
      role: Role.OWNER,
      waitingPeriodDays: 0,
    });
    return { facts: [{ type: 'OrgCreated', org, owner }], value: { org, owner } };
  },
});

export const setOrgActive = command({
  type: 'SET_ORG_ACTIVE',
  actor: 'server',
  decide(ctx: ServerContext, c: SetOrgActive): Decision<{ organization_id: number; active: boolean }, OrgActivationChanged> {
    const id = ctx.bySubdomain.get(c.subdomain.toLowerCase());
    const org = id === undefined ? undefined : ctx.orgs.get(id);
    if (!org) throw badRequest(`No organization with subdomain '${c.subdomain}'`);
    const value = { organization_id: org.id, active: c.active };
    if (org.deactivated === !c.active) return { facts: [], value };
    return { facts: [{ type: 'OrgActivationChanged', org: org.id, active: c.active }], value };
  },
});

const orgCreated = fact<OrgCreated>({
  type: 'OrgCreated',
  apply: {
    server(ctx, f) {
      ctx.orgs.set(f.org.id, { ...f.org });
      ctx.bySubdomain.set(f.org.subdomain, f.org.id);
    },
    org(ctx, f) {
      ctx.org = { ...f.org };
      addUser(ctx, f.owner);
    },
  },
  route(f, to) {
    to.server();
    to.org(f.org.id, { create: true });
    to.user(f.org.id, f.owner.user_id, { create: true });
  },
});

const orgActivationChanged = fact<OrgActivationChanged>({
  type: 'OrgActivationChanged',
  apply: {
    server(ctx, f) {
      const org = ctx.orgs.get(f.org);
      if (org) org.deactivated = !f.active;
    },
    org(ctx, f) {
      ctx.org.deactivated = !f.active;
    },
  },
  route(f, to) {
    to.server();
    to.org(f.org);
  },
});

/**
 * Sections of features this server has none of yet (scheduled messages, emoji…):
 * answered as Zulip answers for an organization that has none, so that clients
 * initialize. Each moves to its own area when the feature is built.
 */
const EMPTY_SECTIONS: Array<{ key: string; type?: string; make: () => unknown }> = [
  { key: 'recent_private_conversations', make: () => [] },
  // Asked for as `default_stream_groups`, answered as Zulip names it.
  { key: 'realm_default_stream_groups', type: 'default_stream_groups', make: () => [] },
  { key: 'onboarding_steps', make: () => [] },
];

/** The ids of every organization on the server, active or not, ascending: what no organization's API lists. */
export function organizationIds(view: StateView): number[] {
  return [...view.server().orgs.keys()].sort((a, b) => a - b);
}

export const organizations = area({
  name: 'organizations',
  commands: [createOrg, setOrgActive],
  facts: [orgCreated, orgActivationChanged],
  register: [
    { types: ['realm'], fill: (state, r, view) => Object.assign(state, realmSection(view.org(r.org.id)?.org ?? r.org, r.realmUrl, r.heartbeatMaxMs, realmSettings(view.org(r.org.id)))) },
    ...EMPTY_SECTIONS.map(({ key, type, make }) => ({ types: [type ?? key], fill: (state: Record<string, unknown>) => void (state[key] = make()) })),
  ],
});
