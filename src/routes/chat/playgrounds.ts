/**
 * Code playgrounds: (administrators) add and remove them. Clients read them from
 * `/register` (`realm_playgrounds`) and its events; Zulip has no list endpoint.
 */
import { route, S } from '../../http/route.js';

export const addCodePlayground = route({
  method: 'POST',
  path: '/api/v1/realm/playgrounds',
  operationId: 'addCodePlayground',
  auth: 'user',
  summary: 'Add a code playground (organization administrators only)',
  params: { name: { schema: S.str, required: true }, pygments_language: { schema: S.str, required: true }, url_template: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    const { id } = await runtime.execute({ type: 'ADD_PLAYGROUND', org: org.id, actor_id: user.user_id, name: params.name, pygments_language: params.pygments_language, url_template: params.url_template });
    return { json: { id } };
  },
});

export const removeCodePlayground = route({
  method: 'DELETE',
  path: '/api/v1/realm/playgrounds/{playground_id}',
  operationId: 'removeCodePlayground',
  auth: 'user',
  summary: 'Remove a code playground (organization administrators only)',
  params: { playground_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REMOVE_PLAYGROUND', org: org.id, actor_id: user.user_id, playground_id: params.playground_id });
    return { json: {} };
  },
});
