/**
 * The user actor: a user's personal message flags and subscription settings; the
 * areas add the rest as state slices (`actors/core/state_slices.ts`): topic settings,
 * scheduled messages, push devices, personal data (`actors/rules/personal.ts`). Flags
 * are kept as sets of message ids per flag, never as an object per (user, message).
 * `read` is stored inverted, as the set of unread ids, because most messages a user
 * holds are read.
 */
import type { Persistence } from '../core/persistence.js';
import { IdSet } from '../shared/id_set.js';
import { savedSlices, withSlices } from '../core/state_slices.js';
import type { SubscriptionProps } from '../shared/types.js';

/** Flags a client may set or clear. */
export const SETTABLE_FLAGS = new Set(['read', 'starred', 'collapsed']);
/** Flags that exist but only the server changes. */
export const SERVER_FLAGS = new Set(['mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned', 'wildcard_mentioned', 'has_alert_word', 'historical']);
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

/** A user's visibility policy for one channel topic (Zulip's `UserTopic`). */
export interface UserTopic {
  stream_id: number;
  topic_name: string;
  /** Unix seconds. */
  last_updated: number;
  /** 1 muted, 2 unmuted, 3 followed (0, inherit, is no entry). */
  visibility_policy: number;
}

/** Topics are one entry whatever their case. */
export function userTopicKey(streamId: number, topic: string): string {
  return `${streamId}\u0000${topic.toLowerCase()}`;
}

export function emptyUser(userId: number): UserContext {
  const flags = {} as Record<StoredFlag, IdSet>;
  for (const f of STORED_FLAGS) flags[f] = new IdSet();
  return withSlices('user', { seq: 0, user_id: userId, subs: new Map(), former: new Map(), unread: new IdSet(), flags });
}

/** The flags of one message for this user, as Zulip lists them. */
export function flagsOf(ctx: UserContext, messageId: number): string[] {
  const out: string[] = [];
  if (!ctx.unread.has(messageId)) out.push('read');
  for (const f of STORED_FLAGS) if (ctx.flags[f].has(messageId)) out.push(f);
  if (ctx.flags.stream_wildcard_mentioned.has(messageId) || ctx.flags.topic_wildcard_mentioned.has(messageId)) out.push('wildcard_mentioned');
  return out;
}

export function hasFlag(ctx: UserContext, flag: string, id: number): boolean {
  if (flag === 'read') return !ctx.unread.has(id);
  return ctx.flags[flag as StoredFlag]?.has(id) ?? false;
}

export function setFlag(ctx: UserContext, flag: string, ids: number[], on: boolean): void {
  // `read` is stored inverted, as the unread set.
  const set = flag === 'read' ? ctx.unread : ctx.flags[flag as StoredFlag];
  if (on === (flag !== 'read')) set.addMany(ids);
  else set.deleteMany(ids);
}

export function join(ctx: UserContext, streamId: number, props: SubscriptionProps): void {
  ctx.subs.set(streamId, { ...props });
  ctx.former.delete(streamId);
}

/** Leaving keeps the settings, for `unsubscribed` and for rejoining. */
export function leave(ctx: UserContext, streamId: number): void {
  const props = ctx.subs.get(streamId);
  if (!props) return;
  ctx.former.set(streamId, props);
  ctx.subs.delete(streamId);
}

/** A set of message ids in a snapshot: bytes (format 2 on) or an array (format 1). */
type StoredIds = Uint8Array | number[];

function storedIds(stored: StoredIds): IdSet {
  return stored instanceof Uint8Array ? IdSet.fromBytes(stored) : IdSet.from(stored);
}

interface UserChunk {
  k: 'user';
  org: number;
  seq: number;
  user_id: number;
  subs: Array<[number, SubscriptionProps]>;
  former: Array<[number, SubscriptionProps]>;
  unread: StoredIds;
  flags: Record<string, StoredIds>;
  [slice: string]: unknown;
}

/** Where a restored user goes. */
export interface UserRestoreScope {
  installUser(orgId: number, ctx: UserContext): void;
}

/** A user's persistence needs its organization's id, which its context does not hold. */
export function userPersistence(orgId: number): Persistence<UserContext, UserRestoreScope> {
  return {
    ...userRestore,
    *chunks(ctx) {
      yield (): UserChunk => {
        const flags: Record<string, StoredIds> = {};
        for (const f of STORED_FLAGS) flags[f] = ctx.flags[f].toBytes();
        return { k: 'user', org: orgId, seq: ctx.seq, user_id: ctx.user_id, subs: [...ctx.subs], former: [...ctx.former], unread: ctx.unread.toBytes(), flags, ...savedSlices('user', ctx) };
      };
    },
  };
}

/** Restoring user chunks (the same for every organization). */
export const userRestore: Pick<Persistence<UserContext, UserRestoreScope>, 'tags' | 'restore'> = {
  tags: ['user'],
  restore(chunk, scope) {
    const c = chunk as UserChunk;
    const flags = {} as Record<StoredFlag, IdSet>;
    for (const f of STORED_FLAGS) flags[f] = storedIds(c.flags[f] ?? []);
    scope.installUser(c.org, withSlices('user', { seq: c.seq, user_id: c.user_id, subs: new Map(c.subs), former: new Map(c.former), unread: storedIds(c.unread), flags }, c));
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    user: UserContext;
  }
}
