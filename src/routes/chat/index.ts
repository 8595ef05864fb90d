/** Every route of the chat API, in one list the router, the validators and the OpenAPI document are built from. */
import { chatOpenApi } from '../../http/chat_openapi.js';
import { route, type RouteRecord } from '../../http/route.js';
import * as alertWords from './alert_words.js';
import * as botStorage from './bot_storage.js';
import * as bots from './bots.js';
import * as calls from './calls.js';
import * as channelFolders from './channel_folders.js';
import * as defaultStreams from './default_streams.js';
import * as drafts from './drafts.js';
import * as events from './events.js';
import * as flags from './flags.js';
import * as invites from './invites.js';
import * as linkifiers from './linkifiers.js';
import * as messageEdits from './message_edits.js';
import * as messages from './messages.js';
import * as mutedUsers from './muted_users.js';
import * as navigationViews from './navigation_views.js';
import * as playgrounds from './playgrounds.js';
import * as presence from './presence.js';
import * as profileFields from './profile_fields.js';
import * as push from './push.js';
import * as reactions from './reactions.js';
import * as realm from './realm.js';
import * as realmDomains from './realm_domains.js';
import * as realmEmoji from './realm_emoji.js';
import * as realmExports from './realm_exports.js';
import * as register from './register.js';
import * as reminders from './reminders.js';
import * as scheduledMessages from './scheduled_messages.js';
import * as submessages from './submessages.js';
import * as savedSnippets from './saved_snippets.js';
import * as server from './server.js';
import * as settings from './settings.js';
import * as streams from './streams.js';
import * as typing from './typing.js';
import * as userGroups from './user_groups.js';
import * as userStatus from './user_status.js';
import * as userTopics from './user_topics.js';
import * as tus from './tus.js';
import * as uploads from './uploads.js';
import * as users from './users.js';

/** The route modules, one per area of the API. A new module is one line here; a new route in a module, none. */
const MODULES: ReadonlyArray<Record<string, unknown>> = [server, register, events, messages, scheduledMessages, reminders, messageEdits, reactions, submessages, flags, typing, users, invites, alertWords, bots, realm, realmDomains, realmEmoji, realmExports, linkifiers, playgrounds, profileFields, settings, userGroups, userStatus, presence, streams, defaultStreams, userTopics, channelFolders, uploads, tus, calls, push, drafts, savedSnippets, navigationViews, mutedUsers, botStorage];

function isRoute(x: unknown): x is RouteRecord {
  return typeof x === 'object' && x !== null && 'method' in x && 'path' in x && 'handler' in x && (x as RouteRecord).api === 'chat';
}

const METHOD_ORDER = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Every route record each module exports, by path, reads before writes (the order the OpenAPI document lists them). */
const apiRoutes: RouteRecord[] = MODULES.flatMap((m) => Object.values(m).filter(isRoute)).sort(
  (a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method)),
);

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
