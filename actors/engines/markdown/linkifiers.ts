/**
 * The organization's linkifiers (Zulip's `LinkifierPattern`): text that matches a
 * linkifier's pattern becomes a link to its URL template, filled with the pattern's
 * named groups. Applied to text outside code and outside links, after the other
 * links are made; the matching itself is RE2's (linear time, `actors/rules/linkifiers.ts`).
 */
import type { MarkdownIt, StateCore, Token } from 'markdown-it';
import { linkifierMatches } from '../../rules/linkifiers.js';
import type { RenderState } from './env.js';

function textToken(state: StateCore, content: string, level: number): Token {
  const t = new state.Token('text', '', 0);
  t.content = content;
  t.level = level;
  return t;
}

export function linkifiers(md: MarkdownIt): void {
  md.core.ruler.after('zulip_links', 'zulip_linkifiers', (state) => {
    const list = (state.env as unknown as RenderState).lookup.linkifiers;
    if (!list || list.length === 0) return;
    for (const block of state.tokens) {
      if (block.type !== 'inline' || !block.children) continue;
      const out: Token[] = [];
      let depth = 0;
      const children = block.children;
      for (let i = 0; i < children.length; i++) {
        const tok = children[i];
        if (tok.type === 'link_open') depth++;
        else if (tok.type === 'link_close') depth--;
        if (tok.type !== 'text' || depth > 0) {
          out.push(tok);
          continue;
        }
        const prev = children[i - 1];
        const next = children[i + 1];
        const openStart = !prev || prev.type === 'hardbreak' || prev.type === 'softbreak';
        const openEnd = !next || next.type === 'hardbreak' || next.type === 'softbreak';
        const matches = linkifierMatches(tok.content, list, openStart, openEnd);
        if (matches.length === 0) {
          out.push(tok);
          continue;
        }
        let last = 0;
        for (const m of matches) {
          if (m.start > last) out.push(textToken(state, tok.content.slice(last, m.start), tok.level));
          const open = new state.Token('link_open', 'a', 1);
          open.attrs = [['href', m.url]];
          open.level = tok.level;
          const close = new state.Token('link_close', 'a', -1);
          close.level = tok.level;
          out.push(open, textToken(state, tok.content.slice(m.start, m.end), tok.level + 1), close);
          last = m.end;
        }
        if (last < tok.content.length) out.push(textToken(state, tok.content.slice(last), tok.level));
      }
      block.children = out;
    }
  });
}
