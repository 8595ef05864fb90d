/**
 * The chat API's OpenAPI 3.1 document, generated from its route records by the shared
 * generator (`openapi.ts`): every route with its parameters (path and query; a chat
 * parameter may also travel in a form body), HTTP Basic authentication where a route
 * needs a user, and Zulip's error body. A success body is the route record's `response`
 * (Parley's own routes), or else Zulip's description of it (`zulip_schemas/`, the
 * description's schemas copied among the document's as `Zulip.<name>`), from which Parley's
 * answers differ only as docs/api.md lists.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { versionFields } from '../../actors/render/register_payloads.js';
import { codesOf } from './errors.js';
import { openApiDocument } from './openapi.js';
import type { RouteRecord } from './route.js';
import { SCHEMAS_DIR, type ZulipResponses } from './zulip_schemas/build.js';

export function chatOpenApi(routes: RouteRecord[]): Record<string, unknown> {
  const version = versionFields() as { zulip_version?: string; zulip_feature_level?: number };
  const zulip = JSON.parse(readFileSync(join(SCHEMAS_DIR, 'responses.json'), 'utf8')) as ZulipResponses;
  const described = (r: RouteRecord) => {
    const d = Object.hasOwn(zulip.responses, r.operationId) ? zulip.responses[r.operationId] : undefined;
    return d && { description: `${d.description} (Zulip's description of \`${r.operationId}\`; Parley's answers differ only as its docs/api.md lists)`, schema: d.schema };
  };
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
        ...zulip.schemas,
        JsonError: {
          type: 'object',
          required: ['result', 'msg', 'code'],
          properties: { result: { type: 'string', const: 'error' }, msg: { type: 'string' }, code: { type: 'string', enum: Object.keys(codesOf('chat')) } },
          additionalProperties: true,
        },
      },
    },
    described,
  );
}
