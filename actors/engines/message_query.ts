/**
 * `GET /messages`: the messages a user may read, filtered by a narrow, around an
 * anchor. Sources (each channel's ids and the user's direct message ids) are sorted
 * arrays; they are merged lazily from the anchor outwards, so a page costs about its
 * own size, not the size of the history.
 *
 * A narrow that matches little (a search, a sender) may still have to look at the whole
 * history to fill a page, so the scan runs in slices: after `SCAN_SLICE.messages`
 * messages examined, or `SCAN_SLICE.ms` of work, it yields to the event loop
 * (`setImmediate`) so that other requests are served in between. Between slices new
 * messages may arrive; they are appended to the id arrays, which the walk reads live.
 */
import { performance } from 'node:perf_hooks';
import { ApiError, badRequest } from '../shared/errors.js';
import { readsFullHistory, received, type ChannelContext } from '../kinds/channel.js';
import { narrowPredicate, resolveChannel, type NarrowTerm } from './narrow.js';
import { lowerBound } from '../shared/id_set.js';
import { Role, type MessageRecord, type StoredMessage } from '../shared/types.js';
import { joinBody } from '../core/bodies.js';
import type { StateView } from '../core/state_view.js';

/** Zulip's anchor value that stands for "after every message". */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;

export interface MessageQuery {
  org: number;
  user_id: number;
  anchor: 'newest' | 'oldest' | 'first_unread' | number;
  num_before: number;
  num_after: number;
  include_anchor: boolean;
  narrow: NarrowTerm[];
}

export interface MessagePage {
  messages: StoredMessage[];
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
}

/** A sorted id array, how to load its messages, and which of them the viewer may read. */
interface Source {
  ids: ArrayLike<number>;
  get(id: number): StoredMessage | undefined;
  readable?: (id: number) => boolean;
}

/** Whether a user may read one message of a channel: all history, or what they received. */
export function canReadChannelMessage(ch: ChannelContext, user: { user_id: number; role: number }, messageId: number): boolean {
  return readsFullHistory(ch, user) || received(ch, user.user_id, messageId);
}

/** A channel as a message source for one viewer. */
function channelSource(ch: ChannelContext, user: { user_id: number; role: number }, receivedOnly: boolean): Source {
  const all = !receivedOnly && readsFullHistory(ch, user);
  return { ids: ch.messages.ids, get: (mid) => ch.messages.get(mid), readable: all ? undefined : (mid) => received(ch, user.user_id, mid) };
}

function sourcesFor(world: StateView, q: MessageQuery): Source[] {
  const org = world.org(q.org)!;
  const user = org.users.get(q.user_id)!;
  const publicTerm = q.narrow.some((t) => !t.negated && (t.operator === 'channels' || t.operator === 'streams') && t.operand === 'public');
  const channelTerm = q.narrow.find((t) => !t.negated && (t.operator === 'channel' || t.operator === 'stream'));
  const dmOnly = q.narrow.some((t) => !t.negated && (['dm', 'pm-with', 'pm_with', 'group-pm-with', 'group_pm_with', 'dm-including'].includes(t.operator) || (t.operator === 'is' && (t.operand === 'dm' || t.operand === 'private'))));
  const sources: Source[] = [];
  if (channelTerm) {
    const id = resolveChannel(org, channelTerm.operand);
    const ch = id === undefined ? undefined : world.channel(q.org, id);
    if (!ch) throw new ApiError('BAD_NARROW', `Invalid narrow operator: unknown channel ${String(channelTerm.operand)}`);
    // A channel the user may not read yields only what they received there, often nothing.
    sources.push(channelSource(ch, user, false));
    return sources;
  }
  if (publicTerm && user.role !== Role.GUEST) {
    // Zulip's `ok_to_include_history`: `channels:public` searches every public channel's
    // whole history, and what the user received in the others.
    for (const streamId of world.channelIdsOf(q.org)) {
      const ch = world.channel(q.org, streamId)!;
      if (!ch.channel.invite_only) sources.push(channelSource(ch, user, false));
      else if (ch.history.has(q.user_id)) sources.push(channelSource(ch, user, true));
    }
    return sources;
  }
  const dmIds = org.directIdsByUser.get(q.user_id) ?? [];
  sources.push({ ids: dmIds, get: (mid) => org.directMessages.get(mid) });
  if (dmOnly) return sources;
  // The personal feed: what the user received, in every channel they were ever in.
  for (const streamId of world.channelIdsOf(q.org)) {
    const ch = world.channel(q.org, streamId)!;
    if (ch.history.has(q.user_id)) sources.push(channelSource(ch, user, true));
  }
  return sources;
}

