/**
 * The caller's drafts: list, create, edit, delete (while `enable_drafts_synchronization` is on).
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { checkDraftsSynchronized, listDrafts, MAX_DRAFTS_PER_REQUEST } from '../../../actors/areas/drafts.js';
import { Enum, route, S } from '../../http/route.js';

/** A draft as clients send it (Zulip's `DraftData`: no other fields). */
const DraftSchema = Type.Object(
  { type: Enum(['', 'stream', 'private']), to: Type.Array(Type.Integer()), topic: Type.String(), content: Type.String(), timestamp: Type.Optional(Type.Number()) },
  { additionalProperties: false },
);
const draftId = { schema: S.int, required: true, in: 'path' } as const;

export const getDrafts = route({
  method: 'GET',
  path: '/api/v1/drafts',
  operationId: 'getDrafts',
  auth: 'user',
  summary: "The caller's drafts, oldest edit first",
  params: {},
  handler({ org, user, runtime }) {
    checkDraftsSynchronized(runtime, org.id, user.user_id);
    const drafts = listDrafts(runtime, org.id, user.user_id);
    return { json: { count: drafts.length, drafts } };
  },
});

export const createDrafts = route({
  method: 'POST',
  path: '/api/v1/drafts',
  operationId: 'createDrafts',
  auth: 'user',
  summary: `Create drafts (at most ${MAX_DRAFTS_PER_REQUEST} a request); their ids come back in the order given`,
  params: { drafts: { schema: Type.Array(DraftSchema, { maxItems: MAX_DRAFTS_PER_REQUEST }) } },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'CREATE_DRAFTS', user_id: user.user_id, org: org.id, drafts: params.drafts ?? [] });
    return { json: value };
  },
});

export const editDraft = route({
  method: 'PATCH',
  path: '/api/v1/drafts/{draft_id}',
  operationId: 'editDraft',
  auth: 'user',
  summary: 'Replace a draft',
  params: { draft_id: draftId, draft: { schema: DraftSchema, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'EDIT_DRAFT', user_id: user.user_id, org: org.id, draft_id: params.draft_id, draft: params.draft });
    return { json: {} };
  },
});

export const deleteDraft = route({
  method: 'DELETE',
  path: '/api/v1/drafts/{draft_id}',
  operationId: 'deleteDraft',
  auth: 'user',
  summary: 'Delete a draft',
  params: { draft_id: draftId },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DELETE_DRAFT', user_id: user.user_id, org: org.id, draft_id: params.draft_id });
    return { json: {} };
  },
});
