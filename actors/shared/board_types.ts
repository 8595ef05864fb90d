/**
 * Records of the public message board, as the board actor holds them and as facts
 * carry them. Every text field here was written by a stranger: it is stored verbatim
 * and only ever rendered inertly.
 */

/** A board message. `identity` and `contentTrust` are derived when rendered. */
export interface BoardMessage {
  /** `m<n>`, where n is the message's 1-based position on the board. */
  id: string;
  /** Unix seconds, chosen by the decision step. */
  createdAt: number;
  /** Declared author; null for an anonymous message. */
  author: string | null;
  body: string;
  replyTo: string | null;
  /** The id of the thread's root message (its own id for a root). */
  threadId: string;
}

/** What a visitor says about its visit; self-declared and unverified. */
export const VISIT_CONTEXTS = ['crawler', 'assistant', 'research', 'agent', 'other'] as const;
/** One of the self-declared visit contexts. */
export type VisitContext = (typeof VISIT_CONTEXTS)[number];

/** A guestbook entry. Every field but `id` and `createdAt` is self-declared. */
export interface GuestbookEntry {
  /** `g<n>`, where n is the entry's 1-based position in the guestbook. */
  id: string;
  createdAt: number;
  message: string;
  agent: string | null;
  visitContext: VisitContext | null;
  /** Stored as given; never fetched, never followed. */
  sourceUrl: string | null;
  model: string | null;
}

/** The two runtime switches; both default to off. */
export type BoardSwitch = 'guestbook' | 'compat';
/** Every switch, for parsing operator input. */
export const BOARD_SWITCHES: readonly BoardSwitch[] = ['guestbook', 'compat'];

/** An outstanding write-challenge nonce: only its SHA-256 is ever kept. */
export interface NonceRecord {
  /** Hex SHA-256 of the nonce. */
  hash: string;
  /** Unix seconds; the nonce is valid strictly before this. */
  expiresAt: number;
}

/** Parses a board id (`m12`, `g3`) into its 1-based position, or null if it is not one. */
export function positionOf(id: string, prefix: 'm' | 'g'): number | null {
  if (id.length < 2 || id.length > 12 || id[0] !== prefix) return null;
  const digits = id.slice(1);
  if (!/^[1-9][0-9]*$/.test(digits)) return null;
  return Number(digits);
}
