/**
 * Direct messages belong to their participants. The organization actor stores them
 * and keeps each participant's list of direct message ids.
 */
import { badRequest } from './errors.js';
import type { Decision, DecideEnv } from './logic.js';
import { renderMarkdown } from './markdown.js';
import { checkContent } from './message_rules.js';
import type { OrgContext } from './organization.js';
import { mentionResolver } from './channel.js';
import type { MessageRecord } from './types.js';

/** Send a direct message to one or more users. */
export interface SendDirect {
  type: 'SEND_DIRECT';
  sender_id: number;
  to: number[];
  content: string;
  client: string;
  read_by_sender: boolean;
}

export function decideSendDirect(ctx: OrgContext, command: SendDirect, env: DecideEnv): Decision {
  const sender = ctx.users.get(command.sender_id);
  if (!sender || !sender.is_active) throw badRequest('Invalid sender');
  if (command.to.length === 0) throw badRequest('Message must have recipients');
  const participants = new Set<number>([sender.user_id]);
  for (const id of command.to) {
    const user = ctx.users.get(id);
    if (!user) throw badRequest(`Invalid user ID ${id}`);
    if (!user.is_active) throw badRequest(`'${user.email}' is no longer using Zulip.`);
    participants.add(id);
  }
  const dmUserIds = [...participants].sort((a, b) => a - b);
  const content = checkContent(command.content);
  const rendered = renderMarkdown(content, mentionResolver(ctx));
  let recipientId: number;
  if (dmUserIds.length === 1) recipientId = sender.recipient_id;
  else if (dmUserIds.length === 2) recipientId = ctx.users.get(dmUserIds[0] === sender.user_id ? dmUserIds[1] : dmUserIds[0])!.recipient_id;
  else recipientId = ctx.groupRecipients.get(dmUserIds.join(',')) ?? ctx.nextRecipientId;
  const message: MessageRecord = {
    id: env.nextMessageId(),
    sender_id: sender.user_id,
    content,
    rendered: rendered.html,
    timestamp: env.now(),
    client: command.client,
    stream_id: null,
    topic: '',
    dm_user_ids: dmUserIds,
    recipient_id: recipientId,
  };
  const mentioned = rendered.mentioned.filter((id) => participants.has(id));
  return {
    facts: [{ type: 'MessageSent', org: ctx.org.id, message, mentioned, wildcard: rendered.wildcard, read_by_sender: command.read_by_sender }],
    value: { id: message.id },
  };
}
