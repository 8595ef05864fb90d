/**
 * Route records: one per endpoint, with its method, path, authentication, parameter
 * schemas and handler. The router, the validators and the API description are all
 * built from these records at boot.
 */
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { OrgRecord, UserRecord } from '../../actors/types.js';
import type { Config } from '../config.js';
import type { UploadedFile } from './body.js';
import type { Exchange, IncomingRequest, LATER } from './types.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A JSON Schema fragment, as ajv takes it. */
export type Schema = Record<string, unknown>;

/** One request parameter: its schema (of the decoded value) and how it arrives. */
export interface ParamSpec {
  schema: Schema;
  required?: boolean;
  /** Older names accepted for the same parameter (e.g. `subject` for `topic`). */
  aliases?: string[];
  /** Path parameters come from the URL, not the form. */
  in?: 'path';
  description?: string;
}

/** What a handler sees. */
export interface RouteContext<P = Record<string, any>> {
  params: P;
  /** The authenticated user; null only on routes with `auth: 'none'`. */
  user: UserRecord;
  org: OrgRecord;
  runtime: Runtime;
  config: Config;
  request: IncomingRequest;
  /** The transport's side of the request: abort notice, and `respond` for answers given later. */
  exchange: Exchange;
  files: UploadedFile[];
  /** Client name (from `client` or the User-Agent), as Zulip records it. */
  client: string;
}

/** What a handler answers: fields merged into a success body, or a ready body. */
export type Reply =
  | { json: Record<string, unknown>; status?: number }
  | { raw: string; status?: number }
  /** The handler will answer later through `exchange.respond`. */
  | typeof LATER;

export interface Route<P = any> {
  method: Method;
  /** Path under the server root, with `{name}` for path parameters. */
  path: string;
  /** `user`: HTTP Basic required. `none`: the organization is still chosen by Host. */
  auth: 'user' | 'none';
  summary: string;
  params: Record<string, ParamSpec>;
  /** Exempt from rate limiting, as Zulip's event-queue server is. */
  unlimited?: boolean;
  handler(ctx: RouteContext<P>): Reply | Promise<Reply>;
}

/** Declares a route with a typed parameter record. */
export function route<P>(r: Route<P>): Route<P> {
  return r;
}

/** Common parameter schemas. */
export const S = {
  int: { type: 'integer' } as Schema,
  nonNegInt: { type: 'integer', minimum: 0 } as Schema,
  bool: { type: 'boolean' } as Schema,
  str: { type: 'string' } as Schema,
  intArray: { type: 'array', items: { type: 'integer' } } as Schema,
  strArray: { type: 'array', items: { type: 'string' } } as Schema,
};
