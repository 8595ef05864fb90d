/**
 * Submessages (Zulip's `zerver/actions/submessage.py`): what clients attach to a
 * message with a widget (a vote on a poll, a new option, a task struck), and the
 * `submessage` event that tells everyone who holds the message. The widget itself is
 * attached by the send (`actors/areas/messages.ts`); the rules are `actors/rules/widgets.ts`.
 * The actor that owns the message decides: its channel's, or the organization's for
 * a direct message. Message records are replaced, never changed in place.
 */
import { area, fact, messageCommand } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { received, type ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { canReadChannelMessage } from '../engines/message_query.js';
import { messageActor } from '../rules/messages.js';
import { eventJson } from '../render/events.js';
import { Role, type MessageMeta, type Submessage, type UserRecord } from '../shared/types.js';
import { checkSubmessage } from '../rules/widgets.js';
import { serverState } from '../core/state_slices.js';

declare module '../kinds/server.js' {
  interface ServerContext {
    /** The highest submessage id ever assigned (server-wide, as in Zulip). */
    maxSubmessageId: number;
  }
}

serverState({ maxSubmessageId: { empty: () => 0 } });

/** A submessage was attached to a message. `audience` is who is told. */
export interface SubmessageAdded {
  type: 'SubmessageAdded';
  org: number;
  message_id: number;
  /** The message's channel, or null for a direct message. */
  stream_id: number | null;
  submessage: Submessage;
  audience: number[];
}

/** What a client attaches (`POST /submessage`). */
interface SubmessageRequest {
  org: number;
  sender_id: number;
  message_id: number;
  msg_type: string;
  content: string;
}
/** Attach a submessage to a message: its channel's actor decides, or the organization's for a direct message. */
export interface AddSubmessage extends SubmessageRequest { type: 'ADD_SUBMESSAGE' }

/** What the caller learns: the new submessage's id. */
export interface SubmessageResult {
  submessage_id: number;
}

function added(env: DecideEnv, c: SubmessageRequest, m: MessageMeta, sender: UserRecord, audience: number[]): Decision<SubmessageResult, SubmessageAdded> {
  checkSubmessage(m, sender.user_id, c.content);
  const submessage: Submessage = { id: env.nextSubmessageId(), sender_id: sender.user_id, msg_type: c.msg_type, content: c.content };
  return { facts: [{ type: 'SubmessageAdded', org: c.org, message_id: m.id, stream_id: m.stream_id, submessage, audience }], value: { submessage_id: submessage.id } };
}

/**
 * Who is told of a change to a channel message (Zulip's
 * `event_recipient_ids_for_action_on_messages`): with protected history, the
 * subscribers who received it; in a private channel with shared history, its
 * subscribers; in a public one, its subscribers and the others who received it, guests aside.
 */
export function channelMessageAudience(ctx: ChannelContext, org: OrgContext, m: MessageMeta): number[] {
  const holders = new Set([...ctx.history.keys(), ...(m.received_by ?? [])].filter((id) => received(ctx, id, m.id)));
  let told: Set<number>;
  if (!ctx.channel.history_public_to_subscribers) told = new Set([...ctx.subscribers].filter((id) => holders.has(id)));
  else if (ctx.channel.invite_only) told = new Set(ctx.subscribers);
  else {
    told = new Set(ctx.subscribers);
    for (const id of holders) if (org.users.get(id)?.role !== Role.GUEST) told.add(id);
  }
  return [...told].sort((a, b) => a - b);
}

export const addSubmessage = messageCommand({
  type: 'ADD_SUBMESSAGE',
  address: messageActor,
  decide: {
    channel: (ctx: ChannelContext, c: AddSubmessage, env: DecideEnv, view: StateView): Decision<SubmessageResult, SubmessageAdded> => {
      const org = view.org(c.org)!;
      const sender = org.users.get(c.sender_id);
      const m = ctx.messages.get(c.message_id);
      // Zulip's access_message for a change: messages of an archived channel are out of reach too.
      if (!m || !sender || !canReadChannelMessage(ctx, sender, m.id) || ctx.channel.is_archived) throw badRequest('Invalid message(s)');
      return added(env, c, m, sender, channelMessageAudience(ctx, org, m));
    },
    org: (ctx: OrgContext, c: AddSubmessage, env: DecideEnv): Decision<SubmessageResult, SubmessageAdded> => {
      const sender = ctx.users.get(c.sender_id);
      const m = ctx.directMessages.get(c.message_id);
      if (!m || !sender || !m.dm_user_ids!.includes(sender.user_id)) throw badRequest('Invalid message(s)');
      return added(env, c, m, sender, [...m.dm_user_ids!]);
    },
  },
});

/** The record with the submessage added, in id order (idempotent, for replay over a fuzzy snapshot). */
function withSubmessage<M extends MessageMeta>(m: M, s: Submessage): M {
  const others = (m.submessages ?? []).filter((x) => x.id !== s.id);
  return { ...m, submessages: [...others, s].sort((a, b) => a.id - b.id) };
}

const submessageAdded = fact<SubmessageAdded>({
  type: 'SubmessageAdded',
  apply: {
    server(ctx, f) {
      if (f.submessage.id > ctx.maxSubmessageId) ctx.maxSubmessageId = f.submessage.id;
    },
    channel(ctx, f) {
      const m = ctx.messages.get(f.message_id);
      if (m) ctx.messages.set(m.id, withSubmessage(m, f.submessage));
    },
    org(ctx, f) {
      const m = ctx.directMessages.get(f.message_id);
      if (m) ctx.directMessages.set(m.id, withSubmessage(m, f.submessage));
    },
  },
  route(f, to) {
    to.server();
    if (f.stream_id !== null) to.channel(f.org, f.stream_id);
    else to.org(f.org);
  },
  notify(f, seq, view) {
    const users = view.org(f.org)?.users;
    const s = f.submessage;
    const event = eventJson('submessage', { msg_type: s.msg_type, message_id: f.message_id, submessage_id: s.id, sender_id: s.sender_id, content: s.content });
    return [{ org: f.org, seq, type: 'submessage', user_ids: f.audience.filter((id) => users?.get(id)?.is_active), event }];
  },
});

export const submessages = area({
  name: 'submessages',
  commands: [addSubmessage],
  facts: [submessageAdded],
});
