/**
 * Alert words, as Zulip's `AlertWordNotificationProcessor`
 * (`zerver/lib/markdown/__init__.py`): a word (or phrase) alerts when it occurs,
 * case-insensitively, with a boundary on each side — the start or end of the
 * text, whitespace, or one of Zulip's punctuation sets (before: `(".,';[*`>`,
 * after: `)"?:.,';]!*\``). Text in code blocks and code spans does not count.
 */
const BEFORE = new Set([' ', '\n', '\t', '(', '"', '.', ',', "'", ';', '[', '*', '`', '>']);
const AFTER = new Set([' ', '\n', '\t', ')', '"', '?', ':', '.', ',', "'", ';', ']', '!', '*', '`']);

/** The message text without fenced or indented code blocks and code spans. */
function withoutCode(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  let fence: string | null = null;
  let prevBlank = true;
  for (const line of lines) {
    if (fence !== null) {
      if (line.trimEnd() === fence) fence = null;
      continue;
    }
    const m = /^(`{3,}|~{3,})\s*([^`~]*)$/.exec(line);
    if (m && !/^(quote|quoted|spoiler)\b/i.test(m[2].replace(/^[{.]/, ''))) {
      fence = m[1];
      continue;
    }
    if (prevBlank && /^( {4}|\t)/.test(line)) continue;
    kept.push(line);
    prevBlank = line.trim() === '';
  }
  return kept.join('\n').replace(/(`+)[^`][\s\S]*?\1/g, ' ');
}

/** Whether the message text (outside code spans/blocks, as Zulip's alert-word rule) contains any of the words, case-insensitively, at word boundaries. */
export function hasAlertWord(source: string, words: readonly string[]): boolean {
  if (words.length === 0) return false;
  const text = withoutCode(source).toLowerCase();
  for (const raw of words) {
    const word = raw.toLowerCase();
    if (word === '') continue;
    for (let at = text.indexOf(word); at !== -1; at = text.indexOf(word, at + 1)) {
      const end = at + word.length;
      if ((at === 0 || BEFORE.has(text[at - 1])) && (end >= text.length || AFTER.has(text[end]))) return true;
    }
  }
  return false;
}
