/**
 * The Markdown renderer's behaviour (actors/engines/markdown/): mentions and the flags they
 * set, channel links, fences, emoji, times, links, escaping, and alert words.
 * Zulip's own fixture cases are in markdown_fixtures.test.ts.
 */
import t from 'tap';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { escapeHtml, hasAlertWord, isOneParagraph, isPlainLine, prepareLines, preprocessLines, renderFull, renderMarkdown, type MarkdownEnv, type RenderState } from '../actors/engines/markdown/index.js';
import { plainParagraph } from '../actors/engines/markdown/fast.js';
import { compileLinkifiers } from '../actors/rules/linkifiers.js';
import { fixturePath } from './paths.js';

const users = [
  { user_id: 7, full_name: 'Alice Anders' },
  { user_id: 8, full_name: 'Bob <b>Builder</b>' },
];
const env: MarkdownEnv = {
  user: (name, id) => (id !== null ? users.find((u) => u.user_id === id) : users.find((u) => u.full_name.toLowerCase() === name.toLowerCase())),
  group: (name) => (name === 'support' ? { id: 3, name: 'support', members: [7, 9] } : undefined),
  channel: (name) => (name.toLowerCase() === 'design team' ? { stream_id: 12, name: 'design team' } : name === 'x<y' ? { stream_id: 13, name: 'x<y' } : undefined),
};
const render = (s: string) => renderMarkdown(s, env);
const html = (s: string) => render(s).html;

t.test('user mentions: HTML and who is mentioned', async (t) => {
  const r = render('hi @**Alice Anders**');
  t.equal(r.html, '<p>hi <span class="user-mention" data-user-id="7">@Alice Anders</span></p>');
  t.same(r.mentioned, [7]);
  t.equal(r.wildcard, null);
  t.equal(html('@**alice anders**'), '<p><span class="user-mention" data-user-id="7">@Alice Anders</span></p>', 'names match case-insensitively, shown as the user has it');
  const byId = render('@**Alice Anders|7** and @**|7**');
  t.equal(byId.html, '<p><span class="user-mention" data-user-id="7">@Alice Anders</span> and <span class="user-mention" data-user-id="7">@Alice Anders</span></p>');
  t.same(byId.mentioned, [7], 'a user mentioned twice is listed once');
  t.equal(html('@**Bob|7**'), '<p>@<strong>Bob|7</strong></p>', 'a name that is not the id\'s user is no mention');
});

t.test('silent mentions notify nobody', async (t) => {
  const r = render('@_**Alice Anders** @_**all** @_**topic**');
  t.equal(r.html, '<p><span class="user-mention silent" data-user-id="7">Alice Anders</span> <span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> <span class="topic-mention silent">topic</span></p>');
  t.same(r.mentioned, []);
  t.equal(r.wildcard, null);
});

t.test('wildcards', async (t) => {
  for (const w of ['all', 'everyone', 'stream', 'channel']) {
    const r = render(`@**${w}** look`);
    t.equal(r.html, `<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@${w}</span> look</p>`);
    t.equal(r.wildcard, 'stream', w);
  }
  const topic = render('@**topic** look');
  t.equal(topic.html, '<p><span class="topic-mention">@topic</span> look</p>');
  t.equal(topic.wildcard, 'topic');
  t.equal(render('@**topic** @**all**').wildcard, 'stream', 'a channel wildcard outranks a topic one');
});

t.test('unknown names stay text', async (t) => {
  const r = render('hi @**Nobody Here** and @*nogroup* and #**nowhere**');
  t.equal(r.html, '<p>hi @<strong>Nobody Here</strong> and @<em>nogroup</em> and #<strong>nowhere</strong></p>');
  t.same(r.mentioned, []);
  t.same(r.mentionedGroups, []);
  t.equal(html('mail@**Alice Anders**'), '<p>mail@<strong>Alice Anders</strong></p>', 'a mention must start after a space or punctuation');
});

t.test('group mentions notify the members unless silent', async (t) => {
  const r = render('ping @*support*');
  t.equal(r.html, '<p>ping <span class="user-group-mention" data-user-group-id="3">@support</span></p>');
  t.same(r.mentionedGroups, [3]);
  t.same(r.mentioned, [7, 9]);
  const silent = render('ping @_*support*');
  t.equal(silent.html, '<p>ping <span class="user-group-mention silent" data-user-group-id="3">support</span></p>');
  t.same(silent.mentionedGroups, []);
  t.same(silent.mentioned, []);
});

