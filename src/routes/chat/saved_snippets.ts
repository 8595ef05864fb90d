/**
 * The caller's saved snippets: list, create, edit, delete.
 */
import { listSavedSnippets } from '../../../actors/areas/saved_snippets.js';
import { route, S } from '../../http/route.js';

const snippetId = { schema: S.int, required: true, in: 'path' } as const;

export const getSavedSnippets = route({
  method: 'GET',
  path: '/api/v1/saved_snippets',
  operationId: 'getSavedSnippets',
  auth: 'user',
  summary: "The caller's saved snippets",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { saved_snippets: listSavedSnippets(runtime, org.id, user.user_id) } };
  },
});

export const createSavedSnippet = route({
  method: 'POST',
  path: '/api/v1/saved_snippets',
  operationId: 'createSavedSnippet',
  auth: 'user',
  summary: 'Save a snippet (title at most 60 characters)',
  params: { title: { schema: S.str, required: true }, content: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'CREATE_SAVED_SNIPPET', user_id: user.user_id, org: org.id, title: params.title, content: params.content });
    return { json: value };
  },
});

export const editSavedSnippet = route({
  method: 'PATCH',
  path: '/api/v1/saved_snippets/{saved_snippet_id}',
  operationId: 'editSavedSnippet',
  auth: 'user',
  summary: "Change a saved snippet's title or content",
  params: { saved_snippet_id: snippetId, title: { schema: S.str }, content: { schema: S.str } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'EDIT_SAVED_SNIPPET', user_id: user.user_id, org: org.id, saved_snippet_id: params.saved_snippet_id, title: params.title, content: params.content });
    return { json: {} };
  },
});

export const deleteSavedSnippet = route({
  method: 'DELETE',
  path: '/api/v1/saved_snippets/{saved_snippet_id}',
  operationId: 'deleteSavedSnippet',
  auth: 'user',
  summary: 'Delete a saved snippet',
  params: { saved_snippet_id: snippetId },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DELETE_SAVED_SNIPPET', user_id: user.user_id, org: org.id, saved_snippet_id: params.saved_snippet_id });
    return { json: {} };
  },
});
