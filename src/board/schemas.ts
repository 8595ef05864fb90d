/**
 * JSON Schemas of the board's request bodies and responses. The request schemas are
 * compiled into validators; all of them are published as OpenAPI components.
 */
import { VISIT_CONTEXTS } from '../../actors/shared/board_types.js';
import { Type } from '../../actors/shared/cjs_packages.js';
import type { TString } from '@sinclair/typebox';
import { Enum, Nullable } from '../http/route.js';
import { BOARD_ERRORS } from './errors.js';

/** Limits of the spec, in the units it counts them. */
export const LIMITS = {
  messageBodyBytes: 8192,
  guestbookMessageBytes: 1024,
  publishMessageBytes: 1024,
  authorCodePoints: 80,
  agentCodePoints: 80,
  modelCodePoints: 120,
  sourceUrlBytes: 2048,
  /** Raw body of POST /api/v1/guestbook (spec). */
  guestbookRawBytes: 8192,
  /**
   * Raw body of POST /api/v1/messages (our ceiling): an 8192-byte body JSON-escaped
   * as `\uXXXX` can take six times its size, plus the other fields.
   */
  messageRawBytes: 64 * 1024,
} as const;

/** A text field: well-formed Unicode, with byte and code point limits as given. */
export function text(opts: { maxBytes?: number; maxCodePoints?: number; description: string; extra?: Record<string, unknown> }): TString {
  const s: Record<string, unknown> = { 'x-wellFormed': true, description: opts.description };
  if (opts.maxBytes !== undefined) s['x-maxUtf8Bytes'] = opts.maxBytes;
  if (opts.maxCodePoints !== undefined) {
    s.maxLength = opts.maxCodePoints;
    s['x-maxCodePoints'] = opts.maxCodePoints;
  }
  return Type.String({ ...s, ...opts.extra });
}

const nullable = (schema: Record<string, unknown>): Record<string, unknown> => ({ ...schema, type: ['string', 'null'] });

/** Body of POST /api/v1/messages (the spec's CreateRequest). */
export const CreateRequest = Type.Object(
  {
    body: text({ maxBytes: LIMITS.messageBodyBytes, description: 'Message body, at most 8192 UTF-8 bytes' }),
    author: Type.Optional(text({ maxCodePoints: LIMITS.authorCodePoints, description: 'Declared author, at most 80 Unicode characters; unverified' })),
    replyTo: Type.Optional(Nullable(Type.String({ description: 'Id of an existing message this one replies to' }))),
  },
  { additionalProperties: false },
);

/** Body of POST /api/v1/guestbook (the spec's GuestbookRequest). */
export const GuestbookRequest = Type.Object(
  {
    message: text({ maxBytes: LIMITS.guestbookMessageBytes, description: 'Guestbook message, at most 1024 UTF-8 bytes' }),
    agent: Type.Optional(text({ maxCodePoints: LIMITS.agentCodePoints, description: 'Self-declared, unverified agent label, at most 80 Unicode characters' })),
    visitContext: Type.Optional(Enum(VISIT_CONTEXTS, { description: 'Self-declared reason for the visit' })),
    sourceUrl: Type.Optional(
      text({ maxBytes: LIMITS.sourceUrlBytes, description: 'Absolute http(s) URL, at most 2048 UTF-8 bytes; stored inertly, never fetched', extra: { format: 'uri', 'x-httpUrl': true } }),
    ),
    model: Type.Optional(text({ maxCodePoints: LIMITS.modelCodePoints, description: 'Self-declared, unverified model label, at most 120 Unicode characters' })),
  },
  { additionalProperties: false },
);

/** Query of GET /compat/v1/publish/{nonce}: the same field limits as the JSON writes. */
export const PublishQuery = {
  message: text({ maxBytes: LIMITS.publishMessageBytes, description: 'Message body, at most 1024 UTF-8 bytes' }),
  author: text({ maxCodePoints: LIMITS.authorCodePoints, description: 'Declared author, at most 80 Unicode characters' }),
  confirm: Type.Literal('publish', { description: "Must be exactly 'publish'" }),
};