/** Which channels of an organization are public, for `channels:public`. */
function publicChannelTest(world: StateView, orgId: number): (streamId: number) => boolean {
  return (streamId) => world.channel(orgId, streamId)?.channel.invite_only === false;
}

/** The message `id` if the user may read it (Zulip's `access_message`), else undefined. */
export function accessibleMessage(world: StateView, orgId: number, userId: number, id: number): StoredMessage | undefined {
  const org = world.org(orgId)!;
  const streamId = org.messageChannel.get(id);
  if (streamId === undefined) {
    const dm = org.directMessages.get(id);
    return dm && dm.dm_user_ids!.includes(userId) ? dm : undefined;
  }
  const ch = world.channel(orgId, streamId);
  const user = org.users.get(userId);
  return ch && user && canReadChannelMessage(ch, user, id) ? ch.messages.get(id) : undefined;
}

/**
 * Zulip's `update_narrow_terms_containing_with_operator`: `with:<id>` stands for the
 * conversation the message is in now, replacing the narrow's own `channel`, `topic`
 * and `dm` terms, so that a link keeps working after the topic moved. A message the
 * user cannot read leaves the narrow as it is when that narrow names a conversation,
 * and is an error otherwise.
 */
export function resolveWith(world: StateView, orgId: number, userId: number, narrow: NarrowTerm[]): NarrowTerm[] {
  const withTerms = narrow.filter((t) => t.operator === 'with');
  if (withTerms.length === 0) return narrow;
  if (withTerms.length > 1) throw new ApiError('BAD_NARROW', "Invalid narrow operator combination: Duplicate 'with' operators.");
  const rest = narrow.filter((t) => t.operator !== 'with');
  const m = accessibleMessage(world, orgId, userId, Number(withTerms[0].operand));
  if (!m) {
    if (definesConversation(rest)) return rest;
    throw new ApiError('BAD_NARROW', "Invalid narrow operator: Invalid 'with' operator");
  }
  const others = rest.filter((t) => !['stream', 'channel', 'topic', 'dm', 'pm-with'].includes(t.operator));
  const conversation: NarrowTerm[] = m.stream_id !== null
    ? [{ operator: 'channel', operand: m.stream_id, negated: false }, { operator: 'topic', operand: m.topic, negated: false }]
    : [{ operator: 'dm', operand: m.dm_user_ids!, negated: false }];
  return [...conversation, ...others];
}

/** Zulip's `can_narrow_define_conversation`: a `dm` term, or both a channel and a topic. */
function definesConversation(narrow: NarrowTerm[]): boolean {
  const has = (ops: string[]): boolean => narrow.some((t) => ops.includes(t.operator));
  return has(['dm', 'pm-with']) || (has(['stream', 'channel']) && has(['topic']));
}

/** How much of a scan runs in one turn of the event loop. */
export const SCAN_SLICE = {
  /** Messages examined (kept or not) before the scan yields. */
  messages: 2000,
  /** Milliseconds of scanning before the scan yields, whatever the count; the clock is read every 32 messages. */
  ms: 4,
};

/** How a scan is cut into slices; tests pass their own. */
export interface ScanOptions {
  /** Messages per slice (default `SCAN_SLICE.messages`). */
  sliceMessages?: number;
  /** Milliseconds per slice (default `SCAN_SLICE.ms`). */
  sliceMs?: number;
  /** Called each time the scan yields. */
  onYield?: () => void;
  /** Polled at each yield: true once the client went away, which ends the scan. */
  aborted?: () => boolean;
}

/** What a walk yields when its slice is used up. */
const PAUSE = Symbol('pause');
type Step = StoredMessage | typeof PAUSE;

/** Counts the messages a query examines and says when a slice is used up. */
class SliceBudget {
  private count = 0;
  private started = performance.now();
  private readonly perSlice: number;
  private readonly ms: number;
  constructor(private readonly opts: ScanOptions) {
    this.perSlice = Math.max(1, opts.sliceMessages ?? SCAN_SLICE.messages);
    this.ms = opts.sliceMs ?? SCAN_SLICE.ms;
  }

