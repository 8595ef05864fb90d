/**
 * Which characters a regex's match can start with, so the lexer tries at a
 * position only the rules that can match there (an alternation of sixty rules
 * costs sixty attempts per token otherwise). The answer is conservative: a set
 * of ASCII characters plus "any non-ASCII character", or `null` for "any
 * character" where the source is not understood (a back-reference) or the regex
 * can match the empty string.
 */

/** The characters a match can start with; non-ASCII characters are always included. */
export type FirstChars = Set<number> | null;

interface Part {
  /** ASCII codes a match of this part can start with; null is any. */
  first: Set<number> | null;
  /** Whether it can match the empty string. */
  nullable: boolean;
}

const ALL_ASCII = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i));

/** The ASCII characters a one-character regex source (a class, an escape, `.`) matches. */
function matching(atom: string): Set<number> {
  const re = new RegExp(`^${atom}$`, 'u');
  return new Set(ALL_ASCII.filter((c) => re.test(c)).map((c) => c.charCodeAt(0)));
}

function union(a: Set<number> | null, b: Set<number> | null): Set<number> | null {
  return a === null || b === null ? null : new Set([...a, ...b]);
}

/** A recursive-descent reader of the start of a regex source. */
class Reader {
  i = 0;
  constructor(readonly src: string) {}

  /** Alternatives up to `)` or the end. */
  alternation(): Part {
    let part = this.sequence();
    while (this.src[this.i] === '|') {
      this.i++;
      const next = this.sequence();
      part = { first: union(part.first, next.first), nullable: part.nullable || next.nullable };
    }
    return part;
  }

  /** Atoms up to `|`, `)` or the end: their first characters until one cannot be empty. */
  sequence(): Part {
    let first: Set<number> | null = new Set();
    let nullable = true;
    while (this.i < this.src.length && this.src[this.i] !== '|' && this.src[this.i] !== ')') {
      const atom = this.atom();
      const optional = this.quantifier();
      if (nullable) {
        first = union(first, atom.first);
        nullable = atom.nullable || optional;
      }
    }
    return { first, nullable };
  }

  /** Reads a quantifier if there is one; whether it allows zero repetitions. */
  quantifier(): boolean {
    const m = /^(?:[?*+]|\{(\d*)(?:,\d*)?\})\??/.exec(this.src.slice(this.i));
    if (!m) return false;
    this.i += m[0].length;
    return m[0][0] === '?' || m[0][0] === '*' || (m[0][0] === '{' && Number(m[1] || 0) === 0);
  }

  atom(): Part {
    const src = this.src;
    const c = src[this.i];
    if (c === '^' || c === '$') {
      this.i++;
      return { first: new Set(), nullable: true };
    }
    if (c === '(') {
      const look = /^\(\?(?:<?[=!])/.exec(src.slice(this.i));
      const open = look ?? /^\(\?(?::|<[A-Za-z]\w*>)/.exec(src.slice(this.i));
      this.i += open ? open[0].length : 1;
      const inner = this.alternation();
      this.i++; // ')'
      return look ? { first: new Set(), nullable: true } : inner;
    }
    if (c === '[') {
      let j = this.i + 1;
      if (src[j] === '^') j++;
      while (src[j] !== ']') j += src[j] === '\\' ? 2 : 1;
      const cls = src.slice(this.i, j + 1);
      this.i = j + 1;
      return { first: matching(cls), nullable: false };
    }
    if (c === '\\') {
      const m = /^\\(?:[pP]\{[^}]*\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|k<\w+>|[1-9]\d*|.)/su.exec(src.slice(this.i))!;
      this.i += m[0].length;
      if (m[0] === '\\b' || m[0] === '\\B') return { first: new Set(), nullable: true };
      if (/^\\(?:k<|[1-9])/.test(m[0])) return { first: null, nullable: true };
      return { first: matching(m[0]), nullable: false };
    }
    this.i++;
    return { first: c === '.' ? matching('.') : new Set([c.charCodeAt(0)]), nullable: false };
  }
}

/** The first characters of matches of `source` (see the module comment). */
export function firstChars(source: string): FirstChars {
  const part = new Reader(source).alternation();
  return part.nullable ? null : part.first;
}
