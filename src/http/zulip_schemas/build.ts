/**
 * Builds `responses.json`: the success responses of Zulip's OpenAPI description, for the
 * chat API's generated document (`chat_openapi.ts`), which gives them to the routes Zulip
 * describes (Parley's own routes declare `RouteRecord.response`). See `SOURCE.md`.
 *
 * `npm run openapi:zulip [-- path/to/zulip-openapi.yaml]` writes it again; by default the
 * description is `../shared/reference/zulip-openapi-2025-10.yaml` beside the repository.
 * `test/zulip_schemas.test.ts` builds it again and fails when the committed file differs.
 *
 * The description is OpenAPI 3.0 and Parley's document 3.1, so each schema is converted:
 * `nullable` becomes a `null` type (or an `anyOf` with one, where there is no `type`),
 * a tuple's `items` list becomes `prefixItems`, examples and `x-` extensions are left out, and `$ref`s point at the copies, named
 * `Zulip.<name>` among the document's schemas. Only what the success responses reach is
 * copied.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The folder of `responses.json` in the source tree, from `src/` or from `dist/src/`. */
export const SCHEMAS_DIR = here.includes(join('dist', 'src')) ? join(here, '..', '..', '..', '..', 'src', 'http', 'zulip_schemas') : here;
/** Zulip's description beside the repository, as CI and the tests find it. */
export const DEFAULT_DESCRIPTION = join(SCHEMAS_DIR, '..', '..', '..', '..', 'shared', 'reference', 'zulip-openapi-2025-10.yaml');

/** The built file. */
export interface ZulipResponses {
  source: { file: string; sha256: string; version: string };
  /** By operationId, in Parley's spelling (`get-own-user` is `getOwnUser`). */
  responses: Record<string, { method: string; path: string; description: string; schema: unknown }>;
  /** The schemas the responses refer to, as `#/components/schemas/Zulip.<name>`. */
  schemas: Record<string, unknown>;
}

/** An operationId of Zulip's description in Parley's spelling: `get-own-user` is `getOwnUser`, the name a route record of the operation has. */
export function camelOperationId(id: string): string {
  return id.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
}

type Doc = { info?: { version?: string }; paths: Record<string, Record<string, any>>; components: Record<string, Record<string, any>> };

const at = (doc: Doc, ref: string): any => ref.slice(2).split('/').reduce((o: any, k) => o?.[k], doc);

/** Builds the file's content from the description's parsed text. */
export function buildZulipResponses(doc: Doc, file: string, text: string): ZulipResponses {
  const schemas: Record<string, unknown> = {};
  const convert = (x: any): any => {
    if (Array.isArray(x)) return x.map(convert);
    if (x === null || typeof x !== 'object') return x;
    const out: any = {};
    for (const [k, v] of Object.entries(x)) {
      if (k === 'example' || k === 'examples' || k === 'nullable' || k.startsWith('x-')) continue;
      if (k === '$ref' && typeof v === 'string') out.$ref = copy(v);
      else if (k === 'properties' || k === 'patternProperties') out[k] = Object.fromEntries(Object.entries(v as object).map(([name, s]) => [name, convert(s)]));
      // A list of schemas under `items` (a tuple, as the description writes a few pairs) is `prefixItems` in 3.1.
      else if (k === 'items' && Array.isArray(v)) out.prefixItems = convert(v);
      else out[k] = convert(v);
    }
    if (x.nullable !== true) return out;
    if (typeof out.type === 'string') return { ...out, type: [out.type, 'null'] };
    return { anyOf: [out, { type: 'null' }] };
  };
  /** Copies a referenced schema (once), and answers the reference to the copy. */
  const copy = (ref: string): string => {
    const name = `Zulip.${ref.split('/').at(-1)}`;
    if (!(name in schemas)) {
      schemas[name] = {};
      schemas[name] = convert(at(doc, ref));
    }
    return `#/components/schemas/${name}`;
  };
  const responses: ZulipResponses['responses'] = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      let success = op?.responses?.['200'];
      if (!success) continue;
      if (typeof success.$ref === 'string') success = at(doc, success.$ref);
      const schema = success.content?.['application/json']?.schema;
      if (!schema) continue;
      responses[camelOperationId(op.operationId)] = { method: method.toUpperCase(), path: `/api/v1${path}`, description: success.description ?? 'Success', schema: convert(schema) };
    }
  }
  const sorted = <T>(o: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    source: { file, sha256: createHash('sha256').update(text).digest('hex'), version: String(doc.info?.version ?? '') },
    responses: sorted(responses),
    schemas: sorted(schemas),
  };
}

/** The file's text, as written and as the test compares it. */
export function responsesText(built: ZulipResponses): string {
  return JSON.stringify(built, null, 1) + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2] ?? DEFAULT_DESCRIPTION;
  const text = readFileSync(file, 'utf8');
  const { parse } = await import('yaml');
  const built = buildZulipResponses(parse(text) as Doc, file.split('/').at(-1)!, text);
  writeFileSync(join(SCHEMAS_DIR, 'responses.json'), responsesText(built));
  console.log(`responses.json: ${Object.keys(built.responses).length} responses, ${Object.keys(built.schemas).length} schemas, from ${file}`);
}
