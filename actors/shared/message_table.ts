/**
 * The messages an actor holds (a channel's, an organization's direct messages), as
 * columns: one typed array per field, a row per message, rows ascending by id.
 *
 * Millions of messages are most of a server's heap. As objects, each stored message
 * took about 145 bytes, and its entry in a `Map` by id about 40 more; as a row here it
 * takes 31 bytes (id, sender, time, topic, conversation, client, flags, body locator),
 * plus the arrays' room to grow. Strings that repeat (topics, clients) are interned per
 * table, and what a message shares with its conversation (channel, recipient, direct
 * message participants) is one conversation index. Fields few messages have (reactions,
 * widgets, edit and move times, holders of a moved message) stay objects, by id.
 *
 * The interface is the part of `Map<number, StoredMessage>` the actors use, so callers
 * read the same: `get` builds the record from its row (a fresh object each time; a
 * record is replaced with `set`, never changed in place), and `ids` is a view of the
 * id column, ascending.
 *
 * A snapshot being written holds a view of the ids and reads records by id across
 * event-loop turns, so a change never moves rows within the arrays it holds: appends
 * go past the end, a replaced record is rewritten in its row, and an insertion in the
 * middle or a removal builds new arrays.
 */
import type { StoredMessage } from './types.js';

/** What a message shares with its conversation. */
interface Conversation {
  stream_id: number | null;
  dm_user_ids: readonly number[] | null;
  recipient_id: number;
}

/** The flag byte of a row: `has` bits below, then whether `has` is present, extras exist, the row is odd. */
const HAS_MASK = 0x1f;
const HAS_PRESENT = 0x20;
const HAS_EXTRAS = 0x40;
const ODD = 0x80;
const MAX_U32 = 0xffffffff;
const MAX_CLIENTS = 0xffff;

/** The fields every stored message has, kept in columns; any other field is an extra. */
const FIXED = new Set(['id', 'sender_id', 'timestamp', 'client', 'stream_id', 'topic', 'dm_user_ids', 'recipient_id', 'has', 'body']);

function isU32(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= MAX_U32;
}

/** Strings numbered in the order first seen. */
class Interner {
  readonly values: string[] = [];
  private readonly index = new Map<string, number>();

  /** The number of `s`, or -1 when there would be more than `limit`. */
  of(s: string, limit = MAX_U32): number {
    let n = this.index.get(s);
    if (n === undefined) {
      if (this.values.length >= limit) return -1;
      n = this.values.length;
      this.values.push(s);
      this.index.set(s, n);
    }
    return n;
  }
}

export class MessageTable implements Iterable<StoredMessage> {
  private count = 0;
  private c: Columns = columns(0);
  private readonly topics = new Interner();
  private readonly clients = new Interner();
  private readonly convs: Conversation[] = [];
  private readonly convIndex = new Map<string, number>();
  /** Fields beyond the fixed ones, for the rows that have any. */
  private readonly extras = new Map<number, Record<string, unknown>>();
  /** Whole records whose fixed fields do not fit the columns (never in practice; kept exact). */
  private readonly odd = new Map<number, StoredMessage>();

  /** How many messages the table holds. */
  get size(): number {
    return this.count;
  }

  /** The ids, ascending: a view that later removals and insertions do not change. */
  get ids(): Uint32Array {
    return this.c.idCol.subarray(0, this.count);
  }

  /** The newest id, or undefined when empty. */
  get lastId(): number | undefined {
    return this.count > 0 ? this.c.idCol[this.count - 1] : undefined;
  }

  has(id: number): boolean {
    return this.indexOf(id) >= 0;
  }

  get(id: number): StoredMessage | undefined {
    const i = this.indexOf(id);
    return i < 0 ? undefined : this.at(i);
  }

