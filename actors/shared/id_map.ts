/**
 * A map from message ids to small numbers (which channel each message is in), kept as
 * two sorted `Uint32Array`s: 8 bytes an entry where a `Map<number, number>` takes
 * about 40, for an index with an entry per message of an organization.
 *
 * Ids arrive almost always above every id held (a new message), which is an append.
 * Others (a restore reads channel after channel; a message moved in from elsewhere is
 * already held) wait in a small hash map, merged into the arrays when it grows past an
 * eighth of them. A removal marks its entry, and the arrays are rebuilt without the
 * marks when they are half marks.
 */
const GONE = 0xffffffff;
const MIN_PENDING = 1024;

function isU32(x: number): boolean {
  return Number.isInteger(x) && x >= 0 && x < GONE;
}

export class IdMap {
  private keys: Uint32Array = new Uint32Array(0);
  private vals: Uint32Array = new Uint32Array(0);
  /** Rows used in `keys`/`vals`, removed ones included. */
  private rows = 0;
  private removed = 0;
  /** Entries not yet merged into the arrays. */
  private readonly pending = new Map<number, number>();
  /** Entries whose key or value does not fit 32 bits (never in practice; kept exact). */
  private readonly other = new Map<number, number>();

  /** How many entries the map holds. */
  get size(): number {
    return this.rows - this.removed + this.pending.size + this.other.size;
  }

  get(id: number): number | undefined {
    const p = this.pending.get(id);
    if (p !== undefined) return p;
    const i = this.row(id);
    if (i >= 0 && this.vals[i] !== GONE) return this.vals[i];
    return this.other.size > 0 ? this.other.get(id) : undefined;
  }

  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  set(id: number, value: number): this {
    if (!isU32(id) || !isU32(value)) {
      this.delete(id);
      this.other.set(id, value);
      return this;
    }
    if (this.other.size > 0) this.other.delete(id);
    const i = this.row(id);
    if (i >= 0) {
      if (this.vals[i] === GONE) this.removed--;
      this.vals[i] = value;
    } else if (this.pending.has(id) || (this.rows > 0 && id < this.keys[this.rows - 1])) {
      this.pending.set(id, value);
      if (this.pending.size > Math.max(MIN_PENDING, this.rows >>> 3)) this.merge();
    } else {
      if (this.rows === this.keys.length) this.rebuild(grownCapacity(this.rows + 1));
      this.keys[this.rows] = id;
      this.vals[this.rows++] = value;
    }
    return this;
  }

  delete(id: number): boolean {
    if (this.pending.delete(id) || this.other.delete(id)) return true;
    const i = this.row(id);
    if (i < 0 || this.vals[i] === GONE) return false;
    this.vals[i] = GONE;
    if (++this.removed > this.rows >>> 1) this.rebuild(grownCapacity(this.rows - this.removed));
    return true;
  }

  /** Every entry, ascending by id. */
  *entries(): IterableIterator<[number, number]> {
    const all: Array<[number, number]> = [...this.pending, ...this.other];
    for (let r = 0; r < this.rows; r++) if (this.vals[r] !== GONE) all.push([this.keys[r], this.vals[r]]);
    yield* all.sort((a, b) => a[0] - b[0]);
  }

  /** Row of `id` in the arrays (marked removed or not), or -1. */
  private row(id: number): number {
    const keys = this.keys;
    let lo = 0;
    let hi = this.rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid] < id) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.rows && keys[lo] === id ? lo : -1;
  }

  /** Moves the pending entries into the arrays: one merge pass. */
  private merge(): void {
    const extra = [...this.pending.keys()].sort((a, b) => a - b);
    const keys = new Uint32Array(grownCapacity(this.rows - this.removed + extra.length));
    const vals = new Uint32Array(keys.length);
    let w = 0;
    let e = 0;
    for (let r = 0; r < this.rows; r++) {
      if (this.vals[r] === GONE) continue;
      while (e < extra.length && extra[e] < this.keys[r]) {
        keys[w] = extra[e];
        vals[w++] = this.pending.get(extra[e++])!;
      }
      keys[w] = this.keys[r];
      vals[w++] = this.vals[r];
    }
    for (; e < extra.length; e++) {
      keys[w] = extra[e];
      vals[w++] = this.pending.get(extra[e])!;
    }
    this.pending.clear();
    this.install(keys, vals, w);
  }

  /** The arrays again at `capacity`, without removed entries. */
  private rebuild(capacity: number): void {
    const keys = new Uint32Array(capacity);
    const vals = new Uint32Array(capacity);
    let w = 0;
    for (let r = 0; r < this.rows; r++) {
      if (this.vals[r] === GONE) continue;
      keys[w] = this.keys[r];
      vals[w++] = this.vals[r];
    }
    this.install(keys, vals, w);
  }

  private install(keys: Uint32Array, vals: Uint32Array, rows: number): void {
    this.keys = keys;
    this.vals = vals;
    this.rows = rows;
    this.removed = 0;
  }
}

/** Room for `needed` entries and more: doubling while small, a quarter more when large. */
function grownCapacity(needed: number): number {
  return Math.max(16, needed < 1 << 16 ? needed * 2 : needed + (needed >>> 2));
}
