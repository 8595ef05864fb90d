/**
 * Widgets (Zulip's `zerver/lib/widget.py` and the widget validators of
 * `zerver/lib/validator.py`): the `widget` submessage a message starting with `/poll`
 * or `/todo` gets on send, the `widget_content` an API client may send instead, and
 * the checks on the submessages clients then attach (votes, new options, tasks).
 * Every error message is Zulip's, word for word; the checks look only at types, as
 * Zulip's do (a vote for an option that does not exist is the clients' to ignore).
 */
import { badRequest } from '../shared/errors.js';
import type { MessageMeta } from '../shared/types.js';

/** What a `widget` submessage holds: its type and its initial data. */
export interface WidgetContent {
  widget_type: string;
  extra_data: Record<string, unknown>;
}

/** The widget types a message's first word can ask for (`/poll`, `/todo`). */
const COMMAND_WIDGETS = ['poll', 'todo'];

/** Zulip's `MAX_IDX`, which its client widgets share: the highest option index and task key. */
const MAX_IDX = 1000;

/** Python's `str.splitlines()`: every line break Python knows, and no empty last line. */
function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A line with its list marker (`- `, `* `) taken off, as Zulip takes options and tasks. */
const unlisted = (line: string): string => line.trim().replace(/^\s*[-*]?\s*/, '');

/** The first line as a title (when it is not empty), and the non-empty unlisted items of the others. */
function titleAndItems(rest: string): { title: string; items: string[] } {
  const lines = splitLines(rest);
  let title = '';
  if (lines.length > 0 && lines[0] !== '') title = lines.shift()!.trim();
  return { title, items: lines.map(unlisted).filter((item) => item.length > 0) };
}

/**
 * The widget a message's content asks for (Zulip's `get_widget_data`): `/poll Question`
 * with one option per line, or `/todo Title` with one task per line (`task: description`).
 * Null for every other message.
 */
export function widgetOfContent(content: string): WidgetContent | null {
  const first = content.split(/\s+/)[0];
  if (!first.startsWith('/')) return null;
  const type = first.slice(1);
  if (!COMMAND_WIDGETS.includes(type)) return null;
  const { title, items } = titleAndItems(content.replace(first, ''));
  if (type === 'poll') return { widget_type: 'poll', extra_data: { question: title, options: items } };
  const tasks = items.map((item) => {
    const cut = item.indexOf(': ');
    return cut === -1 ? { task: item.trim(), desc: '' } : { task: item.slice(0, cut).trim(), desc: item.slice(cut + 2).trim() };
  });
  return { widget_type: 'todo', extra_data: { task_list_title: title, tasks } };
}

/**
 * JSON as Python's `json.dumps` writes it, which is how Zulip stores a widget
 * submessage's content: `", "` and `": "` between items, everything outside
 * printable ASCII escaped.
 */
export function pythonJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string') return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
    return JSON.stringify(value ?? null);
  }
  if (Array.isArray(value)) return '[' + value.map(pythonJson).join(', ') + ']';
  return '{' + Object.entries(value).map(([k, v]) => `${pythonJson(k)}: ${pythonJson(v)}`).join(', ') + '}';
}

/** The content of the `widget` submessage for `widget`. */
export function widgetSubmessageContent(widget: WidgetContent): string {
  return pythonJson({ widget_type: widget.widget_type, extra_data: widget.extra_data });
}

// Zulip's validators (`check_string`, `check_dict`, ...), with its messages.

/** A failed check: the message Zulip's `ValidationError` carries. */
class Invalid extends Error {}

type Check = (name: string, value: unknown) => void;

const isDict = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Python's `int`, which a JSON boolean also is (`True == 1`). */
function asInt(name: string, v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Invalid(`${name} is not an integer`);
  return v;
}

const checkString: Check = (name, v) => {
  if (typeof v !== 'string') throw new Invalid(`${name} is not a string`);
};
const checkBool: Check = (name, v) => {
  if (typeof v !== 'boolean') throw new Invalid(`${name} is not a boolean`);
};
const checkIntIn = (allowed: number[]): Check => (name, v) => {
  if (!allowed.includes(asInt(name, v))) throw new Invalid(`Invalid ${name}`);
};
const checkIntRange = (low: number, high: number): Check => (name, v) => {
  const n = asInt(name, v);
  if (n < low) throw new Invalid(`${name} is too small`);
  if (n > high) throw new Invalid(`${name} is too large`);
};
const checkList = (item: Check): Check => (name, v) => {
  if (!Array.isArray(v)) throw new Invalid(`${name} is not a list`);
  v.forEach((x, i) => item(`${name}[${i}]`, x));
};

/** Zulip's `check_dict` (and `check_dict_only` with `only`): required keys in order, then no others. */
const checkDict = (required: Array<[string, Check]>, only = false): Check => (name, v) => {
  if (!isDict(v)) throw new Invalid(`${name} is not a dict`);
  for (const [key, check] of required) {
    if (!(key in v)) throw new Invalid(`${key} key is missing from ${name}`);
    check(`${name}["${key}"]`, v[key]);
  }
  if (only) {
    const extra = Object.keys(v).filter((k) => !required.some(([key]) => key === k));
    if (extra.length > 0) throw new Invalid(`Unexpected arguments: ${extra.join(', ')}`);
  }
};
const checkDictOnly = (required: Array<[string, Check]>): Check => checkDict(required, true);

