/**
 * Message bodies: the Markdown source, the rendered HTML and the edit history of each
 * message. They are the bulk of a chat server's bytes and only reads need them, so
 * actors hold a message's metadata and a numeric locator of its body
 * (`StoredMessage.body`), and the body lives in the runtime's body store.
 *
 * A body version is immutable: an edit appends a new one and the message takes its
 * locator. Releasing a version says no message holds it any more; a store may then drop
 * it (the memory store at once, a disk store at its next compaction). A reader that
 * holds a record across event-loop turns may find its version released by then, and
 * reads the message's current record again (`read` answers undefined).
 */
import type { MessageBody, MessageMeta, MessageRecord, StoredMessage } from '../shared/types.js';

/** Where message bodies are kept. */
export interface Bodies {
  /**
   * Whether locators outlive the process: a snapshot then holds each message's locator
   * and leaves the body where it is; otherwise it holds the whole message.
   */
  readonly persistent: boolean;
  /** Stores a body version and answers its locator. Synchronous and cheap: the send path calls it. */
  append(id: number, body: MessageBody): number;
  /** A body version, or undefined once released. */
  read(loc: number): MessageBody | undefined;
  /** Many body versions at once, for pages of old history: a disk store reads them without holding the event loop. */
  readMany(locs: number[]): Promise<Map<number, MessageBody>>;
  /** No message holds this version any more. */
  release(loc: number): void;
}

/** Bodies in the heap: for runtimes without a data directory (tests, operator tools). */
export class MemoryBodies implements Bodies {
  readonly persistent = false;
  private readonly versions = new Map<number, MessageBody>();
  private next = 1;

  append(_id: number, body: MessageBody): number {
    const loc = this.next++;
    this.versions.set(loc, body);
    return loc;
  }
  read(loc: number): MessageBody | undefined {
    return this.versions.get(loc);
  }
  async readMany(locs: number[]): Promise<Map<number, MessageBody>> {
    const out = new Map<number, MessageBody>();
    for (const loc of locs) {
      const body = this.versions.get(loc);
      if (body) out.set(loc, body);
    }
    return out;
  }
  release(loc: number): void {
    this.versions.delete(loc);
  }
  /** How many versions are held (tests). */
  get size(): number {
    return this.versions.size;
  }
}

/** Stores a whole message's body and answers the record an actor holds. */
export function storeMessage(bodies: Bodies, m: MessageRecord): StoredMessage {
  const loc = bodies.append(m.id, m.edit_history === undefined ? { content: m.content, rendered: m.rendered } : { content: m.content, rendered: m.rendered, edit_history: m.edit_history });
  return storedRecord(m, loc);
}

/** Fields that are a message's body, never its metadata. */
const BODY_FIELDS = new Set(['content', 'rendered', 'edit_history', 'body']);

/**
 * The record an actor holds for message `m` (whole or stored) with its body at `loc`:
 * built as a literal of the fields every message has, then the optional ones it has.
 * (Built by rest and spread instead, V8 gave each record about 460 bytes of heap, where
 * this takes about 145: millions of them are most of the heap.)
 */
export function storedRecord(m: MessageMeta, loc: number): StoredMessage {
  const s: StoredMessage = {
    id: m.id, sender_id: m.sender_id, timestamp: m.timestamp, client: m.client, stream_id: m.stream_id, topic: m.topic,
    dm_user_ids: m.dm_user_ids, recipient_id: m.recipient_id, has: m.has, body: loc,
  };
  for (const key in m) {
    if (!(key in s) && !BODY_FIELDS.has(key)) (s as unknown as Record<string, unknown>)[key] = (m as unknown as Record<string, unknown>)[key];
  }
  return s;
}

/** The body of a message an actor holds now: always present (a store failing here is a bug or a damaged disk). */
export function bodyOf(bodies: Bodies, m: StoredMessage): MessageBody {
  const body = bodies.read(m.body);
  if (!body) throw new Error(`message ${m.id}: body ${m.body} is not in the body store`);
  return body;
}

/** A stored message made whole again, as facts carry it and views render it. */
export function wholeMessage(bodies: Bodies, m: StoredMessage): MessageRecord {
  return joinBody(m, bodyOf(bodies, m));
}

/** A stored message with a body read for it. */
export function joinBody(m: StoredMessage, body: MessageBody): MessageRecord {
  const { body: _loc, ...meta } = m;
  return { ...meta, ...body };
}

/**
 * A message as a snapshot holds it: whole (format 3 and before, and any store whose
 * locators end with the process), or as stored, with the locator of a body in the
 * data directory's body store (format 4).
 */
export type PersistedMessage = MessageRecord | StoredMessage;

/** A message as its actor's snapshot chunk writes it, under the runtime's store. */
export function persistedMessage(bodies: Bodies, m: StoredMessage): PersistedMessage {
  return bodies.persistent ? m : wholeMessage(bodies, m);
}

/**
 * A message of a snapshot chunk as its actor holds it again. A stored one's body is in
 * `source`, the store of the directory the snapshot was written in: normally the
 * runtime's own; a restore into a fresh directory copies the body over.
 */
export function restoredMessage(bodies: Bodies, source: Bodies, m: PersistedMessage): StoredMessage {
  if (!('body' in m)) return storeMessage(bodies, m);
  if (source === bodies) return m;
  return storedRecord(m, bodies.append(m.id, bodyOf(source, m)));
}
