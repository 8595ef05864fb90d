/**
 * The worst-case requests of the `stall` scenario, built from route records: for each
 * route, its parameters at their documented limits (a schema's `maxLength`, `maxItems`,
 * `maximum`, or the server's own limits: `max_message_length`, `max_topic_length`, ...);
 * where nothing bounds a value, at the request budget (the body limit, or the mode's cap
 * of it). Routes whose content is Markdown get one request per expensive Markdown pattern.
 * Routes with a JSON parameter also get it nested as deep as the budget allows.
 * `bodyLimitCases` are the requests whose cost comes before any route's own work (a body
 * of tiny parameters, a nested JSON value, as large as the body limit allows): they are
 * sent to one route of each kind of decoding, not to all.
 *
 * Values that name something (a channel, a message, a user) name the fixture's, so that a
 * request does the route's real work instead of failing its first lookup.
 */
import { MAX_ALERT_WORD_LENGTH } from '../actors/areas/alert_words.js';
import { LIMITS } from '../actors/rules/messages.js';
import { MAX_NARROW_TERMS, MAX_SEARCH_LENGTH } from '../actors/engines/narrow.js';
import type { RouteRecord, Schema } from '../src/http/route.js';
import { basicAuth, encodeForm, type Credentials } from './api.js';
import type { Fixture } from './stall_fixture.js';

/** One request to measure. */
export interface StallCase {
  /** `METHOD /path`, as the route record spells it; `board METHOD /path` for the board's. */
  route: string;
  api: 'chat' | 'board';
  /** What makes it worst, in a few words. */
  shape: string;
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Bytes on the wire (body and query), for the table. */
  bytes: number;
}

/** What the builder needs besides the route. */
export interface CaseContext {
  fx: Fixture;
  /** Ids of objects the scenario created for path parameters, by parameter name. */
  ids: Record<string, string | number>;
  /** Bytes one unbounded value (or a flood, or a nesting) may take. */
  budget: number;
  /** Most items in an unbounded array (the machine's memory, not the server, sets this cap). */
  maxItems: number;
  /** Seconds since the epoch, for timestamps in the future. */
  nowS: number;
}

/** Longest URL the server takes (`HTTP_LIMITS.maxUrlChars` is 8192); longer parameters go in a form body. */
const QUERY_CHARS = 8000;

/** Documented limits of string parameters, by name, where the schema has none. */
const STRING_LIMITS: Record<string, number> = {
  content: LIMITS.max_message_length,
  topic: LIMITS.max_topic_length,
  topic_name: LIMITS.max_topic_length,
  new_name: LIMITS.max_stream_name_length,
  full_name: LIMITS.max_user_name_length,
  status_text: 60,
  note: 1000,
};

/** Markdown patterns known to be costly for a renderer, each filling `n` characters. */
export const MARKDOWN: Record<string, (n: number, fx: Fixture) => string> = {
  'md [[[': (n) => '['.repeat(n),
  'md linkifier matches': (n, fx) => fill(n, (i) => `L${i % Math.max(1, fx.linkifierIds.length)}-${i} `),
  'md emphasis and links': (n) => fill(n, (i) => (i % 2 ? `*a **b [x](http://e.com/${i} _c ` : '`` <a ')),
  'md mentions and alert words': (n) => fill(n, (i) => `@**User ${i}** #**stall-${i % 50}** alert${i % 100} :smile: `),
  // Highlighted code: dense Python tokens and unclosed quotes, and shell heredocs that never close.
  'md python code block': (n) => '```python\n' + fill(n - 10, (i) => (i % 8 ? `a.b(x[${i}], "y\\` : `'\n`)),
  'md shell code block': (n) => '```sh\n' + fill(n - 6, (i) => `<<e${i} `),
};

function fill(n: number, piece: (i: number) => string): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < n; i++) {
    const p = piece(i);
    parts.push(p);
    size += p.length;
  }
  return parts.join('').slice(0, n);
}