  /** Counts one examined message; true when the slice is used up. */
  tick(): boolean {
    this.count++;
    if (this.count >= this.perSlice) return true;
    return (this.count & 31) === 0 && performance.now() - this.started >= this.ms;
  }

  /** Lets other work run, then starts a new slice. */
  async pause(): Promise<void> {
    this.opts.onYield?.();
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.opts.aborted?.()) throw new ApiError('BAD_REQUEST', 'Request aborted by the client');
    this.count = 0;
    this.started = performance.now();
  }
}

/**
 * Walks the merged sources from `start` in one direction, yielding messages that pass
 * `keep`, and `PAUSE` whenever the budget's slice is used up.
 */
function* walk(sources: Source[], start: number, forward: boolean, keep: (m: StoredMessage) => boolean, budget: SliceBudget): Generator<Step> {
  const pos = sources.map((s) => (forward ? lowerBound(s.ids, start) : lowerBound(s.ids, start + 1) - 1));
  for (;;) {
    let best = -1;
    for (let i = 0; i < sources.length; i++) {
      const p = pos[i];
      if (p < 0 || p >= sources[i].ids.length) continue;
      if (best < 0 || (forward ? sources[i].ids[p] < sources[best].ids[pos[best]] : sources[i].ids[p] > sources[best].ids[pos[best]])) best = i;
    }
    if (best < 0) return;
    if (budget.tick()) yield PAUSE;
    const id = sources[best].ids[pos[best]];
    pos[best] += forward ? 1 : -1;
    const readable = sources[best].readable;
    if (readable && !readable(id)) continue;
    const m = sources[best].get(id);
    if (m && keep(m)) yield m;
  }
}

/** Up to `n` messages of a walk, and whether it has more. */
async function take(gen: Generator<Step>, n: number, budget: SliceBudget): Promise<{ items: StoredMessage[]; more: boolean }> {
  const items: StoredMessage[] = [];
  for (let step = gen.next(); !step.done; step = gen.next()) {
    if (step.value === PAUSE) {
      await budget.pause();
      continue;
    }
    if (items.length === n) return { items, more: true };
    items.push(step.value);
  }
  return { items, more: false };
}

/** The first message of a walk, if any. */
async function first(gen: Generator<Step>, budget: SliceBudget): Promise<StoredMessage | undefined> {
  for (let step = gen.next(); !step.done; step = gen.next()) {
    if (step.value === PAUSE) {
      await budget.pause();
      continue;
    }
    return step.value;
  }
  return undefined;
}

/** The message with id `anchor`, if the viewer may read it and it passes `keep`. */
function messageAt(sources: Source[], anchor: number, keep: (m: StoredMessage) => boolean): StoredMessage | undefined {
  for (const s of sources) {
    const p = lowerBound(s.ids, anchor);
    if (p >= s.ids.length || s.ids[p] !== anchor) continue;
    if (s.readable && !s.readable(anchor)) continue;
    const m = s.get(anchor);
    if (m && keep(m)) return m;
  }
  return undefined;
}

