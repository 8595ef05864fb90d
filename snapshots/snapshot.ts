/**
 * Taking, listing, pruning and loading snapshots.
 *
 * A snapshot is fuzzy: actors are encoded one by one (large ones in slices) across
 * event-loop turns, so request handling never stalls for long. Each actor's chunk
 * records the seq it reflects, and replay after a restore skips, per actor, the facts
 * it already holds. The file is written to a temporary name, fsync'd, and renamed into
 * place (then the directory is fsync'd) only once the log is durable through every
 * fact the snapshot reflects.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import type { ChannelContext, TopicEntry } from '../actors/channel.js';
import { IdSet } from '../actors/id_set.js';
import type { OrgContext } from '../actors/organization.js';
import type { QueueContext } from '../actors/event_queues/index.js';
import type { Runtime } from '../actors/runtime.js';
import type { ServerContext } from '../actors/server.js';
import type { MessageRecord, OrgRecord, SubscriptionProps, UserRecord } from '../actors/types.js';
import { STORED_FLAGS, type StoredFlag, type UserContext } from '../actors/user.js';
import { boardChunks, loadBoardChunk, type BoardChunk } from './board_chunks.js';
import { fsyncDir, listSegments } from './log.js';
import { encodeChunk, encodeHeader, encodeTrailer, verifySnapshot, type VerifiedSnapshot } from './snapshot_format.js';

/** One chunk of a snapshot: a whole small actor, or a slice of a large one. */
export type Chunk =
  | { k: 'server'; seq: number; orgs: OrgRecord[]; maxMessageId: number }
  | { k: 'org'; seq: number; org: OrgRecord; users: UserRecord[]; channelsByName: Array<[string, number]>; nextUserId: number; nextChannelId: number; nextRecipientId: number; groupRecipients: Array<[string, number]> }
  | { k: 'dms'; org: number; msgs: MessageRecord[] }
  | { k: 'channel'; org: number; seq: number; channel: ChannelContext['channel']; subscribers: number[]; topics: TopicEntry[]; history: Array<[number, number[]]> }
  | { k: 'msgs'; org: number; stream_id: number; msgs: MessageRecord[] }
  | { k: 'user'; org: number; seq: number; user_id: number; subs: Array<[number, SubscriptionProps]>; former: Array<[number, SubscriptionProps]>; unread: StoredIds; flags: Record<string, StoredIds> }
  | { k: 'queues'; list: QueueContext[] }
  | BoardChunk;

const SNAPSHOT = /^snap-(\d{16})\.psnap$/;

export function snapshotName(startSeq: number): string {
  return `snap-${String(startSeq).padStart(16, '0')}.psnap`;
}

/** Snapshot files in a directory, newest first. */
export function listSnapshots(dir: string): Array<{ name: string; path: string; startSeq: number; size: number; mtimeMs: number }> {
  return readdirSync(dir)
    .map((name) => ({ name, m: SNAPSHOT.exec(name) }))
    .filter((x) => x.m !== null)
    .map((x) => {
      const path = join(dir, x.name);
      const st = statSync(path);
      return { name: x.name, path, startSeq: Number(x.m![1]), size: st.size, mtimeMs: st.mtimeMs };
    })
    .sort((a, b) => b.startSeq - a.startSeq);
}

/** Tunables of snapshot writing. */
export interface SnapshotWriteOptions {
  /** Messages (or queues) per chunk of a large actor. */
  sliceSize: number;
  /** Yield to the event loop once encoding has run this long. */
  maxSliceMs: number;
  now(): number;
}

export const defaultWriteOptions: SnapshotWriteOptions = { sliceSize: 2000, maxSliceMs: 4, now: () => Date.now() };

/** What a finished snapshot covers. */
export interface SnapshotInfo {
  path: string;
  startSeq: number;
  endSeq: number;
  bytes: number;
  chunks: number;
  /** The longest stretch spent encoding without yielding, in ms. */
  longestSliceMs: number;
}