t.test('mentions in code are not mentions', async (t) => {
  const r = render('`@**Alice Anders**`\n```\n@**all**\n```');
  t.equal(r.html, '<p><code>@**Alice Anders**</code></p>\n<div class="codehilite"><pre><span></span><code>@**all**\n</code></pre></div>');
  t.same(r.mentioned, []);
  t.equal(r.wildcard, null);
});

t.test('channel, topic and message links', async (t) => {
  t.equal(html('see #**design team**'), '<p>see <a class="stream" data-stream-id="12" href="/#narrow/channel/12-design-team">#design team</a></p>');
  t.equal(html('#**design team>v1.0 (draft) ü**'), '<p><a class="stream-topic" data-stream-id="12" href="/#narrow/channel/12-design-team/topic/v1.2E0.20.28draft.29.20.C3.BC">#design team &gt; v1.0 (draft) ü</a></p>');
  t.equal(html('#**design team>lunch@42**'), '<p><a class="message-link" href="/#narrow/channel/12-design-team/topic/lunch/near/42">#design team &gt; lunch @ 💬</a></p>');
  t.equal(html('#**design team>**'), '<p><a class="stream-topic" data-stream-id="12" href="/#narrow/channel/12-design-team/topic/">#design team &gt; <em>general chat</em></a></p>');
  t.equal(html('#**x<y**'), '<p><a class="stream" data-stream-id="13" href="/#narrow/channel/13-x.3Cy">#x&lt;y</a></p>', 'names are escaped');
});

t.test('fences: code, quote, spoiler, math', async (t) => {
  t.equal(html('```python\nprint("<hi>")  \n```'),
    '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="nb">print</span><span class="p">(</span><span class="s2">"&lt;hi&gt;"</span><span class="p">)</span>\n</code></pre></div>',
    'highlighted (test/code_highlight.test.ts); quotes as lxml writes them in Zulip');
  t.equal(html('~~~ made-up\nx\n~~~'), '<div class="codehilite" data-code-language="made-up"><pre><span></span><code>x\n</code></pre></div>');
  t.equal(html('```\nunclosed'), '<div class="codehilite"><pre><span></span><code>unclosed\n</code></pre></div>', 'an unclosed fence runs to the end');
  t.equal(html('```quote\n**hi** @**Alice Anders**\n```'), '<blockquote>\n<p><strong>hi</strong> <span class="user-mention" data-user-id="7">@Alice Anders</span></p>\n</blockquote>');
  t.equal(html('```spoiler Plot *twist*\nhe was **dead**\n```'), '<div class="spoiler-block"><div class="spoiler-header">\n<p>Plot <em>twist</em></p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>he was <strong>dead</strong></p>\n</div></div>');
  t.match(html('```math\na < b\n```'), /^<p><span class="katex-display"><span class="katex"><span class="katex-mathml"><math xmlns="http:\/\/www.w3.org\/1998\/Math\/MathML" display="block">/, 'a math fence is typeset by KaTeX, in display mode');
  t.match(html('so $$x^2$$ ok'), /^<p>so <span class="katex"><span class="katex-mathml">.*<annotation encoding="application\/x-tex">x\^2<\/annotation>.*<\/span> ok<\/p>$/, 'inline TeX too');
  t.equal(html('```math\n\\error{a < b}\n```'), '<p><span class="tex-error">\\error{a &lt; b}</span></p>', 'what KaTeX refuses renders as Zulip renders it');
  t.equal(html('so $$\\error{x}$$ ok'), '<p>so <span class="tex-error">$$\\error{x}$$</span> ok</p>');
});