/** Runs a check, turning its failure into Zulip's 400. */
function enforce(check: () => void, prefix = ''): void {
  try {
    check();
  } catch (e) {
    if (e instanceof Invalid) throw badRequest(prefix + e.message);
    throw e;
  }
}

/**
 * The `widget_content` parameter of a send (Zulip's `check_widget_content`): JSON of a
 * widget Zulip accepts from API clients, which is only the `zform` of choices (the
 * buttons bots offer). Errors read "Widgets: ...", as in Zulip.
 */
export function checkWidgetContent(raw: string): WidgetContent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('Widgets: API programmer sent invalid JSON content');
  }
  enforce(() => {
    if (!isDict(parsed)) throw new Invalid('widget_content is not a dict');
    if (!('widget_type' in parsed)) throw new Invalid('widget_type is not in widget_content');
    if (!('extra_data' in parsed)) throw new Invalid('extra_data is not in widget_content');
    const extra = parsed.extra_data;
    if (!isDict(extra)) throw new Invalid('extra_data is not a dict');
    if (parsed.widget_type !== 'zform') throw new Invalid(`unknown widget type: ${String(parsed.widget_type)}`);
    if (!('type' in extra)) throw new Invalid('zform is missing type field');
    if (extra.type !== 'choices') throw new Invalid(`unknown zform type: ${String(extra.type)}`);
    const choice = checkDict([['short_name', checkString], ['long_name', checkString], ['reply', checkString]]);
    checkDict([['type', checkString], ['heading', checkString], ['choices', checkList(choice)]])('extra_data', extra);
  }, 'Widgets: ');
  const widget = parsed as { widget_type: string; extra_data: Record<string, unknown> };
  return { widget_type: widget.widget_type, extra_data: widget.extra_data };
}

/** Zulip's `validate_poll_data`: a vote, an edit of the question (its author only), or a new option. */
function checkPollData(data: unknown, isAuthor: boolean): void {
  checkDict([['type', checkString]])('poll data', data);
  const type = (data as { type: string }).type;
  if (type === 'vote') return checkDictOnly([['type', checkString], ['key', checkString], ['vote', checkIntIn([1, -1])]])('poll data', data);
  if (type === 'question') {
    if (!isAuthor) throw new Invalid("You can't edit a question unless you are the author.");
    return checkDictOnly([['type', checkString], ['question', checkString]])('poll data', data);
  }
  if (type === 'new_option') return checkDictOnly([['type', checkString], ['option', checkString], ['idx', checkIntRange(0, MAX_IDX)]])('poll data', data);
  throw new Invalid(`Unknown type for poll data: ${type}`);
}

/** Zulip's `validate_todo_data`: a new task, a task struck or unstruck, or a new title (its author only). */
function checkTodoData(data: unknown, isAuthor: boolean): void {
  checkDict([['type', checkString]])('todo data', data);
  const type = (data as { type: string }).type;
  if (type === 'new_task') {
    return checkDictOnly([['type', checkString], ['key', checkIntRange(0, MAX_IDX)], ['task', checkString], ['desc', checkString], ['completed', checkBool]])('todo data', data);
  }
  if (type === 'strike') return checkDictOnly([['type', checkString], ['key', checkString]])('todo data', data);
  if (type === 'new_task_list_title') {
    if (!isAuthor) throw new Invalid("You can't edit the task list title unless you are the author.");
    return checkDictOnly([['type', checkString], ['title', checkString]])('todo data', data);
  }
  throw new Invalid(`Unknown type for todo data: ${type}`);
}

/**
 * The type of a message's widget (Zulip's `get_widget_type`): the `widget_type` of its
 * first `widget` submessage, or null when it has none or that one is not such JSON.
 */
export function widgetTypeOf(m: MessageMeta): string | null {
  const widget = (m.submessages ?? []).find((s) => s.msg_type === 'widget');
  if (!widget) return null;
  try {
    const data: unknown = JSON.parse(widget.content);
    return isDict(data) && typeof data.widget_type === 'string' ? data.widget_type : null;
  } catch {
    return null;
  }
}

/**
 * Zulip's checks on a submessage `senderId` attaches to `m` (`process_submessage`):
 * only once the message's sender has attached one may others; the content is JSON;
 * and on a poll or a to-do list, it is one of that widget's operations.
 */
export function checkSubmessage(m: MessageMeta, senderId: number, content: string): void {
  if (m.sender_id !== senderId && !(m.submessages ?? []).some((s) => s.sender_id === m.sender_id)) {
    throw badRequest('You cannot attach a submessage to this message.');
  }
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    throw badRequest('Invalid json for submessage');
  }
  const type = widgetTypeOf(m);
  const isAuthor = m.sender_id === senderId;
  if (type === 'poll') enforce(() => checkPollData(data, isAuthor));
  if (type === 'todo') enforce(() => checkTodoData(data, isAuthor));
}
