/**
 * The board actor: the public message board's messages, guestbook, runtime switches
 * and outstanding write-challenge nonces. One actor owns all of it, so every rule
 * that reads board state (a reply's parent exists, a switch is on, a nonce is unused)
 * is decided in the same step as the write it guards.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { slices, type Persistence } from '../core/persistence.js';
import type { BoardSwitch, BoardMessage, GuestbookEntry, NonceRecord } from '../shared/board_types.js';
import { positionOf } from '../shared/board_types.js';

/** State of the board actor. Lists are append-only; a record is never changed. */
export interface BoardContext {
  seq: number;
  /** Message n is at index n - 1. */
  messages: BoardMessage[];
  /** Entry n is at index n - 1. */
  guestbook: GuestbookEntry[];
  switches: Record<BoardSwitch, boolean>;
  /**
   * Outstanding nonces by the first 16 hex digits of their hash, in issue order.
   * The full hash is then compared in constant time.
   */
  nonces: Map<string, NonceRecord>;
}

/**
 * Outstanding nonces kept at most; beyond it the oldest are dropped. The per-address
 * rate limit keeps honest clients far below this.
 */
export const MAX_OUTSTANDING_NONCES = 20000;
/** Nonces are 32 random bytes, base64url. */
const NONCE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** A board with nothing on it and both switches off. */
export function emptyBoard(): BoardContext {
  return { seq: 0, messages: [], guestbook: [], switches: { guestbook: false, compat: false }, nonces: new Map() };
}

/** Hex SHA-256 of a nonce: the only form in which a nonce is ever stored or logged. */
export function nonceHash(nonce: string): string {
  return createHash('sha256').update(nonce, 'utf8').digest('hex');
}

/** The message `id` names, if it exists. */
export function findMessage(ctx: BoardContext, id: string): BoardMessage | undefined {
  const n = positionOf(id, 'm');
  return n === null ? undefined : ctx.messages[n - 1];
}

/** The outstanding nonce matching `nonce`, checked in constant time and for expiry. */
export function validNonce(ctx: BoardContext, nonce: string, now: number): NonceRecord | undefined {
  if (!NONCE_SHAPE.test(nonce)) return undefined;
  const hash = nonceHash(nonce);
  const record = ctx.nonces.get(hash.slice(0, 16));
  if (!record || !timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  return now < record.expiresAt ? record : undefined;
}

/** The board's snapshot chunks: a head, then its messages and guestbook entries in slices. */
type BoardChunk =
  | { k: 'board'; seq: number; switches: Record<BoardSwitch, boolean>; nonces: Array<[string, NonceRecord]> }
  | { k: 'boardMsgs'; msgs: BoardMessage[] }
  | { k: 'guestbook'; entries: GuestbookEntry[] };

/** Where a restored board context goes, and where its slices find it. */
export interface BoardRestoreScope {
  installBoard(ctx: BoardContext): void;
  board(): BoardContext;
}

/**
 * The board in snapshots. Both lists are append-only and their records are never
 * changed, so slices cut at the head's counts are exactly what the head reflects.
 */
export const boardPersistence: Persistence<BoardContext, BoardRestoreScope> = {
  tags: ['board', 'boardMsgs', 'guestbook'],
  *chunks(board, sliceSize) {
    let messages = 0;
    let entries = 0;
    yield (): BoardChunk => {
      messages = board.messages.length;
      entries = board.guestbook.length;
      return { k: 'board', seq: board.seq, switches: { ...board.switches }, nonces: [...board.nonces] };
    };
    yield* slices(() => messages, sliceSize, (from, to): BoardChunk => ({ k: 'boardMsgs', msgs: board.messages.slice(from, to) }));
    yield* slices(() => entries, sliceSize, (from, to): BoardChunk => ({ k: 'guestbook', entries: board.guestbook.slice(from, to) }));
  },
  restore(chunk, scope) {
    const c = chunk as BoardChunk;
    switch (c.k) {
      case 'board':
        scope.installBoard({ seq: c.seq, messages: [], guestbook: [], switches: { ...c.switches }, nonces: new Map(c.nonces) });
        break;
      case 'boardMsgs':
        scope.board().messages.push(...c.msgs);
        break;
      case 'guestbook':
        scope.board().guestbook.push(...c.entries);
        break;
    }
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    board: BoardContext;
  }
}
