/**
 * Channel folders: create, list, reorder, and change one (rename, describe,
 * archive, unarchive). Changes are for administrators only.
 */
import { listChannelFolders } from '../../../actors/areas/channel_folders.js';
import { route, S } from '../../http/route.js';

export const createChannelFolder = route({
  method: 'POST',
  path: '/api/v1/channel_folders/create',
  operationId: 'createChannelFolder',
  auth: 'user',
  summary: 'Create a channel folder (organization administrators only)',
  params: { name: { schema: S.str, required: true }, description: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    const value = await runtime.execute({ type: 'CREATE_CHANNEL_FOLDER', org: org.id, actor_id: user.user_id, name: params.name, description: params.description });
    return { json: { channel_folder_id: value.channel_folder_id } };
  },
});

export const getChannelFolders = route({
  method: 'GET',
  path: '/api/v1/channel_folders',
  operationId: 'getChannelFolders',
  auth: 'user',
  summary: 'List the channel folders, in their order',
  params: { include_archived: { schema: S.bool } },
  handler({ params, org, runtime }) {
    return { json: { channel_folders: listChannelFolders(runtime, org.id, params.include_archived ?? false) } };
  },
});

export const reorderChannelFolders = route({
  method: 'PATCH',
  path: '/api/v1/channel_folders',
  operationId: 'patchChannelFolders',
  auth: 'user',
  summary: 'Reorder the channel folders (organization administrators only)',
  params: { order: { schema: S.intArray, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REORDER_CHANNEL_FOLDERS', org: org.id, actor_id: user.user_id, order: params.order });
    return { json: {} };
  },
});

export const updateChannelFolder = route({
  method: 'PATCH',
  path: '/api/v1/channel_folders/{channel_folder_id}',
  operationId: 'updateChannelFolder',
  auth: 'user',
  summary: 'Rename, describe, archive or unarchive a channel folder (organization administrators only)',
  params: {
    channel_folder_id: { schema: S.int, in: 'path', required: true },
    name: { schema: S.str },
    description: { schema: S.str },
    is_archived: { schema: S.bool },
  },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UPDATE_CHANNEL_FOLDER', org: org.id, actor_id: user.user_id, folder_id: params.channel_folder_id, name: params.name, description: params.description, is_archived: params.is_archived });
    return { json: {} };
  },
});
