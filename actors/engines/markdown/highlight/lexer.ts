/**
 * A small state-machine lexer in the manner of Pygments' `RegexLexer`, and the
 * HTML that Pygments' `HtmlFormatter` writes for its tokens, so code blocks carry
 * the token spans Zulip's do (`<span class="k">def</span>`).
 *
 * A grammar is a table of states, each a list of rules tried in order at the
 * current position; a rule's regex is sticky (it matches only there). A token is
 * named by Pygments' short CSS class (`k`, `nf`, `s2`…; `''` for plain text and
 * for whitespace, which Zulip's HTML leaves unwrapped). Where no rule matches, a
 * newline resets the state to `root` and any other character is an error token
 * (`err`), as in Pygments.
 *
 * Cost: each step consumes at least one character or changes state, and a rule
 * tries one sticky regex; the grammars avoid patterns that rescan the rest of
 * the text from many positions (see `test/code_highlight.test.ts` for the bound).
 */

import { firstChars, type FirstChars } from './first_chars.js';

/** Where a rule leaves the state stack: push a state, pop one, or several of these in turn. */
export type Next = string | readonly string[];

/** One rule of a state. */
export interface Rule {
  /** A regex source, compiled with the flags `m` (line anchors, Pygments' default) and `u`; `[^]` is any character. */
  source: string;
  /** The class of the whole match, or of each capture group in turn (Pygments' `bygroups`). */
  token: string | readonly string[];
  next?: Next;
  /** Only at the start of the text (Pygments' `\A`). */
  atStart?: boolean;
  /**
   * For a rule that scans ahead for its end (a quoted string, a heredoc): its
   * opening text and how many times it may fail there before it is no longer
   * tried. A failed scan reads the rest of the text, so without a limit a text of
   * many unclosed openers costs quadratic time. With `times` 1 nothing changes: a
   * string that finds no closing quote finds none from a later quote either. A
   * larger `times` keeps Pygments' tokens for all but texts of that many failures.
   */
  once?: { opener: string; times: number };
}

/** As a group's class: the group is lexed by the same grammar from its `root` (Pygments' `using(this)`). */
export const SELF = '@self';

/** A lexer's states; lexing starts in `root`. */
export type Grammar = Readonly<Record<string, readonly Rule[]>>;

/** A rule from a regex source (see `Rule.source`). */
export function rule(source: string, token: string | readonly string[], next?: Next): Rule {
  return { source, token, next };
}

/** A rule that matches nothing and only moves the state (Pygments' `default`). */
export function otherwise(next: Next): Rule {
  return { source: '', token: '', next };
}

/** An alternation of literal words, as a regex source (Pygments' `words`). */
export function words(list: readonly string[], prefix = '', suffix = '\\b'): string {
  return `${prefix}(?:${list.join('|')})${suffix}`;
}

/** Receives tokens in order. */
export type Sink = (token: string, text: string) => void;

/**
 * A run of a state's rules compiled to one sticky alternation, tried in order as
 * the rules are: one regex execution per token instead of one per rule. A `once`
 * rule is a segment of its own, so it can be skipped.
 */
interface Segment {
  re: RegExp;
  rules: readonly Rule[];
  /** For each rule, the index of the group that wraps it. */
  groups: number[];
  once?: Rule['once'];
}

function groupCount(source: string): number {
  return new RegExp(`${source}|`, 'u').exec('')!.length - 1;
}

function segment(rules: readonly Rule[]): Segment {
  const groups: number[] = [];
  let next = 1;
  const parts = rules.map((r) => {
    groups.push(next);
    next += 1 + groupCount(r.source);
    return `(${r.atStart ? '(?<![^])' : ''}${r.source})`;
  });
  return { re: new RegExp(parts.join('|'), 'ymu'), rules, groups, once: rules.length === 1 ? rules[0].once : undefined };
}

/** Splits rules into segments: runs of plain rules, and each `once` rule alone. */
function segments(rules: readonly Rule[]): Segment[] {
  const out: Segment[] = [];
  let run: Rule[] = [];
  for (const r of rules) {
    if (r.once === undefined) {
      run.push(r);
      continue;
    }
    if (run.length) out.push(segment(run));
    out.push(segment([r]));
    run = [];
  }
  if (run.length) out.push(segment(run));
  return out;
}

/**
 * A state compiled lazily by first character: for each ASCII character, the
 * segments of the rules that can match starting with it (`first_chars.ts`);
 * index 128 is every other character, where all rules are tried.
 */
class State {
  private readonly byChar: (Segment[] | undefined)[] = [];
  private readonly bySubset = new Map<string, Segment[]>();
  private readonly first: FirstChars[];
  constructor(private readonly rules: readonly Rule[], dispatch: boolean) {
    this.first = rules.map((r) => (dispatch && !r.atStart ? firstChars(r.source) : null));
  }

