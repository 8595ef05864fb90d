/**
 * Route records: one type for every endpoint of both APIs (the chat API and the
 * message board). A record holds its method, path template, documentation, parameter
 * schemas, options and handler; the router, the compiled validators and each API's
 * OpenAPI document are all built from these records at boot.
 *
 * Parameters are declared once, as JSON Schemas built with TypeBox: ajv compiles the
 * schemas, and the handler's typed `params` are derived from them (`ParamsOf`).
 * Which API a record belongs to (`api`) decides how its input is decoded, how errors
 * are shaped and which context its handler gets (`src/http/api.ts`).
 */
import { Type } from '../../actors/shared/cjs_packages.js';
import type { Static, TSchema, TUnsafe } from '@sinclair/typebox';
import type { BoardSwitch } from '../../actors/shared/board_types.js';
import type { Logger } from '../../actors/core/logger.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import { adminRequired, ApiError, badRequest, botsOnly } from '../../actors/shared/errors.js';
import { Role, type OrgRecord, type UserRecord } from '../../actors/shared/types.js';
import type { Config } from '../config.js';
import type { Mailer } from '../mail/mailer.js';
import type { UploadedFile } from './body.js';
import type { BoardErrorCode } from './errors.js';
import type { RateLimit } from './rate_limit.js';
import type { Exchange, FileBody, IncomingRequest, LATER } from './types.js';

/** HEAD is answered by a GET route unless a HEAD route exists (tus); OPTIONS only by its own route. */
export type Method = 'GET' | 'HEAD' | 'OPTIONS' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** The two APIs served from route records. */
export type ApiName = 'chat' | 'board';

/** A JSON Schema, as ajv takes it (TypeBox schemas are plain JSON Schema objects). */
export type Schema = TSchema;

/** One request parameter: its schema (of the decoded value) and where it arrives. */
export interface ParamSpec<T extends TSchema = TSchema> {
  schema: T;
  required?: boolean;
  /**
   * Chat: the value is JSON-encoded text, as Zulip's `Json[...]` parameters are (the
   * description's `content: application/json`). Needed only where the schema admits a
   * string, since other types are decoded as JSON anyway: a JSON string is unquoted
   * (`"allow_empty_topic"`), and a value that is not valid JSON, or whose JSON the
   * schema refuses, is taken as the bare string if the schema admits that.
   */
  json?: boolean;
  /** Older names accepted for the same parameter (e.g. `subject` for `topic`); chat only. */
  aliases?: readonly string[];
  /**
   * `path`: a `{name}` of the path template. Otherwise the query (board), or the query
   * or form body (chat, as Zulip takes them).
   */
  in?: 'path' | 'query';
  /**
   * A path parameter that is the template's last segment and takes the rest of the
   * path, slashes included (Django's `<path:…>`, e.g. a navigation view's fragment
   * `narrow/is/alerted`).
   */
  rest?: boolean;
  description?: string;
  /** Said instead of the validator's message when this parameter is invalid (board). */
  hint?: string;
}

export type ParamMap = Record<string, ParamSpec>;

type RequiredKeys<M extends ParamMap> = { [K in keyof M]: M[K] extends { required: true } ? K : never }[keyof M];
type Flatten<T> = { [K in keyof T]: T[K] };

/** The typed parameters a handler sees, derived from the route's parameter schemas. */
export type ParamsOf<M extends ParamMap> = Flatten<
  { [K in RequiredKeys<M>]: Static<M[K]['schema']> } & { [K in Exclude<keyof M, RequiredKeys<M>>]?: Static<M[K]['schema']> }
>;

/** The parameters of a record that arrive in the path, and the others. */
export function pathParamsOf(r: { params: ParamMap }): Array<[string, ParamSpec]> {
  return Object.entries(r.params).filter(([, p]) => p.in === 'path');
}
export function queryParamsOf(r: { params: ParamMap }): Array<[string, ParamSpec]> {
  return Object.entries(r.params).filter(([, p]) => p.in !== 'path');
}

/**
 * Chat: Zulip's rate limit domains for particular endpoints, each counted besides the
 * general per-user or per-address limit (`api_by_user`, `api_by_ip`), with Zulip's
 * default rules; what each counts per is in `RATE_CLASSES` (`chat_app.ts`).
 */
export type RateClass = 'authenticate_by_username';

/** Board settings, from the configuration. */
export interface BoardSettings {
  /** Lifetime of a write-challenge nonce, in seconds. */
  nonceTtlSecs: number;
  /** Per-address limit shared by the guestbook and the GET publication path. */
  publishLimit: RateLimit;
  /** Per-address limit of POST /api/v1/messages. */
  messageLimit: RateLimit;
}

/** What every handler sees. */
interface BaseContext<P> {
  params: P;
  runtime: Runtime;
  request: IncomingRequest;
  /** The transport's side of the request: abort notice, and `respond` for answers given later. */
  exchange: Exchange;
  /** The API's logger, for what fails after the answer is decided (mail). */
  log: Logger;
}

