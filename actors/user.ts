/**
 * The user actor: a user's personal message flags and subscription settings. Flags
 * are kept as sets of message ids per flag, never as an object per (user, message).
 * `read` is stored inverted, as the set of unread ids, because most messages a user
 * holds are read.
 */
import { badRequest } from './errors.js';
import { subscriptionIndex, type Fact } from './facts.js';
import { IdSet } from './id_set.js';
import { domainLogic, type Decision } from './logic.js';
import type { SubscriptionProps } from './types.js';

/** Flags a client may set or clear. */
export const SETTABLE_FLAGS = new Set(['read', 'starred', 'collapsed']);
/** Flags that exist but only the server changes. */
const SERVER_FLAGS = new Set(['mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned', 'wildcard_mentioned', 'has_alert_word', 'historical']);
/** Every flag that is kept as a set of message ids (`read` is kept as `unread`). */
export const STORED_FLAGS = ['starred', 'collapsed', 'mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned', 'has_alert_word'] as const;
export type StoredFlag = (typeof STORED_FLAGS)[number];

/** State of one user actor. */
export interface UserContext {
  seq: number;
  user_id: number;
  subs: Map<number, SubscriptionProps>;
  /** Settings of channels the user left, kept for `unsubscribed` and for rejoining. */
  former: Map<number, SubscriptionProps>;
  unread: IdSet;
  flags: Record<StoredFlag, IdSet>;
}

/** Add or remove a personal flag on messages the user can see. */
export interface UpdateFlags {
  type: 'UPDATE_FLAGS';
  org: number;
  op: 'add' | 'remove';
  flag: string;
  /** Ids the caller has already checked the user may see. */
  messages: number[];
  /** The channel of each channel message among `messages`, by id (needed to mark unread). */
  channels?: Record<number, number>;
}
export type UserCommand = UpdateFlags;

export function emptyUser(userId: number): UserContext {
  const flags = {} as Record<StoredFlag, IdSet>;
  for (const f of STORED_FLAGS) flags[f] = new IdSet();
  return { seq: 0, user_id: userId, subs: new Map(), former: new Map(), unread: new IdSet(), flags };
}

/** The flags of one message for this user, as Zulip lists them. */
export function flagsOf(ctx: UserContext, messageId: number): string[] {
  const out: string[] = [];
  if (!ctx.unread.has(messageId)) out.push('read');
  for (const f of STORED_FLAGS) if (ctx.flags[f].has(messageId)) out.push(f);
  if (ctx.flags.stream_wildcard_mentioned.has(messageId) || ctx.flags.topic_wildcard_mentioned.has(messageId)) out.push('wildcard_mentioned');
  return out;
}

function hasFlag(ctx: UserContext, flag: string, id: number): boolean {
  if (flag === 'read') return !ctx.unread.has(id);
  return ctx.flags[flag as StoredFlag]?.has(id) ?? false;
}

function setFlag(ctx: UserContext, flag: string, ids: number[], on: boolean): void {
  // `read` is stored inverted, as the unread set.
  const set = flag === 'read' ? ctx.unread : ctx.flags[flag as StoredFlag];
  if (on === (flag !== 'read')) set.addMany(ids);
  else set.deleteMany(ids);
}

function join(ctx: UserContext, streamId: number, props: SubscriptionProps): void {
  ctx.subs.set(streamId, { ...props });
  ctx.former.delete(streamId);
}

/** Leaving keeps the settings, for `unsubscribed` and for rejoining. */
function leave(ctx: UserContext, streamId: number): void {
  const props = ctx.subs.get(streamId);
  if (!props) return;
  ctx.former.set(streamId, props);
  ctx.subs.delete(streamId);
}

function reduce(ctx: UserContext, fact: Fact): void {
  switch (fact.type) {
    case 'Subscribed': {
      const i = fact.user_ids.indexOf(ctx.user_id);
      if (i >= 0) join(ctx, fact.stream_id, fact.props[i]);
      break;
    }
    case 'Unsubscribed':
      if (fact.user_ids.includes(ctx.user_id)) leave(ctx, fact.stream_id);
      break;
    case 'SubscriptionsAdded':
      for (const { stream_id, props } of subscriptionIndex(fact).byUser.get(ctx.user_id) ?? []) join(ctx, stream_id, props!);
      break;
    case 'SubscriptionsRemoved':
      for (const { stream_id } of subscriptionIndex(fact).byUser.get(ctx.user_id) ?? []) leave(ctx, stream_id);
      break;
    case 'MessageSent': {
      const id = fact.message.id;
      if (!(fact.read_by_sender && fact.message.sender_id === ctx.user_id)) ctx.unread.add(id);
      if (fact.mentioned.includes(ctx.user_id)) ctx.flags.mentioned.add(id);
      if (fact.wildcard === 'stream') ctx.flags.stream_wildcard_mentioned.add(id);
      if (fact.wildcard === 'topic') ctx.flags.topic_wildcard_mentioned.add(id);
      break;
    }
    case 'FlagsUpdated':
      setFlag(ctx, fact.flag, fact.messages, fact.op === 'add');
      break;
    default:
      break;
  }
}

function decide(ctx: UserContext, command: UserCommand): Decision {
  if (SERVER_FLAGS.has(command.flag)) throw badRequest(`Flag not editable: '${command.flag}'`);
  if (!SETTABLE_FLAGS.has(command.flag)) throw badRequest(`Invalid flag: '${command.flag}'`);
  const on = command.op === 'add';
  // Marking unread only applies in channels the user is subscribed to, as in Zulip.
  const ignoredChannels = new Set<number>();
  const eligible = command.messages.filter((id) => {
    const streamId = command.channels?.[id];
    if (command.flag !== 'read' || on || streamId === undefined || ctx.subs.has(streamId)) return true;
    ignoredChannels.add(streamId);
    return false;
  });
  const changed = eligible.filter((id) => hasFlag(ctx, command.flag, id) !== on);
  const facts: Fact[] = changed.length === 0 ? [] : [{ type: 'FlagsUpdated', org: command.org, user_id: ctx.user_id, op: command.op, flag: command.flag, messages: changed }];
  return { facts, value: { messages: changed, ignored_because_not_subscribed_channels: [...ignoredChannels].sort((a, b) => a - b) } };
}

/** XState logic of user actors. */
export const userLogic = domainLogic<UserContext, UserCommand>({ decide, reduce });
