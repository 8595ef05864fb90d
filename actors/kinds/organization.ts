/**
 * The organization actor: the user directory and roles, the channel directory, and
 * the organization's direct messages. It is the shard unit: nothing in it refers to
 * another organization. The areas add their own state (settings, user groups,
 * invitations, uploads…) as state slices (`actors/core/state_slices.ts`).
 */
import type { Persistence } from '../core/persistence.js';
import { savedSlices, withSlices } from '../core/state_slices.js';
import type { ChannelRecord, MessageRecord, OrgRecord, StoredMessage, UserRecord } from '../shared/types.js';
import { IdMap } from '../shared/id_map.js';
import { MessageTable } from '../shared/message_table.js';
import { stampHas } from '../engines/message_has.js';
import { persistedMessage, restoredMessage, storeMessage, type Bodies, type PersistedMessage } from '../core/bodies.js';

/** State of one organization actor. */
export interface OrgContext {
  seq: number;
  org: OrgRecord;
  users: Map<number, UserRecord>;
  /** Lower-cased API email to user id. */
  byEmail: Map<string, number>;
  /** Lower-cased channel name to channel id. */
  channelsByName: Map<string, number>;
  /** Next free id for users, channels and recipients, each counted separately. */
  nextUserId: number;
  nextChannelId: number;
  nextRecipientId: number;
  /** Direct messages, as columns ascending by id. */
  directMessages: MessageTable;
  /** Where the bodies of `directMessages` are (the runtime's body store; not part of snapshots). */
  bodies: Bodies;
  /** The highest direct message id ever added (kept when it is deleted). */
  lastDirectId: number;
  /** Each user's direct message ids, ascending. */
  directIdsByUser: Map<number, number[]>;
  /** Recipient id of each group conversation, keyed by its sorted user ids. */
  groupRecipients: Map<string, number>;
  /** Which channel each channel message lives in. */
  messageChannel: IdMap;
}

/** Context before the organization's `OrgCreated` fact is applied. */
export function emptyOrg(id: number, bodies: Bodies): OrgContext {
  return withSlices('org', {
    seq: 0,
    org: { id, name: '', subdomain: '', description: '', date_created: 0, deactivated: false },
    users: new Map(),
    byEmail: new Map(),
    channelsByName: new Map(),
    nextUserId: 1,
    nextChannelId: 1,
    nextRecipientId: 1,
    directMessages: new MessageTable(),
    bodies,
    lastDirectId: 0,
    directIdsByUser: new Map(),
    groupRecipients: new Map(),
    messageChannel: new IdMap(),
  });
}

/** Looks a user up by API email, case-insensitively. */
export function userByEmail(ctx: OrgContext, email: string): UserRecord | undefined {
  const id = ctx.byEmail.get(email.toLowerCase());
  return id === undefined ? undefined : ctx.users.get(id);
}

/** Adds a user to the directory. */
export function addUser(ctx: OrgContext, user: UserRecord): void {
  ctx.users.set(user.user_id, { ...user });
  ctx.byEmail.set(user.email.toLowerCase(), user.user_id);
  ctx.nextUserId = Math.max(ctx.nextUserId, user.user_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, user.recipient_id + 1);
}

/** Adds a channel to the directory. */
export function addChannel(ctx: OrgContext, channel: ChannelRecord): void {
  ctx.channelsByName.set(channel.name.toLowerCase(), channel.stream_id);
  ctx.nextChannelId = Math.max(ctx.nextChannelId, channel.stream_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, channel.recipient_id + 1);
}

/** Records a direct message in the organization's indexes. */
export function addDirectMessage(ctx: OrgContext, m: MessageRecord): void {
  const old = ctx.directMessages.get(m.id);
  if (old) ctx.bodies.release(old.body);
  indexDirectMessage(ctx, storeMessage(ctx.bodies, m.has === undefined ? stampHas(m) : m));
}

/** Records a direct message, its body stored already, in the organization's indexes. */
function indexDirectMessage(ctx: OrgContext, m: StoredMessage): void {
  ctx.directMessages.set(m.id, m);
  if (m.id > ctx.lastDirectId) ctx.lastDirectId = m.id;
  for (const uid of m.dm_user_ids ?? []) {
    let ids = ctx.directIdsByUser.get(uid);
    if (!ids) ctx.directIdsByUser.set(uid, (ids = []));
    ids.push(m.id);
  }
}

