/**
 * Narrows: Zulip's message filters, shared by `GET /messages` and by event queues
 * registered with a narrow. `check_narrow` validates the client's terms; `narrowPredicate`
 * turns them into a test on one message.
 */
import { ApiError } from '../shared/errors.js';
import { codePointLength, EMPTY_TOPIC_DISPLAY_NAME } from '../rules/messages.js';
import { isValidEmail } from '../rules/users.js';
import { senderOf, SYSTEM_BOTS } from '../rules/system_bots.js';
import type { OrgContext } from '../kinds/organization.js';
import type { MessageRecord, StoredMessage } from '../shared/types.js';
import { bodyOf } from '../core/bodies.js';

/** What a narrow is tested on: a message an actor holds, or a whole one (a new message, for event queues). */
export type NarrowCandidate = StoredMessage | MessageRecord;
import type { UserContext } from '../kinds/user.js';
import { flagsOf, userTopicKey } from '../kinds/user.js';
import { HAS_IMAGE, HAS_LINK } from './message_has.js';

/** One narrow term. `operand` is a string, an id, or a list of user ids or emails. */
export interface NarrowTerm {
  operator: string;
  operand: string | number | Array<string | number>;
  negated: boolean;
}

/**
 * Zulip's operators (`NarrowBuilder.by_method_map`, at feature level 420), with the
 * underscore spellings it still accepts for two dashed ones.
 */
const OPERATORS = new Set([
  'channel', 'stream', 'channels', 'streams', 'topic', 'sender', 'near', 'id', 'with', 'search', 'has', 'in', 'is',
  'dm', 'pm-with', 'pm_with', 'dm-including', 'group-pm-with', 'group_pm_with',
]);
/** Zulip's `is:` operands (`by_is`); `read` is Parley's, the complement of `unread`. */
const IS_OPERANDS = new Set(['dm', 'private', 'starred', 'mentioned', 'unread', 'read', 'alerted', 'resolved', 'followed', 'muted']);
/** Zulip's `has:` operands (`by_has`). */
const HAS_OPERANDS = new Set(['link', 'image', 'attachment', 'reaction']);

/** The operators a queue's narrow may use (Zulip's `check_narrow_for_events`); the rest are refused at registration. */
const EVENT_OPERATORS = new Set(['channel', 'stream', 'topic', 'sender', 'is']);

/**
 * The longest `search` operand, in code points. Zulip sets no explicit cap (its search
 * is PostgreSQL full-text search); here a search is a substring test of each distinct
 * word against every message scanned, so its cost grows with the operand. 1000 code
 * points is far beyond anything typed or pasted into a search box (about 150 words,
 * 16 times the longest topic), bounds a search to at most 500 distinct words, and keeps
 * a narrow small enough to be stored with an event queue.
 */
export const MAX_SEARCH_LENGTH = 1000;

/** The most terms one narrow may have; Zulip clients send a handful. */
export const MAX_NARROW_TERMS = 100;

/** Operators whose operand names one or more users (ids or emails). */
const USER_OPERATORS = new Set(['dm', 'pm-with', 'group-pm-with', 'dm-including', 'sender']);

const badNarrow = (msg: string): ApiError => new ApiError('BAD_NARROW', msg);

/**
 * A value as an error message may show it: strings as they are, anything else by its
 * JSON type. (String() of a client's deeply nested array would recurse and overflow.)
 */
function shown(value: unknown): string {
  if (typeof value === 'string') return value.length > 100 ? `${value.slice(0, 100)}...` : value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? 'a list' : 'an object';
}

/** An operand as Zulip's `str(operand)` prints it in errors: `[1, 2]`, `['a@b.c']`, or the string itself. */
function operandText(operand: NarrowTerm['operand']): string {
  if (!Array.isArray(operand)) return shown(operand);
  const items = operand.slice(0, 10).map((x) => (typeof x === 'number' ? String(x) : `'${shown(x)}'`));
  return `[${items.join(', ')}${operand.length > 10 ? ', ...' : ''}]`;
}

