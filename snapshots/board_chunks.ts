/**
 * The board actor in snapshots: a head chunk (switches, outstanding nonces, the seq
 * it reflects and how many records it holds), then its messages and guestbook entries
 * in slices, as channel messages are sliced. Both lists are append-only and their
 * records are never changed, so slices cut at the head's counts are exactly what the
 * head reflects, however many records arrive while the snapshot is being written.
 */
import type { BoardContext } from '../actors/board.js';
import type { BoardMessage, BoardSwitch, GuestbookEntry, NonceRecord } from '../actors/board_types.js';
import type { Runtime } from '../actors/runtime.js';

/** The snapshot chunks of the board actor. */
export type BoardChunk =
  | { k: 'board'; seq: number; switches: Record<BoardSwitch, boolean>; nonces: Array<[string, NonceRecord]> }
  | { k: 'boardMsgs'; msgs: BoardMessage[] }
  | { k: 'guestbook'; entries: GuestbookEntry[] };

/** Produces the board's chunks lazily, for the snapshot writer to yield between. */
export function* boardChunks(board: BoardContext, sliceSize: number): Generator<() => BoardChunk> {
  let messages = 0;
  let entries = 0;
  yield () => {
    messages = board.messages.length;
    entries = board.guestbook.length;
    return { k: 'board', seq: board.seq, switches: { ...board.switches }, nonces: [...board.nonces] };
  };
  for (let from = 0; from < messages; from += sliceSize) {
    const start = from;
    yield () => ({ k: 'boardMsgs', msgs: board.messages.slice(start, Math.min(start + sliceSize, messages)) });
  }
  for (let from = 0; from < entries; from += sliceSize) {
    const start = from;
    yield () => ({ k: 'guestbook', entries: board.guestbook.slice(start, Math.min(start + sliceSize, entries)) });
  }
}

/**
 * Restores one board chunk. The head chunk comes first and starts the actor; the
 * slices after it append to that actor's (live) context in order.
 */
export function loadBoardChunk(runtime: Runtime, chunk: BoardChunk): void {
  switch (chunk.k) {
    case 'board':
      runtime.restoreBoard({ seq: chunk.seq, messages: [], guestbook: [], switches: { ...chunk.switches }, nonces: new Map(chunk.nonces) });
      break;
    case 'boardMsgs':
      runtime.board().messages.push(...chunk.msgs);
      break;
    case 'guestbook':
      runtime.board().guestbook.push(...chunk.entries);
      break;
  }
}
