/** Every route of the message board, in one list the router, validators and OpenAPI document are built from. */
import { boardOpenApi } from '../../board/openapi.js';
import { boardRoute, type RouteRecord } from '../../http/route.js';
import { publishWithNonce, writeChallenge } from './compat.js';
import { listGuestbookJson, listGuestbookMarkdown, postGuestbookEntry } from './guestbook.js';
import { getMessageJson, getMessageMarkdown, listMessagesJson, listMessagesMarkdown, postMessage } from './messages.js';

const contentRoutes: RouteRecord[] = [
  listGuestbookJson,
  listGuestbookMarkdown,
  listMessagesJson,
  listMessagesMarkdown,
  getMessageJson,
  getMessageMarkdown,
  postMessage,
  postGuestbookEntry,
  writeChallenge,
  publishWithNonce,
];

/** GET /openapi.json: the document is built once, from the records above and itself. */
const openApiRoute: RouteRecord = boardRoute({
  method: 'GET', path: '/openapi.json', operationId: 'getOpenApi', summary: 'This OpenAPI document (board API version 1.x)',
  responses: { 200: { description: 'The OpenAPI 3.1 document' } },
  handler: () => ({ json: openApiDocument }),
});

export const boardRoutes: RouteRecord[] = [...contentRoutes, openApiRoute];
const openApiDocument = boardOpenApi(boardRoutes);