  at(code: number): Segment[] {
    const i = code < 128 ? code : 128;
    const cached = this.byChar[i];
    if (cached) return cached;
    const picked = this.rules.filter((_, k) => i === 128 || this.first[k] === null || this.first[k]!.has(i));
    const key = picked.map((r) => this.rules.indexOf(r)).join(',');
    let segs = this.bySubset.get(key);
    if (!segs) this.bySubset.set(key, (segs = segments(picked)));
    return (this.byChar[i] = segs);
  }
}

const compiled = [new WeakMap<Grammar, Map<string, State>>(), new WeakMap<Grammar, Map<string, State>>()];

function compile(grammar: Grammar, dispatch: boolean): Map<string, State> {
  const cache = compiled[dispatch ? 1 : 0];
  let states = cache.get(grammar);
  if (!states) {
    states = new Map(Object.entries(grammar).map(([name, rules]) => [name, new State(rules, dispatch)]));
    cache.set(grammar, states);
  }
  return states;
}

/**
 * Lexes `text` by `grammar`, passing each token to `sink`. `dispatch` false tries
 * every rule at every position (the same tokens, slower; for tests).
 */
export function lex(text: string, grammar: Grammar, sink: Sink, dispatch = true): void {
  const states = compile(grammar, dispatch);
  let stack = ['root'];
  let pos = 0;
  let state = states.get('root')!;
  let failures: Map<Segment, number> | null = null;
  next: while (pos < text.length) {
    for (const seg of state.at(text.charCodeAt(pos))) {
      if (seg.once && (failures?.get(seg) ?? 0) >= seg.once.times) continue;
      seg.re.lastIndex = pos;
      const m = seg.re.exec(text);
      if (m === null) {
        if (seg.once && text.startsWith(seg.once.opener, pos)) (failures ??= new Map()).set(seg, (failures.get(seg) ?? 0) + 1);
        continue;
      }
      let i = 0;
      while (m[seg.groups[i]] === undefined) i++;
      const r = seg.rules[i];
      const g = seg.groups[i];
      if (typeof r.token === 'string') {
        if (m[0]) sink(r.token, m[0]);
      } else {
        for (let k = 0; k < r.token.length; k++) {
          const value = m[g + 1 + k];
          if (!value) continue;
          if (r.token[k] === SELF) lex(value, grammar, sink, dispatch);
          else sink(r.token[k], value);
        }
      }
      pos += m[0].length;
      if (r.next !== undefined) {
        for (const s of typeof r.next === 'string' ? [r.next] : r.next) {
          if (s !== '#pop') stack.push(s);
          else if (stack.length > 1) stack.pop();
        }
        state = states.get(stack[stack.length - 1])!;
      } else if (m[0] === '') {
        // A zero-width rule that moves no state would loop; Pygments' grammars have none.
        throw new Error('zero-width rule without a state change');
      }
      continue next;
    }
    if (text[pos] === '\n') {
      stack = ['root'];
      state = states.get('root')!;
      sink('', '\n');
    } else sink('err', text[pos]);
    pos++;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const SPECIAL = /[&<>]/;
const SPECIAL_ALL = /[&<>]/g;
const SPECIAL_Q = /[&<>"']/;
const SPECIAL_Q_ALL = /[&<>"']/g;

/**
 * Escapes code as Pygments does (`& < > " '`), or, with `quotes` false, only
 * `& < >`: Zulip re-serializes a block that names its language through lxml,
 * which writes quotes in text as they are.
 */
export function escapeCode(s: string, quotes: boolean): string {
  if (!(quotes ? SPECIAL_Q : SPECIAL).test(s)) return s;
  return s.replace(quotes ? SPECIAL_Q_ALL : SPECIAL_ALL, (c) => ESCAPES[c]);
}

const OPENERS = new Map<string, string>();
const opener = (cls: string): string => {
  let tag = OPENERS.get(cls);
  if (tag === undefined) OPENERS.set(cls, (tag = cls ? `<span class="${cls}">` : ''));
  return tag;
};
const closer = (cls: string): string => (cls ? '</span>' : '');

/**
 * Pygments' HtmlFormatter lines: a run of tokens of the same class is one span,
 * a span never crosses a line end, and text of no class is bare. Returns the
 * inside of `<code>`.
 */
export function formatTokens(lexText: (sink: Sink) => void, quotes: boolean): string {
  let out = '';
  /** The current line so far, its last span left open. */
  let line = '';
  let open = '';
  const add = (cls: string, part: string): void => {
    if (!line) line = opener(cls) + part;
    else if (open !== cls) line += closer(open) + opener(cls) + part;
    else line += part;
    open = cls;
  };
  lexText((cls, value) => {
    const text = escapeCode(value, quotes);
    if (!text.includes('\n')) {
      add(cls, text);
      return;
    }
    const parts = text.split('\n');
    for (let i = 0; i < parts.length - 1; i++) {
      if (parts[i]) add(cls, parts[i]);
      out += line ? line + closer(open) + '\n' : '\n';
      line = '';
    }
    const last = parts[parts.length - 1];
    if (last) add(cls, last);
  });
  return line ? out + line + closer(open) + '\n' : out;
}
