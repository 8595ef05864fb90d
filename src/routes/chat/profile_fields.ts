/**
 * Custom profile fields: the organization's fields (administrators create, change,
 * reorder and delete them) and the caller's own values (`/users/me/profile_data`).
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { listProfileFields } from '../../../actors/areas/profile_fields.js';
import { R, route, S } from '../../http/route.js';

const fieldSettings = {
  name: { schema: S.str },
  hint: { schema: S.str },
  field_data: { schema: S.obj },
  display_in_profile_summary: { schema: S.bool },
  required: { schema: S.bool },
  editable_by_user: { schema: S.bool },
};

export const getProfileFields = route({
  method: 'GET',
  path: '/api/v1/realm/profile_fields',
  operationId: 'getCustomProfileFields',
  auth: 'user',
  summary: "The organization's custom profile fields, in order",
  params: {},
  handler({ org, runtime }) {
    return { json: { custom_fields: listProfileFields(runtime.org(org.id)!) } };
  },
});

export const createProfileField = route({
  method: 'POST',
  path: '/api/v1/realm/profile_fields',
  operationId: 'createCustomProfileField',
  auth: 'user',
  summary: 'Create a custom profile field (organization administrators only)',
  params: { ...fieldSettings, field_type: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    const { id } = await runtime.execute({ type: 'CREATE_PROFILE_FIELD', org: org.id, actor_id: user.user_id, ...params });
    return { json: { id } };
  },
});

export const reorderProfileFields = route({
  method: 'PATCH',
  path: '/api/v1/realm/profile_fields',
  operationId: 'reorderCustomProfileFields',
  auth: 'user',
  summary: 'Reorder the custom profile fields (organization administrators only)',
  params: { order: { schema: S.intArray, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REORDER_PROFILE_FIELDS', org: org.id, actor_id: user.user_id, order: params.order });
    return { json: {} };
  },
});

export const updateProfileField = route({
  method: 'PATCH',
  path: '/api/v1/realm/profile_fields/{field_id}',
  operationId: 'updateCustomProfileField',
  auth: 'user',
  summary: 'Change a custom profile field (organization administrators only)',
  response: R.empty,
  params: { field_id: { schema: S.nonNegInt, in: 'path', required: true }, ...fieldSettings },
  async handler({ params, org, user, runtime }) {
    const { field_id, ...settings } = params;
    await runtime.execute({ type: 'UPDATE_PROFILE_FIELD', org: org.id, actor_id: user.user_id, field_id, ...settings });
    return { json: {} };
  },
});

export const deleteProfileField = route({
  method: 'DELETE',
  path: '/api/v1/realm/profile_fields/{field_id}',
  operationId: 'deleteCustomProfileField',
  auth: 'user',
  summary: 'Delete a custom profile field and every value of it (organization administrators only)',
  response: R.empty,
  params: { field_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DELETE_PROFILE_FIELD', org: org.id, actor_id: user.user_id, field_id: params.field_id });
    return { json: {} };
  },
});

const ProfileDataItem = Type.Object(
  { id: Type.Integer(), value: Type.Union([Type.String(), Type.Array(Type.Integer()), Type.Null()]) },
  { additionalProperties: false },
);

export const updateProfileData = route({
  method: 'PATCH',
  path: '/api/v1/users/me/profile_data',
  operationId: 'updateProfileData',
  auth: 'user',
  summary: "Set the caller's own custom profile field values (null removes one), all or nothing",
  response: R.empty,
  params: { data: { schema: Type.Array(ProfileDataItem), required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_PROFILE_DATA', org: org.id, actor_id: user.user_id, user_id: user.user_id, data: params.data });
    return { json: {} };
  },
});

export const removeProfileData = route({
  method: 'DELETE',
  path: '/api/v1/users/me/profile_data',
  operationId: 'removeProfileData',
  auth: 'user',
  summary: "Remove the caller's own values of some custom profile fields",
  response: R.empty,
  params: { data: { schema: S.intArray, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REMOVE_PROFILE_DATA', org: org.id, actor_id: user.user_id, user_id: user.user_id, field_ids: params.data });
    return { json: {} };
  },
});
