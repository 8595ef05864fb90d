/**
 * The board actor: the public message board's messages, guestbook, runtime switches
 * and outstanding write-challenge nonces. One actor owns all of it, so every rule
 * that reads board state (a reply's parent exists, a switch is on, a nonce is unused)
 * is decided in the same step as the write it guards.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BoardError, invalidField } from '../src/board/errors.js';
import type { BoardSwitch, BoardMessage, GuestbookEntry, NonceRecord, VisitContext } from './board_types.js';
import { positionOf } from './board_types.js';
import type { Fact } from './facts.js';
import { domainLogic, type Decision, type DecideEnv } from './logic.js';

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
/** Every command the board actor decides. */
export type BoardCommand = PostMessage | PostGuestbookEntry | IssueNonce | PublishWithNonce | SetBoardSwitch;

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

/** The outstanding nonce matching `nonce`, checked in constant time and for expiry. */
function validNonce(ctx: BoardContext, nonce: string, now: number): NonceRecord | undefined {
  if (!NONCE_SHAPE.test(nonce)) return undefined;
  const hash = nonceHash(nonce);
  const record = ctx.nonces.get(hash.slice(0, 16));
  if (!record || !timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  return now < record.expiresAt ? record : undefined;
}

function decide(ctx: BoardContext, command: BoardCommand, env: DecideEnv): Decision {
  switch (command.type) {
    case 'POST_MESSAGE': {
      const message = newMessage(ctx, env, command.body, command.author, command.replyTo);
      return { facts: [{ type: 'BoardMessagePosted', message, nonceHash: null }], value: message };
    }
    case 'POST_GUESTBOOK_ENTRY': {
      if (!ctx.switches.guestbook) throw new BoardError('publication_disabled', 'Guestbook publication is disabled');
      const { type: _, ...fields } = command;
      const entry: GuestbookEntry = { id: `g${ctx.guestbook.length + 1}`, createdAt: env.now(), ...fields };
      return { facts: [{ type: 'GuestbookEntryPosted', entry }], value: entry };
    }
    case 'ISSUE_NONCE': {
      if (!ctx.switches.compat) throw new BoardError('compatibility_disabled', 'GET compatibility publication is disabled');
      const nonce = env.token(32);
      const issuedAt = env.now();
      const expiresAt = issuedAt + command.ttlSecs;
      return { facts: [{ type: 'NonceIssued', hash: nonceHash(nonce), issuedAt, expiresAt }], value: { nonce, expiresAt } };
    }
    case 'PUBLISH_WITH_NONCE': {
      if (!ctx.switches.compat) throw new BoardError('compatibility_disabled', 'GET compatibility publication is disabled');
      const record = validNonce(ctx, command.nonce, env.now());
      if (!record) throw new BoardError('challenge_invalid', 'The challenge is unknown, expired or already used; request a new one from /compat/v1/write-challenge');
      const message = newMessage(ctx, env, command.body, command.author, null);
      return { facts: [{ type: 'BoardMessagePosted', message, nonceHash: record.hash }], value: message };
    }
    case 'SET_BOARD_SWITCH': {
      const value = { name: command.name, on: command.on, changed: ctx.switches[command.name] !== command.on };
      if (!value.changed) return { facts: [], value };
      return { facts: [{ type: 'BoardSwitchChanged', name: command.name, on: command.on }], value };
    }
  }
}

function reduce(ctx: BoardContext, fact: Fact): void {
  switch (fact.type) {
    case 'BoardMessagePosted':
      ctx.messages.push(fact.message);
      if (fact.nonceHash !== null) ctx.nonces.delete(fact.nonceHash.slice(0, 16));
      break;
    case 'GuestbookEntryPosted':
      ctx.guestbook.push(fact.entry);
      break;
    case 'BoardSwitchChanged':
      ctx.switches[fact.name] = fact.on;
      break;
    case 'NonceIssued': {
      // Pruning uses only the fact's own time, so replay prunes exactly the same nonces.
      for (const [key, n] of ctx.nonces) {
        if (n.expiresAt > fact.issuedAt && ctx.nonces.size < MAX_OUTSTANDING_NONCES) break;
        ctx.nonces.delete(key);
      }
      ctx.nonces.set(fact.hash.slice(0, 16), { hash: fact.hash, expiresAt: fact.expiresAt });
      break;
    }
    default:
      break;
  }
}

/** XState logic of the board actor. */
export const boardLogic = domainLogic<BoardContext, BoardCommand>({ decide, reduce });
