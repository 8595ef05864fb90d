/**
 * Packages whose ES module builds are many files, loaded through their CommonJS builds
 * instead: @sinclair/typebox's ESM build is about 200 modules and markdown-it's about 50,
 * where their CommonJS builds are loaded by `require`. In a process with module hooks
 * registered (every tap test process: tap's processinfo and mock loaders), each ES module
 * loaded costs a round trip to the hooks' thread: the ESM builds cost each test process
 * about a quarter of a second of CPU more than these. The API is the same; the types are
 * the packages' own.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** TypeBox's schema builder. */
export const Type: typeof import('@sinclair/typebox').Type = (require('@sinclair/typebox') as typeof import('@sinclair/typebox')).Type;

/** markdown-it's parser class (its CommonJS build is one bundled file). */
export const MarkdownIt: typeof import('markdown-it').default = require('markdown-it') as typeof import('markdown-it').default;
export type MarkdownIt = import('markdown-it').default;

/** diff's `diffArrays`. */
export const diffArrays: typeof import('diff').diffArrays = (require('diff') as typeof import('diff')).diffArrays;

/** smol-toml's parser and its error (its CommonJS build is one file). */
export const { parse: parseToml, TomlError }: { parse: typeof import('smol-toml').parse; TomlError: typeof import('smol-toml').TomlError } = require('smol-toml') as typeof import('smol-toml');
