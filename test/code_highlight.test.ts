/**
 * Code blocks highlighted as Zulip highlights them (actors/engines/markdown/highlight/):
 * Pygments' token spans for each language Parley lexes, checked against the HTML
 * Pygments itself writes (fixtures/pygments_highlight_cases.json, recorded by the
 * script beside it); the language names and aliases, the organization's default
 * language, the shebang rule, escaping inside tokens, and the cost of long blocks.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { renderMarkdown, type MarkdownEnv } from '../actors/engines/markdown/index.js';
import fc from 'fast-check';
import { highlight } from '../actors/engines/markdown/highlight/index.js';
import { lex, type Grammar } from '../actors/engines/markdown/highlight/lexer.js';
import { firstChars } from '../actors/engines/markdown/highlight/first_chars.js';
import { PYTHON } from '../actors/engines/markdown/highlight/python.js';
import { JAVASCRIPT, TYPESCRIPT } from '../actors/engines/markdown/highlight/javascript.js';
import { BASH } from '../actors/engines/markdown/highlight/shell.js';
import { TEX } from '../actors/engines/markdown/highlight/tex.js';
import { fixturePath } from './paths.js';

const recorded = JSON.parse(readFileSync(fixturePath('pygments_highlight_cases.json'), 'utf8')) as {
  cases: { lang: string; code: string; html: string }[];
};

const env: MarkdownEnv = { user: () => undefined, group: () => undefined, channel: () => undefined };
const html = (s: string, e: MarkdownEnv = env) => renderMarkdown(s, e).html;

t.test("each language gives Pygments' HTML for the recorded samples", async (t) => {
  const langs = new Set<string>();
  for (const c of recorded.cases) {
    langs.add(c.lang);
    t.equal(highlight(c.lang, c.code), c.html, `${c.lang}: ${JSON.stringify(c.code.slice(0, 40))}`);
  }
  t.same([...langs].sort(), ['bash', 'javascript', 'json', 'python', 'tex', 'typescript']);
});

t.test('token classes of each language', async (t) => {
  t.equal(highlight('python', 'def f(self): return len(x)  # c'),
    '<div class="codehilite"><pre><span></span><code><span class="k">def</span> <span class="nf">f</span><span class="p">(</span><span class="bp">self</span><span class="p">):</span> '
    + '<span class="k">return</span> <span class="nb">len</span><span class="p">(</span><span class="n">x</span><span class="p">)</span>  <span class="c1"># c</span>\n</code></pre></div>');
  t.match(highlight('js', 'const s = "a";'), '<span class="kd">const</span> <span class="nx">s</span> <span class="o">=</span> <span class="s2">&quot;a&quot;</span><span class="p">;</span>');
  t.match(highlight('ts', 'let n: number = 1;'), '<span class="nx">n</span><span class="o">:</span> <span class="kt">number</span>');
  t.match(highlight('json', '{"k": "v", "n": 1.5}'), '<span class="nt">&quot;k&quot;</span><span class="p">:</span> <span class="s2">&quot;v&quot;</span>');
  t.match(highlight('sh', 'echo $HOME'), '<span class="nb">echo</span> <span class="nv">$HOME</span>');
  t.match(highlight('latex', '$x^2$'), '<span class="s">$</span><span class="nb">x^</span><span class="m">2</span><span class="s">$</span>');
});

t.test('a language Parley does not lex, or nobody knows, is plain escaped text', async (t) => {
  t.equal(html('```java\nint x = 1 < 2;\n```'), '<div class="codehilite" data-code-language="Java"><pre><span></span><code>int x = 1 &lt; 2;\n</code></pre></div>');
  t.equal(html('```inventedlanguage\nx\n```'), '<div class="codehilite" data-code-language="inventedlanguage"><pre><span></span><code>x\n</code></pre></div>');
});

t.test("aliases name Pygments' lexer: data-code-language is its display name", async (t) => {
  const cases: [string, string][] = [['py', 'Python'], ['python3', 'Python'], ['py2', 'Python 2.x'], ['js', 'JavaScript'], ['ts', 'TypeScript'],
    ['json', 'JSON'], ['sh', 'Bash'], ['zsh', 'Bash'], ['shell', 'Bash'], ['latex', 'TeX'], ['TeX', 'TeX'], ['r', 'S'], ['yml', 'yml']];
  for (const [alias, name] of cases) t.match(html('```' + alias + '\nx\n```'), `data-code-language="${name}"`, alias);
  t.equal(html('```py\nx = 1\n```'), html('```python\nx = 1\n```'), 'an alias lexes as its language');
  t.equal(html('~~~ {.js}\nx\n~~~'), html('```js\nx\n```'), 'the {.lang} form');
});

t.test("the organization's default code block language applies to fences without one", async (t) => {
  const withDefault: MarkdownEnv = { ...env, defaultCodeBlockLanguage: 'Python' };
  t.equal(html('```\nx = 1\n```', withDefault),
    '<div class="codehilite" data-code-language="Python"><pre><span></span><code><span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>\n</code></pre></div>');
  t.match(html('```js\nx\n```', withDefault), 'data-code-language="JavaScript"', 'a named language wins');
  t.match(html('~~~quote\n```\nx\n```\n~~~', withDefault), 'data-code-language="Python"', 'fences in a quote take the default');
  t.match(html('~~~spoiler H\n```\nx\n```\n~~~', withDefault), /codehilite"><pre>/, 'fences in a spoiler do not (as in Zulip)');
  t.notMatch(html('    x = 1', withDefault), 'data-code-language', 'an indented code block is not a fence');
  t.equal(html('```\nx\n```', { ...env, defaultCodeBlockLanguage: '' }), '<div class="codehilite"><pre><span></span><code>x\n</code></pre></div>', 'empty: none');
});

t.test('shebang: a block without a language is lexed by the language of its first line, which stays', async (t) => {
  const body = '<span class="nb">print</span><span class="p">(</span><span class="mi">1</span><span class="p">)</span>\n</code></pre></div>';
  t.equal(html('```\n#!/usr/bin/env python\nprint(1)\n```'), `<div class="codehilite"><pre><span></span><code><span class="ch">#!/usr/bin/env python</span>\n${body}`);
  t.equal(html('```\n#!python\nprint(1)\n```'), `<div class="codehilite"><pre><span></span><code><span class="ch">#!python</span>\n${body}`);
  t.equal(html('```\n:::python\nprint(1)\n```'), `<div class="codehilite"><pre><span></span><code><span class="p">:::</span><span class="n">python</span>\n${body}`);
  t.match(html('```\n#!/bin/bash\necho hi\n```'), '<span class="ch">#!/bin/bash</span>\n<span class="nb">echo</span> hi');
  t.equal(html('```\n#!/bin/unknown\nx\n```'), '<div class="codehilite"><pre><span></span><code>#!/bin/unknown\nx\n</code></pre></div>');
  t.match(html('```text\n#!python\nprint(1)\n```'), '<code>#!python\nprint(1)\n</code>', 'a named language wins');
  t.equal(html('    #!python\n    print(1)'), `<div class="codehilite"><pre><span></span><code>${body}`, 'an indented block drops a header without a path');
  t.equal(html('    :::python\n    print(1)'), `<div class="codehilite"><pre><span></span><code>${body}`);
  t.match(html('    #!/usr/bin/python\n    print(1)'), '<span class="ch">#!/usr/bin/python</span>\n<span class="nb">print</span>', 'and keeps one with a path');
});

t.test('escaping inside tokens', async (t) => {
  t.match(html('```\n#!python\nx = "<a>" & \'b\'\n```'), '<span class="s2">&quot;&lt;a&gt;&quot;</span> <span class="o">&amp;</span> <span class="s1">&#39;b&#39;</span>',
    'without a language, as Pygments escapes');
  t.match(html('```python\nx = "<a>" & \'b\'\n```'), '<span class="s2">"&lt;a&gt;"</span> <span class="o">&amp;</span> <span class="s1">\'b\'</span>',
    'with a language, quotes as lxml writes them in Zulip');
  t.match(html('```\n"q" & \'s\'\n```'), '<code>&quot;q&quot; &amp; &#39;s&#39;\n</code>', 'plain text without a language');
  t.match(html('```bash\necho "a<b"\n```'), '<span class="s2">"a&lt;b"</span>');
});

t.test('a span never crosses a line end', async (t) => {
  t.equal(highlight('python', 's = """a\nb"""'),
    '<div class="codehilite"><pre><span></span><code><span class="n">s</span> <span class="o">=</span> <span class="s2">&quot;&quot;&quot;a</span>\n<span class="s2">b&quot;&quot;&quot;</span>\n</code></pre></div>');
});

t.test('first characters of a regex source', async (t) => {
  const chars = (source: string) => {
    const f = firstChars(source);
    return f && String.fromCharCode(...[...f].sort((a, b) => a - b));
  };
  t.equal(chars('(def)((?:\\s|\\\\\\s)+)'), 'd');
  t.equal(chars("([uU]?)(''')"), "'Uu");
  t.equal(chars('(?<!\\.)(?:self|cls)\\b'), 'cs');
  t.equal(chars('\\$\\{#?'), '$');
  t.equal(chars('[^]'), String.fromCharCode(...Array.from({ length: 128 }, (_, i) => i)));
  t.equal(chars('(?:)'), null, 'an empty match: any position');
  t.equal(chars('^(?=\\s|/)'), null, 'a lookahead alone: any position');
  t.equal(chars("<<-?\\s*'?(?<h>\\w+)[^]+?\\k<h>"), '<');
});

t.test('trying only the rules that can start with the character gives the same tokens as trying all', async (t) => {
  const grammars: Record<string, Grammar> = { PYTHON, JAVASCRIPT, TYPESCRIPT, BASH, TEX };
  const pieces = [...'ab_1 .,:;()[]{}<>=+-*/%&|^~!?@#$`\'"\\\nfrdefxé0e9', 'def ', 'class ', 'import ', 'from ', '"""', "'''", 'self', '${', '$((', '<<EOF\n', '\\frac', '//', '/*', '*/'];
  for (const [name, grammar] of Object.entries(grammars)) {
    const mismatches: string[] = [];
    fc.assert(fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 60 }), (parts) => {
      const text = parts.join('');
      const tokens = (dispatch: boolean) => {
        const out: string[] = [];
        lex(text, grammar, (c, v) => out.push(c, v), dispatch);
        return out.join('\u0000');
      };
      if (tokens(true) !== tokens(false)) mismatches.push(text);
    }), { numRuns: 300 });
    t.same(mismatches, [], name);
  }
});

