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

/** Where a rule leaves the state stack: push a state, pop one, or several of these in turn. */
export type Next = string | readonly string[];

/** One rule of a state. */
export interface Rule {
  re: RegExp;
  /** The class of the whole match, or of each capture group in turn (Pygments' `bygroups`). */
  token: string | readonly string[];
  next?: Next;
  /** Only at the start of the text (Pygments' `\A`). */
  atStart?: boolean;
  /**
   * The rule's opening character, when a failure at that character means failure at
   * every later one (a quoted string that finds no closing quote finds none from a
   * later quote either): the rule is not tried again, which keeps a text of many
   * unclosed quotes from costing quadratic time.
   */
  once?: string;
}

/** A lexer's states; lexing starts in `root`. */
export type Grammar = Readonly<Record<string, readonly Rule[]>>;

/**
 * A rule from a regex source. `flags` add to `y` (sticky) and `m` (line anchors,
 * Pygments' default); pass `s` where Pygments' lexer sets DOTALL.
 */
export function rule(source: string, token: string | readonly string[], next?: Next, flags = ''): Rule {
  return { re: new RegExp(source, 'ym' + flags), token, next };
}

/** A rule that matches nothing and only moves the state (Pygments' `default`). */
export function otherwise(next: Next): Rule {
  return { re: /(?:)/y, token: '', next };
}

/** An alternation of literal words, as a regex source (Pygments' `words`). */
export function words(list: readonly string[], prefix = '', suffix = '\\b'): string {
  return `${prefix}(?:${list.join('|')})${suffix}`;
}

/** Receives tokens in order. */
export type Sink = (token: string, text: string) => void;

/** Lexes `text` by `grammar`, passing each token to `sink`. */
export function lex(text: string, grammar: Grammar, sink: Sink): void {
  let stack = ['root'];
  let pos = 0;
  let rules = grammar.root;
  let failed: Set<Rule> | null = null;
  next: while (pos < text.length) {
    for (const r of rules) {
      if ((r.atStart && pos !== 0) || failed?.has(r)) continue;
      r.re.lastIndex = pos;
      const m = r.re.exec(text);
      if (m === null) {
        if (r.once !== undefined && text[pos] === r.once) (failed ??= new Set()).add(r);
        continue;
      }
      if (typeof r.token === 'string') {
        if (m[0]) sink(r.token, m[0]);
      } else {
        for (let i = 0; i < r.token.length; i++) if (m[i + 1]) sink(r.token[i], m[i + 1]);
      }
      pos += m[0].length;
      if (r.next !== undefined) {
        for (const s of typeof r.next === 'string' ? [r.next] : r.next) {
          if (s !== '#pop') stack.push(s);
          else if (stack.length > 1) stack.pop();
        }
        rules = grammar[stack[stack.length - 1]];
      } else if (m[0] === '') {
        // A zero-width rule that moves no state would loop; Pygments' grammars have none.
        throw new Error('zero-width rule without a state change');
      }
      continue next;
    }
    if (text[pos] === '\n') {
      stack = ['root'];
      rules = grammar.root;
      sink('', '\n');
    } else sink('err', text[pos]);
    pos++;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escapes code as Pygments does (`& < > " '`), or, with `quotes` false, only
 * `& < >`: Zulip re-serializes a block that names its language through lxml,
 * which writes quotes in text as they are.
 */
export function escapeCode(s: string, quotes: boolean): string {
  const re = quotes ? /[&<>"']/g : /[&<>]/g;
  re.lastIndex = 0;
  return re.test(s) ? s.replace(re, (c) => ESCAPES[c]) : s;
}

/**
 * Pygments' HtmlFormatter lines: a run of tokens of the same class is one span,
 * a span never crosses a line end, and text of no class is bare. Returns the
 * inside of `<code>`.
 */
export function formatTokens(lexText: (sink: Sink) => void, quotes: boolean): string {
  const out: string[] = [];
  let line = '';
  let open = '';
  const close = (cls: string): string => (cls ? '</span>' : '');
  const start = (cls: string): string => (cls ? `<span class="${cls}">` : '');
  lexText((cls, value) => {
    const parts = escapeCode(value, quotes).split('\n');
    for (let i = 0; i < parts.length - 1; i++) {
      const part = parts[i];
      if (line) {
        out.push(open !== cls && part ? line + close(open) + start(cls) + part + close(cls) + '\n' : line + part + close(open) + '\n');
        line = '';
      } else out.push(part ? start(cls) + part + close(cls) + '\n' : '\n');
    }
    const last = parts[parts.length - 1];
    if (!last) return;
    if (!line) line = start(cls) + last;
    else if (open !== cls) line += close(open) + start(cls) + last;
    else line += last;
    open = cls;
  });
  if (line) out.push(line + close(open) + '\n');
  return out.join('');
}