/** What a chat handler sees. */
export interface ChatContext<P = Record<string, any>> extends BaseContext<P> {
  /** The authenticated user; null only on routes with `auth: 'none'`. */
  user: UserRecord;
  org: OrgRecord;
  config: Config;
  /** Outgoing mail; send only once the facts it reports are durable. */
  mailer: Mailer;
  files: UploadedFile[];
  /** Client name (from `client` or the User-Agent), as Zulip records it. */
  client: string;
}

/** What a board handler sees: validated input only. */
export interface BoardContext<P = Record<string, any>, B = unknown> extends BaseContext<P> {
  settings: BoardSettings;
  body: B;
}

/** The handler context of an API. */
export type ContextOf<A extends ApiName, P, B> = A extends 'chat' ? ChatContext<P> : BoardContext<P, B>;

/**
 * What a handler answers. Chat: `json` fields merged into a success body, or a ready
 * `raw` body. Board: a `json` document or a `markdown` one, plus headers.
 * `LATER`: the handler will answer later through `exchange.respond` (chat).
 */
export type Reply =
  | { status?: number; json?: unknown; raw?: string; markdown?: string; headers?: Array<[string, string]>; file?: FileBody; empty?: boolean }
  | typeof LATER;

/** A documented response of a route. */
export interface ResponseDoc {
  description: string;
  /** OpenAPI component name of the JSON body. */
  component?: string;
  /** The body's schema, for a body that is neither a component nor an API's usual one (a bare JSON document). */
  schema?: Record<string, unknown>;
  /** `application/octet-stream` for a file's bytes (served with the file's own type). */
  mediaType?: 'application/json' | 'text/markdown' | 'application/problem+json' | 'application/octet-stream';
  /** `false`: the response has no body (a redirect, `204`, a tus answer in headers). */
  body?: false;
}

/** One endpoint of either API: everything needed to route, check, serve and document it. */
export interface RouteRecord<M extends ParamMap = ParamMap, B = any, A extends ApiName = ApiName> {
  api: A;
  method: Method;
  /** Path template; `{name}` is a path parameter, a whole segment or inside one (`/messages/{id}.json`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  params: M;
  /** Chat: `user` needs HTTP Basic; `none` still chooses the organization by Host. */
  auth?: 'user' | 'none';
  /**
   * Chat, `auth: 'user'`: who may call it, as Zulip's view decorators say
   * (`@require_realm_admin`, `@require_realm_owner`, `@require_member_or_admin`, bots
   * only). The pipeline refuses anyone else once authenticated, before the parameters are
   * decoded (as Zulip's decorators wrap the parameter parsing), so a large body from
   * someone refused costs nothing (87,000 keys to `PUT /bot_storage` were parsed and
   * checked first). The generated OpenAPI document shows it (`x-requires`).
   */
  requires?: Requirement;
  /**
   * Chat: exempt from rate limiting (the event queue endpoints, Parley's hot path: a
   * client polls once per event batch). Zulip's Tornado counts them in buckets of its
   * own, apart from the other endpoints', under the same `api_by_user` rules.
   */
  unlimited?: boolean;
  /**
   * Chat, `auth: 'none'`: served for a deactivated organization too (`server_settings`,
   * which is how a client learns the state). Other unauthenticated routes answer
   * `REALM_DEACTIVATED`; authenticated ones refuse the credentials, as Zulip does.
   */
  deactivatedOrg?: 'serve';
  /** Chat: the rate limit class this endpoint also counts against, beside the general limit. */
  rateClass?: RateClass;
  /**
   * Chat: the body is not read before the handler; the handler reads it from
   * `request.bodyStream` as it arrives (uploads), and only query parameters are decoded.
   * Its ceiling is `max_file_upload_size_mib` plus `STREAM_OVERHEAD_BYTES`.
   */
  streamBody?: boolean;
  /** Board: the runtime switch this endpoint needs; while it is off the endpoint answers 404. */
  switch?: BoardSwitch;
  /** Board: the per-address limiter this endpoint counts against. */
  limiter?: 'publish' | 'messages';
  /** Board: responses must not be stored, leak a referrer, or be indexed (the GET write path). */
  noStore?: boolean;
  /** Board: the error code for a bad query: 400 for paging, 422 where the query is the content. */
  queryError?: BoardErrorCode;
  /** Board: a JSON request body: its component name, schema and raw size ceiling. */
  body?: { component: string; schema: TSchema; maxBytes: number };
  /**
   * Whether a request can grow the server's state, so that it is refused (503 with
   * Retry-After) while the heap is under memory pressure (`src/memory/pressure.ts`).
   * Unset, the method decides (`growsState`): POST, PUT and PATCH grow, GET, HEAD,
   * OPTIONS and DELETE do not. A record says otherwise where its method misleads: a GET
   * that publishes, a POST that only reads, removes, or changes nothing that stays.
   */
  grows?: boolean;
  /** Documented responses; the OpenAPI generator adds each API's usual ones. */
  responses?: Record<number, ResponseDoc>;
  /**
   * Chat: what a success's JSON body holds beside `result` and `msg`, as a schema: Parley's
   * promise, in the generated OpenAPI document, and checked by the tests' response
   * validator on every answer (beside Zulip's description, where it describes the route).
   * Every JSON route Zulip's description does not describe declares one.
   */
  response?: TSchema;
  handler(ctx: ContextOf<A, ParamsOf<M>, B>): Reply | Promise<Reply>;
}

