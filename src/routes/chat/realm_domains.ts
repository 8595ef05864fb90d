/**
 * The organization's email domains: list them; add, change and remove them
 * (organization owners only).
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { R, route, S } from '../../http/route.js';

export const listRealmDomains = route({
  method: 'GET',
  path: '/api/v1/realm/domains',
  operationId: 'getRealmDomains',
  auth: 'user',
  summary: "The organization's email domains",
  response: R.fields({ domains: Type.Array(Type.Object({ domain: Type.String(), allow_subdomains: Type.Boolean() })) }),
  params: {},
  handler({ org, runtime }) {
    return { json: { domains: runtime.org(org.id)!.domains.map((d) => ({ ...d })) } };
  },
});

export const addRealmDomain = route({
  method: 'POST',
  path: '/api/v1/realm/domains',
  operationId: 'createRealmDomain',
  auth: 'user',
  summary: 'Add an email domain (organization owners only)',
  response: R.fields({ new_domain: Type.Tuple([Type.String(), Type.Boolean()]) }),
  params: { domain: { schema: S.str, required: true }, allow_subdomains: { schema: S.bool, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_REALM_DOMAIN', org: org.id, actor_id: user.user_id, op: 'add', domain: params.domain, allow_subdomains: params.allow_subdomains });
    const domain = runtime.org(org.id)!.domains.find((d) => d.domain === params.domain.trim().toLowerCase())!;
    return { json: { new_domain: [domain.domain, domain.allow_subdomains] } };
  },
});

export const changeRealmDomain = route({
  method: 'PATCH',
  path: '/api/v1/realm/domains/{domain}',
  operationId: 'updateRealmDomain',
  auth: 'user',
  summary: 'Allow or disallow the subdomains of an email domain (organization owners only)',
  response: R.empty,
  params: { domain: { schema: S.str, in: 'path', required: true }, allow_subdomains: { schema: S.bool, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_REALM_DOMAIN', org: org.id, actor_id: user.user_id, op: 'change', domain: params.domain, allow_subdomains: params.allow_subdomains });
    return { json: {} };
  },
});

export const removeRealmDomain = route({
  method: 'DELETE',
  path: '/api/v1/realm/domains/{domain}',
  operationId: 'deleteRealmDomain',
  auth: 'user',
  summary: 'Remove an email domain (organization owners only)',
  response: R.empty,
  params: { domain: { schema: S.str, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_REALM_DOMAIN', org: org.id, actor_id: user.user_id, op: 'remove', domain: params.domain });
    return { json: {} };
  },
});
