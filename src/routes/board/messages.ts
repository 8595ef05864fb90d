/**
 * Board messages: the JSON and Markdown renditions of the list and of one message,
 * and the canonical JSON write.
 */
import { findMessage } from '../../../actors/kinds/board.js';
import type { BoardMessage } from '../../../actors/board_types.js';
import { BoardError } from '../../board/errors.js';
import { pageOf, PAGE_QUERY, type PageQuery } from '../../board/paging.js';
import { messageMarkdown, messagesPageMarkdown } from '../../board/render_md.js';
import { boardRoute, type BoardCall } from '../../board/route.js';
import { CreateRequest, LIMITS } from '../../board/schemas.js';
import { messageView, pageView } from '../../board/views.js';
import { alternate, next, queryOf } from './links.js';

function access(call: BoardCall<unknown, unknown>): BoardMessage {
  const m = findMessage(call.runtime.board(), call.pathParams.id);
  if (!m) throw new BoardError('not_found', `No message with id '${call.pathParams.id.slice(0, 40)}'`);
  return m;
}

const ID = { id: { description: 'Message id, as in `Message.id`' } };

export const listMessagesJson = boardRoute<undefined, PageQuery>({
  method: 'GET', path: '/messages.json', operationId: 'listMessages', summary: 'A page of untrusted messages, newest first',
  query: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page of messages', component: 'MessagePage' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, query }) {
    const page = pageOf('m', runtime.board().messages, query);
    return { json: pageView(page, messageView), headers: [alternate('/messages.md' + queryOf(query), 'text/markdown'), ...next('/messages.json', page)] };
  },
});

export const listMessagesMarkdown = boardRoute<undefined, PageQuery>({
  method: 'GET', path: '/messages.md', operationId: 'listMessagesMarkdown', summary: 'A page of messages as inert Markdown',
  query: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page as inert Markdown', mediaType: 'text/markdown' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, query }) {
    const page = pageOf('m', runtime.board().messages, query);
    return { markdown: messagesPageMarkdown(page), headers: [alternate('/messages.json' + queryOf(query), 'application/json'), ...next('/messages.md', page)] };
  },
});

export const getMessageJson = boardRoute({
  method: 'GET', path: '/messages/{id}.json', operationId: 'getMessage', summary: 'One message',
  pathParams: ID,
  responses: { 200: { description: 'One message', component: 'Message' }, 404: { description: 'Message not found' } },
  handler(call) {
    const m = access(call);
    return { json: messageView(m), headers: [alternate(`/messages/${m.id}.md`, 'text/markdown')] };
  },
});

export const getMessageMarkdown = boardRoute({
  method: 'GET', path: '/messages/{id}.md', operationId: 'getMessageMarkdown', summary: 'One message as inert Markdown',
  pathParams: ID,
  responses: { 200: { description: 'One message as inert Markdown', mediaType: 'text/markdown' }, 404: { description: 'Message not found' } },
  handler(call) {
    const m = access(call);
    return { markdown: messageMarkdown(m), headers: [alternate(`/messages/${m.id}.json`, 'application/json')] };
  },
});

/** The validated body of POST /api/v1/messages. */
interface CreateBody {
  body: string;
  author?: string;
  replyTo?: string | null;
}

export const postMessage = boardRoute<CreateBody>({
  method: 'POST', path: '/api/v1/messages', operationId: 'createMessage', summary: 'Post a message (the canonical write)',
  description: '`replyTo` must name an existing message; the new message joins that message\'s thread. `identity` is `declared` when `author` is given.',
  limiter: 'messages',
  body: { component: 'CreateRequest', schema: CreateRequest, maxBytes: LIMITS.messageRawBytes },
  responses: {
    201: { description: 'The created message', component: 'Message' },
    413: { description: 'Raw request body too large' },
    415: { description: 'Not application/json' },
    422: { description: 'Validation error or malformed JSON' },
    429: { description: 'Rate limited' },
  },
  async handler({ runtime, body }) {
    const m = (await runtime.execute({ kind: 'board', command: { type: 'POST_MESSAGE', body: body.body, author: body.author ?? null, replyTo: body.replyTo ?? null } })) as BoardMessage;
    return {
      status: 201,
      json: messageView(m),
      headers: [['Location', `/messages/${m.id}.json`], ['Cache-Control', 'no-store'], alternate(`/messages/${m.id}.md`, 'text/markdown')],
    };
  },
});
