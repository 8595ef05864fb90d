/**
 * Channel and channel folder descriptions are Markdown, rendered by the message
 * renderer, as Zulip's `render_stream_description` renders them (its full Markdown
 * without link previews; mentions are drawn but notify no one).
 *
 * Channels created by subscribing were once stored with a naive rendering, the source
 * escaped in one paragraph. Such a record is recognised where it enters state (restore
 * and replay) and rendered again, with no lookups: the result depends on the record
 * alone, so a replay and a restore give the same state. Mentions and channel links in
 * such an old description stay text until the description is next changed.
 */
import { escapeHtml, renderMarkdown } from './markdown/index.js';
import type { MarkdownEnv } from './markdown/env.js';

/** A description's HTML: '' for none. */
export function renderDescription(description: string, env: MarkdownEnv): string {
  return description === '' ? '' : renderMarkdown(description, env).html;
}

/** Resolves nothing: for rendering again what was stored without its lookups. */
const NO_LOOKUPS: MarkdownEnv = { user: () => undefined, group: () => undefined, channel: () => undefined };

/** A record with the old naive rendering gets its Markdown one; any other is returned as it is. */
export function upgradeDescription<T extends { description: string; rendered_description: string }>(record: T): T {
  if (record.description === '' || record.rendered_description !== `<p>${escapeHtml(record.description)}</p>`) return record;
  const html = renderDescription(record.description, NO_LOOKUPS);
  return html === record.rendered_description ? record : { ...record, rendered_description: html };
}
