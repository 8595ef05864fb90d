/**
 * Linkifiers: list them, and (administrators) add, change, remove and reorder them.
 */
import { listLinkifiers } from '../../../actors/areas/linkifiers.js';
import { route, S } from '../../http/route.js';

export const getLinkifiers = route({
  method: 'GET',
  path: '/api/v1/realm/linkifiers',
  operationId: 'getLinkifiers',
  auth: 'user',
  summary: "The organization's linkifiers, in the order they apply",
  params: {},
  handler({ org, runtime }) {
    return { json: { linkifiers: listLinkifiers(runtime.org(org.id)!) } };
  },
});

export const reorderLinkifiers = route({
  method: 'PATCH',
  path: '/api/v1/realm/linkifiers',
  operationId: 'reorderLinkifiers',
  auth: 'user',
  summary: 'Reorder the linkifiers (organization administrators only)',
  params: { ordered_linkifier_ids: { schema: S.intArray, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REORDER_LINKIFIERS', org: org.id, actor_id: user.user_id, order: params.ordered_linkifier_ids });
    return { json: {} };
  },
});

export const addLinkifier = route({
  method: 'POST',
  path: '/api/v1/realm/filters',
  operationId: 'addLinkifier',
  auth: 'user',
  summary: 'Add a linkifier (organization administrators only)',
  params: { pattern: { schema: S.str, required: true }, url_template: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    const { id } = await runtime.execute({ type: 'SET_LINKIFIER', org: org.id, actor_id: user.user_id, op: 'add', pattern: params.pattern, url_template: params.url_template });
    return { json: { id } };
  },
});

export const updateLinkifier = route({
  method: 'PATCH',
  path: '/api/v1/realm/filters/{filter_id}',
  operationId: 'updateLinkifier',
  auth: 'user',
  summary: 'Change a linkifier (organization administrators only)',
  params: { filter_id: { schema: S.nonNegInt, in: 'path', required: true }, pattern: { schema: S.str, required: true }, url_template: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_LINKIFIER', org: org.id, actor_id: user.user_id, op: 'update', id: params.filter_id, pattern: params.pattern, url_template: params.url_template });
    return { json: {} };
  },
});

export const removeLinkifier = route({
  method: 'DELETE',
  path: '/api/v1/realm/filters/{filter_id}',
  operationId: 'removeLinkifier',
  auth: 'user',
  summary: 'Remove a linkifier (organization administrators only)',
  params: { filter_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_LINKIFIER', org: org.id, actor_id: user.user_id, op: 'remove', id: params.filter_id });
    return { json: {} };
  },
});
