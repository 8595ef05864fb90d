/**
 * Emoji reactions on messages (Zulip's `zerver/actions/reactions.py`): adding and
 * removing one, `reaction` events to everyone who holds the message (and the
 * subscribers of a public-history channel), and the reactions in message payloads.
 * The actor that owns the message decides: its channel's, or the organization's for
 * a direct message. Message records are replaced, never changed in place.
 */
import { area, fact, messageCommand } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { ApiError, badRequest } from '../shared/errors.js';
import { received, type ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { eventJson } from '../render/events.js';
import { messageActor } from '../rules/messages.js';
import type { MessageMeta, Reaction } from '../shared/types.js';

/** Someone added or removed a reaction. `audience` is who is told. */
export interface ReactionChanged {
  type: 'ReactionChanged';
  org: number;
  op: 'add' | 'remove';
  message_id: number;
  stream_id: number | null;
  reaction: Reaction;
  audience: number[];
}

/** Add or remove a reaction on a message: its channel's actor decides, or the organization's for a direct message. */
export interface React { type: 'REACT'; org: number; op: 'add' | 'remove'; message_id: number; reaction: Reaction }

const same = (a: Reaction, b: Reaction): boolean => a.user_id === b.user_id && a.emoji_code === b.emoji_code && a.reaction_type === b.reaction_type;

/** Zulip's checks: a reaction is added once, and only an existing one removed. */
function decideReaction(m: MessageMeta | undefined, c: React, streamId: number | null, audience: () => number[]): Decision<Record<string, never>, ReactionChanged> {
  if (!m) throw badRequest('Invalid message(s)');
  const existing = (m.reactions ?? []).find((r) => same(r, c.reaction));
  if (c.op === 'add' && existing) throw new ApiError('REACTION_ALREADY_EXISTS', 'Reaction already exists.');
  if (c.op === 'remove' && !existing) throw new ApiError('REACTION_DOES_NOT_EXIST', "Reaction doesn't exist.");
  let reaction = existing ?? c.reaction;
  if (c.op === 'add') {
    // Another user's reaction with the same emoji is a vote for it: its name wins, as in Zulip.
    const vote = (m.reactions ?? []).find((r) => r.emoji_code === c.reaction.emoji_code && r.reaction_type === c.reaction.reaction_type);
    if (vote) reaction = { ...c.reaction, emoji_name: vote.emoji_name };
  }
  return { facts: [{ type: 'ReactionChanged', org: c.org, op: c.op, message_id: m.id, stream_id: streamId, reaction, audience: audience() }], value: {} };
}

export const react = messageCommand({
  type: 'REACT',
  address: messageActor,
  decide: {
    channel: (ctx: ChannelContext, c: React): Decision<Record<string, never>, ReactionChanged> => {
      const m = ctx.messages.get(c.message_id);
      return decideReaction(m, c, ctx.channel.stream_id, () => {
        const told = new Set([...ctx.history.keys()].filter((id) => received(ctx, id, c.message_id)));
        if (ctx.channel.history_public_to_subscribers) for (const id of ctx.subscribers) told.add(id);
        return [...told].sort((a, b) => a - b);
      });
    },
    org: (ctx: OrgContext, c: React): Decision<Record<string, never>, ReactionChanged> => {
      const m = ctx.directMessages.get(c.message_id);
      return decideReaction(m, c, null, () => [...(m?.dm_user_ids ?? [])]);
    },
  },
});

/** The record with the reaction added or removed (idempotent, for replay over a fuzzy snapshot). */
function withReaction<M extends MessageMeta>(m: M, f: ReactionChanged): M {
  const others = (m.reactions ?? []).filter((r) => !same(r, f.reaction));
  return { ...m, reactions: f.op === 'add' ? [...others, f.reaction] : others };
}

const reactionChanged = fact<ReactionChanged>({
  type: 'ReactionChanged',
  apply: {
    channel(ctx, f) {
      const m = ctx.messages.get(f.message_id);
      if (m) ctx.messages.set(m.id, withReaction(m, f));
    },
    org(ctx, f) {
      const m = ctx.directMessages.get(f.message_id);
      if (m) ctx.directMessages.set(m.id, withReaction(m, f));
    },
  },
  route(f, to) {
    if (f.stream_id !== null) to.channel(f.org, f.stream_id);
    else to.org(f.org);
  },
  notify(f, seq, view: StateView) {
    const users = view.org(f.org)?.users;
    const who = users?.get(f.reaction.user_id);
    const event = eventJson('reaction', {
      op: f.op,
      user_id: f.reaction.user_id,
      user: { user_id: f.reaction.user_id, email: who?.email ?? '', full_name: who?.full_name ?? '' },
      message_id: f.message_id,
      emoji_name: f.reaction.emoji_name,
      emoji_code: f.reaction.emoji_code,
      reaction_type: f.reaction.reaction_type,
    });
    return [{ org: f.org, seq, type: 'reaction', user_ids: f.audience.filter((id) => users?.get(id)?.is_active), event }];
  },
});

export const reactions = area({
  name: 'reactions',
  commands: [react],
  facts: [reactionChanged],
});