/** Parameters whose content is Markdown that the server renders or stores for rendering. */
const MARKDOWN_PARAMS = new Set(['content', 'welcome_message_custom_text']);

type Value = unknown;
const OMIT = undefined;

/** Integer arrays that name existing objects, by parameter name. */
function idsFor(name: string, route: string, ctx: CaseContext): number[] | undefined {
  const { fx } = ctx;
  if (['messages', 'msg_ids'].includes(name)) return fx.messageIds;
  if (['principals', 'members', 'subscribers', 'user_ids', 'to'].includes(name)) return fx.userIds;
  if (name === 'stream_ids') return fx.channelIds;
  if (name === 'ordered_linkifier_ids') return fx.linkifierIds;
  if ((name === 'add' || name === 'delete') && route.includes('/user_groups/')) return fx.userIds;
  return undefined;
}

/** A value that names something of the fixture's, for parameters that must. */
function named(name: string, schema: Schema, route: string, ctx: CaseContext): Value {
  const { fx, ids } = ctx;
  if (name in ids) return ids[name];
  switch (name) {
    case 'message_id': return fx.ownMessageId;
    case 'stream_id': return fx.bigChannel.id;
    case 'user_id': return route.startsWith('DELETE') ? fx.sacrificial.user_id : fx.member.user_id;
    case 'muted_user_id': return fx.member.user_id;
    case 'realm_id': case 'realm_id_str': return 1;
    case 'sender_id': return fx.owner.user_id;
    case 'num_before': case 'num_after': return 2500;
    case 'last_event_id': return -1;
    case 'dont_block': return true;
    case 'anchor': return 'newest';
    case 'scheduled_delivery_timestamp': return ctx.nowS + 86_400;
    case 'stream': return fx.bigChannel.name;
    case 'email': case 'user_id_or_email': return fx.member.email;
    case 'username': return fx.owner.email;
    case 'status': return 'active';
    case 'flag': return 'read';
    case 'emoji_name': return route.includes('/realm/emoji') ? 'stall_emoji' : 'smile';
    case 'visibility_policy': return 1;
    case 'field_type': return 1;
    case 'report_type': return 'spam';
    case 'pattern': return `STALL(?P<id>[0-9]+)`;
    case 'url_template': return route.includes('playgrounds') ? 'https://play.example/?c={code}' : 'https://stall.example/{id}';
    case 'pygments_language': return 'Python';
    case 'provider': return 'jitsi';
  }
  if (name === 'type' && route.includes('messages')) return route.includes('scheduled') ? 'stream' : 'stream';
  if (name === 'to' && route === 'POST /api/v1/messages') return fx.bigChannel.name;
  if (name === 'to' && route.includes('scheduled_messages')) return fx.bigChannel.id;
  if (name === 'narrow') return maximalNarrow(fx);
  return undefined;
}

/** The most a narrow may hold: a channel, a topic, and search terms up to the term and length limits. */
function maximalNarrow(fx: Fixture): unknown[] {
  const words = fill(MAX_SEARCH_LENGTH, (i) => ['quick ', 'brown ', 'fox ', 'lazy ', 'dog '][i % 5]).trim();
  const terms: unknown[] = [{ operator: 'channel', operand: fx.history.name }, { operator: 'topic', operand: fx.topics[1], negated: true }];
  while (terms.length < MAX_NARROW_TERMS) terms.push({ operator: 'search', operand: words });
  return terms;
}

/** A value for `schema` at its limits; OMIT for optional parameters that only toggle. */
function valueFor(name: string, schema: Schema, required: boolean, route: string, ctx: CaseContext, budget: number, markdown?: string): Value {
  const n = named(name, schema, route, ctx);
  if (n !== undefined) return n;
  const s = schema as Record<string, any>;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  const alt = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alt) return valueFor(name, alt.find((a: any) => a.type !== 'null') ?? alt[0], required, route, ctx, budget, markdown);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'boolean':
      return required || name.startsWith('include_') ? true : OMIT;
    case 'integer':
    case 'number':
      if (typeof s.maximum === 'number') return s.maximum;
      return required ? Math.max(1, s.minimum ?? 1) : OMIT;
    case 'string':
      return stringAtLimit(name, s, budget, markdown, ctx);
    case 'array':
      return arrayAtLimit(name, s, route, ctx, budget, markdown);
    case 'object':
      return objectAtLimit(s, route, ctx, budget, markdown);
    default:
      return required ? 'x' : OMIT;
  }
}

