/**
 * Unicode emoji names and codes, for reactions (and later `:name:` in Markdown).
 * The table is iamcal's (Slack-style) short names from the `emojibase-data` npm
 * package (`en/shortcodes/iamcal.json`), the set Zulip's own names grew from; codes
 * are Zulip's form: lower-case hex code points joined by `-`, without U+FE0F.
 */
import { createRequire } from 'node:module';

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