/** Replaces a direct message the organization holds (an edit), its old body released; one it does not hold stays out. */
export function replaceDirectMessage(ctx: OrgContext, m: MessageRecord): void {
  const old = ctx.directMessages.get(m.id);
  if (!old) return;
  ctx.bodies.release(old.body);
  ctx.directMessages.set(m.id, storeMessage(ctx.bodies, stampHas(m)));
}

/** The head chunk: the organization's own fields, then its areas' slices (`savedSlices`). */
interface OrgChunk {
  k: 'org';
  seq: number;
  org: OrgRecord;
  users: UserRecord[];
  channelsByName: Array<[string, number]>;
  nextUserId: number;
  nextChannelId: number;
  nextRecipientId: number;
  groupRecipients: Array<[string, number]>;
  /** Absent in older chunks: then the highest direct message id restored. */
  lastDirectId?: number;
  [slice: string]: unknown;
}

interface DirectMessagesChunk {
  k: 'dms';
  org: number;
  /** Whole before format 4; with a body store, as stored (`PersistedMessage`). */
  msgs: PersistedMessage[];
}

/** Where a restored organization goes, and where its slices find it. */
export interface OrgRestoreScope {
  installOrg(ctx: OrgContext): void;
  org(orgId: number): OrgContext | undefined;
  /** The runtime's body store, where restored bodies go. */
  bodies: Bodies;
  /** The store the snapshot's locators are of: `bodies`, or the source directory's in a restore. */
  bodySource: Bodies;
}

export const orgPersistence: Persistence<OrgContext, OrgRestoreScope> = {
  tags: ['org', 'dms'],
  *chunks(ctx, sliceSize) {
    // The head reflects the direct messages up to this id; later ones are left to replay.
    let bound = 0;
    yield (): OrgChunk => {
      bound = ctx.lastDirectId;
      return {
        k: 'org', seq: ctx.seq, org: ctx.org, users: [...ctx.users.values()], channelsByName: [...ctx.channelsByName],
        nextUserId: ctx.nextUserId, nextChannelId: ctx.nextChannelId, nextRecipientId: ctx.nextRecipientId, groupRecipients: [...ctx.groupRecipients],
        lastDirectId: ctx.lastDirectId,
        ...savedSlices('org', ctx),
      };
    };
    // Direct messages are kept in id order; a deleted one leaves the map. Slices take them
    // in order up to the head's bound: exactly those the head reflects, as they are then.
    // An organization always writes at least one (possibly empty) slice, as format 1 did.
    const iter = ctx.directMessages.values();
    let finished = false;
    do {
      yield (): DirectMessagesChunk => {
        const msgs: PersistedMessage[] = [];
        while (!finished && msgs.length < sliceSize) {
          const next = iter.next();
          if (next.done || next.value.id > bound) finished = true;
          else msgs.push(persistedMessage(ctx.bodies, next.value));
        }
        return { k: 'dms', org: ctx.org.id, msgs };
      };
    } while (!finished);
  },
  restore(chunk, scope) {
    if (chunk.k === 'org') {
      const c = chunk as OrgChunk;
      scope.installOrg(withSlices('org', {
        seq: c.seq,
        org: c.org,
        users: new Map(c.users.map((u) => [u.user_id, u])),
        byEmail: new Map(c.users.map((u) => [u.email.toLowerCase(), u.user_id])),
        channelsByName: new Map(c.channelsByName),
        nextUserId: c.nextUserId,
        nextChannelId: c.nextChannelId,
        nextRecipientId: c.nextRecipientId,
        directMessages: new MessageTable(),
        bodies: scope.bodies,
        lastDirectId: c.lastDirectId ?? 0,
        directIdsByUser: new Map(),
        groupRecipients: new Map(c.groupRecipients),
        messageChannel: new IdMap(),
      }, c));
      return;
    }
    const c = chunk as DirectMessagesChunk;
    const org = scope.org(c.org)!;
    for (const m of c.msgs) indexDirectMessage(org, restoredMessage(org.bodies, scope.bodySource, 'body' in m || m.has !== undefined ? m : stampHas(m)));
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    org: OrgContext;
  }
}
