/** Every route of the chat API, in one list the router, the validators and the OpenAPI document are built from. */
import { chatOpenApi } from '../../http/chat_openapi.js';
import { route, type RouteRecord } from '../../http/route.js';
import { deleteEvents, getEvents } from './events.js';
import { getMessage, getMessages, sendMessage, updateFlags } from './messages.js';
import { register } from './register.js';
import { fetchApiKey, getServerSettings } from './server.js';
import { getStreamId, listOwnSubscriptions, listStreams, subscribe, unsubscribe } from './streams.js';
import { createUser, deactivateUser, getOwnUser, getUserById, listUsersRoute, reactivateUser } from './users.js';

const apiRoutes: RouteRecord[] = [
  getServerSettings,
  fetchApiKey,
  register,
  getEvents,
  deleteEvents,
  sendMessage,
  getMessages,
  getMessage,
  updateFlags,
  listUsersRoute,
  getOwnUser,
  getUserById,
  createUser,
  deactivateUser,
  reactivateUser,
  listStreams,
  getStreamId,
  listOwnSubscriptions,
  subscribe,
  unsubscribe,
];

/**
 * GET /api/v1/openapi.json: the chat API's OpenAPI 3.1 document, built once from the
 * records above and this one. Like server_settings it needs no credentials (the
 * organization is still chosen by Host); it is served as is, without Zulip's
 * `result`/`msg` envelope.
 */
const openApiRoute = route({
  method: 'GET',
  path: '/api/v1/openapi.json',
  operationId: 'getOpenApi',
  auth: 'none',
  summary: 'This OpenAPI 3.1 document of the chat API',
  params: {},
  responses: { 200: { description: 'The OpenAPI 3.1 document' } },
  handler: () => ({ raw: (openApiText ??= JSON.stringify(chatOpenApi(chatRoutes))) }),
});

export const chatRoutes: RouteRecord[] = [...apiRoutes, openApiRoute];
let openApiText: string | undefined;
