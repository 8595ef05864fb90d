/**
 * Python 3, with the token boundaries and classes of Pygments' `PythonLexer`
 * (`pygments/lexers/python.py`): keywords `k`, `def` names `nf`, `class` names `nc`,
 * builtins `nb`, `self`/`cls` `bp`, names `n`, operators `o`/`ow`, punctuation `p`,
 * numbers `mi`/`mf`/`mh`/`mo`/`mb`, strings `s2`/`s1` with prefixes `sa`, escapes `se`
 * and `%`/`{}` interpolation `si`, docstrings `sd`, comments `c1`, the hashbang `ch`.
 */
import { otherwise, rule, SELF, words, type Grammar, type Rule } from './lexer.js';

const NAME = '[_\\p{XID_Start}]\\p{XID_Continue}*';

const KEYWORDS = ['assert', 'async', 'await', 'break', 'continue', 'del', 'elif', 'else', 'except', 'finally', 'for', 'global', 'if', 'lambda',
  'pass', 'raise', 'nonlocal', 'return', 'try', 'while', 'yield from', 'yield', 'as', 'with'];
const BUILTINS = ['__import__', 'abs', 'aiter', 'all', 'any', 'bin', 'bool', 'bytearray', 'breakpoint', 'bytes', 'callable', 'chr', 'classmethod',
  'compile', 'complex', 'delattr', 'dict', 'dir', 'divmod', 'enumerate', 'eval', 'filter', 'float', 'format', 'frozenset', 'getattr', 'globals',
  'hasattr', 'hash', 'hex', 'id', 'input', 'int', 'isinstance', 'issubclass', 'iter', 'len', 'list', 'locals', 'map', 'max', 'memoryview', 'min',
  'next', 'object', 'oct', 'open', 'ord', 'pow', 'print', 'property', 'range', 'repr', 'reversed', 'round', 'set', 'setattr', 'slice', 'sorted',
  'staticmethod', 'str', 'sum', 'super', 'tuple', 'type', 'vars', 'zip'];
const EXCEPTIONS = ['ArithmeticError', 'AssertionError', 'AttributeError', 'BaseException', 'BufferError', 'BytesWarning', 'DeprecationWarning',
  'EOFError', 'EnvironmentError', 'Exception', 'FloatingPointError', 'FutureWarning', 'GeneratorExit', 'IOError', 'ImportError', 'ImportWarning',
  'IndentationError', 'IndexError', 'KeyError', 'KeyboardInterrupt', 'LookupError', 'MemoryError', 'NameError', 'NotImplementedError', 'OSError',
  'OverflowError', 'PendingDeprecationWarning', 'ReferenceError', 'ResourceWarning', 'RuntimeError', 'RuntimeWarning', 'StopIteration',
  'SyntaxError', 'SyntaxWarning', 'SystemError', 'SystemExit', 'TabError', 'TypeError', 'UnboundLocalError', 'UnicodeDecodeError',
  'UnicodeEncodeError', 'UnicodeError', 'UnicodeTranslateError', 'UnicodeWarning', 'UserWarning', 'ValueError', 'VMSError', 'Warning',
  'WindowsError', 'ZeroDivisionError', 'BlockingIOError', 'ChildProcessError', 'ConnectionError', 'BrokenPipeError', 'ConnectionAbortedError',
  'ConnectionRefusedError', 'ConnectionResetError', 'FileExistsError', 'FileNotFoundError', 'InterruptedError', 'IsADirectoryError',
  'NotADirectoryError', 'PermissionError', 'ProcessLookupError', 'TimeoutError', 'StopAsyncIteration', 'ModuleNotFoundError', 'RecursionError',
  'EncodingWarning'];
const MAGIC_VARS = ['__annotations__', '__bases__', '__class__', '__closure__', '__code__', '__defaults__', '__dict__', '__doc__', '__file__',
  '__func__', '__globals__', '__kwdefaults__', '__module__', '__mro__', '__name__', '__objclass__', '__qualname__', '__self__', '__slots__', '__weakref__'];
const MAGIC_FUNCS = ['abs', 'add', 'aenter', 'aexit', 'aiter', 'and', 'anext', 'await', 'bool', 'bytes', 'call', 'complex', 'contains', 'del',
  'delattr', 'delete', 'delitem', 'dir', 'divmod', 'enter', 'eq', 'exit', 'float', 'floordiv', 'format', 'ge', 'get', 'getattr', 'getattribute',
  'getitem', 'gt', 'hash', 'iadd', 'iand', 'ifloordiv', 'ilshift', 'imatmul', 'imod', 'imul', 'index', 'init', 'instancecheck', 'int', 'invert',
  'ior', 'ipow', 'irshift', 'isub', 'iter', 'itruediv', 'ixor', 'le', 'len', 'length_hint', 'lshift', 'lt', 'matmul', 'missing', 'mod', 'mul',
  'ne', 'neg', 'new', 'next', 'or', 'pos', 'pow', 'prepare', 'radd', 'rand', 'rdivmod', 'repr', 'reversed', 'rfloordiv', 'rlshift', 'rmatmul',
  'rmod', 'rmul', 'ror', 'round', 'rpow', 'rrshift', 'rshift', 'rsub', 'rtruediv', 'rxor', 'set', 'setattr', 'setitem', 'str', 'sub',
  'subclasscheck', 'truediv', 'xor'].map((n) => `__${n}__`);