t.test('Zulip block rules', async (t) => {
  t.equal(html('# Title\n#Not a title'), '<h1>Title</h1>\n<p>#Not a title</p>');
  t.equal(html('Title\n==='), '<p>Title<br>\n===</p>', 'no setext headings');
  t.equal(html('text\n* one\n* two'), '<p>text</p>\n<ul>\n<li>one</li>\n<li>two</li>\n</ul>', 'a list may hang off a line of text');
  t.equal(html('1. a\n  2. b'), '<ol>\n<li>a<ol start="2">\n<li>b</li>\n</ol>\n</li>\n</ol>', 'lists nest by 2 spaces');
  t.equal(html('> quoted\n\nnot'), '<blockquote>\n<p>quoted</p>\n</blockquote>\n<p>not</p>');
  t.equal(html('a\nb'), '<p>a<br>\nb</p>', 'a newline is a line break');
  t.equal(html('a | b\n--|--\n1 | 2'), '<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>');
  t.equal(html('~~gone~~ _not_ __bold__ *em* **strong**'), '<p><del>gone</del> _not_ __bold__ <em>em</em> <strong>strong</strong></p>');
});

t.test('emoji', async (t) => {
  t.equal(html(':smile: :not_an_emoji:'), '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> :not_an_emoji:</p>', "Zulip's smile is 1f642");
  t.equal(html(':thumbs_up: :+1:'), '<p><span aria-label="thumbs up" class="emoji emoji-1f44d" role="img" title="thumbs up">:thumbs_up:</span> <span aria-label="+1" class="emoji emoji-1f44d" role="img" title="+1">:+1:</span></p>', 'an alias keeps its own name');
  t.equal(html('🤷‍♀️'), '<p><span aria-label="woman shrugging" class="emoji emoji-1f937-200d-2640" role="img" title="woman shrugging">:woman_shrugging:</span></p>', 'a literal emoji takes its canonical name');
  t.equal(html(':man-girl-girl: 🐦‍🔥'), '<p>:man-girl-girl: 🐦‍🔥</p>', 'family sequences and emoji newer than the table stay text');
  t.equal(html('a 🚀 b'), '<p>a <span aria-label="rocket" class="emoji emoji-1f680" role="img" title="rocket">:rocket:</span> b</p>');
  t.equal(html('`:smile:` ↔'), '<p><code>:smile:</code> ↔</p>', 'not in code; text-presentation symbols stay');
});

t.test('times', async (t) => {
  t.equal(html('at <time:2024-05-06T07:08:09+02:00>'), '<p>at <time datetime="2024-05-06T05:08:09Z">2024-05-06T07:08:09+02:00</time></p>');
  t.equal(html('<time:1496701800>'), '<p><time datetime="2017-06-05T22:30:00Z">1496701800</time></p>');
  t.equal(html('<time:Jun 5th 2017, 10:30PM>'), '<p><time datetime="2017-06-05T22:30:00Z">Jun 5th 2017, 10:30PM</time></p>');
  t.equal(html('<time:31 Dec 2017 5:30 am IST>'), '<p><time datetime="2017-12-31T00:00:00Z">31 Dec 2017 5:30 am IST</time></p>');
  t.equal(html('<time:soon>'), '<p><span class="timestamp-error">Invalid time format: soon</span></p>');
  t.equal(html('<time:<b>>'), '<p><span class="timestamp-error">Invalid time format: &lt;b</span>&gt;</p>');
});

t.test('links', async (t) => {
  t.equal(html('see https://example.com/a_(b). ok'), '<p>see <a href="https://example.com/a_(b)">https://example.com/a_(b)</a>. ok</p>');
  t.equal(html('[docs](example.com/x?a=1&b=2)'), '<p><a href="http://example.com/x?a=1&amp;b=2">docs</a></p>');
  t.equal(html('`http://example.com`'), '<p><code>http://example.com</code></p>', 'no links in code');
  t.equal(html('mail a@b.com'), '<p>mail <a href="mailto:a@b.com">a@b.com</a></p>');
});

