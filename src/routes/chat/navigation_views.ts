/**
 * The caller's navigation views: list, add, update, remove.
 */
import { listNavigationViews } from '../../../actors/areas/navigation_views.js';
import { route, S } from '../../http/route.js';

// Zulip routes `navigation_views/<path:fragment>`: a fragment's slashes may arrive raw (`narrow/is/alerted`).
const fragment = { schema: S.str, required: true, in: 'path', rest: true } as const;

export const getNavigationViews = route({
  method: 'GET',
  path: '/api/v1/navigation_views',
  operationId: 'getNavigationViews',
  auth: 'user',
  summary: "The caller's navigation views",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { navigation_views: listNavigationViews(runtime, org.id, user.user_id) } };
  },
});

export const addNavigationView = route({
  method: 'POST',
  path: '/api/v1/navigation_views',
  operationId: 'addNavigationView',
  auth: 'user',
  summary: 'Configure a built-in view (no name) or add a custom view (with a name)',
  params: { fragment: { schema: S.str, required: true }, is_pinned: { schema: S.bool, required: true }, name: { schema: S.str } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'ADD_NAVIGATION_VIEW', user_id: user.user_id, org: org.id, fragment: params.fragment, is_pinned: params.is_pinned, name: params.name });
    return { json: {} };
  },
});

export const updateNavigationView = route({
  method: 'PATCH',
  path: '/api/v1/navigation_views/{fragment}',
  operationId: 'editNavigationView',
  auth: 'user',
  summary: "Pin or hide a navigation view, or rename a custom one",
  params: { fragment, is_pinned: { schema: S.bool }, name: { schema: S.str } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UPDATE_NAVIGATION_VIEW', user_id: user.user_id, org: org.id, fragment: params.fragment, is_pinned: params.is_pinned, name: params.name });
    return { json: {} };
  },
});

export const removeNavigationView = route({
  method: 'DELETE',
  path: '/api/v1/navigation_views/{fragment}',
  operationId: 'removeNavigationView',
  auth: 'user',
  summary: 'Remove a navigation view',
  params: { fragment },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REMOVE_NAVIGATION_VIEW', user_id: user.user_id, org: org.id, fragment: params.fragment });
    return { json: {} };
  },
});
