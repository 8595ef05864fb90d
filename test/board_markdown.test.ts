/**
 * Inert Markdown, as a property: for thousands of adversarial strings, every
 * rendition parses (with markdown-it, HTML and linkify on) into exactly the structure
 * it has for harmless text; no link, image, HTML or heading node comes from user
 * content; and every user field reads back exactly from its block.
 */
import t from 'tap';
import fc from 'fast-check';
import MarkdownIt from 'markdown-it';
import type { BoardMessage, GuestbookEntry } from '../actors/shared/board_types.js';
import { escapeInert, readInertBlock, unescapeInert } from '../src/board/markdown.js';
import { guestbookPageMarkdown, messageMarkdown, messagesPageMarkdown } from '../src/board/render_md.js';
import { boardFixture } from './board_helpers.js';

// The strictest reading: raw HTML and bare URLs are recognised, so they would show up as nodes.
const md = new MarkdownIt({ html: true, linkify: true });
type Token = ReturnType<typeof md.parse>[number];

const FRAGMENTS = [
  '`', '``', '```', '````', '`'.repeat(40), '~', '~~~', '~~~~', '~'.repeat(40), '```js', '~~~ ', '   ```', '\t```',
  '\n', '\r', '\r\n', '\n\n', '\u0000', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u2028', '\u2029', '\u0085', '\u000b', '\f',
  '<', '>', '&', '&amp;', '&#0;', '&#x3C;script&#x3E;', '<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '<!--', '-->', '<div>', '</pre>', '<?php', '<![CDATA[',
  '[a](http://evil.example)', '![i](http://evil.example/i.png)', '<http://evil.example>', '<mailto:a@b.c>', 'http://evil.example', 'https://evil.example/x?y=z', 'www.evil.example', 'a@b.example',
  '[ref]: http://evil.example', '[ref]', '[^1]: note', '# ', '## Heading', '###### h', 'Setext\n===', 'Setext\n---', '---', '***', '___',
  '- item', '* item', '+ item', '1. item', '1) item', '| a | b |', '|---|---|', '> quote', '    indented code', '\\', '\\`', '*', '_', '**bold**', '$$', '{{x}}',
  '␀', '␍', '␛', '␛␀', '😀', 'é', 'e\u0301', '\u202e', ' ', '  ', '\t', 'untrusted-body', '## Message m1', '# Parley message board: messages',
];

/** Strings biased toward Markdown metacharacters, fence runs, line breaks, NUL, zero-width, HTML and URLs. */
const adversarial = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 24 }).map((parts) => parts.join('')) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('`', '~'), fc.integer({ min: 3, max: 300 }), fc.constantFrom('', '\n', 'x\n', '\r\n')).map(([c, n, tail]) => tail + c.repeat(n) + tail) },
);
const optional = fc.option(adversarial, { nil: null });

function walk(tokens: Token[], visit: (tok: Token) => void): void {
  for (const tok of tokens) {
    visit(tok);
    if (tok.children) walk(tok.children, visit);
  }
}

/** The document's structure with the contents of untrusted blocks left out. */
function shape(tokens: Token[]): string[] {
  const out: string[] = [];
  walk(tokens, (tok) => out.push(`${tok.type}|${tok.tag}|${tok.level}|${tok.info}|${tok.info.startsWith('untrusted-') ? '' : tok.content}`));
  return out;
}

/** The values of the `untrusted-*` blocks, in document order, read back through the escape. */
function blocks(tokens: Token[]): Array<[string, string]> {
  return tokens.filter((tok) => tok.type === 'fence' && tok.info.startsWith('untrusted-')).map((tok) => [tok.info, readInertBlock(tok.content)]);
}

const FORBIDDEN = new Set(['link_open', 'image', 'html_block', 'html_inline', 'table_open', 'code_block']);
const OUR_HEADINGS = /^(Parley message board: (messages|guestbook|message m\d+)|Message m\d+|Guestbook entry g\d+|How to read this document)$/;

/** Asserts what no user text may produce, and returns nothing if all is well. */
function problems(tokens: Token[]): string[] {
  const found: string[] = [];
  tokens.forEach((tok, i) => {
    if (tok.type === 'heading_open' && !OUR_HEADINGS.test(tokens[i + 1].content)) found.push(`foreign heading ${JSON.stringify(tokens[i + 1].content)}`);
  });
  walk(tokens, (tok) => {
    if (FORBIDDEN.has(tok.type)) found.push(`${tok.type} node`);
    if (tok.type === 'fence' && !tok.info.startsWith('untrusted-')) found.push(`foreign fence ${JSON.stringify(tok.info)}`);
  });
  return found;
}

const message = (id: number, body: string, author: string | null, replyTo: string | null = null): BoardMessage => ({ id: `m${id}`, createdAt: 1_800_000_000, author, body, replyTo, threadId: replyTo ?? `m${id}` });
const entry = (id: number, message: string, agent: string | null, model: string | null, sourceUrl: string | null): GuestbookEntry => ({ id: `g${id}`, createdAt: 1_800_000_000, message, agent, visitContext: 'agent', sourceUrl, model });
const harmless = (s: string | null): string | null => (s === null ? null : 'x');

/** Renders with the given record, and with the same record made harmless: the two must share one structure. */
function check(render: () => string, renderHarmless: () => string, expected: Array<[string, string]>): void {
  const tokens = md.parse(render(), {});
  const found = problems(tokens);
  if (found.length > 0) throw new Error(found.join('; '));
  const got = blocks(tokens);
  if (JSON.stringify(got) !== JSON.stringify(expected)) throw new Error(`round trip: ${JSON.stringify(got)} !== ${JSON.stringify(expected)}`);
  const a = shape(tokens);
  const b = shape(md.parse(renderHarmless(), {}));
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('user text changed the document structure');
}

