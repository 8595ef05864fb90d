/**
 * JavaScript and TypeScript, as Pygments' `JavascriptLexer` and `TypeScriptLexer`
 * (`pygments/lexers/javascript.py`): names `nx`, keywords `k`/`kd`/`kr`/`kc`/`kt`,
 * builtins `nb`, operators `o`/`ow`, punctuation `p`, numbers (`mf` for every
 * decimal, as JavaScript has no integers), strings `s2`/`s1`/`sb` with `${}` `si`,
 * regex literals `sr`, comments `c1`/`cm`, the hashbang `ch`.
 */
import { otherwise, rule, type Grammar, type Rule } from './lexer.js';

const LETTER = '\\p{Lu}\\p{Ll}\\p{Lt}\\p{Lm}\\p{Lo}\\p{Nl}';
const IDENT = `(?:[$_${LETTER}]|\\\\u[a-fA-F0-9]{4})(?:[$${LETTER}\\p{Mn}\\p{Mc}\\p{Nd}\\p{Pc}\\u200c\\u200d]|\\\\u[a-fA-F0-9]{4})*`;
/** Pygments' JavaScript lexer is DOTALL: its `.` is written `[^]` here. */
const js = rule;
/** A string rule that, once it finds no closing quote, cannot find one from any later quote either. */
const once = (r: Rule): Rule => ({ ...r, once: { opener: r.source[0], times: 1 } });

/** An unclosed block comment has no `*` `/` after it, so no later one closes either. */
const COMMENTS: Rule[] = [js('\\s+', ''), js('<!--', 'c'), js('//.*?$', 'c1'), { ...js('/\\*[^]*?\\*/', 'cm'), once: { opener: '/*', times: 1 } }];

const BUILTINS = ['Array', 'Boolean', 'Date', 'BigInt', 'Function', 'Math', 'ArrayBuffer', 'Number', 'Object', 'RegExp', 'String', 'Promise', 'Proxy',
  'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'eval', 'isFinite', 'isNaN', 'parseFloat', 'parseInt', 'DataView',
  'document', 'window', 'globalThis', 'global', 'Symbol', 'Intl', 'WeakSet', 'WeakMap', 'Set', 'Map', 'Reflect', 'JSON', 'Atomics',
  'Int(?:8|16|32)Array', 'BigInt64Array', 'Float32Array', 'Float64Array', 'Uint8ClampedArray', 'Uint(?:8|16|32)Array', 'BigUint64Array'];

/** The rules of `root` after the comments; TypeScript adds its own before them. */
const JS_ROOT: Rule[] = [
  js('0[bB][01]+n?', 'mb'),
  js('0[oO]?[0-7]+n?', 'mo'),
  js('0[xX][0-9a-fA-F]+n?', 'mh'),
  js('[0-9]+n', 'mi'),
  js('(?:\\.[0-9]+|[0-9]+\\.[0-9]*|[0-9]+)(?:[eE][-+]?[0-9]+)?', 'mf'),
  js('\\.\\.\\.|=>', 'p'),
  js('\\+\\+|--|~|\\?\\?=?|\\?|:|\\\\(?=\\n)|(?:<<|>>>?|==?|!=?|(?:\\*\\*|\\|\\||&&|[-<>+*%&|^/]))=?', 'o', 'slashstartsregex'),
  js('[{(\\[;,]', 'p', 'slashstartsregex'),
  js('[})\\].]', 'p'),
  js('(?:typeof|instanceof|in|void|delete|new)\\b', 'ow', 'slashstartsregex'),
  js('\\b(?:constructor|from|as)\\b', 'kr'),
  js('(?:for|in|while|do|break|return|continue|switch|case|default|if|else|throw|try|catch|finally|yield|await|async|this|of|static|export|'
    + 'import|debugger|extends|super)\\b', 'k', 'slashstartsregex'),
  js('(?:var|let|const|with|function|class)\\b', 'kd', 'slashstartsregex'),
  js('(?:abstract|boolean|byte|char|double|enum|final|float|goto|implements|int|interface|long|native|package|private|protected|public|short|'
    + 'synchronized|throws|transient|volatile)\\b', 'kr'),
  js('(?:true|false|null|NaN|Infinity|undefined)\\b', 'kc'),
  js(`(?:${BUILTINS.join('|')})\\b`, 'nb'),
  js('(?:(?:Eval|Internal|Range|Reference|Syntax|Type|URI)?Error)\\b', 'ne'),
  js('(super)(\\s*)(\\([\\w,?.$\\s]+\\s*\\))', ['k', ''], 'slashstartsregex'),
  js('[a-zA-Z_?.$][\\w?.$]*(?=\\(\\) \\{)', 'nx', 'slashstartsregex'),
  js(IDENT, 'nx'),
  once(js('"(?:\\\\\\\\|\\\\[^\\\\]|[^"\\\\])*"', 's2')),
  once(js("'(?:\\\\\\\\|\\\\[^\\\\]|[^'\\\\])*'", 's1')),
  js('`', 'sb', 'interp'),
  js('#[a-zA-Z_]\\w*', 'n'),
];

/** The states every variant shares; `root` is the variant's. */
function grammar(root: Rule[]): Grammar {
  return {
    root,
    slashstartsregex: [
      ...COMMENTS,
      js('/(?:\\\\[^]|[^[/\\\\\\n]|\\[(?:\\\\[^]|[^\\]\\\\\\n])*\\])+/(?:[gimuysd]+\\b|\\B)', 'sr', '#pop'),
      js('(?=/)', '', ['#pop', 'badregex']),
      otherwise('#pop'),
    ],
    badregex: [js('\\n', '', '#pop')],
    interp: [js('`', 'sb', '#pop'), js('\\\\[^]', 'sb'), js('\\$\\{', 'si', 'interp-inside'), js('\\$', 'sb'), js('[^`\\\\$]+', 'sb')],
    'interp-inside': [js('\\}', 'si', '#pop'), ...root],
  };
}

const START: Rule[] = [{ ...js('#! ?/.*?$', 'ch'), atStart: true }, js('^(?=\\s|/|<!--)', '', 'slashstartsregex'), ...COMMENTS];

/** Pygments' `JavascriptLexer` as a grammar. */
export const JAVASCRIPT: Grammar = grammar([...START, ...JS_ROOT]);

/** Pygments' `TypeScriptLexer`: JavaScript with TypeScript's keywords, types and decorators first. */
export const TYPESCRIPT: Grammar = grammar([
  ...START,
  js('(?:abstract|implements|private|protected|public|readonly)\\b', 'k', 'slashstartsregex'),
  js('(?:enum|interface|override)\\b', 'kd', 'slashstartsregex'),
  js('\\b(?:declare|type)\\b', 'kr'),
  js('\\b(?:string|boolean|number)\\b', 'kt'),
  js('\\b(module)(\\s*)([\\w?.$]+)(\\s*)', ['kr', '', 'nx', ''], 'slashstartsregex'),
  js('([\\w?.$]+)(\\s*)(:)(\\s*)([\\w?.$]+)', ['nx', '', 'o', '', 'kt']),
  js('@' + IDENT, 'kd'),
  ...JS_ROOT,
]);
