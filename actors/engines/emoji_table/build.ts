/**
 * Builds Parley's Unicode emoji table the way Zulip builds its own
 * (`tools/setup/emoji/generate_emoji_names` and `build_emoji`), from the same sources:
 *
 * - the emoji list of `emoji-datasource` (iamcal's emoji-data; its `emoji.json` is the
 *   very file of `emoji-datasource-google`, which adds only images), at the version
 *   Zulip pinned when its Markdown fixtures were written (15.0.1);
 * - Zulip's hand-picked names for the older emoji (`zulip_custom_names.json`, see
 *   SOURCE.md beside it);
 * - Unicode CLDR's English annotations (`cldr-annotations-full` and
 *   `cldr-annotations-derived-full`, 44.1.0) for every other emoji: the `tts` name is
 *   canonical, the `default` keywords are aliases.
 *
 * The table is written to `table.json` and read at run time (`actors/engines/emoji.ts`); a test
 * builds it again from the packages and compares. After changing a source:
 * `npm run emoji:build`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One emoji's names: the canonical name first, then its aliases. */
export type EmojiNames = [string, ...string[]];

export interface EmojiTable {
  /** Where the table came from, for people reading it. */
  source: Record<string, string>;
  /** Emoji code (lower-case hex code points joined by `-`, without U+FE0F) → names. */
  code_to_names: Record<string, EmojiNames>;
}

interface DataSourceEmoji {
  unified: string;
  has_img_google: boolean;
}

interface CustomNames {
  canonical_name: string;
  aliases: string[];
}

interface Annotation {
  default?: string[];
  tts?: string[];
}

export interface EmojiSources {
  emoji: DataSourceEmoji[];
  custom: Record<string, CustomNames>;
  cldr: Record<string, Annotation>;
  versions: Record<string, string>;
}

/** Zulip's `unqualify_emoji` and `emoji_to_hex_codepoint`. */
export function emojiCode(emoji: string): string {
  return [...emoji.replace(/\uFE0F/g, '')].map((c) => c.codePointAt(0)!.toString(16).padStart(4, '0')).join('-');
}

function fromHex(hex: string): string {
  return String.fromCodePoint(...hex.split('-').map((h) => parseInt(h, 16)));
}

/** Clock faces other than the hours Zulip keeps, and the bare skin tones: never offered. */
const SKIPPED = new Set([
  '1f550', '1f551', '1f552', '1f553', '1f554', '1f555', '1f556', '1f558', '1f559', '1f55a', '1f55b', '1f55c',
  '1f55d', '1f55e', '1f55f', '1f560', '1f561', '1f562', '1f563', '1f564', '1f565', '1f566', '1f567',
  '1f3fb', '1f3fc', '1f3fd', '1f3fe', '1f3ff',
]);

const NAME_REPLACEMENTS: [string, string][] = [
  [' ', '_'], ['-', '_'], ['–', '_'], ['“', ''], ['”', ''], [':', ''], ['.', ''], [',', ''], ['(', ''], [')', ''],
  ['&', 'and'], ['‘', ''], ['’', ''], ["'", ''],
];

/** A CLDR phrase as an emoji name: `woman shrugging` → `woman_shrugging`. */
function cleanName(phrase: string): string {
  let name = phrase.trim();
  for (const [from, to] of NAME_REPLACEMENTS) name = name.split(from).join(to);
  return name.replace(/_{2,}/g, '_').toLowerCase();
}

const ASCII_FOLDS: [string, string][] = [
  ['è', 'e'], ['ǐ', 'i'], ['ó', 'o'], ['ā', 'a'], ['ō', 'o'], ['ñ', 'n'], ['ô', 'o'], ['ç', 'c'], ['é', 'e'], ['ã', 'a'], ['í', 'i'], ['å', 'a'], ['ü', 'u'],
];
/** Names that have no ASCII spelling; each has an ASCII alias already. */
const KEPT_NON_ASCII = new Set(['ココ', 'サ', '指', '空']);
const isAscii = (s: string): boolean => /^[\x00-\x7f]*$/.test(s);

function asciiFold(name: string): string {
  let out = name;
  for (const [from, to] of ASCII_FOLDS) out = out.split(from).join(to);
  if (!isAscii(out)) throw new Error(`${name} has characters without an ASCII fold`);
  return out;
}