function stringAtLimit(name: string, s: Record<string, any>, budget: number, markdown: string | undefined, ctx: CaseContext): string {
  const limit = s.maxLength ?? s['x-maxCodePoints'] ?? s['x-maxUtf8Bytes'] ?? STRING_LIMITS[name];
  if (markdown && MARKDOWN_PARAMS.has(name)) return MARKDOWN[markdown](budget, ctx.fx);
  // Over a documented limit the request must be refused or cut; the budget shows which it costs.
  return 'x'.repeat(limit !== undefined ? Math.min(limit, budget) : budget);
}

function arrayAtLimit(name: string, s: Record<string, any>, route: string, ctx: CaseContext, budget: number, markdown?: string): unknown[] {
  const cap = Math.min(s.maxItems ?? Infinity, ctx.maxItems);
  const ids = idsFor(name, route, ctx);
  if (ids) return ids.slice(0, cap);
  const items = (s.items ?? {}) as Record<string, any>;
  const itemType = Array.isArray(items.type) ? items.type[0] : items.type;
  if (itemType === 'integer') return Array.from({ length: Math.min(cap, Math.floor(budget / 8)) }, (_, i) => i + 1);
  if (itemType === 'string') {
    const len = name === 'alert_words' ? Math.min(8, MAX_ALERT_WORD_LENGTH) : 8;
    return Array.from({ length: Math.min(cap, Math.floor(budget / (len + 3))) }, (_, i) => `w${i}`.padEnd(len, 'x'));
  }
  if (itemType === 'object') {
    const one = JSON.stringify(objectAtLimit(items, route, ctx, 64, markdown, 0)).length + 1;
    const count = Math.min(cap, Math.max(1, Math.floor(budget / one)));
    return Array.from({ length: count }, (_, i) => objectAtLimit(items, route, ctx, 64, markdown, i));
  }
  return Array.from({ length: Math.min(cap, Math.floor(budget / 2)) }, () => 1);
}

/** An object with its required properties filled; `index` makes names distinct across array items. */
function objectAtLimit(s: Record<string, any>, route: string, ctx: CaseContext, budget: number, markdown?: string, index = 0): Record<string, unknown> {
  if (s.patternProperties || (!s.properties && s.additionalProperties !== false)) {
    const count = Math.min(ctx.maxItems, Math.floor(budget / 12));
    return Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));
  }
  const out: Record<string, unknown> = {};
  for (const k of s.required ?? []) {
    const prop = s.properties?.[k] ?? {};
    if (k === 'name') out[k] = `stall-new-${index}`;
    else if (k === 'stream_id') out[k] = ctx.fx.channelIds[index % ctx.fx.channelIds.length];
    else if (k === 'property') out[k] = 'pin_to_top';
    else if (k === 'value') out[k] = true;
    else if (k === 'to') out[k] = [ctx.fx.bigChannel.id];
    else if (k === 'type' && Array.isArray(prop.enum)) out[k] = prop.enum.includes('stream') ? 'stream' : prop.enum[0];
    else if (k === 'id') out[k] = 1;
    else out[k] = valueFor(k, prop, true, route, ctx, budget, markdown) ?? 'x';
  }
  return out;
}