t.test('escaping and unsafe input', async (t) => {
  t.equal(html('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  t.equal(html('<img src=x onerror=alert(1)>'), '<p>&lt;img src=x onerror=alert(1)&gt;</p>');
  t.equal(html('[x](javascript:alert(1))'), '<p>[x](javascript:alert(1))</p>', 'javascript: is not linked');
  t.equal(html('[x](JaVaScRiPt:alert(1))'), '<p>[x](JaVaScRiPt:alert(1))</p>');
  t.equal(html('[x](data:text/html,<script>)'), '<p>[x](data:text/html,&lt;script&gt;)</p>');
  t.equal(html('javascript://example.com/%0aalert(1)'), '<p>javascript://example.com/%0aalert(1)</p>');
  t.equal(html('[x](https://e.com/"onmouseover="alert(1))'), '<p><a href="https://e.com/&quot;onmouseover=&quot;alert(1)">x</a></p>', 'quotes cannot leave the attribute');
  t.equal(html('@**Bob <b>Builder</b>**'), '<p><span class="user-mention" data-user-id="8">@Bob &lt;b&gt;Builder&lt;/b&gt;</span></p>');
  t.equal(html('```spoiler <img src=x onerror=alert(1)>\n<b>hi</b>\n```'), '<div class="spoiler-block"><div class="spoiler-header">\n<p>&lt;img src=x onerror=alert(1)&gt;</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>&lt;b&gt;hi&lt;/b&gt;</p>\n</div></div>');
  t.equal(html('```"><script>\nx\n```'), '<p>```"&gt;&lt;script&gt;<br>\nx</p>', 'a fence header cannot open a tag');
  t.notMatch(html('\u0002' + '0\u0003 \u00020\u0003'), /\u0002/, 'placeholder characters typed by a user are not placeholders');
  t.equal(html('&lt;b&gt; & &amp;'), '<p>&lt;b&gt; &amp; &amp;</p>', 'entities pass as written; a bare & is escaped');
  t.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});

t.test('hasAlertWord', async (t) => {
  t.ok(hasAlertWord('the Deploy failed', ['deploy']), 'case-insensitive');
  t.ok(hasAlertWord('deploy.', ['deploy']));
  t.ok(hasAlertWord('(deploy)', ['deploy']));
  t.ok(hasAlertWord('we ship it', ['Ship it']), 'phrases');
  t.notOk(hasAlertWord('redeploying now', ['deploy']), 'whole words only');
  t.notOk(hasAlertWord('deploys', ['deploy']));
  t.notOk(hasAlertWord('run `deploy` now', ['deploy']), 'not in a code span');
  t.notOk(hasAlertWord('```\ndeploy\n```', ['deploy']), 'not in a code block');
  t.notOk(hasAlertWord('~~~sh\ndeploy\n~~~\nok', ['deploy']), 'not in a ~~~ code block');
  t.ok(hasAlertWord('```quote\ndeploy\n```', ['deploy']), 'quotes count');
  t.notOk(hasAlertWord('anything', []));
});

t.test('a plain line skips the line preprocessors only where they would change nothing', (t) => {
  // Lines built from the characters the preprocessors look at: list markers, fences, quotes, digits, blanks.
  const piece = fc.constantFrom(' ', '  ', '*', '**', '-', '+', '1.', '2)', '>', '```', '~~~', '`', '_', '#', 'a', 'word', '9', '\t', '$$', 'quote', 'spoiler');
  const line = fc.array(piece, { maxLength: 8 }).map((p) => p.join(''));
  let plain = 0;
  fc.assert(
    fc.property(line, (s) => {
      if (!isPlainLine(s)) return true;
      plain++;
      const state = (): RenderState => ({ lookup: env, out: { html: '', mentioned: [], wildcard: null, mentionedGroups: [] }, stash: [], stashBlock: [] });
      return prepareLines(s, state()) === s && preprocessLines([s], state()).join('\n') === s;
    }),
    { numRuns: 5000, seed: 12 },
  );
  t.ok(plain > 500, `the property met plain lines (${plain})`);
  t.notOk(isPlainLine('- item'), 'a list item is not plain');
  t.notOk(isPlainLine('  ```python'), 'nor a fence');
  t.notOk(isPlainLine('a\nb'), 'nor two lines');
  t.notOk(isPlainLine('   '), 'nor a blank one');
  t.ok(isPlainLine('A benchmark message of a typical length: with **some** markdown.'), 'a sentence is');
  t.ok(isPlainLine('`npm test` fails'), 'and so is a line that starts with code');
  t.end();
});

t.test('lines none of which starts as a list item, quote or fence could are left alone by the line preprocessors', (t) => {
  const piece = fc.constantFrom(' ', '  ', '    ', '*', '**', '-', '+', '1.', '2)', '>', '```', '~~~', '`', '~', '_', '#', 'a', 'word', '9', '$$', 'quote', 'spoiler', ':', '|');
  const line = fc.oneof(fc.constant(''), fc.array(piece, { minLength: 1, maxLength: 6 }).map((p) => p.join('')).filter((l) => l.trim() !== ''));
  const startsBlock = /^[ ]*[*+\->`~\d]/;
  const state = (): RenderState => ({ lookup: env, out: { html: '', mentioned: [], wildcard: null, mentionedGroups: [] }, stash: [], stashBlock: [] });
  let met = 0;
  fc.assert(
    fc.property(fc.array(line, { minLength: 2, maxLength: 6 }), (lines) => {
      // prepareLines skips the preprocessors for some messages: it must agree with running them, always.
      if (prepareLines(lines.join('\n'), state()) !== preprocessLines([...lines], state()).join('\n')) return false;
      if (lines.some((l) => startsBlock.test(l))) return true;
      met++;
      return JSON.stringify(preprocessLines([...lines], state())) === JSON.stringify(lines);
    }),
    { numRuns: 20000, seed: 16 },
  );
  t.ok(met > 1000, `the property met such messages (${met})`);
  t.not(preprocessLines(['> a', 'b'], state()).join('\n'), '> a\nb', 'where a line is a quote, they do change the lines after it');
  t.end();
});

/** The test env, plus what an organization may add: its URL, a custom emoji and linkifiers (one anchored, one bare). */
const orgEnv: MarkdownEnv = {
  ...env,
  realmUrl: 'http://zulip.testserver',
  realmEmoji: (name) => (name === 'parrot' ? { source_url: '/user_avatars/2/emoji/parrot.gif' } : undefined),
  linkifiers: compileLinkifiers([
    { pattern: '#(?P<id>[0-9]+)', url_template: 'https://trac.example.com/ticket/{id}' },
    { pattern: 'ab', url_template: 'https://ab.example.com/' },
    { pattern: '^zz$', url_template: 'https://zz.example.com/' },
  ]),
};

/**
 * Which short path `renderMarkdown` took for `s` (the plain paragraph, fast.ts, or
 * markdown-it without its block parse), and whether the result (HTML and mentions) is
 * the full renderer's.
 */
function agrees(s: string, e: MarkdownEnv): { fast: boolean; paragraph: boolean; same: boolean } {
  const full = renderFull(s, e);
  const fast = isPlainLine(s) ? plainParagraph(s, e) : null;
  const paragraph = fast === null && isPlainLine(s) && isOneParagraph(s);
  return { fast: fast !== null, paragraph, same: (fast === null || fast === full.html) && JSON.stringify(renderMarkdown(s, e)) === JSON.stringify(full) };
}

t.test('the short paths render exactly as the full renderer does', (t) => {
  // Everything the inline rules, the block rules and the link, emoji and linkifier passes look at, and text around it.
  const construct = fc.constantFrom(
    ' ', '  ', 'a', 'word', 'The', '*', '**', '***', ' *', '* ', '_', '__', '~', '~~', '`', '``', ':', ':smile:', ':thinking:', ':nope:', ':parrot:', ':zulip:',
    '@', '@**Alice Anders**', '@**all**', '@*support*', '@_**Alice Anders|7**', '#', '#**design team**', '#**design team>t**', '#123', '$', '$$', '$$x$$',
    '<', '>', '<time:2020-01-01>', '&', '&amp;', '&#39;', '&x', '[', ']', '(', ')', '[a](http://x.com)', 'http://', 'https://example.com/a', 'example.com',
    'a.b', 'e.g.', 'x@y.io', 'bitcoin:1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa', '0', '1', '9.', '1)', '-', '+', '=', '|', '\\', '!', '?', '.', ',', "'", '"',
    '%', '^', '{', '}', '/', '\t', '\n', '\r', '\u0000', '\u000b', '\u00a0', 'é', '中文', '👍', '🇫🇷', '\u200d', '\ufe0f', '1\u20e3', '\u2194', '\u00a9',
    '\u0002', 'ab', 'zz', '```', '> ', '    ',
  );
  // Mostly what the fast path takes, so that it is met often, with the constructs that end it at its edges.
  const easy = fc.constantFrom(' ', 'a', 'word', 'The', '*', '**', '***', ' *', '* ', ':', ':nope:', '#', '#1', '$', '<', '>', '&', '&x', ']', '(', ')', '0', '-', '_', '!', '?', '.', ',', "'", '"', '^', '|', '\\', 'é', '中', 'ab', 'zz', '\u00a0', '~', '%', '+', '=');
  // What a block rule looks at first: the line's start.
  const start = fc.constantFrom('', ' ', '    ', '>', '> ', '#', '# ', '## ', '_', '___', '_ _ _', '***', '---', '=', '|', '| a |', '\u0000', '\u000b', '\u00a0', '\u2028', ':', '`', '~', '1', '- ');
  let fast = 0;
  let paragraph = 0;
  for (const [pieces, runs] of [[construct, 4000], [easy, 4000]] as const) {
    const line = fc.tuple(start, fc.array(pieces, { minLength: 1, maxLength: 14 })).map(([first, rest]) => first + rest.join(''));
    fc.assert(
      fc.property(line, (s) => {
        for (const e of [env, orgEnv]) {
          const r = agrees(s, e);
          if (r.fast) fast++;
          if (r.paragraph) paragraph++;
          if (!r.same) return false;
        }
        return true;
      }),
      { numRuns: runs, seed: 16 },
    );
  }
  t.ok(fast > 1000, `the property met lines the fast path took (${fast})`);
  t.ok(paragraph > 1000, `and lines rendered without the block parse (${paragraph})`);
  t.end();
});

t.test('the plain-paragraph path takes plain text with emphasis, and nothing else', (t) => {
  t.equal(plainParagraph('hi', env), '<p>hi</p>');
  t.equal(
    plainParagraph('A benchmark message of a typical length: a sentence or two, with **some** markdown.', orgEnv),
    '<p>A benchmark message of a typical length: a sentence or two, with <strong>some</strong> markdown.</p>',
  );
  t.equal(plainParagraph('***a*** **b *c* d** *e f* *g * h* 2 * 3 < 4 & "q" #1 :x', env), '<p><strong><em>a</em></strong> <strong>b <em>c</em> d</strong> <em>e f</em> *g * h* 2 * 3 &lt; 4 &amp; "q" #1 :x</p>');
  t.equal(plainParagraph('café ok  ', env), '<p>café ok  </p>', 'non-ASCII letters and trailing spaces stay');
  for (const s of ['`x`', 'a@b', 'ok :smile:', 'see http://x', 'see e.g. this', '#**design team**', 'a &amp; b', '$$x$$', '<time:2020-01-01>', '[a](b)', '~~a~~', '> q', '# h', '_a', ' a', 'a\u0000', 'ok 👍', 'a\u200db']) {
    t.equal(plainParagraph(s, env), null, `declines ${JSON.stringify(s)}`);
  }
  t.equal(plainParagraph('see #12', orgEnv), null, 'declines a line a linkifier matches');
  t.equal(plainParagraph('see #12', env), '<p>see #12</p>', 'which without linkifiers is plain');
  t.equal(plainParagraph('zz', orgEnv), null, "a linkifier anchored at the text's edges matches a whole line");
  t.equal(plainParagraph('**zz**', orgEnv), '<p><strong>zz</strong></p>', 'but not text inside emphasis (its edges are not boundaries), as the linkifier pass');
  t.end();
});

t.test('every case of Zulip\'s fixture renders the same by the plain-paragraph path', (t) => {
  const fixture = JSON.parse(readFileSync(fixturePath('zulip_markdown_test_cases.json'), 'utf8')) as {
    regular_tests: { input: string }[];
    linkify_tests: [string, string, string][];
  };
  const inputs = [...fixture.regular_tests.map((c) => c.input), ...fixture.linkify_tests.map(([input]) => input)];
  let fast = 0;
  for (const s of inputs) {
    for (const e of [env, orgEnv]) {
      const r = agrees(s, e);
      if (r.fast) fast++;
      if (!r.same) t.fail(`differs: ${JSON.stringify(s)}`);
    }
  }
  t.ok(fast > 0, `some fixture cases took the fast path (${fast} renders)`);
  t.pass(`${inputs.length} fixture inputs compared`);
  t.end();
});
