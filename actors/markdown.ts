/**
 * A small, safe subset of Zulip's Markdown: paragraphs, line breaks, `code`, **bold**,
 * *italic*, fenced code blocks and user and wildcard mentions. Everything else is
 * escaped text, so a message can never inject HTML.
 */

/** Looks a mentioned name (or `name|id`) up; returns the user's id and full name. */
export type MentionResolver = (name: string, id: number | null) => { user_id: number; full_name: string } | undefined;

/** The HTML of a message and the mentions found in it. */
export interface Rendered {
  html: string;
  mentioned: number[];
  wildcard: 'stream' | 'topic' | null;
}

const STREAM_WILDCARDS = new Set(['all', 'everyone', 'stream', 'channel']);

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

function renderInline(text: string, resolve: MentionResolver, out: Rendered): string {
  const parts = text.split(/(`[^`\n]+`)/);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      let html = escapeHtml(part);
      html = html.replace(/@(_?)\*\*([^*\n]+?)\*\*/g, (whole, silent: string, inner: string) => {
        const raw = inner.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");
        if (STREAM_WILDCARDS.has(raw)) {
          if (!silent) out.wildcard = out.wildcard ?? 'stream';
          return `<span class="user-mention${silent ? ' silent' : ''}" data-user-id="*">${silent ? '' : '@'}${escapeHtml(raw)}</span>`;
        }
        if (raw === 'topic') {
          if (!silent) out.wildcard = 'topic';
          return `<span class="topic-mention${silent ? ' silent' : ''}">${silent ? '' : '@'}${escapeHtml(raw)}</span>`;
        }
        const bar = raw.lastIndexOf('|');
        const id = bar >= 0 && /^\d+$/.test(raw.slice(bar + 1)) ? Number(raw.slice(bar + 1)) : null;
        const name = bar >= 0 && id !== null ? raw.slice(0, bar) : raw;
        const user = resolve(name, id);
        if (!user) return whole;
        if (!silent && !out.mentioned.includes(user.user_id)) out.mentioned.push(user.user_id);
        return `<span class="user-mention${silent ? ' silent' : ''}" data-user-id="${user.user_id}">${silent ? '' : '@'}${escapeHtml(user.full_name)}</span>`;
      });
      html = html.replace(/\*\*([^*\n]+?)\*\*/g, '<strong>$1</strong>');
      html = html.replace(/(^|[^*\w])\*([^*\n]+?)\*(?!\w)/g, '$1<em>$2</em>');
      return html;
    })
    .join('');
}

/** Renders message Markdown to HTML and collects its mentions. */
export function renderMarkdown(source: string, resolve: MentionResolver): Rendered {
  const out: Rendered = { html: '', mentioned: [], wildcard: null };
  const blocks: string[] = [];
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length > 0) blocks.push(`<p>${paragraph.map((l) => renderInline(l, resolve, out)).join('<br>\n')}</p>`);
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,}|~{3,})/.exec(lines[i]);
    if (fence) {
      flush();
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i].startsWith(fence[1])) code.push(lines[i++]);
      blocks.push(`<div class="codehilite"><pre><span></span><code>${escapeHtml(code.join('\n'))}\n</code></pre></div>`);
      continue;
    }
    if (lines[i].trim() === '') flush();
    else paragraph.push(lines[i]);
  }
  flush();
  out.html = blocks.join('\n');
  return out;
}
