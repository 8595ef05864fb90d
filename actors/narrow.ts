/**
 * Narrows: Zulip's message filters, shared by `GET /messages` and by event queues
 * registered with a narrow. `check_narrow` validates the client's terms; `narrowPredicate`
 * turns them into a test on one message.
 */
import { ApiError } from '../src/http/errors.js';
import type { OrgContext } from './organization.js';
import type { MessageRecord } from './types.js';
import type { UserContext } from './user.js';
import { flagsOf } from './user.js';

/** One narrow term. `operand` is a string, an id, or a list of user ids or emails. */
export interface NarrowTerm {
  operator: string;
  operand: string | number | Array<string | number>;
  negated: boolean;
}

const OPERATORS = new Set(['channel', 'stream', 'topic', 'dm', 'pm-with', 'sender', 'is', 'search', 'id', 'dm-including', 'group-pm-with', 'channels', 'streams', 'near', 'with']);
const IS_OPERANDS = new Set(['dm', 'private', 'starred', 'mentioned', 'unread', 'read', 'alerted', 'resolved', 'followed', 'muted']);

const badNarrow = (msg: string): ApiError => new ApiError('BAD_NARROW', msg);

/** Validates a decoded `narrow` parameter (objects or legacy `[operator, operand]` pairs). */
export function checkNarrow(raw: unknown): NarrowTerm[] {
  if (!Array.isArray(raw)) throw badNarrow('Invalid narrow: must be a list');
  return raw.map((item): NarrowTerm => {
    let operator: unknown;
    let operand: unknown;
    let negated: unknown = false;
    if (Array.isArray(item) && item.length === 2) [operator, operand] = item;
    else if (item && typeof item === 'object') ({ operator, operand, negated = false } = item as Record<string, unknown>);
    else throw badNarrow('Invalid narrow: each term must be an object or a pair');
    if (typeof operator !== 'string' || !OPERATORS.has(operator)) throw badNarrow(`Invalid narrow operator: unknown operator ${String(operator)}`);
    if (typeof negated !== 'boolean') throw badNarrow('Invalid narrow: negated must be a boolean');
    const okOperand = typeof operand === 'string' || (typeof operand === 'number' && Number.isInteger(operand)) ||
      (Array.isArray(operand) && operand.every((x) => typeof x === 'string' || (typeof x === 'number' && Number.isInteger(x))));
    if (!okOperand) throw badNarrow(`Invalid narrow operand for ${operator}`);
    if (operator === 'is' && !IS_OPERANDS.has(String(operand))) throw badNarrow(`Invalid narrow operator: unknown 'is' operand ${String(operand)}`);
    return { operator, operand: operand as NarrowTerm['operand'], negated };
  });
}

/** Resolves a user operand (id, email, or list of either) to user ids; `phrase` names the operand in errors. */
export function resolveUsers(org: OrgContext, operand: NarrowTerm['operand'], phrase = 'unknown user'): number[] {
  const items = Array.isArray(operand) ? operand : typeof operand === 'string' ? operand.split(',') : [operand];
  return items.map((item) => {
    if (typeof item === 'number') return item;
    const trimmed = item.trim();
    if (/^\d+$/.test(trimmed)) return Number(trimmed);
    const id = org.byEmail.get(trimmed.toLowerCase());
    if (id === undefined) throw badNarrow(`Invalid narrow operator: ${phrase} ${trimmed}`);
    return id;
  });
}

/** Resolves a channel operand (name or id) to a channel id, or undefined if unknown. */
export function resolveChannel(org: OrgContext, operand: NarrowTerm['operand']): number | undefined {
  if (typeof operand === 'number') return operand;
  if (typeof operand === 'string' && /^\d+$/.test(operand)) return Number(operand);
  if (typeof operand !== 'string') return undefined;
  return org.channelsByName.get(operand.trim().toLowerCase());
}

/** Lower-cased words of a search query. */
function searchWords(operand: NarrowTerm['operand']): string[] {
  return String(operand).toLowerCase().split(/\s+/).filter((w) => w.length > 0);
}

/**
 * Builds a test of one message against every term of a narrow, for one viewer. With
 * `strict` (a query), an operand naming nobody is an error; otherwise (an event queue's
 * narrow, checked for every new message) such a term simply matches nothing.
 */
export function narrowPredicate(org: OrgContext, terms: NarrowTerm[], viewer: UserContext | undefined, strict = true): (m: MessageRecord) => boolean {
  const tests = terms.map((term): ((m: MessageRecord) => boolean) => {
    let t: (m: MessageRecord) => boolean;
    try {
      t = termTest(org, term, viewer);
    } catch (err) {
      if (strict) throw err;
      t = () => false;
    }
    return term.negated ? (m) => !t(m) : t;
  });
  return (m) => tests.every((t) => t(m));
}

function termTest(org: OrgContext, term: NarrowTerm, viewer: UserContext | undefined): (m: MessageRecord) => boolean {
  const { operator, operand } = term;
  switch (operator) {
    case 'channel':
    case 'stream': {
      const id = resolveChannel(org, operand);
      return (m) => m.stream_id !== null && m.stream_id === id;
    }
    case 'channels':
    case 'streams':
      return (m) => m.stream_id !== null;
    case 'topic': {
      const topic = String(operand).trim().toLowerCase();
      return (m) => m.stream_id !== null && m.topic.toLowerCase() === topic;
    }
    case 'dm':
    case 'pm-with':
    case 'group-pm-with': {
      const ids = new Set(resolveUsers(org, operand, 'unknown user in'));
      if (viewer) ids.add(viewer.user_id);
      const key = [...ids].sort((a, b) => a - b).join(',');
      return (m) => m.dm_user_ids !== null && m.dm_user_ids.join(',') === key;
    }
    case 'dm-including': {
      const [id] = resolveUsers(org, operand);
      return (m) => m.dm_user_ids !== null && m.dm_user_ids.includes(id);
    }
    case 'sender': {
      const [id] = resolveUsers(org, operand);
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
        const hay = (m.topic + ' ' + m.content).toLowerCase();
        return words.every((w) => hay.includes(w));
      };
    }
    case 'is':
      return isTest(String(operand), viewer);
    default:
      return () => false;
  }
}

function isTest(operand: string, viewer: UserContext | undefined): (m: MessageRecord) => boolean {
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
    default:
      return () => false;
  }
}
