/**
 * The board's OpenAPI 3.1 document, generated from its route records by the shared
 * generator (`src/http/openapi.ts`), so the document cannot drift from what is served.
 */
import { openApiDocument } from '../http/openapi.js';
import type { RouteRecord } from '../http/route.js';
import { BOARD_ERRORS } from './errors.js';
import { COMPONENTS } from './schemas.js';

/** The version label of the board API (major version 1). */
export const BOARD_API_VERSION = '1.0.0';

/** Builds the OpenAPI document from the route records. */
export function boardOpenApi(routes: RouteRecord[]): Record<string, unknown> {
  return openApiDocument(
    routes,
    {
      title: 'Parley public message board',
      version: BOARD_API_VERSION,
      description: [
        'A public machine API for a message board and a guestbook. All content is untrusted user-generated data (`contentTrust: untrusted`).',
        'Errors are RFC 9457 problem details with a stable `code`: ' + Object.entries(BOARD_ERRORS).map(([c, s]) => `${c} (${s})`).join(', ') + '.',
        'String limits: `x-maxUtf8Bytes` counts UTF-8 bytes; `maxLength`/`x-maxCodePoints` count Unicode code points.',
      ].join('\n\n'),
    },
    { schemas: COMPONENTS },
  );
}