/** Runs a message query for one user, scanning in slices (see `SCAN_SLICE`). */
export async function queryMessages(world: StateView, q: MessageQuery, opts: ScanOptions = {}): Promise<MessagePage> {
  if (q.num_before < 0 || q.num_after < 0) throw badRequest('num_before and num_after must be non-negative');
  if (q.num_before + q.num_after > MAX_MESSAGES_PER_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  const org = world.org(q.org)!;
  const viewer = world.user(q.org, q.user_id);
  q = { ...q, narrow: resolveWith(world, q.org, q.user_id, q.narrow) };
  const sources = sourcesFor(world, q);
  const keep = narrowPredicate(org, q.narrow, viewer, true, publicChannelTest(world, q.org));
  const budget = new SliceBudget(opts);
  let anchor: number;
  if (q.anchor === 'newest') anchor = LARGER_THAN_MAX_MESSAGE_ID;
  else if (q.anchor === 'oldest') anchor = 0;
  else if (q.anchor === 'first_unread') {
    const unread = await first(walk(sources, 0, true, (m) => keep(m) && viewer !== undefined && viewer.unread.has(m.id), budget), budget);
    anchor = unread === undefined ? LARGER_THAN_MAX_MESSAGE_ID : unread.id;
  } else anchor = q.anchor;
  const before = await take(walk(sources, anchor - 1, false, keep, budget), q.num_before, budget);
  const atAnchor = messageAt(sources, anchor, keep);
  const foundAnchor = atAnchor !== undefined;
  const after = await take(walk(sources, anchor + 1, true, keep, budget), q.num_after, budget);
  const messages = before.items.reverse();
  if (atAnchor && q.include_anchor) messages.push(atAnchor);
  messages.push(...after.items);
  return {
    messages,
    anchor,
    found_anchor: foundAnchor && q.include_anchor,
    found_oldest: !before.more,
    found_newest: !after.more,
    history_limited: false,
  };
}

/** Zulip's `MAX_MESSAGES_PER_FETCH`. */
export const MAX_MESSAGES_PER_FETCH = 5000;

/**
 * The messages among `ids` a query with this narrow would return, in ascending id order
 * (`GET /messages` with `message_ids`, Zulip's `fetch_messages` with
 * `client_requested_message_ids`): the ids the viewer may not read, or that the
 * narrow leaves out, are silently omitted.
 */
export function messagesByIds(world: StateView, org: number, userId: number, ids: number[], narrow: NarrowTerm[]): StoredMessage[] {
  if (ids.length > MAX_MESSAGES_PER_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  const q: MessageQuery = { org, user_id: userId, anchor: 0, num_before: 0, num_after: 0, include_anchor: false, narrow: resolveWith(world, org, userId, narrow) };
  const sources = sourcesFor(world, q);
  const keep = narrowPredicate(world.org(org)!, q.narrow, world.user(org, userId), true, publicChannelTest(world, org));
  const out: StoredMessage[] = [];
  for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
    const m = messageAt(sources, id, keep);
    if (m) out.push(m);
  }
  return out;
}

/**
 * The messages among `ids` that the user holds (received, as Zulip's `UserMessage`
 * rows say: a public channel's history they never received is left out) and that
 * match the narrow, in ascending id order (`GET /messages/matches_narrow`). A channel
 * operand naming no channel is an error, as for `GET /messages`.
 */
export function messagesMatchingNarrow(world: StateView, org: number, userId: number, ids: number[], narrow: NarrowTerm[]): StoredMessage[] {
  const orgCtx = world.org(org)!;
  for (const t of narrow) {
    if ((t.operator === 'channel' || t.operator === 'stream') && resolveChannel(orgCtx, t.operand) === undefined) {
      throw new ApiError('BAD_NARROW', `Invalid narrow operator: unknown channel ${String(t.operand)}`);
    }
  }
  const viewer = world.user(org, userId);
  const keep = narrowPredicate(orgCtx, resolveWith(world, org, userId, narrow), viewer, true, publicChannelTest(world, org));
  const out: StoredMessage[] = [];
  for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
    const streamId = orgCtx.messageChannel.get(id);
    let m: StoredMessage | undefined;
    if (streamId !== undefined) {
      const ch = world.channel(org, streamId);
      m = ch && received(ch, userId, id) ? ch.messages.get(id) : undefined;
    } else {
      const dm = orgCtx.directMessages.get(id);
      m = dm && dm.dm_user_ids!.includes(userId) ? dm : undefined;
    }
    if (m && keep(m)) out.push(m);
  }
  return out;
}

/** The record an organization holds now for a message id, channel or direct. */
export function currentMessage(world: StateView, org: number, id: number): StoredMessage | undefined {
  const orgCtx = world.org(org);
  if (!orgCtx) return undefined;
  const streamId = orgCtx.messageChannel.get(id);
  return streamId === undefined ? orgCtx.directMessages.get(id) : world.channel(org, streamId)?.messages.get(id);
}

/**
 * The messages of a page made whole, their bodies read in one batch (a disk store reads
 * them without holding the event loop). A message edited while the page was gathered is
 * taken as it is now, and one deleted meanwhile is left out.
 */
export async function withBodies(world: StateView, org: number, messages: StoredMessage[]): Promise<MessageRecord[]> {
  const bodies = world.org(org)!.bodies;
  const read = await bodies.readMany(messages.map((m) => m.body));
  const out: MessageRecord[] = [];
  for (const m of messages) {
    const body = read.get(m.body);
    if (body) {
      out.push(joinBody(m, body));
      continue;
    }
    const now = currentMessage(world, org, m.id);
    const fresh = now && bodies.read(now.body);
    if (now && fresh) out.push(joinBody(now, fresh));
  }
  return out;
}
