/**
 * The public message board: posting messages and guestbook entries, write-challenge
 * nonces for the GET compatibility path, and the operator's runtime switches. One
 * actor owns all of it, so every rule that reads board state (a reply's parent
 * exists, a switch is on, a nonce is unused) is decided in the same step as the write
 * it guards. The board has no event queues and no `/register` sections.
 */
import { area, command, fact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { BoardError, invalidField } from '../shared/errors.js';
import type { BoardMessage, BoardSwitch, GuestbookEntry, VisitContext } from '../shared/board_types.js';
import { findMessage, MAX_OUTSTANDING_NONCES, nonceHash, validNonce, type BoardContext } from '../kinds/board.js';

/**
 * A message was posted to the public board. When it was published through the GET
 * compatibility path, `nonceHash` is the SHA-256 of the nonce it used: the nonce is
 * consumed by this very record, so no crash or replay can separate the two.
 */
export interface BoardMessagePosted { type: 'BoardMessagePosted'; message: BoardMessage; nonceHash: string | null }
/** A visitor signed the guestbook. */
export interface GuestbookEntryPosted { type: 'GuestbookEntryPosted'; entry: GuestbookEntry }
/** An operator turned a board switch on or off. */
export interface BoardSwitchChanged { type: 'BoardSwitchChanged'; name: BoardSwitch; on: boolean }
/** A write-challenge nonce was issued; only its SHA-256 is recorded, never the nonce. */
export interface NonceIssued { type: 'NonceIssued'; hash: string; issuedAt: number; expiresAt: number }

/** Post a message (the canonical JSON write). */
export interface PostMessage { type: 'POST_MESSAGE'; body: string; author: string | null; replyTo: string | null }
/** Sign the guestbook. */
export interface PostGuestbookEntry {
  type: 'POST_GUESTBOOK_ENTRY';
  message: string;
  agent: string | null;
  visitContext: VisitContext | null;
  sourceUrl: string | null;
  model: string | null;
}
/** Issue a write-challenge nonce valid for `ttlSecs`; the value is the nonce itself. */
export interface IssueNonce { type: 'ISSUE_NONCE'; ttlSecs: number }
/** Publish a message with a nonce (the GET compatibility path), consuming the nonce. */
export interface PublishWithNonce { type: 'PUBLISH_WITH_NONCE'; nonce: string; body: string; author: string | null }
/** Turn a runtime switch on or off. */
export interface SetBoardSwitch { type: 'SET_BOARD_SWITCH'; name: BoardSwitch; on: boolean }
function newMessage(ctx: BoardContext, env: DecideEnv, body: string, author: string | null, replyTo: string | null): BoardMessage {
  const id = `m${ctx.messages.length + 1}`;
  let threadId = id;
  if (replyTo !== null) {
    const parent = findMessage(ctx, replyTo);
    if (!parent) throw invalidField('replyTo', `no message with id '${replyTo.slice(0, 40)}'`);
    threadId = parent.threadId;
  }
  return { id, createdAt: env.now(), author, body, replyTo, threadId };
}

/** Every command the board actor decides. */
export type BoardCommand = PostMessage | PostGuestbookEntry | IssueNonce | PublishWithNonce | SetBoardSwitch;

const disabled = (): BoardError => new BoardError('compatibility_disabled', 'GET compatibility publication is disabled');

export const postMessage = command({
  type: 'POST_MESSAGE',
  actor: 'board',
  decide(ctx: BoardContext, c: PostMessage, env: DecideEnv): Decision<BoardMessage, BoardMessagePosted> {
    const message = newMessage(ctx, env, c.body, c.author, c.replyTo);
    return { facts: [{ type: 'BoardMessagePosted', message, nonceHash: null }], value: message };
  },
});

export const postGuestbookEntry = command({
  type: 'POST_GUESTBOOK_ENTRY',
  actor: 'board',
  decide(ctx: BoardContext, c: PostGuestbookEntry, env: DecideEnv): Decision<GuestbookEntry, GuestbookEntryPosted> {
    if (!ctx.switches.guestbook) throw new BoardError('publication_disabled', 'Guestbook publication is disabled');
    const { type: _, ...fields } = c;
    const entry: GuestbookEntry = { id: `g${ctx.guestbook.length + 1}`, createdAt: env.now(), ...fields };
    return { facts: [{ type: 'GuestbookEntryPosted', entry }], value: entry };
  },
});

export const issueNonce = command({
  type: 'ISSUE_NONCE',
  actor: 'board',
  decide(ctx: BoardContext, c: IssueNonce, env: DecideEnv): Decision<{ nonce: string; expiresAt: number }, NonceIssued> {
    if (!ctx.switches.compat) throw disabled();
    const nonce = env.token(32);
    const issuedAt = env.now();
    const expiresAt = issuedAt + c.ttlSecs;
    return { facts: [{ type: 'NonceIssued', hash: nonceHash(nonce), issuedAt, expiresAt }], value: { nonce, expiresAt } };
  },
});

export const publishWithNonce = command({
  type: 'PUBLISH_WITH_NONCE',
  actor: 'board',
  decide(ctx: BoardContext, c: PublishWithNonce, env: DecideEnv): Decision<BoardMessage, BoardMessagePosted> {
    if (!ctx.switches.compat) throw disabled();
    const record = validNonce(ctx, c.nonce, env.now());
    if (!record) throw new BoardError('challenge_invalid', 'The challenge is unknown, expired or already used; request a new one from /compat/v1/write-challenge');
    const message = newMessage(ctx, env, c.body, c.author, null);
    return { facts: [{ type: 'BoardMessagePosted', message, nonceHash: record.hash }], value: message };
  },
});

export const setBoardSwitch = command({
  type: 'SET_BOARD_SWITCH',
  actor: 'board',
  decide(ctx: BoardContext, c: SetBoardSwitch): Decision<{ name: BoardSwitch; on: boolean; changed: boolean }, BoardSwitchChanged> {
    const value = { name: c.name, on: c.on, changed: ctx.switches[c.name] !== c.on };
    if (!value.changed) return { facts: [], value };
    return { facts: [{ type: 'BoardSwitchChanged', name: c.name, on: c.on }], value };
  },
});

const toBoard = { route: (_f: unknown, to: { board(): void }) => to.board() };

const boardMessagePosted = fact<BoardMessagePosted>({
  type: 'BoardMessagePosted',
  apply: {
    board(ctx, f) {
      ctx.messages.push(f.message);
      if (f.nonceHash !== null) ctx.nonces.delete(f.nonceHash.slice(0, 16));
    },
  },
  ...toBoard,
});

const guestbookEntryPosted = fact<GuestbookEntryPosted>({
  type: 'GuestbookEntryPosted',
  apply: { board: (ctx, f) => void ctx.guestbook.push(f.entry) },
  ...toBoard,
});

const boardSwitchChanged = fact<BoardSwitchChanged>({
  type: 'BoardSwitchChanged',
  apply: {
    board(ctx, f) {
      ctx.switches[f.name] = f.on;
    },
  },
  ...toBoard,
});

const nonceIssued = fact<NonceIssued>({
  type: 'NonceIssued',
  apply: {
    board(ctx, f) {
      // Pruning uses only the fact's own time, so replay prunes exactly the same nonces.
      for (const [key, n] of ctx.nonces) {
        if (n.expiresAt > f.issuedAt && ctx.nonces.size < MAX_OUTSTANDING_NONCES) break;
        ctx.nonces.delete(key);
      }
      ctx.nonces.set(f.hash.slice(0, 16), { hash: f.hash, expiresAt: f.expiresAt });
    },
  },
  ...toBoard,
});

export const board = area({
  name: 'board',
  commands: [postMessage, postGuestbookEntry, issueNonce, publishWithNonce, setBoardSwitch],
  facts: [boardMessagePosted, guestbookEntryPosted, boardSwitchChanged, nonceIssued],
});
