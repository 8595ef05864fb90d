/**
 * Unicode emoji names and codes: Zulip's own table (`emoji_table/table.json`, built by
 * `emoji_table/build.ts` from the sources Zulip builds its table from). Codes are
 * Zulip's form: lower-case hex code points joined by `-`, without U+FE0F. Each emoji has
 * a canonical name and aliases; a name names one emoji.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { badRequest } from '../shared/errors.js';
import { TABLE_DIR, type EmojiTable } from './emoji_table/build.js';
export { emojiCode } from './emoji_table/build.js';
import type { Reaction } from '../shared/types.js';

type ReactionType = Reaction['reaction_type'];

const TABLE = JSON.parse(readFileSync(join(TABLE_DIR, 'table.json'), 'utf8')) as EmojiTable;

const byName = new Map<string, string>();
const canonicalOf = new Map<string, string>();
for (const [code, names] of Object.entries(TABLE.code_to_names)) {
  canonicalOf.set(code, names[0]);
  for (const name of names) byName.set(name, code);
}

/** The code of a Unicode emoji by any of its names (Zulip's `name_to_codepoint`). */
export function emojiCodeOf(name: string): string | undefined {
  return byName.get(name);
}

/** The canonical name of a Unicode emoji code (Zulip's `codepoint_to_name`). */
export function emojiNameOf(code: string): string | undefined {
  return canonicalOf.get(code);
}

/** Whether `code` is a Unicode emoji's code, in Zulip's form. */
export function isEmojiCode(code: string): boolean {
  return canonicalOf.has(code);
}

/**
 * Zulip's emoticons and the emoji they become when the sender turns on
 * `translate_emoticons` (its `EMOTICON_CONVERSIONS`, of the table's time).
 */
export const EMOTICON_CONVERSIONS: Readonly<Record<string, string>> = {
  ':)': 'smile', '(:': 'smile', ':(': 'frown', '<3': 'heart', ':|': 'neutral', ':/': 'confused',
  ';)': 'wink', ':D': 'grinning', ':o': 'open_mouth', ':O': 'open_mouth', ':p': 'stuck_out_tongue', ':P': 'stuck_out_tongue',
};

/** `{code_to_names}`, the document behind `server_emoji_data_url` (Zulip's `emoji_api.json`). */
export const EMOJI_API_DOCUMENT = JSON.stringify({ code_to_names: TABLE.code_to_names });

/** Where the document is served: its content's hash in the name, as Zulip's static files, so it can be cached for good. */
export const EMOJI_API_PATH = `/static/generated/emoji/emoji_api.${createHash('sha256').update(EMOJI_API_DOCUMENT).digest('hex').slice(0, 16)}.json`;

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
 * and the one extra emoji is `zulip`; a Unicode emoji's name is one of its code's names.
 */
export function checkEmojiRequest(name: string, code: string, type: string, custom: CustomEmoji): ReactionType {
  if (!(REACTION_TYPES as readonly string[]).includes(type)) throw badRequest('Invalid emoji type.');
  if (name.trim() === '') throw badRequest('Invalid emoji name.');
  if (type === 'unicode_emoji') {
    if (!isEmojiCode(code)) throw badRequest('Invalid emoji code.');
    if (emojiCodeOf(name) !== code) throw badRequest('Invalid emoji name.');
  }
  if (type === 'realm_emoji') {
    const own = /^[0-9]{1,9}$/.test(code) ? custom.byId(Number(code)) : undefined;
    if (!own) throw badRequest('Invalid custom emoji.');
    if (own.name !== name) throw badRequest('Invalid custom emoji name.');
    if (own.deactivated) throw badRequest('This custom emoji has been deactivated.');
  }
  if (type === 'zulip_extra_emoji') {
    if (code !== 'zulip') throw badRequest('Invalid emoji code.');
    if (name !== code) throw badRequest('Invalid emoji name.');
  }
  return type as ReactionType;
}