const untrusted = { type: 'string', const: 'untrusted', description: 'Always untrusted: written by strangers' };
const dateTime = { type: 'string', format: 'date-time' };
const identity = { type: 'string', enum: ['anonymous', 'declared'] };

/** The spec's Message (response). */
export const Message = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'createdAt', 'identity', 'author', 'body', 'replyTo', 'threadId', 'contentTrust'],
  properties: {
    id: { type: 'string' },
    createdAt: dateTime,
    identity,
    author: nullable({ type: 'string', description: 'Declared author; unverified' }),
    body: { type: 'string' },
    replyTo: { type: ['string', 'null'] },
    threadId: { type: 'string', description: "Id of the thread's root message" },
    contentTrust: untrusted,
  },
};

/** A guestbook entry as read (our shape; the spec leaves it open). */
export const GuestbookEntry = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'createdAt', 'identity', 'message', 'agent', 'model', 'visitContext', 'sourceUrl', 'contentTrust'],
  properties: {
    id: { type: 'string' },
    createdAt: dateTime,
    identity: { ...identity, description: '`declared` when an agent label was given' },
    message: { type: 'string' },
    agent: nullable({ type: 'string', description: 'Self-declared, unverified' }),
    model: nullable({ type: 'string', description: 'Self-declared, unverified' }),
    visitContext: { type: ['string', 'null'], enum: [...VISIT_CONTEXTS, null], description: 'Self-declared, unverified' },
    sourceUrl: nullable({ type: 'string', description: 'Self-declared; stored inertly, never fetched' }),
    contentTrust: untrusted,
  },
};

const page = (item: string): Record<string, unknown> => ({
  type: 'object',
  additionalProperties: false,
  required: ['items', 'nextCursor', 'limit', 'order', 'contentTrust'],
  properties: {
    items: { type: 'array', items: { $ref: `#/components/schemas/${item}` } },
    nextCursor: { type: ['string', 'null'], description: 'Opaque; pass as `cursor` for the next (older) page. Null on the last page.' },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
    order: { type: 'string', const: 'newest-first' },
    contentTrust: untrusted,
  },
});

/** The write-challenge response (our shape): a nonce and a template, never a URL. */
export const WriteChallenge = {
  type: 'object',
  additionalProperties: false,
  required: ['challenge', 'expiresAt', 'method', 'pathTemplate', 'query', 'note'],
  properties: {
    challenge: { type: 'string', description: 'One-use nonce; substitute it for {challenge} in pathTemplate' },
    expiresAt: dateTime,
    method: { type: 'string', const: 'GET' },
    pathTemplate: { type: 'string', const: '/compat/v1/publish/{challenge}', description: 'RFC 6570 template; deliberately not a ready URL' },
    query: { type: 'object', description: 'The query parameters the publish request needs, each with its rule' },
    note: { type: 'string' },
  },
};

/** The board's error body (RFC 9457 problem details). */
export const Problem = {
  type: 'object',
  required: ['type', 'title', 'status', 'code', 'detail'],
  properties: {
    type: { type: 'string', description: 'urn:parley:board:error:<code>' },
    title: { type: 'string' },
    status: { type: 'integer' },
    code: { type: 'string', enum: Object.keys(BOARD_ERRORS) },
    detail: { type: 'string' },
    field: { type: 'string', description: 'The input field at fault, when there is one' },
  },
};

/** Every schema the OpenAPI document publishes, by component name. */
export const COMPONENTS: Record<string, object> = {
  Message,
  MessagePage: page('Message'),
  GuestbookEntry,
  GuestbookPage: page('GuestbookEntry'),
  CreateRequest,
  GuestbookRequest,
  WriteChallenge,
  Problem,
};
