/**
 * The types every plugin of the renderer shares: what the renderer may look up
 * (`MarkdownEnv`), what it reports (`Rendered`), and the per-render state that
 * markdown-it carries as its `env` (`RenderState`), including the stash of HTML
 * fragments that Zulip's Python-Markdown keeps in its `htmlStash`.
 */

import type { CompiledLinkifier } from '../../rules/linkifiers.js';

/** What the renderer may look up; all synchronous. */
export interface MarkdownEnv {
  /** An active user by full name (case-insensitively) or, for `@**Name|id**`, by id. */
  user(name: string, id: number | null): { user_id: number; full_name: string } | undefined;
  /** A user group, for `@*group*`; undefined when unknown. */
  group(name: string): { id: number; name: string; members: number[] } | undefined;
  /** A channel, for `#**channel**` and `#**channel>topic**`. */
  channel(name: string): { stream_id: number; name: string } | undefined;
  /**
   * The organization's own URL (no trailing slash). When set, links into it that
   * point at `#…` or `user_uploads/…` are written relative, as Zulip does.
   */
  realmUrl?: string;
  /** An active custom emoji of the organization by name, for `:name:` (it wins over a Unicode emoji of that name). */
  realmEmoji?(name: string): { source_url: string } | undefined;
  /** The sender's `translate_emoticons` setting: `:)` and Zulip's other emoticons become emoji. */
  translateEmoticons?: boolean;
  /** The organization's linkifiers, compiled, in the order they apply. */
  linkifiers?: CompiledLinkifier[];
  /** The organization's `default_code_block_language`: the language of a fence that names none (empty: none). */
  defaultCodeBlockLanguage?: string;
}

/** The HTML of a message and what it mentions. */
export interface Rendered {
  html: string;
  /** Users mentioned directly, or via a non-silent group mention (its members). */
  mentioned: number[];
  /** A non-silent `@**all**`/`everyone`/`stream`/`channel` is 'stream'; `@**topic**` is 'topic'. */
  wildcard: 'stream' | 'topic' | null;
  /** Ids of groups mentioned non-silently. */
  mentionedGroups: number[];
}

/** State of one render, passed to markdown-it as its `env`. */
export interface RenderState {
  lookup: MarkdownEnv;
  out: Rendered;
  /** HTML fragments the preprocessor set aside; the text holds `STASH_OPEN + index + STASH_CLOSE`. */
  stash: string[];
  /** Whether each stashed fragment is block-level (so it is not wrapped in `<p>`). */
  stashBlock: boolean[];
}

/** Placeholder delimiters (STX/ETX, as Python-Markdown's). User text never contains them: the renderer replaces them first. */
export const STASH_OPEN = '\u0002';
export const STASH_CLOSE = '\u0003';

/** Sets an HTML fragment aside and returns the placeholder that stands for it. */
export function stash(state: RenderState, html: string, block: boolean): string {
  state.stash.push(html);
  state.stashBlock.push(block);
  return `${STASH_OPEN}${state.stash.length - 1}${STASH_CLOSE}`;
}

const TEXT_SPECIAL = /[&<>]/;
const ATTR_SPECIAL = /[&<>"]/;

/** Escapes text for HTML element content, as Python's ElementTree does (quotes stay). */
export function escapeText(s: string): string {
  if (!TEXT_SPECIAL.test(s)) return s;
  return s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** Escapes text for an attribute value in double quotes. */
export function escapeAttr(s: string): string {
  if (!ATTR_SPECIAL.test(s)) return s;
  return s.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}
