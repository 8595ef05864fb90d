/**
 * The configuration file, `parley.toml`: sections that map onto the settings of
 * config.ts, for what is too rich for flags (call providers, push relay, SMTP, rate
 * limits per route class). Each setting's file key comes from its name by one rule
 * (`fileKeyOf`), so a new setting has a file key without a change here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseToml as parse, TomlError } from '../actors/shared/cjs_packages.js';

/** What reading the configuration file needs to know of a setting (config.ts's `Setting` has it). */
export interface FileSetting {
  key: string;
  /** Its key in the file, `section.key`, when the naming rule below would not give it. */
  file?: string;
  /** The value's type, when the default does not show it. */
  type?: 'integer' | 'boolean' | 'string';
  def: unknown;
}

/** Setting-name prefixes that put a setting in a section of its own; the rest of the name is its key there. */
const SECTION_PREFIXES: Array<[prefix: string, section: string]> = [
  ['smtp', 'smtp'],
  ['mail', 'smtp'],
  ['jitsi', 'calls.jitsi'],
  ['bbb', 'calls.bigbluebutton'],
  ['push', 'push'],
  ['board', 'board'],
  ['snapshot', 'snapshots'],
  ['upload', 'uploads'],
  ['metrics', 'metrics'],
  ['log', 'log'],
];

/** The section of settings no prefix places. */
const DEFAULT_SECTION = 'server';

const snake = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/^_/, '');

/**
 * A setting's key in the file, `section.key`: its own `file` if it has one; any rate
 * limit goes to `[rate_limits]`, named by the rest of its name (`rateLimit` is `api`,
 * `rateLimitAuth` is `auth`, `boardRateLimit` is `board`); a known prefix names the
 * section (`smtpHost` is `smtp.host`, `bbbUrl` is `calls.bigbluebutton.url`); the rest
 * are in `[server]` (`dataDir` is `server.data_dir`).
 */
export function fileKeyOf(s: Pick<FileSetting, 'key' | 'file'>): string {
  if (s.file) return s.file;
  const rate = /^(?:(.*)RateLimit|rateLimit)(.*)$/.exec(s.key);
  if (rate) return `rate_limits.${snake(`${rate[1] ?? ''}${rate[2]}`) || 'api'}`;
  for (const [prefix, section] of SECTION_PREFIXES) {
    if (s.key.startsWith(prefix) && /^[A-Z]/.test(s.key.slice(prefix.length))) return `${section}.${snake(s.key.slice(prefix.length))}`;
  }
  return `${DEFAULT_SECTION}.${snake(s.key)}`;
}

/**
 * The configuration file to read: `--config`'s path (`flag`, if given), else
 * `PARLEY_CONFIG`, else `parley.toml` in `cwd` if it exists, else none.
 */
export function configFilePath(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (flag === '') throw new Error('--config needs a path');
  const path = flag ?? (env.PARLEY_CONFIG || undefined);
  if (path !== undefined || !existsSync(join(cwd, 'parley.toml'))) return path;
  return join(cwd, 'parley.toml');
}

/** A value from the file: as text for the setting's parser, its line, and how errors name it. */
export interface FileValue {
  text: string;
  line: number | undefined;
  where: string;
}

/**
 * Reads and checks a configuration file: every key must be a setting's file key, with a
 * value of the setting's type (an integer, a boolean, or a string; rate limits are
 * strings such as "200/60"). Errors name the file, the key and the line.
 */
export function readConfigFile<S extends FileSetting>(path: string, settings: S[]): Map<S, FileValue> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`configuration file ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : (err as Error).message}`);
  }
  let doc: Record<string, unknown>;
  try {
    doc = parse(text, { integersAsBigInt: true });
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    throw new Error(`${path}:${err.line}:${err.column}: ${err.message.split('\n')[0].replace(/^Invalid TOML document: /, '')}`);
  }
  const byKey = new Map(settings.map((s) => [fileKeyOf(s), s]));
  const lines = keyLines(text);
  const out = new Map<S, FileValue>();
  for (const [key, value] of leaves(doc, '', byKey)) {
    const where = `${path}${lines.has(key) ? `:${lines.get(key)}` : ''}: ${key}`;
    const s = byKey.get(key);
    if (!s) throw new Error(`${where}: unknown key; ${knownKeys(key, [...byKey.keys()])}`);
    const type = settingType(s);
    const expected = type === 'rate' ? 'string' : type;
    const actual = tomlType(value);
    if (actual !== expected) throw new Error(`${where}: expected ${article(expected)}, got ${article(actual)}${actual === 'string' ? ` ("${String(value)}")` : ''}`);
    out.set(s, { text: String(value), line: lines.get(key), where });
  }
  return out;
}

/** Each value of the document with its dotted key; tables are descended only where a setting's key continues. */
function* leaves(table: Record<string, unknown>, prefix: string, known: Map<string, FileSetting>): Generator<[string, unknown]> {
  for (const [name, value] of Object.entries(table)) {
    const key = prefix + name;
    if (tomlType(value) === 'table' && !known.has(key)) yield* leaves(value as Record<string, unknown>, `${key}.`, known);
    else yield [key, value];
  }
}

function tomlType(v: unknown): string {
  if (typeof v === 'bigint') return 'integer';
  if (typeof v === 'number') return 'float';
  if (typeof v === 'boolean' || typeof v === 'string') return typeof v;
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  return 'table';
}

const article = (type: string): string => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** The keys of the section an unknown key is in, or the sections, for its error message. */
function knownKeys(key: string, all: string[]): string {
  const sections = [...new Set(all.map((k) => k.slice(0, k.lastIndexOf('.'))))];
  const section = sections.filter((s) => key.startsWith(`${s}.`)).sort((a, b) => b.length - a.length)[0];
  if (section === undefined) return `the sections are ${sections.map((s) => `[${s}]`).join(', ')}`;
  return `[${section}] has ${all.filter((k) => k.slice(0, k.lastIndexOf('.')) === section).map((k) => k.slice(section.length + 1)).join(', ')}`;
}

/** The line of each `key = value` (as a full dotted key) and each `[table]` header: enough to point at an error. */
function keyLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  const dotted = (k: string): string => k.split('.').map((p) => p.trim().replace(/^["']|["']$/g, '')).join('.');
  let table = '';
  text.split(/\r?\n/).forEach((raw, i) => {
    const header = /^\s*\[\s*([^[\]]+?)\s*\]/.exec(raw);
    const pair = /^\s*([A-Za-z0-9_\-."' ]+?)\s*=/.exec(raw);
    if (header) {
      table = dotted(header[1]);
      lines.set(table, i + 1);
    } else if (pair) lines.set(table ? `${table}.${dotted(pair[1])}` : dotted(pair[1]), i + 1);
  });
  return lines;
}

/** A setting's value type, as the configuration file and `--help` take it. */
export function settingType(s: FileSetting): 'integer' | 'boolean' | 'string' | 'rate' {
  if (s.type) return s.type;
  if (typeof s.def === 'number') return 'integer';
  if (typeof s.def === 'boolean') return 'boolean';
  return s.def !== null && typeof s.def === 'object' ? 'rate' : 'string';
}