/** Dunder methods (`__init__`…), Pygments' `magicfuncs`. */
const MAGIC_FUNC = words(MAGIC_FUNCS);

/** Python's lower-case keywords: after one, `match` or `case` is a name. */
const SOFT_NOT_AFTER = ['and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else', 'except', 'finally',
  'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try', 'while', 'with', 'yield'];

const NUMBERS: Rule[] = [
  rule('(?:\\d(?:_?\\d)*\\.(?:\\d(?:_?\\d)*)?|(?:\\d(?:_?\\d)*)?\\.\\d(?:_?\\d)*)(?:[eE][+-]?\\d(?:_?\\d)*)?j?', 'mf'),
  rule('\\d(?:_?\\d)*[eE][+-]?\\d(?:_?\\d)*j?', 'mf'),
  rule('0[oO](?:_?[0-7])+', 'mo'),
  rule('0[bB](?:_?[01])+', 'mb'),
  rule('0[xX](?:_?[a-fA-F0-9])+', 'mh'),
  rule('\\d(?:_?\\d)*', 'mi'),
];

/** The string openers: prefix (`sa`) and quote; raw strings skip the escape states. */
function strings(): Rule[] {
  const out: Rule[] = [];
  for (const [quote, cls, state] of [['"""', 's2', 'tdqs'], ["'''", 's1', 'tsqs'], ['"', 's2', 'dqs'], ["'", 's1', 'sqs']] as const) {
    const fState = state.slice(0, -1) + 'f';
    out.push(
      rule(`((?:[rR][fFtT]|[fFtT][rR]))(${quote})`, ['sa', cls], [`raw-${fState}`]),
      rule(`([fFtT])(${quote})`, ['sa', cls], [`esc-${fState}`]),
      rule(`((?:[rR][bB]|[bB][rR]|[rR]))(${quote})`, ['sa', cls], [`raw-${state}`]),
      rule(`([uU]?)(${quote})`, ['sa', cls], [`esc-${state}`]),
      rule(`([bB])(${quote})`, ['sa', cls], [`bytes-${state}`]),
    );
  }
  return out;
}

const BYTES_ESCAPE = rule('\\\\(?:[\\\\abfnrtv"\']|\\n|x[a-fA-F0-9]{2}|[0-7]{1,3})', 'se');
// Pygments reads `\N{…}` and a format field's `[…]` to the first close however far it is;
// here at most 200 characters, so a long line of unclosed ones is not a quadratic scan.
const STRING_ESCAPE = rule('\\\\(?:N\\{[^}\\n]{0,200}\\}|u[a-fA-F0-9]{4}|U[a-fA-F0-9]{8})', 'se');
const BRACE_ESCAPE = rule('\\{\\{|\\}\\}', 'se');

/** The inside of a string of class `cls`, `%`- and `{}`-formatting included (Pygments' `innerstring_rules`). */
function inner(cls: string): Rule[] {
  return [
    rule('%(?:\\(\\w+\\))?[-#0 +]*(?:[0-9]+|[*])?(?:\\.(?:[0-9]+|[*]))?[hlL]?[E-GXc-giorsaux%]', 'si'),
    rule('\\{(?:\\w+(?:\\.\\w+|\\[[^\\]]{1,200}\\])*)?(?:![sra])?(?::(?:.?[<>=^])?[-+ ]?#?0?(?:\\d+)?,?(?:\\.\\d+)?[E-GXb-gnosx%]?)?\\}', 'si'),
    rule('[^\\\\\'"%{\\n]+', cls),
    rule('[\'"\\\\]', cls),
    rule('%|\\{{1,2}', cls),
  ];
}

/** The inside of an f-string: `{` opens an expression. */
function innerF(cls: string): Rule[] {
  return [
    rule('\\}', 'si'),
    rule('\\{', 'si', 'fexpr'),
    rule('[^\\\\\'"{}\\n]+', cls),
    rule('[\'"\\\\]', cls),
  ];
}

