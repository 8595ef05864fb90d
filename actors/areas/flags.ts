/**
 * Personal message flags (`read`, `starred`, `collapsed`, and the server's own such
 * as `mentioned`): changing them (Zulip's `zerver/actions/message_flags.py`), the
 * `update_message_flags` event, and the starred and unread sections of `/register`.
 */
import { area, command, userFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { received } from '../kinds/channel.js';
import { hasFlag, SERVER_FLAGS, setFlag, SETTABLE_FLAGS, STORED_FLAGS, type UserContext } from '../kinds/user.js';
import type { MessageRecord, UserRecord } from '../shared/types.js';
import { toOwner } from '../render/events.js';
import { unreadMessages } from '../engines/unread.js';

/** A user changed a personal flag on some messages. */
export interface FlagsUpdated {
  type: 'FlagsUpdated';
  org: number;
  user_id: number;
  op: 'add' | 'remove';
  flag: string;
  messages: number[];
}

/** Add or remove a personal flag on messages the user can see. */
export interface UpdateFlags {
  type: 'UPDATE_FLAGS';
  user_id: number;
  org: number;
  op: 'add' | 'remove';
  flag: string;
  /** Ids the caller has already checked the user may see. */
  messages: number[];
  /** The channel of each channel message among `messages`, by id (needed to mark unread). */
  channels?: Record<number, number>;
}
/** What `POST /messages/flags` learns: the ids that changed, and channels ignored for marking unread. */
export interface FlagsResult {
  messages: number[];
  ignored_because_not_subscribed_channels: number[];
}

export const updateFlags = command({
  type: 'UPDATE_FLAGS',
  actor: 'user',
  decide(ctx: UserContext, command: UpdateFlags): Decision<FlagsResult, FlagsUpdated> {
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
    const facts: FlagsUpdated[] = changed.length === 0 ? [] : [{ type: 'FlagsUpdated', org: command.org, user_id: ctx.user_id, op: command.op, flag: command.flag, messages: changed }];
    return { facts, value: { messages: changed, ignored_because_not_subscribed_channels: [...ignoredChannels].sort((a, b) => a - b) } };
  },
});

/** Which unread messages `MARK_AS_READ` marks read. */
export type ReadScope = { kind: 'all' } | { kind: 'channel'; stream_id: number } | { kind: 'topic'; stream_id: number; topic: string };

/**
 * Mark every unread message of a scope read (`POST /mark_all_as_read`,
 * `/mark_stream_as_read`, `/mark_topic_as_read`), decided by the user actor against
 * its own unread set, so no message arriving meanwhile is half counted.
 */
export interface MarkAsRead {
  type: 'MARK_AS_READ';
  user_id: number;
  org: number;
  scope: ReadScope;
}

/** Whether an unread message is in the scope (topics compare case-insensitively, as Zulip's). */
function inScope(view: StateView, org: number, scope: ReadScope, id: number): boolean {
  if (scope.kind === 'all') return true;
  if (view.org(org)?.messageChannel.get(id) !== scope.stream_id) return false;
  if (scope.kind === 'channel') return true;
  const m = view.channel(org, scope.stream_id)?.messages.get(id);
  return m !== undefined && m.topic.toLowerCase() === scope.topic.toLowerCase();
}

export const markAsRead = command({
  type: 'MARK_AS_READ',
  actor: 'user',
  decide(ctx: UserContext, c: MarkAsRead, _env: DecideEnv, view: StateView): Decision<{ count: number }, FlagsUpdated> {
    const ids = ctx.unread.toArray().filter((id) => inScope(view, c.org, c.scope, id));
    if (ids.length === 0) return { facts: [], value: { count: 0 } };
    return { facts: [{ type: 'FlagsUpdated', org: c.org, user_id: ctx.user_id, op: 'add', flag: 'read', messages: ids }], value: { count: ids.length } };
  },
});

const flagsUpdated = userFact<FlagsUpdated>({
  type: 'FlagsUpdated',
  apply: (ctx, f) => setFlag(ctx, f.flag, f.messages, f.op === 'add'),
  notify(f, seq, view) {
    const body: Record<string, unknown> = { op: f.op, operation: f.op, flag: f.flag, messages: f.messages, all: false };
    if (f.flag === 'read' && f.op === 'remove') body.message_details = messageDetails(view, f.org, f.user_id, f.messages);
    return toOwner(f, seq, 'update_message_flags', body);
  },
});

/** What a client needs to put messages marked unread back into its unread counts. */
function messageDetails(view: StateView, orgId: number, userId: number, ids: number[]): Record<string, unknown> {
  const org = view.org(orgId)!;
  const me = view.user(orgId, userId);
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const mentioned = me?.flags.mentioned.has(id) ?? false;
    const streamId = org.messageChannel.get(id);
    if (streamId !== undefined) {
      const m = view.channel(orgId, streamId)?.messages.get(id);
      out[id] = { type: 'stream', mentioned, stream_id: streamId, topic: m?.topic ?? '', unmuted_stream_msg: !(me?.subs.get(streamId)?.is_muted ?? false) };
    } else {
      const m = org.directMessages.get(id);
      out[id] = { type: 'private', mentioned, user_ids: (m?.dm_user_ids ?? []).filter((u) => u !== userId) };
    }
  }
  return out;
}

/**
 * Whether a user holds personal flags for a message (Zulip's `UserMessage` row): they
 * received it, or set a flag on it later (a public channel's message starred).
 */
function holdsMessage(view: StateView, org: number, user: UserContext, m: MessageRecord): boolean {
  if (m.stream_id === null) return m.dm_user_ids?.includes(user.user_id) ?? false;
  const ch = view.channel(org, m.stream_id);
  if (ch && received(ch, user.user_id, m.id)) return true;
  return STORED_FLAGS.some((f) => user.flags[f].has(m.id));
}

/**
 * Who has read a message, as `GET /messages/{id}/read_receipts` shows it to `viewer`
 * (Zulip's `read_receipts`): the active users holding it with the `read` flag, who
 * share read receipts (`send_read_receipts`); never its sender, nor anyone the viewer
 * muted or who muted the viewer. Bots are included. Ascending ids.
 */
export function readReceipts(view: StateView, org: number, viewer: UserRecord, m: MessageRecord): number[] {
  const mine = view.user(org, viewer.user_id)?.personal.muted;
  const out: number[] = [];
  for (const u of view.org(org)!.users.values()) {
    if (!u.is_active || u.user_id === m.sender_id || u.settings?.send_read_receipts === false) continue;
    if (mine?.has(u.user_id)) continue;
    const ctx = view.user(org, u.user_id);
    if (!ctx || ctx.personal.muted.has(viewer.user_id)) continue;
    if (ctx.unread.has(m.id) || !holdsMessage(view, org, ctx, m)) continue;
    out.push(u.user_id);
  }
  return out.sort((a, b) => a - b);
}

export const flags = area({
  name: 'flags',
  commands: [updateFlags, markAsRead],
  facts: [flagsUpdated],
  register: [
    {
      types: ['update_message_flags'],
      fill(state, r, view) {
        const me = view.user(r.org.id, r.user.user_id);
        state.starred_messages = me?.flags.starred.toArray() ?? [];
        state.unread_msgs = unreadMessages(view, view.org(r.org.id)!, me, r.caps.empty_topic_name);
      },
    },
  ],
});