/** Checks what an operator's operand must be, beyond its JSON type. */
function checkOperand(operator: string, operand: NarrowTerm['operand']): void {
  switch (operator) {
    case 'search': {
      if (typeof operand !== 'string' || operand.trim().length === 0) throw badNarrow('Invalid narrow operand for search: must be a non-empty string');
      if (codePointLength(operand) > MAX_SEARCH_LENGTH) {
        throw badNarrow(`Invalid narrow operator: search operand too long (limit: ${MAX_SEARCH_LENGTH} characters)`);
      }
      return;
    }
    case 'is':
      if (typeof operand !== 'string' || !IS_OPERANDS.has(operand)) throw badNarrow(`Invalid narrow operator: unknown 'is' operand ${operandText(operand)}`);
      return;
    case 'has':
      if (typeof operand !== 'string' || !HAS_OPERANDS.has(operand)) throw badNarrow(`Invalid narrow operator: unknown 'has' operand ${operandText(operand)}`);
      return;
    case 'in':
      if (operand !== 'home' && operand !== 'all') throw badNarrow(`Invalid narrow operator: unknown 'in' operand ${operandText(operand)}`);
      return;
    case 'channels':
    case 'streams':
      // Zulip's `by_channels`; web-public channels are off here, so `web-public` names none.
      if (operand !== 'public' && operand !== 'web-public') throw badNarrow(`Invalid narrow operator: unknown channels operand ${operandText(operand)}`);
      return;
    case 'id':
    case 'with':
      // As Zulip: a message id, as a number or a string of digits.
      if (!(typeof operand === 'number' && operand >= 0) && !(typeof operand === 'string' && /^\d{1,16}$/.test(operand))) {
        throw badNarrow(operator === 'id' ? 'Invalid narrow operator: Invalid message ID' : "Invalid narrow operator: Invalid 'with' operator");
      }
      return;
    default:
      if (Array.isArray(operand) && !USER_OPERATORS.has(operator)) throw badNarrow(`Invalid narrow operand for ${operator}`);
  }
}

/** Validates a decoded `narrow` parameter (objects or legacy `[operator, operand]` pairs). */
export function checkNarrow(raw: unknown): NarrowTerm[] {
  if (!Array.isArray(raw)) throw badNarrow('Invalid narrow: must be a list');
  if (raw.length > MAX_NARROW_TERMS) throw badNarrow(`Invalid narrow: too many terms (limit: ${MAX_NARROW_TERMS})`);
  return raw.map((item): NarrowTerm => {
    let operator: unknown;
    let operand: unknown;
    let negated: unknown = false;
    if (Array.isArray(item) && item.length === 2) [operator, operand] = item;
    else if (item && typeof item === 'object') ({ operator, operand, negated = false } = item as Record<string, unknown>);
    else throw badNarrow('Invalid narrow: each term must be an object or a pair');
    if (typeof operator !== 'string' || !OPERATORS.has(operator)) throw badNarrow(`Invalid narrow operator: unknown operator ${shown(operator)}`);
    if (typeof negated !== 'boolean') throw badNarrow('Invalid narrow: negated must be a boolean');
    const okOperand = typeof operand === 'string' || (typeof operand === 'number' && Number.isSafeInteger(operand)) ||
      (Array.isArray(operand) && operand.every((x) => typeof x === 'string' || (typeof x === 'number' && Number.isSafeInteger(x))));
    if (!okOperand) throw badNarrow(`Invalid narrow operand for ${operator}`);
    checkOperand(operator, operand as NarrowTerm['operand']);
    return { operator, operand: operand as NarrowTerm['operand'], negated };
  });
}

/**
 * One user of the organization, by id (a number or a string of digits) or by email;
 * undefined for anyone else: an id no user of this organization has (whatever another
 * organization has), or a string that is not a valid email.
 */
function userIdOf(org: OrgContext, item: string | number): number | undefined {
  if (typeof item === 'number') return senderOf(org, item) ? item : undefined;
  const trimmed = item.trim();
  if (/^\d+$/.test(trimmed)) {
    const id = Number(trimmed);
    return senderOf(org, id) ? id : undefined;
  }
  if (!isValidEmail(trimmed)) return undefined;
  const lower = trimmed.toLowerCase();
  return org.byEmail.get(lower) ?? [...SYSTEM_BOTS.values()].find((bot) => bot.email === lower)?.user_id;
}

/**
 * Resolves a user operand (id, email, or a list or comma-separated string of either) to
 * user ids. Any user it names who is not in the organization makes the whole operand
 * invalid, as in Zulip: `Invalid narrow operator: <phrase> <operand>`.
 */
export function resolveUsers(org: OrgContext, operand: NarrowTerm['operand'], phrase = 'unknown user'): number[] {
  const items = Array.isArray(operand) ? operand : typeof operand === 'string' ? operand.split(',') : [operand];
  return items.map((item) => {
    const id = userIdOf(org, item);
    if (id === undefined) throw badNarrow(`Invalid narrow operator: ${phrase} ${operandText(operand)}`);
    return id;
  });
}

/** Resolves the operand of an operator that names exactly one user (`sender`, `dm-including`). */
function resolveUser(org: OrgContext, operand: NarrowTerm['operand']): number {
  const item = Array.isArray(operand) && operand.length === 1 ? operand[0] : operand;
  const id = Array.isArray(item) ? undefined : userIdOf(org, item);
  if (id === undefined) throw badNarrow(`Invalid narrow operator: unknown user ${operandText(operand)}`);
  return id;
}