  /** The record in row `i` (0 ≤ i < size). */
  at(i: number): StoredMessage {
    const id = this.c.idCol[i];
    const flags = this.c.flagCol[i];
    if (flags & ODD) return this.odd.get(id)!;
    const conv = this.convs[this.c.convCol[i]];
    const m: StoredMessage = {
      id, sender_id: this.c.senderCol[i], timestamp: this.c.timeCol[i], client: this.clients.values[this.c.clientCol[i]], stream_id: conv.stream_id,
      topic: this.topics.values[this.c.topicCol[i]], dm_user_ids: conv.dm_user_ids as number[] | null, recipient_id: conv.recipient_id,
      has: flags & HAS_PRESENT ? flags & HAS_MASK : undefined, body: this.c.bodyCol[i],
    };
    if (flags & HAS_EXTRAS) Object.assign(m, this.extras.get(id));
    return m;
  }

  /** The topic of row `i`, without building its record (scans by topic). */
  topicAt(i: number): string {
    return this.c.flagCol[i] & ODD ? this.odd.get(this.c.idCol[i])!.topic : this.topics.values[this.c.topicCol[i]];
  }

  /** The sender of row `i`, without building its record. */
  senderAt(i: number): number {
    return this.c.flagCol[i] & ODD ? this.odd.get(this.c.idCol[i])!.sender_id : this.c.senderCol[i];
  }

  /** The time of row `i`, without building its record. */
  timestampAt(i: number): number {
    return this.c.flagCol[i] & ODD ? this.odd.get(this.c.idCol[i])!.timestamp : this.c.timeCol[i];
  }

  /** The body locators of the messages these users sent. */
  bodiesBy(senders: readonly number[]): number[] {
    const wanted = new Set(senders);
    const out: number[] = [];
    for (let i = 0; i < this.count; i++) {
      if (wanted.has(this.senderAt(i))) out.push(this.bodyIn(this.c, i));
    }
    return out;
  }

  /**
   * Whether row `i` is in topic `key` (lower-cased), for scans of many rows: the topic
   * numbers that spell it are found once, and each row compares a number. For a scan
   * within one turn: the table as it is now.
   */
  inTopic(key: string): (i: number) => boolean {
    const spellings = new Set<number>();
    this.topics.values.forEach((name, n) => {
      if (name.toLowerCase() === key) spellings.add(n);
    });
    const c = this.c;
    return (i) => (c.flagCol[i] & ODD ? this.odd.get(c.idCol[i])!.topic.toLowerCase() === key : spellings.has(c.topicCol[i]));
  }

  /** The body locators of a topic's messages (`key` lower-cased). */
  bodiesInTopic(key: string): number[] {
    const out: number[] = [];
    const matches = this.inTopic(key);
    for (let i = 0; i < this.count; i++) if (matches(i)) out.push(this.bodyIn(this.c, i));
    return out;
  }

  /** The holders of a moved channel message (`StoredMessage.received_by`), without building its record. */
  receivedBy(id: number): number[] | undefined {
    return (this.extras.get(id)?.received_by ?? this.odd.get(id)?.received_by) as number[] | undefined;
  }

  /** Puts a record in, replacing the one with its id. */
  set(id: number, m: StoredMessage): this {
    const i = this.indexOf(id);
    if (i >= 0) this.write(i, m);
    else if (this.count === 0 || id > this.c.idCol[this.count - 1]) {
      this.reserve(this.count + 1);
      this.write(this.count++, m);
    } else this.insertSorted([m]);
    return this;
  }

  /** Puts many records in at once: one pass over the table however many land in its middle. */
  setMany(records: Iterable<StoredMessage>): void {
    const middle: StoredMessage[] = [];
    for (const m of records) {
      const i = this.indexOf(m.id);
      if (i >= 0) this.write(i, m);
      else if (this.count === 0 || m.id > this.c.idCol[this.count - 1]) {
        this.reserve(this.count + 1);
        this.write(this.count++, m);
      } else middle.push(m);
    }
    if (middle.length > 0) this.insertSorted(middle);
  }

  /** Points a message at another body version (the body store compacted), its record otherwise the same. */
  setBody(id: number, loc: number): void {
    const i = this.indexOf(id);
    if (i < 0) return;
    if (this.c.flagCol[i] & ODD) this.odd.set(id, { ...this.odd.get(id)!, body: loc });
    else this.c.bodyCol[i] = loc;
  }

