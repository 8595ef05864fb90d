/**
 * The organization's email domains (Zulip's `zerver/actions/realm_domains.py` and
 * `zerver/views/realm_domains.py`): listed by anyone, added, changed and removed by
 * owners, with `realm_domains` events to everyone. Removing the last domain lifts
 * `emails_restricted_to_domains`, as in Zulip.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import { ApiError, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role } from '../shared/types.js';
import { orgState } from '../core/state_slices.js';

/** An email domain of the organization. */
export interface RealmDomain {
  domain: string;
  allow_subdomains: boolean;
}

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** The organization's email domains (`realm_domains`), in the order they were added. */
    domains: RealmDomain[];
  }
}

orgState({ domains: { empty: () => [] } });

/** A domain was added, changed (`allow_subdomains`) or removed. */
export interface RealmDomainChanged {
  type: 'RealmDomainChanged';
  org: number;
  op: 'add' | 'change' | 'remove';
  domain: RealmDomain;
  /** The last domain went while emails were restricted to the domains: the restriction goes too. */
  lifts_restriction?: boolean;
}

export interface SetRealmDomain { type: 'SET_REALM_DOMAIN'; org: number; actor_id: number; op: 'add' | 'change' | 'remove'; domain: string; allow_subdomains?: boolean }

/** Zulip's `validate_domain`. */
export function checkDomain(raw: string): string {
  const domain = raw.trim().toLowerCase();
  if (domain === '') throw badRequest("Invalid domain: Domain can't be empty.");
  if (!domain.includes('.')) throw badRequest('Invalid domain: Domain must have at least one dot (.)');
  if (domain.length > 255) throw badRequest('Invalid domain: Domain is too long');
  if (domain.startsWith('.') || domain.endsWith('.')) throw badRequest("Invalid domain: Domain cannot start or end with a '.'");
  // Stricter than Zulip in one way: a top-level domain has letters ("1.5" is no domain).
  if (!/[a-z]/.test(domain.slice(domain.lastIndexOf('.') + 1))) throw badRequest('Invalid domain: Domain must end in a top-level domain of letters.');
  for (const label of domain.split('.')) {
    if (label === '') throw badRequest("Invalid domain: Consecutive '.' are not allowed.");
    if (label.startsWith('-') || label.endsWith('-')) throw badRequest("Invalid domain: Subdomains cannot start or end with a '-'.");
    if (!/^[a-z0-9-]+$/.test(label)) throw badRequest('Invalid domain: Domain can only have letters, numbers, \'.\' and \'-\'s.');
  }
  return domain;
}

export const setRealmDomain = command({
  type: 'SET_REALM_DOMAIN',
  actor: 'org',
  decide(ctx: OrgContext, c: SetRealmDomain): Decision<Record<string, never>, RealmDomainChanged> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    const domain = checkDomain(c.domain);
    const existing = ctx.domains.find((d) => d.domain === domain);
    if (c.op === 'add') {
      if (existing) throw badRequest(`The domain ${domain} is already a part of your organization.`);
      return { facts: [{ type: 'RealmDomainChanged', org: c.org, op: 'add', domain: { domain, allow_subdomains: c.allow_subdomains ?? false } }], value: {} };
    }
    if (!existing) throw badRequest(`No entry found for domain ${domain}.`);
    if (c.op === 'change') {
      const allow = c.allow_subdomains ?? existing.allow_subdomains;
      return { facts: allow === existing.allow_subdomains ? [] : [{ type: 'RealmDomainChanged', org: c.org, op: 'change', domain: { domain, allow_subdomains: allow } }], value: {} };
    }
    const fact: RealmDomainChanged = { type: 'RealmDomainChanged', org: c.org, op: 'remove', domain: existing };
    if (ctx.domains.length === 1 && realmSettings(ctx).emails_restricted_to_domains) fact.lifts_restriction = true;
    return { facts: [fact], value: {} };
  },
});

const realmDomainChanged = orgFact<RealmDomainChanged>({
  type: 'RealmDomainChanged',
  apply(ctx, f) {
    // Replaced, not changed: a snapshot being written keeps the list it holds.
    const others = ctx.domains.filter((d) => d.domain !== f.domain.domain);
    if (f.op === 'remove') {
      ctx.domains = others;
      if (f.lifts_restriction) ctx.realmSettings = { ...ctx.realmSettings, emails_restricted_to_domains: false };
    } else if (f.op === 'add') ctx.domains = [...others, { ...f.domain }];
    else ctx.domains = ctx.domains.map((d) => (d.domain === f.domain.domain ? { ...f.domain } : d));
  },
  notify(f, seq, view) {
    const everyone = activeUsersWhere(view, f.org);
    const out: Delivery[] = [{
      org: f.org, seq, type: 'realm_domains', user_ids: everyone,
      event: f.op === 'remove' ? eventJson('realm_domains', { op: 'remove', domain: f.domain.domain }) : eventJson('realm_domains', { op: f.op, realm_domain: f.domain }),
    }];
    if (f.lifts_restriction) out.push({ org: f.org, seq, type: 'realm', user_ids: everyone, event: eventJson('realm', { op: 'update', property: 'emails_restricted_to_domains', value: false }) });
    return out;
  },
});

export const realmDomains = area({
  name: 'realm domains',
  commands: [setRealmDomain],
  facts: [realmDomainChanged],
  register: [{ types: ['realm_domains'], fill: (state, r, view) => void (state.realm_domains = view.org(r.org.id)!.domains.map((d) => ({ ...d }))) }],
});
