/**
 * `GET /messages`: the messages a user may read, filtered by a narrow, around an
 * anchor. Sources (each channel's ids and the user's direct message ids) are sorted
 * arrays; they are merged lazily from the anchor outwards, so a page costs about its
 * own size, not the size of the history.
 */
import { ApiError, badRequest } from '../src/http/errors.js';
import { readsFullHistory, received, type ChannelContext } from './channel.js';
import { narrowPredicate, resolveChannel, type NarrowTerm } from './narrow.js';
import type { MessageRecord } from './types.js';
import type { World } from './world.js';

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
  messages: MessageRecord[];
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
}

/** A sorted id array, how to load its messages, and which of them the viewer may read. */
interface Source {
  ids: number[];
  get(id: number): MessageRecord | undefined;
  readable?: (id: number) => boolean;
}

/** Whether a user may read one message of a channel: all history, or what they received. */
export function canReadChannelMessage(ch: ChannelContext, user: { user_id: number; role: number }, messageId: number): boolean {
  return readsFullHistory(ch, user) || received(ch, user.user_id, messageId);
}

/** A channel as a message source for one viewer. */
function channelSource(ch: ChannelContext, user: { user_id: number; role: number }, receivedOnly: boolean): Source {
  const all = !receivedOnly && readsFullHistory(ch, user);
  return { ids: ch.ids, get: (mid) => ch.messages.get(mid), readable: all ? undefined : (mid) => received(ch, user.user_id, mid) };
}

function sourcesFor(world: World, q: MessageQuery): Source[] {
  const org = world.org(q.org)!;
  const user = org.users.get(q.user_id)!;
  const channelTerm = q.narrow.find((t) => !t.negated && (t.operator === 'channel' || t.operator === 'stream'));
  const dmOnly = q.narrow.some((t) => !t.negated && (['dm', 'pm-with', 'group-pm-with', 'dm-including'].includes(t.operator) || (t.operator === 'is' && (t.operand === 'dm' || t.operand === 'private'))));
  const sources: Source[] = [];
  if (channelTerm) {
    const id = resolveChannel(org, channelTerm.operand);
    const ch = id === undefined ? undefined : world.channel(q.org, id);
    if (!ch) throw new ApiError('BAD_NARROW', `Invalid narrow operator: unknown channel ${String(channelTerm.operand)}`);
    // A channel the user may not read yields only what they received there, often nothing.
    sources.push(channelSource(ch, user, false));
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

/** Index of the first element of sorted `ids` that is >= `value`. */
function lowerBound(ids: number[], value: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Walks the merged sources from `start` in one direction, yielding messages that pass `keep`. */
function* walk(sources: Source[], start: number, forward: boolean, keep: (m: MessageRecord) => boolean): Generator<MessageRecord> {
  const pos = sources.map((s) => (forward ? lowerBound(s.ids, start) : lowerBound(s.ids, start + 1) - 1));
  for (;;) {
    let best = -1;
    for (let i = 0; i < sources.length; i++) {
      const p = pos[i];
      if (p < 0 || p >= sources[i].ids.length) continue;
      if (best < 0 || (forward ? sources[i].ids[p] < sources[best].ids[pos[best]] : sources[i].ids[p] > sources[best].ids[pos[best]])) best = i;
    }
    if (best < 0) return;
    const id = sources[best].ids[pos[best]];
    pos[best] += forward ? 1 : -1;
    const readable = sources[best].readable;
    if (readable && !readable(id)) continue;
    const m = sources[best].get(id);
    if (m && keep(m)) yield m;
  }
}

function take(gen: Generator<MessageRecord>, n: number): { items: MessageRecord[]; more: boolean } {
  const items: MessageRecord[] = [];
  for (const m of gen) {
    if (items.length === n) return { items, more: true };
    items.push(m);
  }
  return { items, more: false };
}

/** Runs a message query for one user. */
export function queryMessages(world: World, q: MessageQuery): MessagePage {
  if (q.num_before < 0 || q.num_after < 0) throw badRequest('num_before and num_after must be non-negative');
  if (q.num_before + q.num_after > 5000) throw badRequest('Too many messages requested (maximum 5000).');
  const org = world.org(q.org)!;
  const viewer = world.user(q.org, q.user_id);
  const sources = sourcesFor(world, q);
  const keep = narrowPredicate(org, q.narrow, viewer);
  let anchor: number;
  if (q.anchor === 'newest') anchor = LARGER_THAN_MAX_MESSAGE_ID;
  else if (q.anchor === 'oldest') anchor = 0;
  else if (q.anchor === 'first_unread') {
    const unread = walk(sources, 0, true, (m) => keep(m) && viewer !== undefined && viewer.unread.has(m.id)).next();
    anchor = unread.done ? LARGER_THAN_MAX_MESSAGE_ID : unread.value.id;
  } else anchor = q.anchor;
  const before = take(walk(sources, anchor - 1, false, keep), q.num_before);
  const atAnchor = walk(sources, anchor, true, keep).next();
  const foundAnchor = !atAnchor.done && atAnchor.value.id === anchor;
  const after = take(walk(sources, anchor + 1, true, keep), q.num_after);
  const messages = before.items.reverse();
  if (foundAnchor && q.include_anchor) messages.push(atAnchor.value as MessageRecord);
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
