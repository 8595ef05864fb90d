/**
 * Board messages: the JSON and Markdown renditions of the list and of one message,
 * and the canonical JSON write.
 */
import { findMessage } from '../../../actors/kinds/board.js';
import type { BoardMessage } from '../../../actors/shared/board_types.js';
import { BoardError } from '../../board/errors.js';
import { pageOf, PAGE_QUERY } from '../../board/paging.js';
import { messageMarkdown, messagesPageMarkdown } from '../../board/render_md.js';
import { Type } from '../../../actors/shared/cjs_packages.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import { boardRoute } from '../../http/route.js';
import { CreateRequest, LIMITS } from '../../board/schemas.js';
import { messageView, pageView } from '../../board/views.js';
import { alternate, next, queryOf } from './links.js';

function access(runtime: Runtime, id: string): BoardMessage {
  const m = findMessage(runtime.board(), id);
  if (!m) throw new BoardError('not_found', `No message with id '${id.slice(0, 40)}'`);
  return m;
}

const ID = { id: { schema: Type.String(), in: 'path', required: true, description: 'Message id, as in `Message.id`' } } as const;

export const listMessagesJson = boardRoute({
  method: 'GET', path: '/messages.json', operationId: 'listMessages', summary: 'A page of untrusted messages, newest first',
  params: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page of messages', component: 'MessagePage' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, params }) {
    const page = pageOf('m', runtime.board().messages, params);
    return { json: pageView(page, messageView), headers: [alternate('/messages.md' + queryOf(params), 'text/markdown'), ...next('/messages.json', page)] };
  },
});

export const listMessagesMarkdown = boardRoute({
  method: 'GET', path: '/messages.md', operationId: 'listMessagesMarkdown', summary: 'A page of messages as inert Markdown',
  params: PAGE_QUERY, queryError: 'invalid_parameter',
  responses: { 200: { description: 'A page as inert Markdown', mediaType: 'text/markdown' }, 400: { description: 'Invalid limit or cursor' } },
  handler({ runtime, params }) {
    const page = pageOf('m', runtime.board().messages, params);
    return { markdown: messagesPageMarkdown(page), headers: [alternate('/messages.json' + queryOf(params), 'application/json'), ...next('/messages.md', page)] };
  },
});

export const getMessageJson = boardRoute({
  method: 'GET', path: '/messages/{id}.json', operationId: 'getMessage', summary: 'One message',
  params: ID,
  responses: { 200: { description: 'One message', component: 'Message' }, 404: { description: 'Message not found' } },
  handler({ runtime, params }) {
    const m = access(runtime, params.id);
    return { json: messageView(m), headers: [alternate(`/messages/${m.id}.md`, 'text/markdown')] };
  },
});

export const getMessageMarkdown = boardRoute({
  method: 'GET', path: '/messages/{id}.md', operationId: 'getMessageMarkdown', summary: 'One message as inert Markdown',
  params: ID,
  responses: { 200: { description: 'One message as inert Markdown', mediaType: 'text/markdown' }, 404: { description: 'Message not found' } },
  handler({ runtime, params }) {
    const m = access(runtime, params.id);
    return { markdown: messageMarkdown(m), headers: [alternate(`/messages/${m.id}.json`, 'application/json')] };
  },
});

export const postMessage = boardRoute({
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
    const m = (await runtime.execute({ type: 'POST_MESSAGE', body: body.body, author: body.author ?? null, replyTo: body.replyTo ?? null })) as BoardMessage;
    return {
      status: 201,
      json: messageView(m),
      headers: [['Location', `/messages/${m.id}.json`], ['Cache-Control', 'no-store'], alternate(`/messages/${m.id}.md`, 'text/markdown')],
    };
  },
});