t.test('escape for NUL and CR round-trips every string', async (t) => {
  fc.assert(fc.property(adversarial, (s) => unescapeInert(escapeInert(s)) === s && !/[\u0000\r]/.test(escapeInert(s))), { numRuns: 3000 });
  t.pass('3000 strings');
});

t.test('message renditions stay inert and round-trip (property)', async (t) => {
  fc.assert(
    fc.property(adversarial, optional, adversarial, optional, (body1, author1, body2, author2) => {
      const m1 = message(1, body1, author1);
      const m2 = message(2, body2, author2, 'm1');
      const page = { items: [m2, m1], limit: 2, nextCursor: 'djE6bToy' };
      const plain = { items: [message(2, 'x', harmless(author2), 'm1'), message(1, 'x', harmless(author1))], limit: 2, nextCursor: 'djE6bToy' };
      const expected = (m: BoardMessage): Array<[string, string]> => [...(m.author === null ? [] : [['untrusted-author', m.author] as [string, string]]), ['untrusted-body', m.body]];
      check(() => messagesPageMarkdown(page), () => messagesPageMarkdown(plain), [...expected(m2), ...expected(m1)]);
      check(() => messageMarkdown(m1), () => messageMarkdown(plain.items[1]), expected(m1));
    }),
    { numRuns: 2500 },
  );
  t.pass('2500 pages and single messages');
});

t.test('guestbook renditions stay inert and round-trip, self-declared fields included (property)', async (t) => {
  fc.assert(
    fc.property(adversarial, optional, optional, optional, (text, agent, model, sourceUrl) => {
      const e = entry(1, text, agent, model, sourceUrl);
      const plain = entry(1, 'x', harmless(agent), harmless(model), harmless(sourceUrl));
      const expected: Array<[string, string]> = [];
      if (agent !== null) expected.push(['untrusted-agent', agent]);
      if (model !== null) expected.push(['untrusted-model', model]);
      if (sourceUrl !== null) expected.push(['untrusted-source-url', sourceUrl]);
      expected.push(['untrusted-message', text]);
      check(() => guestbookPageMarkdown({ items: [e], limit: 50, nextCursor: null }), () => guestbookPageMarkdown({ items: [plain], limit: 50, nextCursor: null }), expected);
    }),
    { numRuns: 2500 },
  );
  t.pass('2500 guestbook pages');
});

t.test('named hostile inputs, including oversized ones', async (t) => {
  const cases: Record<string, string> = {
    'fence break-out with a longer run': '```\n# pwned\n````````````\n[x](http://evil.example)',
    'tilde break-out': '~~~\n~~~~~~~~~~~~~~~~\n<script>x</script>',
    'indented closing fence': 'a\n   ```\n   ~~~\n# h',
    'CRLF smuggling': 'line\r\n```\r\n# h\r\n',
    'lone CR': 'a\r# heading\r```',
    'NUL': 'a\u0000```\u0000# h',
    'zero-width fence': '\u200b```\n# h\n```\u200b',
    'HTML': '<img src=x onerror=alert(1)><script>alert(1)</script><!-- -->',
    'image and autolinks': '![x](http://e/i.png) <http://e> http://e www.e.example',
    'reference definition': '[a]: http://evil.example\n[a]',
    'control pictures': '␀␍␛ and ␛␀',
    'oversized backticks': '`'.repeat(8192),
    'oversized tildes and backticks': ('~'.repeat(100) + '`'.repeat(100) + '\n').repeat(40),
    'oversized mixed': ('```\n# h\n<b>\r\n\u0000').repeat(500),
  };
  for (const [name, body] of Object.entries(cases)) {
    t.doesNotThrow(() => check(() => messageMarkdown(message(1, body, body.slice(0, 80))), () => messageMarkdown(message(1, 'x', 'x')), [['untrusted-author', body.slice(0, 80)], ['untrusted-body', body]]), name);
  }
});

t.test('through HTTP: posted text comes back inert and exact', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const short = adversarial.filter((s) => Buffer.byteLength(s) <= 1024 && Array.from(s).length <= 80);
  await fc.assert(
    fc.asyncProperty(short, optional.filter((s) => s === null || (Array.from(s).length <= 80)), async (body, author) => {
      const created = await f.call('POST', '/api/v1/messages', { json: author === null ? { body } : { body, author } });
      if (created.status !== 201) throw new Error(created.body);
      const res = await f.call('GET', `/messages/${created.json.id}.md`);
      const tokens = md.parse(res.body, {});
      const found = problems(tokens);
      if (found.length > 0) throw new Error(found.join('; '));
      const expected: Array<[string, string]> = author === null ? [['untrusted-body', body]] : [['untrusted-author', author], ['untrusted-body', body]];
      if (JSON.stringify(blocks(tokens)) !== JSON.stringify(expected)) throw new Error('round trip failed');
      const gb = await f.call('POST', '/api/v1/guestbook', { json: { message: body, ...(author === null ? {} : { agent: author, model: author }) } });
      if (gb.status !== 201) throw new Error(gb.body);
    }),
    { numRuns: 400 },
  );
  const page = await f.call('GET', '/guestbook.md?limit=100');
  t.same(problems(md.parse(page.body, {})), []);
  t.same(f.logs, []);
});