t.test('long blocks cost linear time: no pathological input holds the event loop', async (t) => {
  // A quadratic scan of 10,000 characters takes seconds; linear lexing, a few milliseconds.
  const n = 10_000;
  const inputs: Record<string, string> = {
    'python quotes': '"\\'.repeat(n / 2),
    'python names': 'a.b('.repeat(n / 4),
    'js unclosed strings': '"\\\''.repeat(n / 3),
    'js regex-like': '(/['.repeat(n / 3),
    'js template': '`${'.repeat(n / 3),
    'json unclosed': '{"a\\'.repeat(n / 4),
    'bash heredocs': Array.from({ length: n / 6 }, (_, i) => `<<q${i}x `).join(''),
    'python escapes and fields': '"\\N{"{a['.repeat(n / 8),
    'js block comments': '/*'.repeat(n / 2),
    'bash quotes': '"$\''.repeat(n / 3),
    'tex': '\\a[$'.repeat(n / 4),
  };
  const langs: Record<string, string> = { python: 'python', js: 'js', json: 'json', bash: 'bash', tex: 'tex' };
  for (const [name, code] of Object.entries(inputs)) {
    const lang = langs[name.split(' ')[0]];
    // The best of up to three runs: a busy machine can take a run's core away for longer than
    // the whole limit, where a quadratic scan would take seconds on every run.
    let ms = Infinity;
    for (let run = 0; run < 3 && ms >= 100; run++) {
      const started = performance.now();
      highlight(lang, code.slice(0, n));
      ms = Math.min(ms, performance.now() - started);
    }
    t.ok(ms < 100, `${name}: ${ms.toFixed(1)} ms`);
  }
});