/** Produces the chunks of a snapshot lazily, so the writer can yield between them. */
function* chunksOf(runtime: Runtime, sliceSize: number): Generator<() => Chunk> {
  const sources = runtime.snapshotSources();
  const server: ServerContext = sources.server;
  yield () => ({ k: 'server', seq: server.seq, orgs: [...server.orgs.values()], maxMessageId: server.maxMessageId });
  yield* boardChunks(sources.board, sliceSize);
  for (const { org, channels, users } of sources.orgs) {
    let dmCount = 0;
    yield () => {
      dmCount = org.directMessages.size;
      return {
        k: 'org', seq: org.seq, org: org.org, users: [...org.users.values()], channelsByName: [...org.channelsByName],
        nextUserId: org.nextUserId, nextChannelId: org.nextChannelId, nextRecipientId: org.nextRecipientId, groupRecipients: [...org.groupRecipients],
      };
    };
    // Direct messages are append-only: the first `dmCount` entries are exactly those the head reflects.
    const dmIter = org.directMessages.values();
    for (let done = 0; ; ) {
      let slice: MessageRecord[] | undefined;
      yield () => {
        slice = [];
        while (done < dmCount && slice.length < sliceSize) {
          slice.push(dmIter.next().value as MessageRecord);
          done++;
        }
        return { k: 'dms', org: org.org.id, msgs: slice };
      };
      if (done >= dmCount) break;
    }
    for (const ch of channels) {
      let count = 0;
      yield () => {
        count = ch.ids.length;
        return {
          k: 'channel', org: org.org.id, seq: ch.seq, channel: ch.channel, subscribers: [...ch.subscribers], topics: [...ch.topics.values()],
          history: [...ch.history].map(([uid, bounds]) => [uid, [...bounds]]),
        };
      };
      // Message records are never mutated in place, and ids only grow at the end.
      for (let from = 0; from < count; from += sliceSize) {
        const start = from;
        yield () => ({ k: 'msgs', org: org.org.id, stream_id: ch.channel.stream_id, msgs: ch.ids.slice(start, Math.min(start + sliceSize, count)).map((id) => ch.messages.get(id)!) });
      }
    }
    for (const u of users) {
      yield () => {
        const flags: Record<string, StoredIds> = {};
        for (const f of STORED_FLAGS) flags[f] = u.flags[f].toBytes();
        return { k: 'user', org: org.org.id, seq: u.seq, user_id: u.user_id, subs: [...u.subs], former: [...u.former], unread: u.unread.toBytes(), flags };
      };
    }
  }
  const queues = runtime.queues.exportQueues();
  for (let from = 0; from < queues.length; from += sliceSize) {
    const start = from;
    yield () => ({ k: 'queues', list: queues.slice(start, start + sliceSize).filter((q) => runtime.queues.peek(q.id) === q) });
  }
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Writes a snapshot of the runtime into `dir`. `drain` must resolve once the log is
 * durable through everything appended so far.
 */
export async function writeSnapshot(dir: string, runtime: Runtime, drain: () => Promise<void>, opts: SnapshotWriteOptions = defaultWriteOptions): Promise<SnapshotInfo> {
  // Every fact up to deliveredSeq is applied to every actor and delivered to every queue.
  const startSeq = runtime.deliveredSeq;
  const createdAt = opts.now();
  const final = join(dir, snapshotName(startSeq));
  const temp = `${final}.${process.pid}.tmp`;
  const file = await open(temp, 'w');
  let crc = 0;
  let bytes = 0;
  let chunks = 0;
  let longestSliceMs = 0;
  // Encoded chunks wait here and are written off the event loop between slices: a
  // synchronous write can block for tens of ms once the kernel throttles dirty pages.
  let pending: Buffer[] = [];
  const add = (buf: Buffer): void => {
    pending.push(buf);
    crc = crc32(buf, crc);
    bytes += buf.length;
  };
  const flushPending = async (): Promise<void> => {
    const buf = pending.length === 1 ? pending[0] : Buffer.concat(pending);
    pending = [];
    for (let off = 0; off < buf.length; ) off += (await file.write(buf, off, buf.length - off)).bytesWritten;
  };
  try {
    add(encodeHeader({ startSeq, createdAt }));
    let sliceStart = performance.now();
    for (const make of chunksOf(runtime, opts.sliceSize)) {
      add(encodeChunk(make()));
      chunks++;
      const elapsed = performance.now() - sliceStart;
      if (elapsed >= opts.maxSliceMs) {
        longestSliceMs = Math.max(longestSliceMs, elapsed);
        await flushPending();
        await yieldToLoop();
        sliceStart = performance.now();
      }
    }
    longestSliceMs = Math.max(longestSliceMs, performance.now() - sliceStart);
    const endSeq = runtime.lastSeq;
    // Never let a snapshot reflect a fact that the log could still lose.
    await drain();
    add(encodeTrailer(endSeq, chunks, crc));
    await flushPending();
    await file.sync();
    await file.close();
    renameSync(temp, final);
    fsyncDir(dir);
    return { path: final, startSeq, endSeq, bytes, chunks, longestSliceMs };
  } catch (err) {
    await file.close().catch(() => undefined);
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * Keeps the newest `keep` snapshots, and deletes log segments that even the oldest
 * kept snapshot no longer needs. The active (last) segment is never deleted.
 */
export async function pruneSnapshots(dir: string, keep: number, log: (line: string) => void): Promise<void> {
  // Unlinking files of hundreds of MB can take a while: off the event loop.
  const snaps = listSnapshots(dir);
  for (const old of snaps.slice(keep)) {
    await rm(old.path);
    log(`snapshot: removed old snapshot ${old.name}`);
  }
  const kept = snaps.slice(0, keep);
  if (kept.length === 0) return;
  const oldestCovered = kept[kept.length - 1].startSeq;
  const segments = listSegments(dir);
  for (let i = 0; i + 1 < segments.length; i++) {
    if (segments[i + 1].firstSeq - 1 <= oldestCovered) {
      await rm(join(dir, segments[i].name));
      log(`snapshot: removed log segment ${segments[i].name}, covered by ${kept[kept.length - 1].name}`);
    }
  }
}

/** A set of message ids in a snapshot: bytes (format 2) or an array (format 1). */
type StoredIds = Uint8Array | number[];

function storedIds(stored: StoredIds): IdSet {
  return stored instanceof Uint8Array ? IdSet.fromBytes(stored) : IdSet.from(stored);
}

/** Installs a verified snapshot into an empty runtime. Returns the seq replay starts after. */
export function loadSnapshot(runtime: Runtime, snap: VerifiedSnapshot): number {
  const orgs = new Map<number, OrgContext>();
  const channels = new Map<string, ChannelContext>();
  for (const raw of snap.chunks) {
    const c = raw as Chunk;
    switch (c.k) {
      case 'server':
        runtime.restoreServer({
          seq: c.seq,
          orgs: new Map(c.orgs.map((o) => [o.id, o])),
          bySubdomain: new Map(c.orgs.map((o) => [o.subdomain, o.id])),
          maxMessageId: c.maxMessageId,
        });
        break;
      case 'org': {
        const ctx: OrgContext = {
          seq: c.seq,
          org: c.org,
          users: new Map(c.users.map((u) => [u.user_id, u])),
          byEmail: new Map(c.users.map((u) => [u.email.toLowerCase(), u.user_id])),
          channelsByName: new Map(c.channelsByName),
          nextUserId: c.nextUserId,
          nextChannelId: c.nextChannelId,
          nextRecipientId: c.nextRecipientId,
          directMessages: new Map(),
          directIdsByUser: new Map(),
          groupRecipients: new Map(c.groupRecipients),
          messageChannel: new Map(),
        };
        orgs.set(c.org.id, ctx);
        runtime.restoreOrg(ctx);
        break;
      }
      case 'dms': {
        const org = orgs.get(c.org)!;
        for (const m of c.msgs) {
          org.directMessages.set(m.id, m);
          for (const uid of m.dm_user_ids ?? []) {
            let ids = org.directIdsByUser.get(uid);
            if (!ids) org.directIdsByUser.set(uid, (ids = []));
            ids.push(m.id);
          }
        }
        break;
      }
      case 'channel': {
        const ctx: ChannelContext = {
          seq: c.seq,
          channel: c.channel,
          subscribers: new Set(c.subscribers),
          topics: new Map(c.topics.map((t) => [t.name.toLowerCase(), t])),
          ids: [],
          messages: new Map(),
          history: new Map(c.history),
        };
        channels.set(`${c.org}:${c.channel.stream_id}`, ctx);
        runtime.restoreChannel(c.org, ctx);
        break;
      }
      case 'msgs': {
        const ctx = channels.get(`${c.org}:${c.stream_id}`)!;
        const org = orgs.get(c.org)!;
        for (const m of c.msgs) {
          ctx.ids.push(m.id);
          ctx.messages.set(m.id, m);
          org.messageChannel.set(m.id, c.stream_id);
        }
        break;
      }
      case 'user': {
        const flags = {} as Record<StoredFlag, IdSet>;
        for (const f of STORED_FLAGS) flags[f] = storedIds(c.flags[f] ?? []);
        const ctx: UserContext = { seq: c.seq, user_id: c.user_id, subs: new Map(c.subs), former: new Map(c.former), unread: storedIds(c.unread), flags };
        runtime.restoreUser(c.org, ctx);
        break;
      }
      case 'queues':
        for (const q of c.list) runtime.restoreQueue(q);
        break;
      case 'board':
      case 'boardMsgs':
      case 'guestbook':
        loadBoardChunk(runtime, c);
        break;
    }
  }
  runtime.restoredThrough(snap.endSeq);
  return snap.header.startSeq;
}

/** Reads and verifies a snapshot file. */
export function readSnapshot(path: string, decode = true): VerifiedSnapshot | string {
  return verifySnapshot(readFileSync(path), decode);
}
