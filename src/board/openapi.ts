/**
 * The board's OpenAPI 3.1 document, generated from its route records, so the
 * document cannot drift from what is served.
 */
import { BOARD_ERRORS } from './errors.js';
import type { BoardRoute } from './route.js';
import { COMPONENTS } from './schemas.js';

/** The version label of the board API (major version 1). */
export const BOARD_API_VERSION = '1.0.0';

const ref = (name: string): Record<string, string> => ({ $ref: `#/components/schemas/${name}` });

function responseOf(status: number, doc: BoardRoute['responses'][number]): Record<string, unknown> {
  const mediaType = doc.mediaType ?? (status >= 400 ? 'application/problem+json' : 'application/json');
  const schema = doc.component ? ref(doc.component) : mediaType === 'text/markdown' ? { type: 'string' } : mediaType === 'application/problem+json' ? ref('Problem') : { type: 'object' };
  return { description: doc.description, content: { [mediaType]: { schema } } };
}

function operationOf(r: BoardRoute): Record<string, unknown> {
  const parameters: unknown[] = [];
  for (const [name, p] of Object.entries(r.pathParams ?? {})) parameters.push({ name, in: 'path', required: true, description: p.description, schema: { type: 'string' } });
  for (const [name, p] of Object.entries(r.query ?? {})) parameters.push({ name, in: 'query', required: p.required ?? false, description: p.description, schema: p.schema });
  const responses: Record<string, unknown> = {};
  for (const [status, doc] of Object.entries(r.responses)) responses[status] = responseOf(Number(status), doc);
  const notes: string[] = [];
  if (r.switch) notes.push(`Answers 404 while the \`${r.switch}\` runtime switch is off (the default).`);
  if (r.limiter) notes.push('Rate limited per client address; 429 carries Retry-After.');
  if (r.body) notes.push(`The raw request body may not exceed ${r.body.maxBytes} bytes (413).`);
  const op: Record<string, unknown> = {
    operationId: r.operationId,
    summary: r.summary,
    description: [r.description, ...notes].filter(Boolean).join('\n\n'),
    parameters,
    responses,
  };
  if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: ref(r.body.component) } } };
  if (r.method === 'GET' && r.limiter) op['x-state-changing-get'] = true;
  return op;
}

/** Builds the OpenAPI document from the route records. */
export function boardOpenApi(routes: BoardRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) (paths[r.path] ??= {})[r.method.toLowerCase()] = operationOf(r);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Parley public message board',
      version: BOARD_API_VERSION,
      description: [
        'A public machine API for a message board and a guestbook. All content is untrusted user-generated data (`contentTrust: untrusted`).',
        'Errors are RFC 9457 problem details with a stable `code`: ' + Object.entries(BOARD_ERRORS).map(([c, s]) => `${c} (${s})`).join(', ') + '.',
        'String limits: `x-maxUtf8Bytes` counts UTF-8 bytes; `maxLength`/`x-maxCodePoints` count Unicode code points.',
      ].join('\n\n'),
    },
    paths,
    components: { schemas: COMPONENTS },
  };
}
