/**
 * TeX and LaTeX, as Pygments' `TexLexer` (`pygments/lexers/markup.py`): control
 * sequences `k` (an optional `[…]` after one `na`), braces and `& _ ^` `nb`,
 * comments `c`, and math between `$…$`, `\(…\)` (`s`) or `$$…$$`, `\[…\]` (`sb`),
 * where control sequences are `nv`, numbers `m` and operators `o`.
 */
import { otherwise, rule, type Grammar, type Rule } from './lexer.js';

const GENERAL: Rule[] = [rule('%.*?\\n', 'c'), rule('[{}]', 'nb'), rule('[&_^]', 'nb')];

const MATH: Rule[] = [
  rule('\\\\(?:[a-zA-Z]+|\\S?)', 'nv'),
  ...GENERAL,
  rule('[0-9]+', 'm'),
  rule('[-=!+*/()\\[\\]]', 'o'),
  rule('[^=!+*/()\\[\\]\\\\$%&_^{}0-9-]+', 'nb'),
];

/** Pygments' `TexLexer` as a grammar. */
export const TEX: Grammar = {
  root: [
    rule('\\\\\\[', 'sb', 'displaymath'),
    rule('\\\\\\(', 's', 'inlinemath'),
    rule('\\$\\$', 'sb', 'displaymath'),
    rule('\\$', 's', 'inlinemath'),
    rule('\\\\(?:[a-zA-Z@_:]+|\\S?)', 'k', 'command'),
    rule('\\\\$', 'k'),
    ...GENERAL,
    rule('[^\\\\$%&_^{}]+', ''),
  ],
  inlinemath: [rule('\\\\\\)', 's', '#pop'), rule('\\$', 's', '#pop'), ...MATH],
  displaymath: [rule('\\\\\\]', 's', '#pop'), rule('\\$\\$', 's', '#pop'), rule('\\$', 'nb'), ...MATH],
  // An optional argument: Pygments reads to the first `]` on the line; here within 1000 characters (no quadratic scans).
  command: [rule('\\[.{0,1000}?\\]', 'na'), rule('\\*', 'k'), otherwise('#pop')],
};
