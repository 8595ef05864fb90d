/**
 * Alert words (Zulip's `zerver/actions/alert_words.py`): words a user wants to be
 * alerted about. A message that contains one of a recipient's words, outside code,
 * gets that recipient's `has_alert_word` flag, on send and again on every edit
 * (`alertedUsers`). The organization actor keeps them, for the users who have any,
 * so that a send looks at those users only.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import { badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { hasAlertWord } from '../engines/markdown/index.js';
import { codePointLength } from '../rules/messages.js';
import { toOwner } from '../render/events.js';
import { mapEntries, orgState } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Each user's alert words, for the users who have any (a send checks only these). */
    alertWords: Map<number, string[]>;
  }
}

orgState({ alertWords: mapEntries() });

export const MAX_ALERT_WORD_LENGTH = 100;

/**
 * The most alert words one user may hold (Parley's own cap; Zulip caps only their length).
 * Every message to a user is searched for each of their words, so the count bounds the
 * cost of each send as much as the cost of this request.
 */
export const MAX_ALERT_WORDS = 1000;

const tooMany = () => badRequest(`Too many alert words (limit: ${MAX_ALERT_WORDS})`);

/** A user's alert words are now these. */
export interface AlertWordsChanged { type: 'AlertWordsChanged'; org: number; user_id: number; words: string[] }
export interface ChangeAlertWords { type: 'CHANGE_ALERT_WORDS'; org: number; user_id: number; op: 'add' | 'remove'; words: string[] }

export const changeAlertWords = command({
  type: 'CHANGE_ALERT_WORDS',
  actor: 'org',
  decide(ctx: OrgContext, c: ChangeAlertWords): Decision<{ alert_words: string[] }, AlertWordsChanged> {
    const current = ctx.alertWords.get(c.user_id) ?? [];
    let next: string[];
    if (c.op === 'add') {
      if (c.words.length > MAX_ALERT_WORDS) throw tooMany();
      next = [...current];
      // One set of the words held, lowercased: each word is looked up once (linear, not words × held).
      const held = new Set(current.map((w) => w.toLowerCase()));
      c.words.forEach((raw, i) => {
        const word = raw.trim();
        if (word === '') throw badRequest(`alert_words[${i}] cannot be blank.`);
        if (codePointLength(word) > MAX_ALERT_WORD_LENGTH) throw badRequest(`alert_words[${i}] is too long (limit: ${MAX_ALERT_WORD_LENGTH} characters)`);
        const folded = word.toLowerCase();
        if (held.has(folded)) return;
        held.add(folded);
        next.push(word);
      });
      if (next.length > MAX_ALERT_WORDS) throw tooMany();
    } else {
      const gone = new Set(c.words.map((w) => w.trim().toLowerCase()));
      next = current.filter((w) => !gone.has(w.toLowerCase()));
    }
    const same = next.length === current.length && next.every((w, i) => w === current[i]);
    return { facts: same ? [] : [{ type: 'AlertWordsChanged', org: c.org, user_id: c.user_id, words: next }], value: { alert_words: next } };
  },
});

/** The users among `recipients` one of whose alert words the message content has. */
export function alertedUsers(org: OrgContext, content: string, recipients: (id: number) => boolean): number[] {
  const out: number[] = [];
  for (const [userId, words] of org.alertWords) if (recipients(userId) && hasAlertWord(content, words)) out.push(userId);
  return out;
}

const alertWordsChanged = orgFact<AlertWordsChanged>({
  type: 'AlertWordsChanged',
  apply(ctx, f) {
    if (f.words.length === 0) ctx.alertWords.delete(f.user_id);
    else ctx.alertWords.set(f.user_id, [...f.words]);
  },
  notify: (f, seq) => toOwner(f, seq, 'alert_words', { alert_words: f.words }),
});

export const alertWords = area({
  name: 'alert words',
  commands: [changeAlertWords],
  facts: [alertWordsChanged],
  register: [{ types: ['alert_words'], fill: (state, r, view) => void (state.alert_words = [...(view.org(r.org.id)!.alertWords.get(r.user.user_id) ?? [])]) }],
});
