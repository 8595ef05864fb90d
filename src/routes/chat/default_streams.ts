/**
 * Default channels: add one, remove one (organization administrators only). The list
 * itself is `/register`'s `realm_default_streams`.
 */
import { badRequest } from '../../../actors/shared/errors.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import type { OrgRecord, UserRecord } from '../../../actors/shared/types.js';
import { route, S } from '../../http/route.js';

/** A channel of another organization is a missing one (the role was checked first, by the route's `requires`). */
async function setDefault(runtime: Runtime, org: OrgRecord, user: UserRecord, streamId: number, isDefault: boolean): Promise<void> {
  if (!runtime.channel(org.id, streamId)) throw badRequest('Invalid channel ID');
  await runtime.execute({ type: 'SET_DEFAULT_CHANNEL', stream_id: streamId, org: org.id, actor_id: user.user_id, is_default: isDefault });
}

export const addDefaultStream = route({
  method: 'POST',
  path: '/api/v1/default_streams',
  operationId: 'addDefaultStream',
  auth: 'user',
  requires: 'admin',
  summary: 'Make a public channel a default channel for new users (organization administrators only)',
  params: { stream_id: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    await setDefault(runtime, org, user, params.stream_id, true);
    return { json: {} };
  },
});

export const removeDefaultStream = route({
  method: 'DELETE',
  path: '/api/v1/default_streams',
  operationId: 'removeDefaultStream',
  auth: 'user',
  requires: 'admin',
  summary: 'Stop a channel being a default channel (organization administrators only)',
  params: { stream_id: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    await setDefault(runtime, org, user, params.stream_id, false);
    return { json: {} };
  },
});
