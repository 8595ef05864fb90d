/**
 * How an actor kind's state goes into a snapshot and comes back: in the manner of
 * XState's `getPersistedSnapshot`/`restoreSnapshot`, but in chunks, because a
 * channel may hold millions of messages and a snapshot is written across event-loop
 * turns. Each kind (`actors/kinds/`) declares its chunk tags and both directions, its
 * head holding the state slices its areas declare too (`state_slices.ts`); the
 * snapshot files (`snapshots/`) only frame and checksum what they are given.
 *
 * A kind's first chunk (its head) is taken in one step and records the seq the actor
 * reflects and where its lists end; later chunks (slices) cut those lists at the head's
 * ends, so they are exactly what the head reflects even while writes continue. Records
 * are replaced, never changed in place, and a list that loses an item is replaced, not
 * spliced; a record changed after the head is written as it is then, and replaying the
 * facts after the head's seq (idempotent on records) gives the same state.
 */
/** One chunk: a `k` tag naming its kind and part, and plain data. */
export interface Chunk {
  k: string;
}

/** Produces one chunk when called; the snapshot writer may yield between calls. */
export type ChunkThunk = () => Chunk;

/** What every restore is told: the snapshot format version the chunk was written in. */
export interface RestoreContext {
  version: number;
}

/** How one actor kind is persisted and restored. */
export interface Persistence<Ctx, Scope = unknown> {
  /** The chunk tags this kind writes and reads. */
  tags: readonly string[];
  /** An actor's chunks, lazily: head first, then its slices. */
  chunks(ctx: Ctx, sliceSize: number): Generator<ChunkThunk>;
  /**
   * Restores one chunk of this kind: a head installs a context, a slice adds to one.
   * `scope` is where the kind installs and finds contexts; each kind declares what it
   * needs of it, and the actor directory provides all of them.
   */
  restore(chunk: Chunk, scope: Scope & RestoreContext): void;
}

/** Cuts `count` items of an append-only list into slices, each made when its thunk runs. */
export function* slices<T>(count: () => number, sliceSize: number, make: (from: number, to: number) => Chunk): Generator<ChunkThunk> {
  const total = count();
  for (let from = 0; from < total; from += sliceSize) {
    const start = from;
    yield () => make(start, Math.min(start + sliceSize, total));
  }
}
