/**
 * Zulip's list rules, as a line preprocessor (Zulip's `MarkdownListPreprocessor`
 * in `zerver/lib/markdown/__init__.py`): a list may hang directly off a line of
 * text, with no blank line before it, and a bulleted list may directly follow a
 * numbered one (and back). Zulip inserts the missing blank line; so do we. Lines
 * inside fenced code (not quotes) are left alone.
 *
 * Zulip nests list items by 2 spaces (its list processors use a tab length of 2);
 * CommonMark nests by the width of the parent's marker. `nestByTwo` re-indents
 * the items of a list so that each 2 spaces of indent become one level that
 * markdown-it recognises, and writes every bullet as `*` (Python-Markdown
 * continues one list across `*`, `-` and `+`).
 */
const FENCE_RE = /^(~{3,}|`{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+,\-./#]+)[ ]*(?:[^ ~`][^~`]*)?\}?)?$/;
const LI_RE = /^[ ]*([*+-]|\d\.)[ ]+(.*)/;

/** Inserts a blank line before a list that hangs off a block (see the module comment). */
export function hangingLists(lines: string[]): string[] {
  const copy: string[] = [];
  const open: { fence: string; code: boolean }[] = [];
  let inCode = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    copy.push(line);
    if (i === lines.length - 1) break;
    const m = FENCE_RE.exec(line);
    if (m) {
      const lang = m[2];
      const closes = !lang && open.length > 0 && open[open.length - 1].fence === m[1];
      if (closes) open.pop();
      else open.push({ fence: m[1], code: lang !== 'quote' && lang !== 'quoted' });
      inCode = open.some((f) => f.code);
    }
    const li1 = LI_RE.exec(line);
    const li2 = LI_RE.exec(lines[i + 1]);
    if (!inCode && line !== '' && ((li2 && !li1) || (li1 && li2 && (li1[1].length === 1) !== (li2[1].length === 1)))) copy.push('');
  }
  return copy;
}

const HR_RE = /^ {0,3}([*_-])(?: *\1){2,} *$/;
const ITEM_RE = /^( *)([*+-]|\d{1,9}[.)])( +|$)/;

/**
 * Doubles the indent of lines within a list, so Zulip's 2-space nesting reads as
 * nesting in CommonMark. A list starts at an item indented less than 4 spaces
 * (more would be an indented code block) and ends at a line that is neither
 * blank, indented, nor an item.
 */
export function nestByTwo(lines: string[]): string[] {
  let inList = false;
  let prevBlank = true;
  const out: string[] = [];
  for (const line of lines) {
    const blank = line.trim() === '';
    const indent = line.length - line.trimStart().length;
    const item = ITEM_RE.exec(line);
    if (!inList && item && indent < 4 && (prevBlank || indent === 0)) inList = true;
    else if (inList && !blank && indent === 0 && !item && prevBlank) inList = false;
    let kept = inList && !blank && indent > 0 && indent < 16 ? ' '.repeat(indent * 2) + line.slice(indent) : line;
    // Python-Markdown's lists take any of `*`, `-`, `+` as the same list; CommonMark starts a new list.
    if (inList && item && /^[*+-]$/.test(item[2]) && !HR_RE.test(line)) kept = kept.replace(/^( *)[*+-]/, '$1*');
    out.push(kept);
    prevBlank = blank;
  }
  return out;
}

const QUOTE_LINE = /^ {0,3}>/;

/**
 * Python-Markdown's quote takes every line up to the next blank line, `>` or not
 * (`>\n>\ntext` quotes `text`); CommonMark only continues a quoted paragraph.
 * Lines that follow a quote line without a blank line get a `> ` here.
 */
export function lazyQuotes(lines: string[]): string[] {
  let inQuote = false;
  return lines.map((line) => {
    if (line.trim() === '') {
      inQuote = false;
      return line;
    }
    if (QUOTE_LINE.test(line)) {
      inQuote = true;
      return line;
    }
    return inQuote ? '> ' + line : line;
  });
}