/** Resolves a channel operand (name or id) to a channel id, or undefined if unknown. */
export function resolveChannel(org: OrgContext, operand: NarrowTerm['operand']): number | undefined {
  if (typeof operand === 'number') return operand;
  if (typeof operand !== 'string') return undefined;
  // A string names a channel, as in Zulip, even one named with digits ("2024"); a string
  // of digits naming none is taken as an id, as Parley always has.
  const byName = org.channelsByName.get(operand.trim().toLowerCase());
  if (byName !== undefined) return byName;
  return /^\d+$/.test(operand) ? Number(operand) : undefined;
}

/** The distinct lower-cased words of a search query, longest first (the rarest, usually). */
export function searchWords(operand: NarrowTerm['operand']): string[] {
  const words = new Set(String(operand).toLowerCase().split(/\s+/).filter((w) => w.length > 0));
  return [...words].sort((a, b) => b.length - a.length);
}

/**
 * Builds a test of one message against every term of a narrow, for one viewer. With
 * `strict` (a query), an operand naming nobody is an error; otherwise (an event queue's
 * narrow, checked for every new message) such a term simply matches nothing.
 * `publicChannel` says which channels `channels:public` takes (all, without it).
 */
export function narrowPredicate(
  org: OrgContext, terms: NarrowTerm[], viewer: UserContext | undefined, strict = true, publicChannel?: (streamId: number) => boolean,
): (m: NarrowCandidate) => boolean {
  if (strict) checkNotChannelAndDm(terms);
  const tests = terms.map((term): ((m: NarrowCandidate) => boolean) => {
    let t: (m: NarrowCandidate) => boolean;
    try {
      t = termTest(org, term, viewer, terms, publicChannel);
    } catch (err) {
      if (strict) throw err;
      t = () => false;
    }
    return term.negated ? (m) => !t(m) : t;
  });
  return (m) => tests.every((t) => t(m));
}

/**
 * Zulip's `check_not_both_channel_and_dm_narrow`: non-negated channel terms (`channel`,
 * `channels`, `topic`, or a negated `is:dm`) with non-negated direct message terms match
 * nothing, and Zulip says so.
 */
function checkNotChannelAndDm(terms: NarrowTerm[]): void {
  let channel = false;
  let dm = false;
  for (const t of terms) {
    const isDm = t.operator === 'is' && (t.operand === 'dm' || t.operand === 'private');
    if (isDm && t.negated) channel = true;
    if (t.negated) continue;
    if (['channel', 'stream', 'channels', 'streams', 'topic'].includes(t.operator)) channel = true;
    if (isDm || ['dm', 'pm-with', 'pm_with', 'dm-including', 'group-pm-with', 'group_pm_with'].includes(t.operator)) dm = true;
  }
  if (channel && dm) throw badNarrow('Invalid narrow operator: No message can be both a channel message and direct message');
}

/**
 * Checks a queue's narrow as Zulip's `check_narrow_for_events` does: only `channel`,
 * `stream`, `topic`, `sender` and `is` (not `is:followed`) can filter events.
 */
export function checkEventNarrow(terms: NarrowTerm[]): void {
  for (const t of terms) {
    if (!EVENT_OPERATORS.has(t.operator)) throw new ApiError('BAD_REQUEST', `Operator ${t.operator} not supported.`);
    if (t.operator === 'is' && t.operand === 'followed') throw new ApiError('BAD_REQUEST', 'Operand followed not supported.');
  }
}

