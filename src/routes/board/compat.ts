/**
 * The GET publication path: an explicit, optional exception to "GET never changes
 * state", off unless an operator turns the `compat` switch on. Two deliberate steps
 * keep a crawler or a link prefetcher from publishing by accident:
 * - the write-challenge gives a nonce and a path template, never a URL to follow;
 * - publishing needs that one-use, short-lived nonce and `confirm=publish` exactly.
 * Every response here is no-store, no-referrer and noindex (added by the app).
 */
import type { BoardMessage } from '../../../actors/shared/board_types.js';
import { LIMITS, PublishQuery } from '../../board/schemas.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import { boardRoute } from '../../http/route.js';
import { isoTime, messageView } from '../../board/views.js';
import { alternate } from './links.js';

export const writeChallenge = boardRoute({
  method: 'GET', path: '/compat/v1/write-challenge', operationId: 'getWriteChallenge', summary: 'A one-use challenge and the publish path template',
  // A GET that stores (a nonce, a message): refused under memory pressure as a POST is.
  grows: true,
  description: 'The response holds a nonce and an RFC 6570 path template, never a ready-to-follow URL. Counts against the publication rate limit.',
  switch: 'compat',
  limiter: 'publish',
  noStore: true,
  responses: {
    200: { description: 'A challenge and a publish path template', component: 'WriteChallenge' },
    404: { description: 'Compatibility disabled' },
    429: { description: 'Rate limited' },
  },
  async handler({ runtime, settings }) {
    const issued = (await runtime.execute({ type: 'ISSUE_NONCE', ttlSecs: settings.nonceTtlSecs })) as { nonce: string; expiresAt: number };
    return {
      json: {
        challenge: issued.nonce,
        expiresAt: isoTime(issued.expiresAt),
        method: 'GET',
        pathTemplate: '/compat/v1/publish/{challenge}',
        query: {
          message: `required; the message body, at most ${LIMITS.publishMessageBytes} UTF-8 bytes, percent-encoded`,
          author: `optional; declared author, at most ${LIMITS.authorCodePoints} Unicode characters`,
          confirm: "required; exactly 'publish'",
        },
        note: 'Single use; expires at expiresAt. Prefer POST /api/v1/messages, the canonical write.',
      },
    };
  },
});

export const publishWithNonce = boardRoute({
  method: 'GET', path: '/compat/v1/publish/{nonce}', operationId: 'publishWithChallenge', summary: 'Publish a message with a one-use challenge (changes state although it is a GET)',
  // A GET that stores (a nonce, a message): refused under memory pressure as a POST is.
  grows: true,
  description: 'The nonce is consumed in the same log record as the message it publishes.',
  switch: 'compat',
  limiter: 'publish',
  noStore: true,
  params: {
    nonce: { schema: Type.String(), in: 'path', required: true, description: 'The `challenge` of a write-challenge response' },
    message: { schema: PublishQuery.message, required: true, description: 'Message body, at most 1024 UTF-8 bytes' },
    author: { schema: PublishQuery.author, description: 'Declared author, at most 80 Unicode characters' },
    confirm: { schema: PublishQuery.confirm, required: true, description: "Must be exactly 'publish'" },
  },
  queryError: 'validation_failed',
  responses: {
    201: { description: 'The created message', component: 'Message' },
    403: { description: 'Challenge unknown, expired or already used' },
    404: { description: 'Compatibility disabled' },
    422: { description: 'Validation error' },
    429: { description: 'Rate limited' },
  },
  async handler({ runtime, params }) {
    const m = (await runtime.execute({ type: 'PUBLISH_WITH_NONCE', nonce: params.nonce, body: params.message, author: params.author ?? null })) as BoardMessage;
    return { status: 201, json: messageView(m), headers: [['Location', `/messages/${m.id}.json`], alternate(`/messages/${m.id}.md`, 'text/markdown')] };
  },
});