/** Form-encodes `params` into the query when short, else into a form body (the server reads one on every method). */
function chatRequest(route: RouteRecord, shape: string, who: Credentials, pathParams: Record<string, string>, params: Record<string, unknown>, extra = ''): StallCase {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathParams[name] ?? '1'));
  const encoded = [encodeForm(params), extra].filter(Boolean).join('&');
  const headers: Record<string, string> = route.auth === 'user' ? { Authorization: basicAuth(who) } : {};
  const inQuery = (route.method === 'GET' || route.method === 'DELETE' || route.method === 'HEAD') && encoded.length <= QUERY_CHARS;
  if (inQuery) return { route: key(route), api: 'chat', shape, method: route.method, path: encoded ? `${path}?${encoded}` : path, headers, bytes: encoded.length };
  headers['Content-Type'] = 'application/x-www-form-urlencoded';
  return { route: key(route), api: 'chat', shape, method: route.method, path, headers, body: encoded, bytes: encoded.length };
}

/** `METHOD /path`, as the route record spells it. */
export function key(route: RouteRecord): string {
  return `${route.method} ${route.path}`;
}

/** How the table names a route: board routes say so (both APIs have a `POST /api/v1/messages`). */
export function label(route: RouteRecord): string {
  return route.api === 'board' ? `board ${key(route)}` : key(route);
}

/** Who sends a route's requests: deactivating oneself must not be the owner. */
function sender(route: RouteRecord, ctx: CaseContext): Credentials {
  if (key(route) === 'DELETE /api/v1/users/me') return ctx.fx.sacrificial;
  return ctx.fx.owner;
}

/** `n` tiny distinct parameters, `p0=&p1=&...`, about `budget` bytes. */
function flood(budget: number): string {
  return fill(budget, (i) => `p${i}=&`).replace(/&[^&]*$/, '');
}

/** JSON arrays nested as deep as `budget` bytes allow. */
function nested(budget: number): string {
  const depth = Math.floor(budget / 2);
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** A multipart body with one file of `bytes` bytes (uploads, custom emoji). */
function multipartFile(bytes: number): { contentType: string; body: string } {
  const boundary = 'stallBOUNDARY';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="stall.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n${'x'.repeat(Math.max(0, bytes - 8))}\r\n--${boundary}--\r\n`;
  return { contentType: `multipart/form-data; boundary=${boundary}`, body };
}

/** The chat cases of one route. */
function chatCases(route: RouteRecord, ctx: CaseContext): StallCase[] {
  const k = key(route);
  const who = sender(route, ctx);
  const pathParams: Record<string, string> = {};
  for (const [name, spec] of Object.entries(route.params)) {
    if (spec.in !== 'path') continue;
    const v = named(name, spec.schema, k, ctx);
    pathParams[name] = String(v ?? 1);
  }
  const form = Object.entries(route.params).filter(([, spec]) => spec.in !== 'path');
  const strings = form.filter(([, spec]) => /"(string|array|object)"/.test(JSON.stringify(spec.schema))).length;
  // Several unbounded values share the budget, so that the body stays within it.
  const share = Math.max(16, Math.floor(ctx.budget / Math.max(1, strings)));
  const paramsAt = (markdown?: string): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [name, spec] of form) {
      const v = valueFor(name, spec.schema, spec.required === true, k, ctx, share, markdown);
      if (v !== undefined) out[name] = v;
    }
    return out;
  };
  if (route.streamBody) {
    const file = multipartFile(ctx.budget);
    const c = chatRequest(route, `a ${fmtBytes(ctx.budget)} file`, who, pathParams, {});
    const tus: Record<string, string> = k.startsWith('PATCH /api/v1/tus') ? { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' } : { 'Content-Type': file.contentType };
    return [{ ...c, headers: { ...c.headers, ...tus }, body: file.body, bytes: file.body.length }];
  }
  const cases: StallCase[] = [];
  const markdownParams = form.filter(([name]) => MARKDOWN_PARAMS.has(name));
  if (markdownParams.length > 0) for (const pattern of Object.keys(MARKDOWN)) cases.push(chatRequest(route, `${pattern}, ${fmtBytes(share)}`, who, pathParams, paramsAt(pattern)));
  else cases.push(chatRequest(route, 'every value at its limit', who, pathParams, paramsAt()));
  const base = paramsAt();
  const json = form.find(([, spec]) => /"(array|object)"/.test(JSON.stringify(spec.schema)));
  if (json) cases.push(chatRequest(route, `${json[0]} nested ${fmtBytes(ctx.budget)} deep`, who, pathParams, { ...base, [json[0]]: nested(ctx.budget) }));
  if (route.path.startsWith('/api/v1/tus')) for (const c of cases) c.headers['Tus-Resumable'] = '1.0.0';
  return cases;
}

