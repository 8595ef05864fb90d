/**
 * Bash and other Bourne shells, as Pygments' `BashLexer` (`pygments/lexers/shell.py`):
 * keywords `k`, builtins `nb`, variables `nv`, strings `s2`/`s1`/`sb`, `${…}` `si`,
 * escapes `se`, operators `o`, `; & |` `p`, numbers `m`, comments `c1`, the
 * hashbang `ch`; commands and arguments are plain text.
 */
import { rule, type Grammar, type Rule } from './lexer.js';

const BUILTINS = ['alias', 'bg', 'bind', 'builtin', 'caller', 'cd', 'command', 'compgen', 'complete', 'declare', 'dirs', 'disown', 'echo', 'enable',
  'eval', 'exec', 'exit', 'export', 'false', 'fc', 'fg', 'getopts', 'hash', 'help', 'history', 'jobs', 'kill', 'let', 'local', 'logout', 'popd',
  'printf', 'pushd', 'pwd', 'read', 'readonly', 'set', 'shift', 'shopt', 'source', 'suspend', 'test', 'time', 'times', 'trap', 'true', 'type',
  'typeset', 'ulimit', 'umask', 'unalias', 'unset', 'wait'];

const INTERP: Rule[] = [
  rule('\\$\\(\\(', 'k', 'math'),
  rule('\\$\\(', 'k', 'paren'),
  rule('\\$\\{#?', 'si', 'curly'),
  rule('\\$[a-zA-Z_]\\w*', 'nv'),
  rule('\\$(?:\\d+|[#$?!_*@-])', 'nv'),
  rule('\\$', ''),
];

const BASIC: Rule[] = [
  rule('\\b(if|fi|else|while|in|do|done|for|then|return|function|case|select|break|continue|until|esac|elif)(\\s*)\\b', ['k', '']),
  rule(`\\b(?:${BUILTINS.join('|')})(?=[\\s)\`])`, 'nb'),
  { ...rule('#!.+\\n', 'ch'), atStart: true },
  rule('#.*\\n', 'c1'),
  rule('\\\\[^]', 'se'),
  rule('(\\b\\w+)(\\s*)(\\+?=)', ['nv', '', 'o']),
  rule('[\\[\\]{}()=]', 'o'),
  rule('<<<', 'o'),
  // A heredoc runs to the next occurrence of its word. Pygments backtracks into the word
  // (`<<EOF` may end at a later `E`), which makes every unclosed heredoc a scan of the rest
  // of the text per letter; here the word is taken whole, and after 8 heredocs that never
  // end no more are looked for (see `Rule.once`).
  { ...rule("<<-?\\s*'?\\\\?(?=(?<heredoc>\\w+))\\k<heredoc>[^]+?\\k<heredoc>", 's'), once: { opener: '<<', times: 8 } },
  rule('&&|\\|\\|', 'o'),
];

const DATA: Rule[] = [
  rule('\\$?"(?:\\\\[^]|[^"\\\\$])*"', 's2'),
  rule('"', 's2', 'string'),
  rule("\\$'(?:\\\\\\\\|\\\\[0-7]+|\\\\[^]|[^'\\\\])*'", 's1'),
  rule("'[^]*?'", 's1'),
  rule(';', 'p'),
  rule('&', 'p'),
  rule('\\|', 'p'),
  rule('\\s+', ''),
  rule('\\d+\\b', 'm'),
  rule('[^=\\s\\[\\]{}()$"\'`\\\\<&|;]+', ''),
  rule('<', ''),
];

const ROOT: Rule[] = [...BASIC, rule('`', 'sb', 'backticks'), ...DATA, ...INTERP];

/** Pygments' `BashLexer` as a grammar. */
export const BASH: Grammar = {
  root: ROOT,
  string: [rule('"', 's2', '#pop'), rule('(?:\\\\\\\\|\\\\[0-7]+|\\\\[^]|[^"\\\\$])+', 's2'), ...INTERP],
  curly: [rule('\\}', 'si', '#pop'), rule(':-', 'k'), rule('\\w+', 'nv'), rule('[^}:"\'`$\\\\]+', 'p'), rule(':', 'p'), ...ROOT],
  paren: [rule('\\)', 'k', '#pop'), ...ROOT],
  math: [
    rule('\\)\\)', 'k', '#pop'),
    rule('\\*\\*|\\|\\||<<|>>|[-+*/%^|&<>]', 'o'),
    rule('\\d+#[\\da-zA-Z]+', 'm'),
    rule('\\d+#(?! )', 'm'),
    rule('0[xX][\\da-fA-F]+', 'm'),
    rule('\\d+', 'm'),
    rule('[a-zA-Z_]\\w*', 'nv'),
    ...ROOT,
  ],
  backticks: [rule('`', 'sb', '#pop'), ...ROOT],
};
