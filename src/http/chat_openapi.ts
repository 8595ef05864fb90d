/**
 * The chat API's OpenAPI 3.1 document, generated from its route records by the shared
 * generator (`openapi.ts`): every route with its parameters (path and query; a chat
 * parameter may also travel in a form body), HTTP Basic authentication where a route
 * needs a user, and Zulip's error body.
 */
import { versionFields } from '../../actors/render/register_payloads.js';
import { codesOf } from './errors.js';
import { openApiDocument } from './openapi.js';
import type { RouteRecord } from './route.js';

export function chatOpenApi(routes: RouteRecord[]): Record<string, unknown> {
  const version = versionFields() as { zulip_version?: string; zulip_feature_level?: number };
  return openApiDocument(
    routes,
    {
      title: 'Parley chat API (Zulip-compatible)',
      version: String(version.zulip_version ?? '1.0.0'),
      description: [
        'The subset of the Zulip REST API that Parley serves, under `/api/v1`. Authenticate with HTTP Basic, `email:api_key` (from `POST /api/v1/fetch_api_key`); the organization is chosen by the Host name.',
        'Parameters are form-encoded or in the query string; lists and objects are JSON-encoded. Names a route does not support are listed back in `ignored_parameters_unsupported`.',
        `Zulip feature level ${version.zulip_feature_level ?? 'unknown'}. Errors are \`{result: "error", msg, code}\` with the status the code implies: ` +
          Object.entries(codesOf('chat')).map(([c, s]) => `${c} (${s})`).join(', ') + '.',
      ].join('\n\n'),
    },
    {
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic', description: '`email:api_key`' } },
      schemas: {
        JsonSuccess: {
          type: 'object',
          required: ['result', 'msg'],
          properties: { result: { type: 'string', const: 'success' }, msg: { type: 'string' }, ignored_parameters_unsupported: { type: 'array', items: { type: 'string' } } },
          additionalProperties: true,
        },
        JsonError: {
          type: 'object',
          required: ['result', 'msg', 'code'],
          properties: { result: { type: 'string', const: 'error' }, msg: { type: 'string' }, code: { type: 'string', enum: Object.keys(codesOf('chat')) } },
          additionalProperties: true,
        },
      },
    },
  );
}