/** The board cases of one route: its JSON body at the size ceiling, as a flat object and nested; its query at its limits. */
function boardCases(route: RouteRecord, ctx: CaseContext): StallCase[] {
  const k = key(route);
  const params: Record<string, string> = {};
  for (const [name, spec] of Object.entries(route.params)) {
    if (spec.in === 'path') continue;
    const v = valueFor(name, spec.schema, spec.required === true, k, ctx, 1024);
    if (v !== undefined) params[name] = String(v);
  }
  const path = route.path.replace(/\{(\w+)\}/g, () => 'm1');
  const query = encodeForm(params);
  const url = query ? `${path}?${query}` : path;
  const base = { route: label(route), api: 'board' as const, method: route.method, path: url, headers: {} as Record<string, string> };
  if (!route.body) return [{ ...base, shape: 'every value at its limit', bytes: query.length }];
  const limit = route.body.maxBytes;
  const valid = JSON.stringify(objectAtLimit(route.body.schema as Record<string, any>, k, { ...ctx, budget: limit }, limit));
  const json = { 'Content-Type': 'application/json' };
  const flat = `{${fill(limit - 2, (i) => `"k${i}":1,`).replace(/,[^,]*$/, '')}}`;
  return [
    { ...base, shape: 'every value at its limit', headers: json, body: valid, bytes: valid.length },
    { ...base, shape: `${fmtBytes(limit)} nested`, headers: json, body: nested(limit), bytes: limit },
    { ...base, shape: `${fmtBytes(limit)} of keys`, headers: json, body: flat, bytes: flat.length },
  ];
}

/**
 * Chat routes that stand for each way a request is decoded: a form body without
 * credentials, a form body with them, a query and a body on a GET. (Board bodies have
 * ceilings of their own, which every board route's cases reach.)
 */
export const BODY_LIMIT_ROUTES = ['POST /api/v1/fetch_api_key', 'POST /api/v1/messages', 'GET /api/v1/messages'];

/** A body of tiny parameters, and one JSON parameter nested, each as large as `limit`. */
export function bodyLimitCases(route: RouteRecord, ctx: CaseContext, limit: number): StallCase[] {
  const big = { ...ctx, budget: limit };
  const base = chatCases(route, ctx)[0];
  const floodCase: StallCase = { ...base, shape: `${fmtBytes(limit)} of tiny parameters`, method: base.method, headers: { ...base.headers, 'Content-Type': 'application/x-www-form-urlencoded' } };
  const body = flood(limit);
  floodCase.body = body;
  floodCase.bytes = body.length;
  // Brackets take three bytes each once percent-encoded, and the other parameters come along: fit the whole body under the limit.
  let nestedCase = chatCases({ ...route }, { ...big, budget: Math.floor(limit / 3) }).find((c) => c.shape.includes('nested'));
  if (nestedCase && nestedCase.bytes > limit) {
    const fitted = Math.floor(limit / 3) - Math.ceil((nestedCase.bytes - limit) / 3) - 1024;
    nestedCase = chatCases(route, { ...big, budget: fitted }).find((c) => c.shape.includes('nested'));
  }
  return nestedCase ? [floodCase, nestedCase] : [floodCase];
}

/** Every case of `route`. */
export function casesFor(route: RouteRecord, ctx: CaseContext): StallCase[] {
  return route.api === 'board' ? boardCases(route, ctx) : chatCases(route, ctx);
}

export function fmtBytes(n: number): string {
  if (n >= 1 << 20) return `${+(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}
