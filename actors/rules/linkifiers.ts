/**
 * Linkifier patterns and URL templates (Zulip's `zerver/models/linkifiers.py`): an
 * RE2 pattern with Python-style named groups, and an RFC 6570 URL template whose
 * variables are exactly the pattern's groups. Also how a match becomes a URL.
 */
import { RE2JS, type Matcher } from 're2js';
import { ApiError } from '../shared/errors.js';

function validationError(field: 'pattern' | 'url_template' | '__all__', msg: string): ApiError {
  return new ApiError('BAD_REQUEST', msg, { errors: { [field]: [msg] } });
}

/** The longest pattern taken (RE2 compiles in time and memory that grow with it). */
export const MAX_PATTERN_LENGTH = 4096;

/**
 * Compiles a linkifier pattern with RE2 (the `re2js` package), as Zulip does: the same
 * syntax (Python-style named groups, no lookaround, no backreferences) and matching
 * in linear time, so no pattern can make rendering a message slow.
 */
export function compilePattern(pattern: string): RE2JS {
  if (pattern.length > MAX_PATTERN_LENGTH) throw validationError('pattern', `Bad regular expression: pattern too large (limit: ${MAX_PATTERN_LENGTH} characters)`);
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw validationError('pattern', `Bad regular expression: ${(err as Error).message.replace(/^error parsing regexp: /, '')}`);
  }
}

