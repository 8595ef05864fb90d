/**
 * `<time:…>` timestamps, as Zulip's `Timestamp` pattern
 * (`zerver/lib/markdown/__init__.py`): the text between `<time:` and the first `>`
 * is parsed as a date (Zulip uses `dateutil.parser.parse`, falling back to a Unix
 * time); a valid one renders `<time datetime="2017-06-05T22:30:00Z">text as typed</time>`
 * (no zone means UTC), anything else `<span class="timestamp-error">Invalid time format: text</span>`.
 *
 * dateutil accepts nearly any date; this parser takes the forms people type:
 * ISO 8601 (`2017-06-05T22:30:00+02:00`, `2017-06-05 22:30`), Unix seconds, and
 * words in any order — day (`5`, `5th`), month name, 4-digit year, time
 * (`10:30`, `10:30:15`, `10:30PM`, `10 pm`) and zone (`UTC`, `IST`, `+05:30`).
 * A missing date is today (UTC), as dateutil's default.
 */
import type { MarkdownIt } from 'markdown-it';
import type { StateInline } from 'markdown-it';
import { escapeText } from './env.js';

const TIME_RE = /<time:([^>]*?)>/y;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** Zone abbreviations, in minutes east of UTC (a subset of Zulip's `common_timezones`). */
const ZONES: Record<string, number> = {
  utc: 0, gmt: 0, z: 0, ut: 0, wet: 0, west: 60, bst: 60, cet: 60, cest: 120, eet: 120, eest: 180, msk: 180,
  ist: 330, pkt: 300, sgt: 480, hkt: 480, cst: -360, cdt: -300, jst: 540, kst: 540, aest: 600, aedt: 660,
  nzst: 720, nzdt: 780, est: -300, edt: -240, mst: -420, mdt: -360, pst: -480, pdt: -420, akst: -540,
  akdt: -480, hst: -600,
};

function iso(ms: number): string | null {
  const d = new Date(ms);
  if (!Number.isFinite(d.getTime())) return null;
  const year = d.getUTCFullYear();
  if (year < 1 || year > 9999) return null;
  const s = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const frac = d.getUTCMilliseconds();
  return frac === 0 ? s.slice(0, 19) + 'Z' : s.slice(0, 19) + '.' + String(frac * 1000).padStart(6, '0') + 'Z';
}

function utcMs(y: number, mo: number, d: number, h: number, mi: number, s: number, offset: number): number | null {
  if (mo < 0 || mo > 11 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59) return null;
  const ms = Date.UTC(y, mo, d, h, mi, Math.floor(s), Math.round((s % 1) * 1000));
  const check = new Date(Date.UTC(y, mo, d));
  if (check.getUTCMonth() !== mo) return null;
  return ms - offset * 60000;
}

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

function offsetOf(s: string): number | null {
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(s);
  if (!m) return null;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

/** The ISO time a `<time:…>` text means, or null. */
export function parseTime(input: string, now = Date.now()): string | null {
  const text = input.trim();
  if (text === '') return null;
  const isoMatch = ISO_RE.exec(text);
  if (isoMatch) {
    const [, y, mo, d, h = '0', mi = '0', s = '0', zone] = isoMatch;
    const offset = zone === undefined || /^z$/i.test(zone) ? 0 : offsetOf(zone);
    if (offset === null) return null;
    const ms = utcMs(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), offset);
    return ms === null ? null : iso(ms);
  }
  if (/^-?\d+(\.\d+)?$/.test(text)) {
    const seconds = Number(text);
    return Number.isFinite(seconds) ? iso(seconds * 1000) : null;
  }
  const today = new Date(now);
  let year: number | null = null;
  let month: number | null = null;
  let day: number | null = null;
  let hour = 0;
  let minute = 0;
  let second = 0;
  let meridiem: 'am' | 'pm' | null = null;
  let offset = 0;
  let sawTime = false;
  const tokens = text.toLowerCase().split(/[\s,]+/).filter((t) => t !== '');
  for (const raw of tokens) {
    let t = raw;
    const ampm = /^(.*?)(a\.?m\.?|p\.?m\.?)$/.exec(t);
    if (ampm && (ampm[1] === '' || /\d$/.test(ampm[1]))) {
      meridiem = ampm[2].startsWith('a') ? 'am' : 'pm';
      t = ampm[1];
      if (t === '') continue;
    }
    let m: RegExpExecArray | null;
    if ((m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(t))) {
      if (sawTime) return null;
      sawTime = true;
      hour = Number(m[1]);
      minute = Number(m[2]);
      second = m[3] ? Number(m[3]) : 0;
    } else if ((m = /^(\d{1,2})(st|nd|rd|th)?$/.exec(t)) && (ampm || m[2] || day === null)) {
      if (ampm) {
        if (sawTime) return null;
        sawTime = true;
        hour = Number(m[1]);
      } else day = Number(m[1]);
    } else if (/^\d{4}$/.test(t) && year === null) year = Number(t);
    else if (t.length >= 3 && MONTHS.some((name) => t.startsWith(name)) && month === null && /^[a-z]+\.?$/.test(t)) {
      const index = MONTHS.findIndex((name) => t.startsWith(name));
      const full = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'][index];
      const word = t.replace(/\.$/, '');
      if (!full.startsWith(word) && !(index === 8 && word === 'sept')) return null;
      month = index;
    } else if (t in ZONES) offset = ZONES[t];
    else if (offsetOf(t) !== null) offset = offsetOf(t)!;
    else if (['at', 'on', 'the', 'of'].includes(t)) continue;
    else return null;
  }
  if (meridiem !== null) {
    if (hour < 1 || hour > 12) return null;
    if (meridiem === 'pm' && hour < 12) hour += 12;
    if (meridiem === 'am' && hour === 12) hour = 0;
  }
  if (year === null && month === null && day === null && !sawTime) return null;
  const ms = utcMs(year ?? today.getUTCFullYear(), month ?? today.getUTCMonth(), day ?? today.getUTCDate(), hour, minute, second, offset);
  return ms === null ? null : iso(ms);
}

function timestamp(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x3c) return false;
  TIME_RE.lastIndex = state.pos;
  const m = TIME_RE.exec(state.src);
  if (!m || m.index + m[0].length > state.posMax) return false;
  if (!silent) {
    const when = parseTime(m[1]);
    state.push('html_inline', '', 0).content =
      when === null
        ? `<span class="timestamp-error">Invalid time format: ${escapeText(m[1])}</span>`
        : `<time datetime="${when}">${escapeText(m[1])}</time>`;
  }
  state.pos += m[0].length;
  return true;
}

export function time(md: MarkdownIt): void {
  md.inline.ruler.before('link', 'zulip_time', timestamp);
}