/** The string states: `{esc,raw,bytes}-{dq,sq,tdq,tsq}{s,f}`. */
function stringStates(): Record<string, Rule[]> {
  const states: Record<string, Rule[]> = {};
  for (const [q, quote, cls] of [['dq', '"', 's2'], ['sq', "'", 's1'], ['tdq', '"""', 's2'], ['tsq', "'''", 's1']] as const) {
    const triple = q.startsWith('t');
    const close = [rule(quote, cls, '#pop'), ...(triple ? [] : [rule(`\\\\\\\\|\\\\${quote}|\\\\\\n`, 'se')])];
    const tail = triple ? [rule('\\n', cls)] : [];
    const s = [...close, ...inner(cls), ...tail];
    const f = [...close, ...innerF(cls), ...tail];
    states[`raw-${q}s`] = s;
    states[`esc-${q}s`] = [STRING_ESCAPE, BYTES_ESCAPE, ...s];
    states[`bytes-${q}s`] = [BYTES_ESCAPE, ...s];
    states[`raw-${q}f`] = [BRACE_ESCAPE, ...f];
    states[`esc-${q}f`] = [BRACE_ESCAPE, STRING_ESCAPE, BYTES_ESCAPE, ...f];
  }
  return states;
}

const EXPR: Rule[] = [
  ...strings(),
  rule('[^\\S\\n]+', ''),
  ...NUMBERS,
  rule('!=|==|<<|>>|:=|[-~+/*%=<>&^|.]', 'o'),
  rule('[\\]{}:(),;[]', 'p'),
  rule('(?:in|is|and|or|not)\\b', 'ow'),
  rule(words(['async for', 'await', 'else', 'for', 'if', 'lambda', 'yield from', 'yield']), 'k'),
  rule(words(['True', 'False', 'None']), 'kc'),
  rule(words(BUILTINS, '(?<!\\.)'), 'nb'),
  rule('(?<!\\.)(?:self|Ellipsis|NotImplemented|cls)\\b', 'bp'),
  rule(words(EXCEPTIONS, '(?<!\\.)'), 'ne'),
  rule(words(MAGIC_VARS), 'vm'),
  rule(MAGIC_FUNC, 'fm'),
  rule('@' + NAME, 'nd'),
  rule('@', 'o'),
  rule(NAME, 'n'),
];

/** Pygments' `PythonLexer` as a grammar. */
export const PYTHON: Grammar = {
  root: [
    rule('\\n', ''),
    rule('^(\\s*)([rRuUbB]{0,2})("""[^]*?""")', ['', 'sa', 'sd']),
    rule("^(\\s*)([rRuUbB]{0,2})('''[^]*?''')", ['', 'sa', 'sd']),
    { ...rule('#!.+', 'ch'), atStart: true },
    rule('#.*', 'c1'),
    rule('\\\\\\n|\\\\', ''),
    rule(words(KEYWORDS), 'k'),
    rule(words(['True', 'False', 'None']), 'kc'),
    // `match` and `case` starting a statement, unless what follows shows they are names.
    rule(`(^[ \\t]*)(match|case)\\b(?![ \\t]*(?:[:,;=^&|@~)\\]}]|(?:${SOFT_NOT_AFTER.join('|')})\\b))`, ['', 'k'], 'soft-keyword'),
    rule('(def)((?:\\s|\\\\\\s)+)', ['k', ''], 'funcname'),
    rule('(class)((?:\\s|\\\\\\s)+)', ['k', ''], 'classname'),
    rule('(from)((?:\\s|\\\\\\s)+)', ['kn', ''], 'fromimport'),
    rule('(import)((?:\\s|\\\\\\s)+)', ['kn', ''], 'import'),
    ...EXPR,
  ],
  fexpr: [
    rule('[{([]', 'p', 'fexpr-inner'),
    rule('(?:=\\s*)?(?:![sraf])?\\}', 'si', '#pop'),
    rule('(?:=\\s*)?(?:![sraf])?:', 'si', '#pop'),
    rule('\\s+', ''),
    ...EXPR,
  ],
  'fexpr-inner': [
    rule('[{([]', 'p', 'fexpr-inner'),
    rule('[\\])}]', 'p', '#pop'),
    rule('\\s+', ''),
    ...EXPR,
  ],
  // After `case`: a `_` wildcard later on the line is a keyword; the text before it is lexed as Python.
  'soft-keyword': [rule('(\\s+)([^\\n_]*)(_\\b)', ['', SELF, 'k']), otherwise('#pop')],
  funcname: [rule(MAGIC_FUNC, 'fm'), rule(NAME, 'nf', '#pop'), otherwise('#pop')],
  classname: [rule(NAME, 'nc', '#pop')],
  import: [
    rule('(\\s+)(as)(\\s+)', ['', 'k', '']),
    rule('\\.', 'nn'),
    rule(NAME, 'nn'),
    rule('(\\s*)(,)(\\s*)', ['', 'o', '']),
    otherwise('#pop'),
  ],
  fromimport: [
    rule('(\\s+)(import)\\b', ['', 'kn'], '#pop'),
    rule('\\.', 'nn'),
    rule('None\\b', 'kc', '#pop'),
    rule(NAME, 'nn'),
    otherwise('#pop'),
  ],
  ...stringStates(),
};
