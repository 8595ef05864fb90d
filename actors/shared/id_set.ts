/**
 * A set of message ids kept as one sorted, growable `Uint32Array`.
 *
 * Personal flags (unread, starred, mentioned, ...) are sets of message ids that grow
 * almost only at the top: a new message has the largest id yet. A hash set pays a hash
 * insert, about 20 bytes and an occasional rehash of everything per id; here that case
 * is an append of 4 bytes. Lookups are a binary search, removals a shift of the tail,
 * and batches of changes (marking a screenful read) one merge pass.
 *
 * The interface is the part of `Set<number>` the actors use, so callers read the same.
 */
/** Index of the first element of a sorted array of ids (a channel's, a conversation's) that is >= `value`. */
export function lowerBound(ids: ArrayLike<number>, value: number): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class IdSet implements Iterable<number> {
  private ids: Uint32Array;
  private count = 0;

  constructor(capacity = 0) {
    this.ids = new Uint32Array(capacity);
  }

  /** Builds a set from ids in any order, duplicates allowed. */
  static from(ids: Iterable<number>): IdSet {
    const sorted = Uint32Array.from(ids).sort();
    const set = new IdSet(sorted.length);
    for (let i = 0; i < sorted.length; i++) {
      if (set.count === 0 || set.ids[set.count - 1] !== sorted[i]) set.ids[set.count++] = sorted[i];
    }
    return set;
  }

  get size(): number {
    return this.count;
  }

  has(id: number): boolean {
    return this.indexOf(id) >= 0;
  }

  add(id: number): this {
    const n = this.count;
    if (n === 0 || id > this.ids[n - 1]) {
      this.reserve(n + 1);
      this.ids[this.count++] = id;
      return this;
    }
    const at = this.lowerBound(id);
    if (this.ids[at] === id) return this;
    this.reserve(n + 1);
    this.ids.copyWithin(at + 1, at, n);
    this.ids[at] = id;
    this.count++;
    return this;
  }

  delete(id: number): boolean {
    const at = this.indexOf(id);
    if (at < 0) return false;
    this.ids.copyWithin(at, at + 1, this.count);
    this.count--;
    return true;
  }

  /** Removes every id in `remove` with one pass over the set. */
  deleteMany(remove: Iterable<number>): void {
    const gone = IdSet.from(remove);
    if (gone.count === 0 || this.count === 0) return;
    let w = 0;
    let g = 0;
    for (let r = 0; r < this.count; r++) {
      const id = this.ids[r];
      while (g < gone.count && gone.ids[g] < id) g++;
      if (g < gone.count && gone.ids[g] === id) continue;
      this.ids[w++] = id;
    }
    this.count = w;
  }

  /** Adds every id in `add` with one merge pass over the set. */
  addMany(add: Iterable<number>): void {
    const extra = IdSet.from(add);
    if (extra.count === 0) return;
    if (this.count === 0 || extra.ids[0] > this.ids[this.count - 1]) {
      this.reserve(this.count + extra.count);
      this.ids.set(extra.ids.subarray(0, extra.count), this.count);
      this.count += extra.count;
      return;
    }
    const merged = new Uint32Array(grownCapacity(this.count + extra.count));
    let a = 0;
    let b = 0;
    let w = 0;
    while (a < this.count || b < extra.count) {
      const x = a < this.count ? this.ids[a] : Infinity;
      const y = b < extra.count ? extra.ids[b] : Infinity;
      if (x <= y) {
        merged[w++] = x;
        a++;
        if (x === y) b++;
      } else {
        merged[w++] = y;
        b++;
      }
    }
    this.ids = merged;
    this.count = w;
  }

  /** Ids in ascending order. */
  *[Symbol.iterator](): Iterator<number> {
    for (let i = 0; i < this.count; i++) yield this.ids[i];
  }

  /** A copy of the ids, ascending. */
  toArray(): number[] {
    return Array.from(this.ids.subarray(0, this.count));
  }

  /** The ids as bytes, 4 per id, little-endian, ascending: a compact copy for snapshots. */
  toBytes(): Buffer {
    const out = Buffer.allocUnsafe(this.count * 4);
    if (LITTLE_ENDIAN) out.set(new Uint8Array(this.ids.buffer, this.ids.byteOffset, this.count * 4));
    else for (let i = 0; i < this.count; i++) out.writeUInt32LE(this.ids[i], i * 4);
    return out;
  }

  /** Reads what `toBytes` wrote; throws on a length that is not a whole number of ids. */
  static fromBytes(bytes: Uint8Array): IdSet {
    if (bytes.length % 4 !== 0) throw new Error(`an id set of ${bytes.length} bytes is not a whole number of 4-byte ids`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const ids = new Uint32Array(bytes.length / 4);
    for (let i = 0; i < ids.length; i++) ids[i] = view.getUint32(i * 4, true);
    // Written ascending and unique; from() restores that if the bytes say otherwise.
    for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) return IdSet.from(ids);
    const set = new IdSet(0);
    set.ids = ids;
    set.count = ids.length;
    return set;
  }

  private indexOf(id: number): number {
    const at = this.lowerBound(id);
    return at < this.count && this.ids[at] === id ? at : -1;
  }

  /** First index whose id is >= `id`. */
  private lowerBound(id: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ids[mid] < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private reserve(needed: number): void {
    if (needed <= this.ids.length) return;
    const next = new Uint32Array(grownCapacity(needed));
    next.set(this.ids.subarray(0, this.count));
    this.ids = next;
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function grownCapacity(needed: number): number {
  return Math.max(8, needed + (needed >>> 1));
}