  /** The body locator of a message, without building its record. */
  bodyOf(id: number): number | undefined {
    const i = this.indexOf(id);
    if (i < 0) return undefined;
    return this.bodyIn(this.c, i);
  }

  /** Every body locator the table holds. */
  *bodyLocators(): IterableIterator<number> {
    const c = this.c;
    for (let i = 0, n = this.count; i < n; i++) yield this.bodyIn(c, i);
  }

  delete(id: number): boolean {
    return this.deleteMany([id]) > 0;
  }

  /** Takes messages out (those it holds), building new arrays; answers how many went. */
  deleteMany(ids: Iterable<number>): number {
    const rows: number[] = [];
    for (const id of ids) {
      const i = this.indexOf(id);
      if (i >= 0) rows.push(i);
    }
    if (rows.length === 0) return 0;
    rows.sort((a, b) => a - b);
    const gone = rows.filter((r, k) => k === 0 || r !== rows[k - 1]);
    const next = columns(Math.max(0, this.count - gone.length));
    let w = 0;
    let from = 0;
    for (const r of [...gone, this.count]) {
      copyRows(this.c, next, from, r, w);
      w += r - from;
      from = r + 1;
    }
    for (const r of gone) {
      this.extras.delete(this.c.idCol[r]);
      this.odd.delete(this.c.idCol[r]);
    }
    this.install(next, w);
    return gone.length;
  }

  *keys(): IterableIterator<number> {
    const ids = this.ids;
    for (let i = 0; i < ids.length; i++) yield ids[i];
  }

  /** Every record, ascending by id, as the table is when each is reached. */
  *values(): IterableIterator<StoredMessage> {
    for (const id of this.ids) {
      const m = this.get(id);
      if (m) yield m;
    }
  }

  /** Every message by id, as `Map.entries` gives them. */
  *entries(): IterableIterator<[number, StoredMessage]> {
    for (const m of this.values()) yield [m.id, m];
  }

  [Symbol.iterator](): IterableIterator<StoredMessage> {
    return this.values();
  }

  /** The body locator of row `i` of columns `c` (the table's now, or those an iteration began on). */
  private bodyIn(c: Columns, i: number): number {
    return c.flagCol[i] & ODD ? this.odd.get(c.idCol[i])!.body : c.bodyCol[i];
  }