function termTest(
  org: OrgContext, term: NarrowTerm, viewer: UserContext | undefined, terms: NarrowTerm[], publicChannel?: (streamId: number) => boolean,
): (m: NarrowCandidate) => boolean {
  const { operator, operand } = term;
  switch (operator) {
    case 'channel':
    case 'stream': {
      const id = resolveChannel(org, operand);
      return (m) => m.stream_id !== null && m.stream_id === id;
    }
    case 'channels':
    case 'streams': {
      // `public`: the public channels (what the viewer may read is the query's business);
      // `web-public`: none, as web-public channels are off.
      if (operand === 'web-public') return () => false;
      return (m) => m.stream_id !== null && (publicChannel === undefined || publicChannel(m.stream_id));
    }
    case 'topic': {
      // The empty topic's display name names the empty topic, as in Zulip.
      const topic = operand === EMPTY_TOPIC_DISPLAY_NAME ? '' : String(operand).trim().toLowerCase();
      return (m) => m.stream_id !== null && m.topic.toLowerCase() === topic;
    }
    case 'dm':
    case 'pm-with':
    case 'pm_with': {
      // An empty list names no conversation (Zulip's `by_dm`).
      if (Array.isArray(operand) && operand.length === 0) return () => false;
      const ids = new Set(resolveUsers(org, operand, 'unknown user in'));
      if (viewer) ids.add(viewer.user_id);
      const key = [...ids].sort((a, b) => a - b).join(',');
      return (m) => m.dm_user_ids !== null && m.dm_user_ids.join(',') === key;
    }
    case 'group-pm-with':
    case 'group_pm_with': {
      // Group conversations (three or more) of the viewer's that include the user.
      const id = resolveUser(org, operand);
      return (m) => m.dm_user_ids !== null && m.dm_user_ids.length > 2 && m.dm_user_ids.includes(id);
    }
    case 'has':
      return hasTest(org, String(operand));
    case 'in':
      if (operand === 'all') return () => true;
      return (m) => viewer === undefined || !inMutedConversation(viewer, m, narrowedChannel(org, terms));
    case 'dm-including': {
      const id = resolveUser(org, operand);
      return (m) => m.dm_user_ids !== null && m.dm_user_ids.includes(id);
    }
    case 'sender': {
      const id = resolveUser(org, operand);
      return (m) => m.sender_id === id;
    }
    case 'id':
    case 'near':
    case 'with': {
      const id = Number(operand);
      return operator === 'id' ? (m) => m.id === id : () => true;
    }
    case 'search': {
      const words = searchWords(operand);
      return (m) => {
        const hay = (m.topic + ' ' + ('content' in m ? m.content : bodyOf(org.bodies, m).content)).toLowerCase();
        return words.every((w) => hay.includes(w));
      };
    }
    case 'is':
      return isTest(String(operand), viewer);
    default:
      return () => false;
  }
}

/** The channel a narrow's first non-negated `channel` term names, if any (for `in:home`). */
function narrowedChannel(org: OrgContext, terms: NarrowTerm[]): number | undefined {
  const t = terms.find((x) => !x.negated && (x.operator === 'channel' || x.operator === 'stream'));
  return t ? resolveChannel(org, t.operand) : undefined;
}

/**
 * Whether a message is in a conversation the viewer muted (Zulip's `is:muted`, the
 * complement of `in:home`): a muted topic, or a muted channel's topic the viewer did
 * not unmute or follow. Direct messages never are. A channel the narrow names keeps
 * its own muting out of it (`exclude_stream_and_topic_mutes` with its `stream_id`).
 */
function inMutedConversation(viewer: UserContext, m: NarrowCandidate, exceptChannel?: number): boolean {
  if (m.stream_id === null) return false;
  const policy = viewer.topics.get(userTopicKey(m.stream_id, m.topic))?.visibility_policy ?? 0;
  if (policy === 1) return true;
  if (policy === 2 || policy === 3 || m.stream_id === exceptChannel) return false;
  return viewer.subs.get(m.stream_id)?.is_muted ?? false;
}

function hasTest(org: OrgContext, operand: string): (m: NarrowCandidate) => boolean {
  switch (operand) {
    case 'link':
      return (m) => ((m.has ?? 0) & HAS_LINK) !== 0;
    case 'image':
      return (m) => ((m.has ?? 0) & HAS_IMAGE) !== 0;
    case 'reaction':
      return (m) => (m.reactions?.length ?? 0) > 0;
    case 'attachment': {
      // The messages that claimed an upload, as Zulip's `has_attachment` records them.
      const attached = new Set<number>();
      for (const a of org.attachments.values()) for (const x of a.messages) attached.add(x.id);
      return (m) => attached.has(m.id);
    }
    default:
      return () => false;
  }
}

function isTest(operand: string, viewer: UserContext | undefined): (m: NarrowCandidate) => boolean {
  switch (operand) {
    case 'dm':
    case 'private':
      return (m) => m.stream_id === null;
    case 'resolved':
      return (m) => m.topic.startsWith('✔ ');
    case 'unread':
      return (m) => viewer !== undefined && viewer.unread.has(m.id);
    case 'read':
      return (m) => viewer !== undefined && !viewer.unread.has(m.id);
    case 'starred':
      return (m) => viewer !== undefined && viewer.flags.starred.has(m.id);
    case 'mentioned':
      return (m) => viewer !== undefined && flagsOf(viewer, m.id).some((f) => f.endsWith('mentioned'));
    case 'alerted':
      return (m) => viewer !== undefined && viewer.flags.has_alert_word.has(m.id);
    case 'followed':
      return (m) => viewer !== undefined && m.stream_id !== null && viewer.topics.get(userTopicKey(m.stream_id, m.topic))?.visibility_policy === 3;
    case 'muted':
      return (m) => viewer !== undefined && inMutedConversation(viewer, m);
    default:
      return () => false;
  }
}