const EXPRESSION = /\{([+#./;?&]?)([^{}]*)\}/g;

/** The variables of an RFC 6570 template, or null when it is not one. */
export function templateVariables(template: string): string[] | null {
  if (template.replace(EXPRESSION, '').includes('{') || template.replace(EXPRESSION, '').includes('}')) return null;
  const names: string[] = [];
  for (const m of template.matchAll(EXPRESSION)) {
    for (const spec of m[2].split(',')) {
      const name = spec.replace(/(\*|:\d{1,4})$/, '');
      if (!/^([A-Za-z0-9_]|%[0-9A-Fa-f]{2})(\.?([A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$/.test(name)) return null;
      names.push(name);
    }
  }
  return names;
}

/** Zulip's `RealmFilter.clean`: a valid pattern and template with the same names. */
export function checkLinkifier(pattern: string, urlTemplate: string): void {
  const regex = compilePattern(pattern);
  const variables = templateVariables(urlTemplate);
  if (variables === null) throw validationError('url_template', 'Invalid URL template.');
  const groups = new Set(Object.keys(regex.namedGroups()));
  const used = new Set(variables);
  const missingInPattern = [...used].filter((n) => !groups.has(n)).sort();
  if (missingInPattern.length > 0) throw validationError('__all__', `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`);
  const missingInUrl = [...groups].filter((n) => !used.has(n)).sort();
  if (missingInUrl.length > 0) throw validationError('__all__', `Group '${missingInUrl[0]}' in linkifier pattern is not present in URL template.`);
}

/** Expands a URL template with a match's groups (simple, reserved `+` and fragment `#` expansion). */
export function expandTemplate(template: string, groups: Record<string, string | undefined>): string {
  return template.replace(EXPRESSION, (_whole, op: string, specs: string) => {
    const values = specs.split(',').map((spec) => groups[spec.replace(/(\*|:\d{1,4})$/, '')] ?? '').filter((v) => v !== '');
    const encode = op === '+' || op === '#' ? (v: string) => encodeURI(v) : (v: string) => encodeURIComponent(v);
    const joined = values.map(encode).join(',');
    return op === '#' && joined !== '' ? `#${joined}` : joined;
  });
}

/** A linkifier ready to apply. */
export interface CompiledLinkifier {
  regex: RE2JS;
  url_template: string;
}

const compiled = new WeakMap<readonly { pattern: string; url_template: string }[], CompiledLinkifier[]>();

/** The organization's linkifiers compiled, once per version of its list (the list is replaced on change). */
export function compileLinkifiers(list: readonly { pattern: string; url_template: string }[]): CompiledLinkifier[] {
  let out = compiled.get(list);
  if (!out) {
    out = [];
    for (const l of list) {
      try {
        out.push({ regex: RE2JS.compile(l.pattern), url_template: l.url_template });
      } catch {
        // Checked when added; a pattern this engine refuses is skipped, not fatal.
      }
    }
    compiled.set(list, out);
  }
  return out;
}

const BEFORE = /[\s'"(,:<]/;
const WORD_AFTER = /[\p{L}\p{N}_]/u;

/** A linkifier's first acceptable match from some offset on (its groups read at once: the matcher moves on). */
interface Candidate {
  start: number;
  end: number;
  groups: Record<string, string>;
}

/** Counts of the work one `linkifierMatches` call did, for tests that bound it. */
export interface LinkifierWork {
  /** Regex searches run (`find`), over every linkifier. */
  finds: number;
}

/** The first acceptable match of a linkifier in `text` at or after `from` (its matcher is `m`), or null. */
function firstAcceptable(l: CompiledLinkifier, m: Matcher, text: string, from: number, openStart: boolean, openEnd: boolean, work?: LinkifierWork): Candidate | null {
  let at = from;
  while (at <= text.length) {
    if (work) work.finds++;
    if (!m.find(at)) return null;
    const start = m.start();
    const end = m.end();
    const okBefore = start === 0 ? openStart : BEFORE.test(text[start - 1]);
    const okAfter = end === text.length ? openEnd : !WORD_AFTER.test(text[end]);
    if (end > start && okBefore && okAfter) {
      const groups: Record<string, string> = {};
      for (const name of Object.keys(l.regex.namedGroups())) groups[name] = m.group(name) ?? '';
      return { start, end, groups };
    }
    // An acceptable match starts after a boundary character: searching again from each
    // position instead made a 10,000-character word that ends in a near miss ('AAA…A-1x'
    // for [A-Z]+-[0-9]+) search the rest of the text 10,000 times.
    at = start + 1;
    while (at < text.length && !BEFORE.test(text[at - 1])) at++;
    if (at >= text.length) return null;
  }
  return null;
}

/** Whether any of the linkifiers matches in `text` (as `linkifierMatches` would find one), stopping at the first. */
export function hasLinkifierMatch(text: string, linkifiers: CompiledLinkifier[], openStart = true, openEnd = true): boolean {
  return linkifiers.some((l) => firstAcceptable(l, l.regex.matcher(text), text, 0, openStart, openEnd) !== null);
}

/**
 * The linkifier matches in `text`, left to right, not overlapping: at each place the
 * earliest match wins, and at the same place the linkifier listed first. As Zulip's
 * pattern wrapping, a match starts at the beginning or after whitespace, a quote,
 * `(`, `,`, `:` or `<`, and is not followed by a word character. `openStart` and
 * `openEnd` say whether the text's edges are such boundaries.
 *
 * Each linkifier keeps its next acceptable match; once a match is taken, only the
 * linkifiers whose kept match it overlaps search again, from its end. So each linkifier
 * searches forward through the text about once, whatever the number of matches: the
 * work is linear in linkifiers × text, not linkifiers × matches × text (100 linkifiers
 * and 1,600 matches in a 10,000-character message searched the text 160,000 times).
 */
export function linkifierMatches(text: string, linkifiers: CompiledLinkifier[], openStart = true, openEnd = true, work?: LinkifierWork): Array<{ start: number; end: number; url: string }> {
  const out: Array<{ start: number; end: number; url: string }> = [];
  if (linkifiers.length === 0) return out;
  const matchers = linkifiers.map((l) => l.regex.matcher(text));
  const next = (i: number, from: number): Candidate | null => firstAcceptable(linkifiers[i], matchers[i], text, from, openStart, openEnd, work);
  const kept = linkifiers.map((_, i) => next(i, 0));
  for (;;) {
    let best = -1;
    for (let i = 0; i < kept.length; i++) {
      const c = kept[i];
      if (c && (best < 0 || c.start < kept[best]!.start)) best = i;
    }
    if (best < 0) break;
    const { start, end, groups } = kept[best]!;
    out.push({ start, end, url: expandTemplate(linkifiers[best].url_template, groups) });
    if (end >= text.length) break;
    // A kept match that starts before `end` overlaps the one taken (none starts before its start).
    for (let i = 0; i < kept.length; i++) if (kept[i] && kept[i]!.start < end) kept[i] = next(i, end);
  }
  return out;
}