/** Who may call a route: see `RouteRecord.requires`. */
export type Requirement = 'owner' | 'admin' | 'member' | 'bot';

/** Zulip's refusal of a caller that a route's `requires` does not admit, or null when it admits them. */
export function refusal(requires: Requirement | undefined, user: Pick<UserRecord, 'role' | 'is_bot'>): ApiError | null {
  switch (requires) {
    case undefined:
      return null;
    case 'owner':
      return user.role === Role.OWNER ? null : new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
    case 'admin':
      return user.role <= Role.ADMIN ? null : adminRequired();
    case 'member':
      if (user.role === Role.GUEST) return badRequest('Not allowed for guest users');
      return user.is_bot ? badRequest('This endpoint does not accept bot requests.') : null;
    case 'bot':
      return user.is_bot ? null : botsOnly();
  }
}

/** The methods whose requests grow state unless their record says otherwise (`RouteRecord.grows`). */
const GROWING_METHODS: ReadonlySet<Method> = new Set(['POST', 'PUT', 'PATCH']);

/** Whether a route's requests are refused under memory pressure: its `grows`, else its method's. */
export function growsState(r: Pick<RouteRecord, 'method' | 'grows'>): boolean {
  return r.grows ?? GROWING_METHODS.has(r.method);
}

/** Declares a chat route; its handler's parameters are typed from `params`. */
export function route<const M extends ParamMap>(r: Omit<RouteRecord<M, undefined, 'chat'>, 'api'> & { auth: 'user' | 'none' }): RouteRecord<M, undefined, 'chat'> {
  return { api: 'chat', ...r };
}

/** Declares a board route; its handler's parameters and body are typed from their schemas. */
export function boardRoute<const M extends ParamMap = {}, T extends TSchema = TSchema>(
  r: Omit<RouteRecord<M, Static<T>, 'board'>, 'api' | 'params' | 'body'> & { params?: M; body?: { component: string; schema: T; maxBytes: number } },
): RouteRecord<M, Static<T>, 'board'> {
  return { api: 'board', ...r, params: r.params ?? ({} as M) };
}

/** A schema for one of several schemas (JSON Schema `oneOf`), typed as their union. */
export function OneOf<T extends TSchema[]>(...schemas: T): TUnsafe<Static<T[number]>> {
  return Type.Unsafe<Static<T[number]>>({ oneOf: schemas });
}

/** A string from a fixed list (`{type: 'string', enum}`), typed as the union of its values. */
export function Enum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** A schema that also admits null, by `type: [t, 'null']` (so ajv's messages stay those of `type`). */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });
}

/** A value of any of several primitive JSON types, by `type: [...]`. */
export function Types<T extends TSchema[]>(...schemas: T): TUnsafe<Static<T[number]>> {
  return Type.Unsafe<Static<T[number]>>({ type: schemas.map((s) => s.type) });
}

/** Common parameter schemas. */
export const S = {
  int: Type.Integer(),
  nonNegInt: Type.Integer({ minimum: 0 }),
  bool: Type.Boolean(),
  str: Type.String(),
  intArray: Type.Array(Type.Integer()),
  nonNegIntArray: Type.Array(Type.Integer({ minimum: 0 })),
  strArray: Type.Array(Type.String()),
  /** Any JSON array. */
  list: Type.Array(Type.Unknown()),
  /** Any JSON object. */
  obj: Type.Unsafe<Record<string, unknown>>({ type: 'object' }),
};

/** Response bodies (`RouteRecord.response`): the fields of a success beside `result` and `msg`. */
export const R = {
  /** Nothing more (`{"result":"success","msg":""}`). */
  empty: Type.Object({}, { additionalProperties: false }),
  /** The given fields (each required unless `Type.Optional`), and no others. */
  fields: <P extends Record<string, TSchema>>(props: P) => Type.Object(props, { additionalProperties: false }),
};

/** A chat success's whole JSON body, given the fields a route's `response` declares: theirs with `result` and `msg`. */
export function successBody(response: TSchema): Record<string, unknown> {
  const own = response as { properties?: Record<string, unknown>; required?: string[] };
  return {
    ...response,
    type: 'object',
    properties: { result: { type: 'string', const: 'success' }, msg: { type: 'string' }, ignored_parameters_unsupported: { type: 'array', items: { type: 'string' } }, ...own.properties },
    required: ['result', 'msg', ...(own.required ?? [])],
  };
}
