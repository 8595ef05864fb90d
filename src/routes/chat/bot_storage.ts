/**
 * A bot's storage: read, write, remove entries. Bots only.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { getBotStorage, MAX_BOT_STORAGE_ENTRIES_PER_REQUEST } from '../../../actors/areas/bot_storage.js';
import { R, route, S } from '../../http/route.js';

export const getStorage = route({
  method: 'GET',
  path: '/api/v1/bot_storage',
  operationId: 'getBotStorage',
  auth: 'user',
  requires: 'bot',
  summary: "The calling bot's storage, or the entries of `keys`",
  response: R.fields({ storage: Type.Record(Type.String(), Type.String()) }),
  params: { keys: { schema: S.strArray } },
  handler({ params, org, user, runtime }) {
    return { json: { storage: getBotStorage(runtime, org.id, user.user_id, params.keys) } };
  },
});

export const updateStorage = route({
  method: 'PUT',
  path: '/api/v1/bot_storage',
  operationId: 'updateBotStorage',
  auth: 'user',
  requires: 'bot',
  summary: `Set entries of the calling bot's storage, overwriting existing keys (at most ${MAX_BOT_STORAGE_ENTRIES_PER_REQUEST} a request; 10,000,000 characters in all)`,
  response: R.empty,
  params: { storage: { schema: Type.Record(Type.String(), Type.String(), { maxProperties: MAX_BOT_STORAGE_ENTRIES_PER_REQUEST }), required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_BOT_STORAGE', user_id: user.user_id, org: org.id, storage: params.storage });
    return { json: {} };
  },
});

export const removeStorage = route({
  method: 'DELETE',
  path: '/api/v1/bot_storage',
  operationId: 'removeBotStorage',
  auth: 'user',
  requires: 'bot',
  summary: "Remove the entries of `keys`, or the whole of the calling bot's storage",
  response: R.empty,
  params: { keys: { schema: S.strArray } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REMOVE_BOT_STORAGE', user_id: user.user_id, org: org.id, keys: params.keys });
    return { json: {} };
  },
});