/** The table, from its sources, by Zulip's rules. */
export function buildEmojiTable(sources: EmojiSources): EmojiTable {
  const names = new Map<string, { canonical: string; aliases: string[] }>();
  const canonical = new Set<string>();
  const claim = (code: string, name: string): void => {
    if (canonical.has(name)) throw new Error(`${name} is the canonical name of two emoji (the second is ${code})`);
    canonical.add(name);
  };
  for (const entry of sources.emoji) {
    const emoji = fromHex(entry.unified).replace(/\uFE0F/g, '');
    const code = emojiCode(emoji);
    if (SKIPPED.has(code)) continue;
    const custom = sources.custom[code];
    if (custom) {
      claim(code, cleanName(custom.canonical_name));
      names.set(code, { canonical: custom.canonical_name, aliases: [...custom.aliases] });
      continue;
    }
    const cldr = sources.cldr[emoji];
    if (!cldr?.tts) continue; // Zulip skips an emoji CLDR does not name
    const name = cleanName(cldr.tts[0]);
    claim(code, name);
    names.set(code, { canonical: name, aliases: (cldr.default ?? []).map(cleanName) });
  }
  // An alias never shadows a canonical name, and one shared by several emoji is dropped
  // from all of them, except where Zulip's own names chose it.
  const aliasOwners = new Map<string, string[]>();
  for (const [code, entry] of names) {
    entry.aliases = entry.aliases.filter((alias) => !canonical.has(alias));
    for (const alias of entry.aliases) aliasOwners.set(alias, [...(aliasOwners.get(alias) ?? []), code]);
  }
  for (const [alias, codes] of aliasOwners) {
    if (codes.length < 2) continue;
    for (const code of codes) {
      if (sources.custom[code]) continue;
      const entry = names.get(code)!;
      entry.aliases = entry.aliases.filter((a) => a !== alias);
    }
  }
  // Every non-ASCII name gets an ASCII alias (`piña_colada` → `pina_colada`), which no
  // other emoji may keep.
  for (const entry of names.values()) {
    for (const name of [entry.canonical, ...entry.aliases]) {
      if (isAscii(name) || KEPT_NON_ASCII.has(name)) continue;
      const folded = asciiFold(name);
      for (const code of aliasOwners.get(folded) ?? []) {
        const other = names.get(code)!;
        other.aliases = other.aliases.filter((a) => a !== folded);
      }
      entry.aliases.push(folded);
    }
  }
  const code_to_names: Record<string, EmojiNames> = {};
  for (const [code, entry] of names) code_to_names[code] = [entry.canonical, ...entry.aliases];
  return { source: sources.versions, code_to_names };
}

const here = fileURLToPath(new URL('.', import.meta.url));
/** The directory of the sources, whether this runs from `actors/` or `dist/actors/`. */
export const TABLE_DIR = here.includes(`${join('dist', 'actors')}`) ? join(here, '..', '..', '..', '..', 'actors', 'engines', 'emoji_table') : here;

/** Reads the sources from the installed packages (devDependencies) and the custom names. */
export function readEmojiSources(): EmojiSources {
  const require = createRequire(import.meta.url);
  const json = (spec: string): any => JSON.parse(readFileSync(require.resolve(spec), 'utf8'));
  const version = (pkg: string): string => json(`${pkg}/package.json`).version;
  return {
    emoji: json('emoji-datasource/emoji.json'),
    custom: JSON.parse(readFileSync(join(TABLE_DIR, 'zulip_custom_names.json'), 'utf8')),
    cldr: {
      ...json('cldr-annotations-full/annotations/en/annotations.json').annotations.annotations,
      ...json('cldr-annotations-derived-full/annotationsDerived/en/annotations.json').annotationsDerived.annotations,
    },
    versions: {
      'emoji-datasource': version('emoji-datasource'),
      'cldr-annotations-full': version('cldr-annotations-full'),
      'cldr-annotations-derived-full': version('cldr-annotations-derived-full'),
      custom_names: 'zulip_custom_names.json (see SOURCE.md)',
    },
  };
}

/** The table as written to `table.json`: one emoji per line, so that diffs read well. */
export function serializeTable(table: EmojiTable): string {
  const rows = Object.entries(table.code_to_names).map(([code, n]) => `    ${JSON.stringify(code)}: ${JSON.stringify(n)}`);
  return `{\n  "source": ${JSON.stringify(table.source)},\n  "code_to_names": {\n${rows.join(',\n')}\n  }\n}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const table = buildEmojiTable(readEmojiSources());
  writeFileSync(join(TABLE_DIR, 'table.json'), serializeTable(table));
  const count = Object.values(table.code_to_names).reduce((n, names) => n + names.length, 0);
  console.log(`table.json: ${Object.keys(table.code_to_names).length} emoji, ${count} names`);
}
