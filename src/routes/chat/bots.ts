/**
 * Bots: create (generic or incoming webhook), list the bots the caller administers,
 * change, deactivate, and regenerate a bot's API key. A bot then authenticates with
 * its own email and API key, as any client does.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { administeredBots, botView } from '../../../actors/rules/bots.js';
import { R, route, S } from '../../http/route.js';

const defaultsParams = {
  default_sending_stream: { schema: S.str },
  default_events_register_stream: { schema: S.str },
  default_all_public_streams: { schema: S.bool },
};

export const createBot = route({
  method: 'POST',
  path: '/api/v1/bots',
  operationId: 'createBot',
  auth: 'user',
  summary: 'Create a bot owned by the caller',
  response: R.fields({ user_id: Type.Integer(), api_key: Type.String(), avatar_url: Type.String(), default_sending_stream: Type.Union([Type.String(), Type.Null()]), default_events_register_stream: Type.Union([Type.String(), Type.Null()]), default_all_public_streams: Type.Boolean() }),
  params: { full_name: { schema: S.str, required: true }, short_name: { schema: S.str, required: true }, bot_type: { schema: S.int }, ...defaultsParams },
  async handler({ params, org, user, runtime }) {
    const { user: bot } = await runtime.execute({ type: 'CREATE_BOT', org: org.id, actor_id: user.user_id, full_name: params.full_name, short_name: params.short_name, bot_type: params.bot_type ?? 1, default_sending_stream: params.default_sending_stream, default_events_register_stream: params.default_events_register_stream, default_all_public_streams: params.default_all_public_streams });
    const view = botView(runtime, org.id, bot);
    return { json: { user_id: bot.user_id, api_key: bot.api_key, avatar_url: view.avatar_url, default_sending_stream: view.default_sending_stream, default_events_register_stream: view.default_events_register_stream, default_all_public_streams: view.default_all_public_streams } };
  },
});

export const listBots = route({
  method: 'GET',
  path: '/api/v1/bots',
  operationId: 'getBots',
  auth: 'user',
  summary: 'The bots the caller administers (every active bot, for administrators)',
  response: R.fields({ bots: Type.Array(Type.Object({ user_id: Type.Integer(), full_name: Type.String(), api_key: Type.String() })) }),
  params: {},
  handler({ org, user, runtime }) {
    return { json: { bots: administeredBots(runtime, org.id, user) } };
  },
});

export const updateBot = route({
  method: 'PATCH',
  path: '/api/v1/bots/{bot_id}',
  operationId: 'updateBot',
  auth: 'user',
  summary: "Change a bot's name, owner or default channels (its owner or an administrator)",
  response: R.fields({ full_name: Type.String(), bot_owner: Type.Optional(Type.String()) }),
  params: { bot_id: { schema: S.nonNegInt, in: 'path', required: true }, full_name: { schema: S.str }, bot_owner_id: { schema: S.nonNegInt }, ...defaultsParams },
  async handler({ params, org, user, runtime }) {
    const { bot_id, ...rest } = params;
    await runtime.execute({ type: 'UPDATE_BOT', org: org.id, actor_id: user.user_id, bot_id, ...rest });
    const bot = runtime.org(org.id)!.users.get(bot_id)!;
    return { json: { full_name: bot.full_name, ...(rest.bot_owner_id !== undefined ? { bot_owner: runtime.org(org.id)!.users.get(bot.bot_owner_id!)?.email } : {}) } };
  },
});

export const deactivateBot = route({
  method: 'DELETE',
  path: '/api/v1/bots/{bot_id}',
  operationId: 'deactivateBot',
  auth: 'user',
  summary: 'Deactivate a bot (its owner or an administrator)',
  response: R.empty,
  params: { bot_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DEACTIVATE_BOT', org: org.id, actor_id: user.user_id, bot_id: params.bot_id });
    return { json: {} };
  },
});

export const regenerateBotKey = route({
  method: 'POST',
  path: '/api/v1/bots/{bot_id}/api_key/regenerate',
  operationId: 'regenerateBotApiKey',
  auth: 'user',
  summary: "Replace a bot's API key (its owner or an administrator)",
  response: R.fields({ api_key: Type.String() }),
  params: { bot_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    const { api_key } = await runtime.execute({ type: 'REGENERATE_BOT_KEY', org: org.id, actor_id: user.user_id, bot_id: params.bot_id });
    return { json: { api_key } };
  },
});
