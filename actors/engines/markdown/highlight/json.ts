/**
 * JSON, as Pygments' `JsonLexer` (`pygments/lexers/data.py`) writes it: object keys
 * `nt`, other strings `s2`, numbers `mi` (or `mf` with `.`, `e`, `E` or `+`), runs of
 * the letters of `true`, `false`, `null` `kc`, punctuation `p`, comments `c1`/`cm`,
 * anything else `err`. Like Pygments', it scans characters rather than matching
 * rules: whether a string is a key depends on the `:` after it. Linear: each
 * character is looked at a bounded number of times.
 */
import type { Sink } from './lexer.js';

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const NUMBER = '-0123456789';
const FLOAT = '.eE+';
const CONSTANT = 'truefalsn';
const PUNCTUATION = '{}[],';

/** The end of the run of characters from `from` that are in `set`. */
function run(text: string, from: number, has: (c: string) => boolean): number {
  let i = from;
  while (i < text.length && has(text[i])) i++;
  return i;
}

/** Lexes JSON `text` into `sink`. */
export function lexJson(text: string, sink: Sink): void {
  let pos = 0;
  while (pos < text.length) {
    const c = text[pos];
    let end: number;
    if (c === '"') {
      end = pos + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) {
        sink('err', text.slice(pos));
        return;
      }
      end++;
      const after = run(text, end, (ch) => WHITESPACE.has(ch));
      sink(text[after] === ':' ? 'nt' : 's2', text.slice(pos, end));
    } else if (WHITESPACE.has(c)) {
      end = run(text, pos, (ch) => WHITESPACE.has(ch));
      sink('', text.slice(pos, end));
    } else if (NUMBER.includes(c)) {
      end = run(text, pos, (ch) => NUMBER.includes(ch) || FLOAT.includes(ch));
      const value = text.slice(pos, end);
      sink(/[.eE+]/.test(value) ? 'mf' : 'mi', value);
    } else if (c === 'f' || c === 'n' || c === 't') {
      end = run(text, pos, (ch) => CONSTANT.includes(ch));
      sink('kc', text.slice(pos, end));
    } else if (PUNCTUATION.includes(c) || c === ':') {
      end = pos + 1;
      sink('p', c);
    } else if (c === '/' && text[pos + 1] === '/') {
      end = text.indexOf('\n', pos);
      if (end < 0) end = text.length;
      sink('c1', text.slice(pos, end));
    } else if (c === '/' && text[pos + 1] === '*') {
      const close = text.indexOf('*/', pos + 2);
      end = close < 0 ? text.length : close + 2;
      sink(close < 0 ? 'err' : 'cm', text.slice(pos, end));
    } else {
      end = pos + 1;
      sink('err', c);
    }
    pos = end;
  }
}