  /** Row of `id`, or -1. */
  indexOf(id: number): number {
    const ids = this.c.idCol;
    let lo = 0;
    let hi = this.count;
    if (hi === 0 || id > ids[hi - 1]) return -1;
    if (ids[hi - 1] === id) return hi - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid] < id) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.count && ids[lo] === id ? lo : -1;
  }

  /** Writes record `m` into row `i` (a new row or its own). */
  private write(i: number, m: StoredMessage): void {
    const id = m.id;
    this.c.idCol[i] = id;
    this.extras.delete(id);
    this.odd.delete(id);
    const conv = this.convOf(m);
    const client = typeof m.client === 'string' ? this.clients.of(m.client, MAX_CLIENTS) : -1;
    const hasOk = m.has === undefined || (Number.isInteger(m.has) && m.has >= 0 && m.has <= HAS_MASK);
    if (conv < 0 || client < 0 || !hasOk || !isU32(m.sender_id) || !isU32(m.timestamp) || typeof m.topic !== 'string' || typeof m.body !== 'number') {
      this.c.flagCol[i] = ODD;
      this.odd.set(id, m);
      return;
    }
    this.c.senderCol[i] = m.sender_id;
    this.c.timeCol[i] = m.timestamp;
    this.c.topicCol[i] = this.topics.of(m.topic);
    this.c.convCol[i] = conv;
    this.c.clientCol[i] = client;
    this.c.bodyCol[i] = m.body;
    let flags = m.has === undefined ? 0 : HAS_PRESENT | m.has;
    let extra: Record<string, unknown> | undefined;
    for (const key in m) {
      if (FIXED.has(key)) continue;
      (extra ??= {})[key] = (m as unknown as Record<string, unknown>)[key];
    }
    if (extra) {
      flags |= HAS_EXTRAS;
      this.extras.set(id, extra);
    }
    this.c.flagCol[i] = flags;
  }

  /** The conversation index of `m`, or -1 when its fields are not a conversation's. */
  private convOf(m: StoredMessage): number {
    const dm = m.dm_user_ids;
    if (!(m.stream_id === null || isU32(m.stream_id)) || !isU32(m.recipient_id)) return -1;
    if (dm !== null && !(Array.isArray(dm) && dm.every(isU32))) return -1;
    const key = `${m.stream_id}|${m.recipient_id}|${dm === null ? '-' : dm.join(',')}`;
    let n = this.convIndex.get(key);
    if (n === undefined) {
      n = this.convs.length;
      // Shared by every record of the conversation: frozen, so that no caller changes them all.
      this.convs.push({ stream_id: m.stream_id, dm_user_ids: dm === null ? null : Object.freeze([...dm]), recipient_id: m.recipient_id });
      this.convIndex.set(key, n);
    }
    return n;
  }

  /** Inserts records whose ids are new and not past the end: merged into new arrays. */
  private insertSorted(records: StoredMessage[]): void {
    const fresh = [...new Map(records.map((m) => [m.id, m])).values()].sort((a, b) => a.id - b.id);
    const total = this.count + fresh.length;
    const next = columns(grownCapacity(total));
    let r = 0;
    let w = 0;
    // Copy runs of old rows between the new ones, then write each new one.
    for (const m of fresh) {
      let end = r;
      while (end < this.count && this.c.idCol[end] < m.id) end++;
      copyRows(this.c, next, r, end, w);
      w += end - r;
      r = end;
      next.idCol[w++] = m.id;
    }
    copyRows(this.c, next, r, this.count, w);
    w += this.count - r;
    this.install(next, w);
    for (const m of fresh) this.write(this.indexOf(m.id), m);
  }

  private reserve(needed: number): void {
    if (needed <= this.c.idCol.length) return;
    const next = columns(grownCapacity(needed));
    copyRows(this.c, next, 0, this.count, 0);
    this.install(next, this.count);
  }

  private install(c: Columns, count: number): void {
    this.c = c;
    this.count = count;
  }
}

/** The rows' fields, one array each, all of the same length (the table's capacity). */
interface Columns {
  idCol: Uint32Array;
  senderCol: Uint32Array;
  timeCol: Uint32Array;
  topicCol: Uint32Array;
  convCol: Uint32Array;
  clientCol: Uint16Array;
  flagCol: Uint8Array;
  bodyCol: Float64Array;
}

function columns(capacity: number): Columns {
  return {
    idCol: new Uint32Array(capacity), senderCol: new Uint32Array(capacity), timeCol: new Uint32Array(capacity), topicCol: new Uint32Array(capacity),
    convCol: new Uint32Array(capacity), clientCol: new Uint16Array(capacity), flagCol: new Uint8Array(capacity), bodyCol: new Float64Array(capacity),
  };
}

/** Copies rows [from, to) of `s` to `dst` at row `at`. */
function copyRows(s: Columns, dst: Columns, from: number, to: number, at: number): void {
  if (to <= from) return;
  dst.idCol.set(s.idCol.subarray(from, to), at);
  dst.senderCol.set(s.senderCol.subarray(from, to), at);
  dst.timeCol.set(s.timeCol.subarray(from, to), at);
  dst.topicCol.set(s.topicCol.subarray(from, to), at);
  dst.convCol.set(s.convCol.subarray(from, to), at);
  dst.clientCol.set(s.clientCol.subarray(from, to), at);
  dst.flagCol.set(s.flagCol.subarray(from, to), at);
  dst.bodyCol.set(s.bodyCol.subarray(from, to), at);
}

/** Room for `needed` rows and more: doubling while small, a quarter more when large (a large table's spare room is mostly wasted). */
function grownCapacity(needed: number): number {
  return Math.max(16, needed < 1 << 16 ? needed * 2 : needed + (needed >>> 2));
}
