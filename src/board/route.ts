/**
 * Route records of the message board: one per endpoint, with everything the router,
 * the validators and the OpenAPI document are built from. Board routes are their own
 * type, distinct from the chat API's, so neither API can serve the other's records.
 */
import type { BoardSwitch } from '../../actors/board_types.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { RateLimit } from '../http/rate_limit.js';
import type { IncomingRequest } from '../http/types.js';
import type { BoardErrorCode } from './errors.js';

/** Board settings, from the configuration. */
export interface BoardSettings {
  /** Lifetime of a write-challenge nonce, in seconds. */
  nonceTtlSecs: number;
  /** Per-address limit shared by the guestbook and the GET publication path. */
  publishLimit: RateLimit;
  /** Per-address limit of POST /api/v1/messages. */
  messageLimit: RateLimit;
}

/** One query parameter: its schema (of the converted value) and what to say when it is wrong. */
export interface QueryParam {
  schema: Record<string, unknown>;
  required?: boolean;
  description: string;
  /** Said instead of the validator's message when this parameter is invalid. */
  hint?: string;
}

/** What a handler sees: validated input only. */
export interface BoardCall<B = unknown, Q = Record<string, unknown>> {
  runtime: Runtime;
  settings: BoardSettings;
  request: IncomingRequest;
  pathParams: Record<string, string>;
  query: Q;
  body: B;
}

/** What a handler answers; the app adds the headers every board response carries. */
export interface BoardReply {
  status?: number;
  /** A JSON document, or a Markdown one; exactly one is set. */
  json?: unknown;
  markdown?: string;
  headers?: Array<[string, string]>;
}

/** A documented response of a route. */
export interface ResponseDoc {
  description: string;
  /** OpenAPI component name of the JSON body. */
  component?: string;
  mediaType?: 'application/json' | 'text/markdown' | 'application/problem+json';
}

/** One board endpoint: everything needed to route, check, serve and document it. */
export interface BoardRoute<B = any, Q = any> {
  method: 'GET' | 'POST';
  /** Path template; `{name}` may sit inside a segment (`/messages/{id}.json`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The runtime switch this endpoint needs; while it is off the endpoint answers 404. */
  switch?: BoardSwitch;
  /** The per-address limiter this endpoint counts against. */
  limiter?: 'publish' | 'messages';
  /** Responses must not be stored, leak a referrer, or be indexed (the GET write path). */
  noStore?: boolean;
  pathParams?: Record<string, { description: string }>;
  query?: Record<string, QueryParam>;
  /** The error code for a bad query: 400 for paging, 422 where the query is the content. */
  queryError?: BoardErrorCode;
  /** A JSON request body: its component name, schema and raw size ceiling. */
  body?: { component: string; schema: object; maxBytes: number };
  responses: Record<number, ResponseDoc>;
  handler(call: BoardCall<B, Q>): BoardReply | Promise<BoardReply>;
}

/** Declares a board route with typed body and query. */
export function boardRoute<B = undefined, Q = Record<string, never>>(r: BoardRoute<B, Q>): BoardRoute<B, Q> {
  return r;
}
