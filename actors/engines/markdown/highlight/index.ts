/**
 * Code blocks as Zulip's `codehilite` writes them (`zerver/lib/markdown/fenced_code.py`,
 * Python-Markdown's `CodeHilite`, Pygments' `HtmlFormatter`):
 *
 * - The language names a Pygments lexer by alias (`py`, `js`, `latex`…). The lexers
 *   here cover Python, JavaScript, TypeScript, JSON, Bash and TeX; a language Pygments
 *   knows and Parley does not lex, or one neither knows, is plain escaped text.
 * - `data-code-language` is the lexer's display name (`py2` is "Python 2.x"), or
 *   the language as written when Pygments has no lexer by that name; a block
 *   without a language has none.
 * - A block without a language whose first line is a shebang (`#!/usr/bin/python`,
 *   `#!python`) or `:::python` is lexed by that language's lexer; Zulip keeps the line.
 * - Pygments escapes `& < > " '`; a block with a language goes through lxml in
 *   Zulip, which writes quotes back as they are.
 */
import { BASH } from './shell.js';
import { JAVASCRIPT, TYPESCRIPT } from './javascript.js';
import { lexJson } from './json.js';
import { escapeCode, formatTokens, lex, type Grammar, type Sink } from './lexer.js';
import { PYTHON } from './python.js';
import { TEX } from './tex.js';

type Lex = (text: string, sink: Sink) => void;

const byGrammar = (grammar: Grammar): Lex => (text, sink) => lex(text, grammar, sink);

/** A Pygments lexer Parley has: its display name, its aliases, and how it lexes. */
const LEXERS: Array<{ name: string; aliases: string[]; lex: Lex }> = [
  { name: 'Python', aliases: ['python', 'py', 'sage', 'python3', 'py3', 'bazel', 'starlark', 'pyi'], lex: byGrammar(PYTHON) },
  // Pygments' Python 2 lexer differs from Python 3's in a few keywords (`print`, `exec`); Parley lexes both as Python 3.
  { name: 'Python 2.x', aliases: ['python2', 'py2'], lex: byGrammar(PYTHON) },
  { name: 'JavaScript', aliases: ['javascript', 'js'], lex: byGrammar(JAVASCRIPT) },
  { name: 'TypeScript', aliases: ['typescript', 'ts'], lex: byGrammar(TYPESCRIPT) },
  { name: 'JSON', aliases: ['json', 'json-object'], lex: lexJson },
  { name: 'Bash', aliases: ['bash', 'sh', 'ksh', 'zsh', 'shell', 'openrc'], lex: byGrammar(BASH) },
  { name: 'TeX', aliases: ['tex', 'latex'], lex: byGrammar(TEX) },
];

/** Display names of common Pygments lexers Parley does not lex (checked against Pygments 2.20). */
const OTHER_NAMES: Record<string, string> = {
  java: 'Java', c: 'C', cpp: 'C++', 'c++': 'C++', csharp: 'C#', 'c#': 'C#', cs: 'C#', go: 'Go', golang: 'Go', rust: 'Rust', rs: 'Rust',
  ruby: 'Ruby', rb: 'Ruby', php: 'PHP', perl: 'Perl', pl: 'Perl', console: 'Bash Session', 'shell-session': 'Bash Session', sql: 'SQL',
  html: 'HTML', xml: 'XML', css: 'CSS', scss: 'SCSS', yaml: 'YAML', toml: 'TOML', markdown: 'Markdown', md: 'Markdown', haskell: 'Haskell',
  hs: 'Haskell', kotlin: 'Kotlin', swift: 'Swift', scala: 'Scala', lua: 'Lua', r: 'S', diff: 'Diff', text: 'Text only', ini: 'INI',
  dockerfile: 'Docker', docker: 'Docker', makefile: 'Makefile', make: 'Makefile', elixir: 'Elixir', erlang: 'Erlang', clojure: 'Clojure',
  ocaml: 'OCaml', powershell: 'PowerShell', ps1: 'PowerShell', pwsh: 'PowerShell', objectivec: 'Objective-C', 'objective-c': 'Objective-C',
  jsx: 'JSX', tsx: 'TSX', graphql: 'GraphQL', dart: 'Dart', julia: 'Julia', matlab: 'Matlab', groovy: 'Groovy', cmake: 'CMake', elm: 'Elm',
  nix: 'Nix', protobuf: 'Protocol Buffer', proto: 'Protocol Buffer', zig: 'Zig', json5: 'JSON5', vue: 'Vue',
};

const BY_ALIAS = new Map(LEXERS.flatMap((l) => l.aliases.map((a) => [a, l] as const)));

/** Pygments' display name of the lexer for `lang` (lower case), or undefined when it has none. */
export function lexerName(lang: string): string | undefined {
  return BY_ALIAS.get(lang)?.name ?? OTHER_NAMES[lang];
}

/** Python-Markdown's header line: a shebang or two or more colons, an optional path, the language. */
const HEADER = /^(?:::+|#!)((?:\/\w+)*[/ ])?([\w#.+-]*)/;

/**
 * Pygments' HTML for `code` lexed by the lexer of `alias` (plain text when Parley
 * has none): `quotes` false leaves quotes unescaped (see the module comment).
 */
export function highlight(alias: string, source: string, quotes = true): string {
  const code = source.replace(/^\n+|\n+$/g, '');
  const lexer = BY_ALIAS.get(alias);
  const inner = lexer ? formatTokens((sink) => lexer.lex(code + '\n', sink), quotes) : escapeCode(code, quotes) + '\n';
  return `<div class="codehilite"><pre><span></span><code>${inner}</code></pre></div>`;
}

/**
 * The HTML of a code block: `lang` is the fence's language, lower case, or null.
 * `text` has its lines right-trimmed. An `indented` block (four spaces) goes through
 * Python-Markdown's own `CodeHilite` in Zulip, which drops a header line that has
 * no path (`#!python`, `:::python`); Zulip's fences keep it.
 */
export function codeBlockHtml(lang: string | null, text: string, indented = false): string {
  let code = text.replace(/^\n+|\n+$/g, '');
  if (lang === null) {
    const header = HEADER.exec(code);
    if (header && indented && !header[1]) code = code.slice(code.indexOf('\n') + 1 || code.length);
    return highlight(header?.[2].toLowerCase() ?? '', code);
  }
  const html = highlight(lang, code, false);
  return `<div class="codehilite" data-code-language="${escapeCode(lexerName(lang) ?? lang, false)}">${html.slice('<div class="codehilite">'.length)}`;
}
