/**
 * Zulip's OpenAPI description (`../shared/reference/zulip-openapi-2025-10.yaml`, feature
 * level 420), loaded once per process for the tests that compare Parley with it: the
 * parameter walk (`zulip_parameters.test.ts`) and the response validator
 * (`zulip_responses.ts`, run on every API call of the test helpers).
 *
 * Parsing the 1 MB of YAML takes about 0.7 s, so the parsed form is kept as JSON in the
 * temporary directory, keyed by the hash of the YAML text: every test process after the
 * first reads it in about 10 ms.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { root } from './paths.js';

/** Where the description is, beside the repository. */
export const DESCRIPTION = join(root, '..', 'shared', 'reference', 'zulip-openapi-2025-10.yaml');

/** The parts of the description the tests read. */
export interface Description {
  paths: Record<string, Record<string, any>>;
  components: Record<string, Record<string, any>>;
}

let loaded: Description | undefined;
let digest: string | undefined;

/** The SHA-256 of the description's YAML text, hex: what the caches of its derived forms are keyed by. */
export function descriptionDigest(): string {
  return (digest ??= createHash('sha256').update(readFileSync(DESCRIPTION, 'utf8')).digest('hex'));
}

/** The description, parsed (from the JSON cache when the YAML has not changed). */
export function loadDescription(): Description {
  if (loaded) return loaded;
  const text = readFileSync(DESCRIPTION, 'utf8');
  digest = createHash('sha256').update(text).digest('hex');
  const cache = join(tmpdir(), `parley-zulip-openapi-${digest.slice(0, 16)}.json`);
  if (existsSync(cache)) {
    try {
      return (loaded = JSON.parse(readFileSync(cache, 'utf8')) as Description);
    } catch {
      // A cache another process is writing, or a damaged one: parse the YAML again.
    }
  }
  loaded = parse(text) as Description;
  // Written whole, then renamed: a process that reads it never sees half a file.
  const temp = `${cache}.${process.pid}`;
  writeFileSync(temp, JSON.stringify(loaded));
  renameSync(temp, cache);
  return loaded;
}

/** Follows `$ref`s within the description. */
export function deref(doc: Pick<Description, 'paths'>, x: any): any {
  while (x && typeof x.$ref === 'string') x = x.$ref.slice(2).split('/').reduce((o: any, k: string) => o[k], doc);
  return x;
}

/** An operation of the description: its path template and its OpenAPI operation object. */
export interface DescribedOperation {
  method: string;
  path: string;
  op: any;
}

/** Every operation's path as a pattern; literal segments are preferred over parameters (`/users/me` over `/users/{user_id}`). */
function operationPatterns(doc: Description): Array<{ method: string; path: string; re: RegExp; params: number; op: any }> {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries<any>(item)) {
      if (op === null || typeof op !== 'object' || op.responses === undefined) continue;
      // An upload's `{filename}` is a path of several segments; other parameters are one.
      const source = path.split('/').map((seg) => (seg === '{filename}' ? '.+' : /^\{[^}]+\}$/.test(seg) ? '[^/]+' : seg.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/');
      out.push({ method: m.toUpperCase(), path, re: new RegExp(`^${source}$`), params: (path.match(/\{/g) ?? []).length, op });
    }
  }
  return out.sort((a, b) => a.params - b.params);
}

let patterns: ReturnType<typeof operationPatterns> | undefined;

/** The operation a request of Parley's (`/api/v1/...`, query allowed) is, or undefined when the description has none. */
export function findOperation(doc: Description, method: string, url: string): DescribedOperation | undefined {
  const path = url.split('?')[0];
  if (!path.startsWith('/api/v1/')) return undefined;
  const rest = path.slice('/api/v1'.length);
  patterns ??= operationPatterns(doc);
  const m = method.toUpperCase();
  const hit = patterns.find((p) => p.method === m && p.re.test(rest));
  return hit && { method: m, path: hit.path, op: hit.op };
}
