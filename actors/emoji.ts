/**
 * Unicode emoji names and codes, for reactions (and later `:name:` in Markdown).
 * The table is iamcal's (Slack-style) short names from the `emojibase-data` npm
 * package (`en/shortcodes/iamcal.json`), the set Zulip's own names grew from; codes
 * are Zulip's form: lower-case hex code points joined by `-`, without U+FE0F.
 */
import { createRequire } from 'node:module';
import { badRequest } from './errors.js';
import type { Reaction } from './types.js';

type ReactionType = Reaction['reaction_type'];

const require = createRequire(import.meta.url);
const IAMCAL = require('emojibase-data/en/shortcodes/iamcal.json') as Record<string, string | string[]>;

/** Zulip's form of an emoji code. */
function zulipCode(hexcode: string): string {
  return hexcode.toLowerCase().split('-').filter((part) => part !== 'fe0f').join('-');
}

const byName = new Map<string, string>();
const codes = new Set<string>();
for (const [hexcode, names] of Object.entries(IAMCAL)) {
  const code = zulipCode(hexcode);
  codes.add(code);
  for (const name of Array.isArray(names) ? names : [names]) if (!byName.has(name)) byName.set(name, code);
}

/** The code of a Unicode emoji by name, if the table has it. */
export function emojiCodeOf(name: string): string | undefined {
  return byName.get(name);
}

/** Whether `code` is a Unicode emoji's code, in Zulip's form. */
export function isEmojiCode(code: string): boolean {
  return codes.has(code);
}

export const REACTION_TYPES = ['unicode_emoji', 'realm_emoji', 'zulip_extra_emoji'] as const;

/** The organization's custom emoji, as reactions and statuses look them up. */
export interface CustomEmoji {
  /** An active one by name. */
  byName(name: string): { id: number } | undefined;
  /** Any by id (its code), deactivated ones too. */
  byId(id: number): { name: string; deactivated: boolean } | undefined;
}

/**
 * Zulip's `emoji_name_to_emoji_code`: an active custom emoji of the name, else `zulip`,
 * else a Unicode emoji, or "Emoji '…' does not exist".
 */
export function emojiByName(name: string, custom: CustomEmoji): { code: string; type: ReactionType } {
  const own = custom.byName(name);
  if (own) return { code: String(own.id), type: 'realm_emoji' };
  if (name === 'zulip') return { code: 'zulip', type: 'zulip_extra_emoji' };
  const code = emojiCodeOf(name);
  if (code === undefined) throw badRequest(`Emoji '${name}' does not exist`);
  return { code, type: 'unicode_emoji' };
}

/**
 * Zulip's `check_emoji_request`: the type is known, a Unicode code is a real emoji, a
 * custom emoji's code is the id of an active one of the organization with that name,
 * and the one extra emoji is `zulip`. A Unicode emoji's name is the client's: Zulip
 * clients name emoji from their own table, which differs from ours in places, so it is
 * not checked against the code.
 */
export function checkEmojiRequest(name: string, code: string, type: string, custom: CustomEmoji): ReactionType {
  if (!(REACTION_TYPES as readonly string[]).includes(type)) throw badRequest('Invalid emoji type.');
  if (name.trim() === '') throw badRequest('Invalid emoji name.');
  if (type === 'unicode_emoji' && !isEmojiCode(code)) throw badRequest('Invalid emoji code.');
  if (type === 'realm_emoji') {
    const own = /^[0-9]{1,9}$/.test(code) ? custom.byId(Number(code)) : undefined;
    if (!own || own.deactivated) throw badRequest('Invalid custom emoji.');
    if (own.name !== name) throw badRequest('Invalid custom emoji name.');
  }
  if (type === 'zulip_extra_emoji' && name !== 'zulip') throw badRequest('Invalid emoji name.');
  return type as ReactionType;
}
