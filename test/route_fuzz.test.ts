/**
 * Route fuzz: every chat and board route record, fed malformed input built from the
 * record itself (method, path, parameter schemas, body schema): values of the wrong
 * type, JSON of the wrong shape, oversized values, NULs, huge and negative numbers,
 * path parameters that are not ids, bytes outside UTF-8 (percent-encoded, raw in form
 * and multipart bodies, and as the U+FFFD a transport leaves for them), bad
 * credentials, unknown hosts and methods.
 *
 * Every case starts from a valid request for its route and breaks exactly one thing in
 * a way that makes the whole request invalid, so each must be refused: a 4xx (never a
 * 5xx) in the API's error shape (chat: `{result: "error", msg, code}` with the status
 * its code implies; board: an RFC 9457 problem document), nothing logged as an
 * internal error, and the state digest unchanged. A few cases are marked `maybe`: the
 * value passes every check this test knows of (an odd but well-typed string), so the
 * request may succeed; such a case must still never be a 5xx or a malformed error, and
 * after a success the state is simply re-read.
 *
 * Sharded: the chat routes are split over this file and `route_fuzz_2.test.ts` and
 * `route_fuzz_3.test.ts` (`PARLEY_FUZZ_SHARD=k/n`, default `1/3`; the board routes run
 * in the first), so that each file stays well inside tap's per-file timeout on a busy
 * two-core machine while tap runs them side by side. `PARLEY_FUZZ_SHARD=1/1` runs all.
 *
 * Seeded: `PARLEY_FUZZ_SEED` replays a run; `PARLEY_ROUTE_FUZZ_SCALE` (default 1)
 * multiplies the random part for longer local runs; `PARLEY_ROUTE_FUZZ_VERBOSE=1`
 * lists the maybe-valid cases that were accepted.
 */
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { IdSet } from '../actors/shared/id_set.js';
import { BOARD_ERRORS } from '../src/board/errors.js';
import { ChatApp } from '../src/http/chat_app.js';
import { type InjectRequest } from '../src/http/inject.js';
import { statusOf } from '../src/http/errors.js';
import { pathParamsOf, queryParamsOf, type RouteRecord, type Schema } from '../src/http/route.js';
import { Abortable } from '../src/http/types.js';
import { boardRoutes } from '../src/routes/board/index.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { boardFixture, challenge, type BoardFixture } from './board_helpers.js';
import { fakeBbb, fakeBouncer } from './fakes.js';
import { basicAuth, botCredentials, chatFixture, type Credentials, injectChecked } from './helpers.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { listChannelFolders } from '../actors/areas/channel_folders.js';
import { linkifierIds } from '../actors/areas/linkifiers.js';
import { profileFieldIds } from '../actors/areas/profile_fields.js';
import { exportProgress } from '../actors/areas/realm_exports.js';
import { prng } from './prng.js';
import { stateDigest } from './state.js';
import { lineLogger } from '../actors/core/logger.js';

const seed = Number(process.env.PARLEY_FUZZ_SEED ?? Date.now() % 1_000_000);
const [SHARD, SHARDS] = (process.env.PARLEY_FUZZ_SHARD ?? '1/3').split('/').map(Number);
if (!(SHARDS >= 1 && SHARD >= 1 && SHARD <= SHARDS)) throw new Error(`PARLEY_FUZZ_SHARD must be k/n, got ${process.env.PARLEY_FUZZ_SHARD}`);
const SCALE = Math.max(1, Number(process.env.PARLEY_ROUTE_FUZZ_SCALE ?? 1));
/** Random type-junk values tried per parameter (on top of the fixed ones). */
const JUNK_PER_PARAM = 6 * SCALE;
/** `PARLEY_ROUTE_FUZZ_VERBOSE=1` lists the maybe-valid cases that were accepted. */
const VERBOSE = process.env.PARLEY_ROUTE_FUZZ_VERBOSE === '1';
/** A request with no answer after this long is a failure, not a hang. */
const ANSWER_TIMEOUT_MS = 10_000;

const random = prng(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
function sample<T>(xs: readonly T[], n: number): T[] {
  const copy = [...xs];
  const out: T[] = [];
  while (out.length < n && copy.length > 0) out.push(copy.splice(Math.floor(random() * copy.length), 1)[0]);
  return out;
}

/** `invalid`: must be refused with state unchanged. `maybe`: may succeed (see the file comment). */
type Expect = 'invalid' | 'maybe';

interface Case {
  what: string;
  expect: Expect;
  req: InjectRequest;
  /** A path case of a route that creates what its path names (`namesInPath`): `{name}=segment`. */
  names?: string;
}

/**
 * Names that a route creating by path (an emoji's name) accepted from the path cases:
 * a later route's same path segment may then name something that exists (`DELETE` of
 * that emoji), so it is maybe-valid there too. Which routes share a process depends on
 * the shards, and so on how many routes there are.
 */
const namedInPath = new Set<string>();

/** ASCII-only, short: a label fit for a TAP line whatever the case holds. */
function label(s: string): string {
  const cut = s.length > 90 ? `${s.slice(0, 90)}...(${s.length} chars)` : s;
  return cut.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const MB = 1 << 20;
const deepArray = (n: number): string => '['.repeat(n) + ']'.repeat(n);
const deepObject = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

/**
 * Raw parameter values of every kind. Whether one is invalid for a given parameter is
 * decided by `definitelyInvalid`, from the parameter's schema.
 */
const JUNK: readonly string[] = [
  '', ' ', 'nope', 'x\u0000y', '\u0000', 'TRUE', 'yes', 'true ', '1.5', '-1', '-0', '1e3', '1e309', '0x10', ' 1', '1 ',
  '99999999999999999999', '-99999999999999999999', '9007199254740993', 'NaN', 'Infinity', '\u0661\u0662', 'null',
  '[]', '{}', '[1', '{"a":', '[1,]', "['a']", '[null]', '[[1]]', '["a"]', '[1.5]', '[-1]', '[true]', '{"a":1}',
  '[{"a":1}]', '"str"', '[1e999]', '["\\ud800"]', '"\\u0000"', '[{"name":5}]', '[{}]',
  deepArray(3000), deepObject(3000), '\u202eevil', 'ä\u0301', '😀',
];
/** Oversized values; one per route, so that the run stays short. */
const HUGE: readonly string[] = ['x'.repeat(MB), '9'.repeat(MB), `[${'1,'.repeat(200_000)}1]`, `["${'a'.repeat(MB)}"]`, `{"${'k'.repeat(MB)}":1}`];

// ---------------------------------------------------------------------------
// The invalidity oracle
// ---------------------------------------------------------------------------

const oracle = new Ajv({ strict: false, allowUnionTypes: true });
const compiled = new Map<Schema, ValidateFunction>();

/**
 * Every value a form string could reasonably be read as: itself, a number, a boolean,
 * its JSON. If the schema accepts none of them, no decoder can make the value valid.
 */
function readings(raw: string): unknown[] {
  const out: unknown[] = [raw];
  const n = Number(raw);
  if (raw.trim() !== '' && Number.isFinite(n)) out.push(n);
  if (/^(true|false)$/i.test(raw)) out.push(raw.toLowerCase() === 'true');
  try {
    out.push(JSON.parse(raw));
  } catch {
    // not JSON
  }
  return out;
}

function definitelyInvalid(schema: Schema, raw: string): boolean {
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = oracle.compile(schema)));
  return readings(raw).every((v) => !validate!(v));
}

// ---------------------------------------------------------------------------
// Answer checks
// ---------------------------------------------------------------------------

/** Why a chat answer is not a proper refusal, or null. */
function chatProblem(res: { status: number; headers: Record<string, string>; json: any }): string | null {
  if (res.status < 400 || res.status > 499) return `status ${res.status}`;
  if (!/^application\/json/.test(res.headers['content-type'] ?? '')) return `content-type ${res.headers['content-type']}`;
  const j = res.json;
  if (!j || typeof j !== 'object') return 'body is not JSON';
  if (j.result !== 'error') return `result ${JSON.stringify(j.result)}`;
  if (typeof j.msg !== 'string' || j.msg.length === 0) return 'msg missing';
  if (typeof j.code !== 'string') return 'code missing';
  // Zulip's ResourceNotFoundError is the one code with a status of its own: BAD_REQUEST with 404.
  const notFound = j.code === 'BAD_REQUEST' && res.status === 404;
  if (statusOf(j.code) !== res.status && !notFound) return `code ${j.code} implies ${statusOf(j.code)}, got ${res.status}`;
  return null;
}

/**
 * Why an answer of the tus endpoint is not a proper refusal, or null: tus clients read
 * only the status, so its own refusals are plain 4xx; what the chat pipeline refuses
 * first (credentials, Host, parameters) keeps Zulip's shape. Both say `Tus-Resumable`.
 */
function tusProblem(res: { status: number; headers: Record<string, string>; json: any }): string | null {
  if (res.headers['tus-resumable'] !== '1.0.0') return `Tus-Resumable ${res.headers['tus-resumable']}`;
  if (res.json !== undefined) return chatProblem(res);
  return res.status >= 400 && res.status <= 499 ? null : `status ${res.status}`;
}

/** Why a board answer is not a proper RFC 9457 refusal, or null. */
function boardProblem(res: { status: number; headers: Record<string, string>; json: any }): string | null {
  if (res.status < 400 || res.status > 499) return `status ${res.status}`;
  if (res.headers['content-type'] !== 'application/problem+json') return `content-type ${res.headers['content-type']}`;
  const j = res.json;
  if (!j || typeof j !== 'object') return 'body is not JSON';
  if (!(j.code in BOARD_ERRORS)) return `unknown code ${JSON.stringify(j.code)}`;
  if (BOARD_ERRORS[j.code as keyof typeof BOARD_ERRORS] !== res.status) return `code ${j.code} is not status ${res.status}`;
  if (j.type !== `urn:parley:board:error:${j.code}`) return `type ${JSON.stringify(j.type)}`;
  if (j.status !== res.status) return `status field ${j.status}`;
  if (typeof j.title !== 'string' || typeof j.detail !== 'string') return 'title or detail missing';
  if (j.field !== undefined && typeof j.field !== 'string') return 'field is not a string';
  return null;
}

/** Runs one request, refusing to wait forever for a parked answer. */
async function answer(app: Parameters<typeof injectChecked>[0], req: InjectRequest): Promise<Awaited<ReturnType<typeof injectChecked>> | 'timeout'> {
  const abort = new Abortable();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve('timeout');
    }, ANSWER_TIMEOUT_MS);
  });
  try {
    return await Promise.race([injectChecked(app, { ...req, abort }), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A known failure whose fix lies outside this test's files: reported with t.todo. */
interface Known {
  why: string;
  matches(c: Case, problem: string): boolean;
}

/**
 * Runs a route's cases and checks each answer. Problems are gathered per route so a
 * run reports every failing case, not just the first.
 */
async function runCases(
  t: Test,
  routeName: string,
  cases: Case[],
  opts: {
    app: Parameters<typeof injectChecked>[0];
    digest: () => string;
    problemOf: (res: any) => string | null;
    logs: string[];
    known: Known[];
    /** Valid requests the cases were derived from, sent last: each must succeed, which shows the cases failed for what they broke. */
    bases: InjectRequest[];
  },
): Promise<void> {
  const problems: string[] = [];
  const knownProblems = new Map<string, string[]>();
  let before = opts.digest();
  let refused = 0;
  let succeeded = 0;
  for (const c of cases) {
    const logged = opts.logs.length;
    const res = await answer(opts.app, c.req);
    // A redirect (the BigBlueButton join) is an answer too.
    const accepted = res !== 'timeout' && c.expect === 'maybe' && res.status >= 200 && res.status < 400;
    let problem: string | null = null;
    if (res === 'timeout') problem = `no answer within ${ANSWER_TIMEOUT_MS} ms`;
    else if (opts.logs.length > logged) problem = `internal error logged: ${label(opts.logs[opts.logs.length - 1].split('\n')[0])}`;
    else if (!accepted) problem = opts.problemOf(res);
    // A refusal must leave the state as it was; after a (maybe-valid) success it is simply re-read.
    const after = opts.digest();
    if (problem === null && !accepted && after !== before) problem = 'the state changed';
    before = after;
    if (accepted) {
      succeeded++;
      if (c.names) namedInPath.add(c.names);
      if (VERBOSE) t.comment(`accepted: ${c.req.method} ${label(c.req.url.slice(0, 80))}: ${c.what}`);
    } else if (problem === null) refused++;
    if (problem === null) continue;
    const body = res === 'timeout' ? '' : ` -> ${label(res.body.slice(0, 160))}`;
    const line = `${c.req.method} ${label(c.req.url.slice(0, 120))}: ${c.what}: ${problem}${body}`;
    const known = opts.known.find((k) => k.matches(c, problem!));
    if (known) knownProblems.set(known.why, [...(knownProblems.get(known.why) ?? []), line]);
    else problems.push(line);
  }
  t.ok(cases.length > 0, `${routeName}: ${cases.length} cases, ${refused} refused properly, ${succeeded} maybe-valid accepted`);
  // A maybe-valid case that succeeded may have used the base up (created its user, deactivated its target).
  if (succeeded === 0) {
    for (const base of opts.bases) {
      const res = await answer(opts.app, base);
      const status = res === 'timeout' ? 'no answer' : res.status;
      t.ok(typeof status === 'number' && status >= 200 && status < 400, `${routeName}: the base request ${label(base.url.slice(0, 80))} is valid (${status})`);
    }
  }
  t.strictSame(problems, [], `${routeName}: every case refused with a 4xx in the API's error shape, state unchanged`);
  for (const [why, lines] of knownProblems) t.strictSame(lines, [], `${routeName}: known failure`, { todo: why });
}

// ---------------------------------------------------------------------------
// Chat
// ---------------------------------------------------------------------------

interface ChatBase {
  /** Who sends it (default: the organization's owner). */
  who?: Credentials;
  pathParams?: Record<string, string>;
  params: Record<string, string>;
  /** Values the route must refuse with this base; replaces the route's table in `chatSemantic`. */
  semantic?: Record<string, string[]>;
  /** A body sent as is instead of the form (an upload's multipart body). */
  raw?: { contentType: string; body: Buffer };
  /** Path parameters that name something the request creates (an emoji's name): any segment may be valid there. */
  namesInPath?: string[];
  /** Headers the route needs besides credentials (tus: `Tus-Resumable`, `Upload-Offset`). */
  headers?: Record<string, string>;
}

/** Narrows every narrow check refuses, for GET /messages and register alike. */
function narrowSyntaxInvalid(): string[] {
  return [
    '[{"operator":"bogus","operand":"x"}]', '[{"operator":"is","operand":"bogus"}]', '[{"operator":"is"}]', '[{"operand":"x"}]',
    '[{"operator":5,"operand":"x"}]', '[{"operator":"is","operand":"dm","negated":"yes"}]', '[{"operator":"topic","operand":{}}]',
    '[{"operator":"topic","operand":null}]', '[{"operator":"topic","operand":true}]', '[{"operator":"dm","operand":[[1]]}]',
    '[{"operator":"dm","operand":[1.5]}]', '[{"operator":"dm","operand":[1e300]}]', '[null]', '[[]]', '[["is"]]', '[["is","dm","x"]]',
    '[42]', '["is:dm"]', '{"operator":"is","operand":"dm"}', '[{"operator":"search","operand":""}]', '[{"operator":"search","operand":"   "}]',
    JSON.stringify([{ operator: 'search', operand: 'w '.repeat(501) }]), JSON.stringify([{ operator: 'search', operand: 'x'.repeat(MB) }]),
    '[{"operator":"id","operand":"abc"}]', '[{"operator":"id","operand":-1}]', '[{"operator":"with","operand":"x"}]',
    JSON.stringify(Array.from({ length: 101 }, () => ({ operator: 'is', operand: 'dm' }))),
    `[{"operator":${deepArray(3000).slice(0, 3000)}"x"${deepArray(3000).slice(3000)},"operand":"x"}]`,
    `[{"operator":"is","operand":${deepObject(3000)}}]`,
  ];
}

/** Narrows that are well-formed but name users or channels that do not exist: refused when a query resolves them. */
function narrowQueryInvalid(): string[] {
  return [
    '[{"operator":"dm","operand":[99999]}]', '[{"operator":"dm","operand":[-1]}]', '[{"operator":"dm","operand":[4503599627370496]}]',
    '[{"operator":"dm","operand":"nobody@example.com"}]', '[{"operator":"dm","operand":"owner@example.com\\u0000"}]',
    '[{"operator":"pm-with","operand":[99999]}]', '[{"operator":"group-pm-with","operand":99999}]', '[{"operator":"dm-including","operand":99999}]',
    '[{"operator":"sender","operand":99999}]', '[{"operator":"sender","operand":"owner@example.com\\u0000"}]', '[{"operator":"sender","operand":[1,2]}]',
    '[{"operator":"sender","operand":"a@example.com,b@example.com"}]', '[{"operator":"channel","operand":"nosuch"}]',
    '[{"operator":"channel","operand":99999}]', '[{"operator":"stream","operand":"general\\u0000"}]', '[{"operator":"stream","operand":-1}]',
  ];
}

/** Values that are well-typed but that the route must refuse, per route and parameter. */
function chatSemantic(key: string): Record<string, string[]> {
  const narrowBad = [...narrowSyntaxInvalid(), ...narrowQueryInvalid()];
  const unknownUsers = ['[99999]', '[-1]', '["nobody@example.com"]', '["owner@example.com\\u0000"]', '["a@example.com,b@example.com"]'];
  const queueIds = ['nosuch', '', 'x\u0000', '\u0000', 'x'.repeat(MB)];
  const table: Record<string, Record<string, string[]>> = {
    'POST /api/v1/fetch_api_key': { username: ['owner@example.com\u0000', 'nobody@example.com', '', 'owner@example.com\nx'], password: ['wrong', '', 'owner-pass\u0000'] },
    'POST /api/v1/register': { narrow: narrowSyntaxInvalid() },
    'GET /api/v1/events': { queue_id: queueIds },
    'DELETE /api/v1/events': { queue_id: queueIds },
    'POST /api/v1/messages': {
      to: ['nosuch', 'general\u0000', '99999', '-5', '0', '[]', '["general","random"]', '[99999]'],
      topic: ['a\u0000b', 'bell\u0007', '\u001b[31m', `${'x'.repeat(MB)}\u0000`],
      content: ['', '   ', '\n\n', 'a\u0000b', `${'x'.repeat(MB)}\u0000`],
    },
    'GET /api/v1/messages': {
      anchor: ['bogus', '', 'newest\u0000', 'NEWEST', '1'.repeat(17), '1.5'],
      narrow: narrowBad,
      num_before: ['5001', '99999999'],
    },
    'POST /api/v1/messages/flags': { flag: ['bogus', '', 'read\u0000', 'historical'], messages: ['[99999]', '[-1]', '[0]'] },
    'POST /api/v1/users': {
      email: ['x\u0000@example.com', 'a b@example.com', 'owner@example.com', 'a@example.com,b@example.com', '', `${'x'.repeat(300)}@example.com`, 'Alice <a@example.com>', '"q"@example.com', 'x@example.com\u200b'],
      full_name: ['', '   ', 'a\u0000b', 'x'.repeat(101)],
    },
    'GET /api/v1/get_stream_id': { stream: ['nosuch', 'general\u0000', '', 'x'.repeat(MB)] },
    'POST /api/v1/users/me/subscriptions': {
      subscriptions: ['[{"name":""}]', '[{"name":"a\\u0000b"}]', `[{"name":"${'x'.repeat(61)}"}]`, `[{"name":"fuzz-new","description":"${'x'.repeat(1025)}"}]`],
      principals: unknownUsers,
    },
    'DELETE /api/v1/users/me/subscriptions': { subscriptions: ['["nosuch"]', '["general\\u0000"]', '[]'], principals: unknownUsers },
  };
  return table[key] ?? {};
}

/** Path segments that are not the id of anything: not integers, negative, or of nobody. */
const BAD_SEGMENTS = ['abc', '-1', '1.5', '1e3', '0x1F', '%FF', '%C0%AF', '%ED%A0%80', '%00', '1%00', '%2F', '%20', '99999', '9'.repeat(30), 'NaN', '-0', '%E2%80%AE1', '1;2'];

function encodeForm(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
}

function chatUrl(route: RouteRecord, base: ChatBase, segments: Record<string, string> = {}): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => segments[name] ?? encodeURIComponent(base.pathParams?.[name] ?? '1'));
}

/** A request for `route`: params in the query for GET and DELETE, in a form body otherwise. */
function chatRequest(route: RouteRecord, who: Credentials, base: ChatBase, params: Record<string, string>, extra: { segments?: Record<string, string>; headers?: Record<string, string> } = {}): InjectRequest {
  const inQuery = route.method === 'GET' || route.method === 'DELETE';
  const encoded = encodeForm(params);
  const headers: Record<string, string> = route.auth === 'user' ? { authorization: basicAuth(who) } : {};
  if (!inQuery) headers['content-type'] = base.raw?.contentType ?? 'application/x-www-form-urlencoded';
  const path = chatUrl(route, base, extra.segments);
  return {
    method: route.method,
    url: inQuery && encoded ? `${path}?${encoded}` : path,
    body: inQuery ? undefined : base.raw?.body ?? encoded,
    headers: { ...headers, ...base.headers, ...extra.headers },
  };
}

/** Every case of one chat route from one base; `full` adds the cases that do not depend on the base. */
function chatCases(route: RouteRecord, who: Credentials, base: ChatBase, full: boolean): Case[] {
  const key = `${route.method} ${route.path}`;
  const cases: Case[] = [];
  const semantic = base.semantic ?? chatSemantic(key);
  const formParams = Object.entries(route.params).filter(([, spec]) => spec.in !== 'path');
  const pathParams = Object.entries(route.params).filter(([, spec]) => spec.in === 'path');
  const inQuery = route.method === 'GET' || route.method === 'DELETE';
  const req = (what: string, expect: Expect, r: InjectRequest): void => void cases.push({ what, expect, req: r });

  // One parameter at a time: junk of every type, then what the route must refuse.
  for (const [name, spec] of formParams) {
    const junk = [...sample(JUNK, JUNK_PER_PARAM)];
    for (const raw of junk) {
      const invalid = definitelyInvalid(spec.schema, raw) || (semantic[name] ?? []).includes(raw);
      // A maybe-valid dont_block could park a poll: only invalid values of it are sent.
      if (!invalid && name === 'dont_block') continue;
      req(`${name}=${label(raw)}`, invalid ? 'invalid' : 'maybe', chatRequest(route, who, base, { ...base.params, [name]: raw }));
    }
    for (const raw of semantic[name] ?? []) req(`${name}=${label(raw)} (refused by the route)`, 'invalid', chatRequest(route, who, base, { ...base.params, [name]: raw }));
  }
  // One oversized value, in a parameter of the route's.
  if (formParams.length > 0) {
    const [name, spec] = pick(formParams);
    const raw = pick(HUGE);
    const invalid = definitelyInvalid(spec.schema, raw);
    if (invalid || name !== 'dont_block') req(`${name}=<${raw.length} chars>`, invalid ? 'invalid' : 'maybe', chatRequest(route, who, base, { ...base.params, [name]: raw }));
  }
  if (!full) return cases;
  // Path parameters that are not ids of anything.
  for (const [name] of pathParams) {
    const creates = base.namesInPath?.includes(name) === true;
    for (const seg of BAD_SEGMENTS) {
      const names = `{${name}}=${seg}`;
      req(names, creates || namedInPath.has(names) ? 'maybe' : 'invalid', chatRequest(route, who, base, base.params, { segments: { [name]: seg } }));
      if (creates) cases[cases.length - 1].names = names;
    }
  }
  // Bytes outside UTF-8, and malformed encodings, wherever parameters arrive.
  const encodedBase = encodeForm(base.params);
  const name = formParams.length > 0 ? pick(formParams)[0] : 'zz';
  const path = chatUrl(route, base);
  const auth: Record<string, string> = route.auth === 'user' ? { authorization: basicAuth(who) } : {};
  const form = { ...auth, 'content-type': 'application/x-www-form-urlencoded' };
  const join = (a: string, b: string): string => (a ? `${a}&${b}` : b);
  for (const bad of ['%FF', '%FE%FF', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', '%E2%82', '%G1', '%', 'a%0']) {
    const pair = `${name}=${bad}`;
    req(`percent-encoded ${bad}`, 'invalid', inQuery ? { method: route.method, url: `${path}?${join(encodedBase, pair)}`, headers: auth } : { method: route.method, url: path, body: join(encodedBase, pair), headers: form });
  }
  req('a U+FFFD the transport left for an invalid byte in the query', 'invalid', { method: route.method, url: `${path}?${join(encodedBase, `${name}=a\uFFFDb`)}`, headers: auth });
  for (const bytes of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
    const body = Buffer.concat([Buffer.from(join(encodedBase, `${name}=a`)), Buffer.from(bytes), Buffer.from('b')]);
    req(`raw bytes ${bytes.map((b) => b.toString(16)).join(' ')} in a form body`, 'invalid', { method: route.method, url: inQuery && encodedBase ? `${path}?${encodedBase}` : path, body, headers: form });
  }
  const boundary = 'fuzzBOUNDARY';
  const part = (k: string, v: Buffer | string): Buffer => Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n`), Buffer.from(v), Buffer.from('\r\n')]);
  // At least one part, so that a malformed multipart body is never an empty one.
  const parts = Object.entries(base.params).map(([k, v]) => part(k, v));
  if (parts.length === 0) parts.push(part('zz', 'x'));
  const multipart = { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` };
  req('raw 0xFF in a multipart text field', 'invalid', { method: route.method, url: path, body: Buffer.concat([...parts, part(name, Buffer.from([0x61, 0xff])), Buffer.from(`--${boundary}--\r\n`)]), headers: multipart });
  req('an unterminated multipart body', 'invalid', { method: route.method, url: path, body: Buffer.concat([...parts, Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="x"\r\n\r\nunterminated`)]), headers: multipart });
  req('a multipart body without a boundary', 'invalid', { method: route.method, url: path, body: Buffer.concat(parts), headers: { ...auth, 'content-type': 'multipart/form-data' } });
  req('raw 0xFF in a multipart part header', 'invalid', { method: route.method, url: path, body: Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="\xff"\r\n\r\nv\r\n`, 'latin1'), ...parts, Buffer.from(`--${boundary}--\r\n`)]), headers: multipart });
  for (const type of ['application/json', 'text/plain', 'application/xml']) {
    req(`a body of type ${type}`, 'invalid', { method: route.method, url: path, body: JSON.stringify(base.params), headers: { ...auth, 'content-type': type } });
  }
  // Credentials that are not a user's, on routes that need one.
  if (route.auth === 'user') {
    const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
    const headers = [
      'Basic', 'Basic !!!', `Basic ${b64('no-colon')}`, 'Bearer abc', `Basic ${b64(`${who.email}:wrong-key`)}`, `Basic ${b64(`${who.email}\u0000:${who.api_key}`)}`,
      `Basic ${b64(`${who.email}:${who.api_key}\u0000`)}`, `Basic ${b64(Buffer.from([0xff, 0xfe, 0x3a, 0x61]))}`, `Basic ${b64(`${'x'.repeat(10_000)}:y`)}`, '',
    ];
    for (const h of headers) {
      const r = chatRequest(route, who, base, base.params);
      req(`Authorization ${label(h.slice(0, 40))}`, 'invalid', { ...r, headers: { ...r.headers, authorization: h } });
    }
    const r = chatRequest(route, who, base, base.params);
    const { authorization: _, ...noAuth } = r.headers!;
    req('no Authorization', 'invalid', { ...r, headers: noAuth });
  }
  // An organization that does not exist, and methods the path does not have.
  for (const host of ['nosuch.localhost', 'x\u0000.localhost', `${'a'.repeat(300)}.localhost`]) {
    const r = chatRequest(route, who, base, base.params);
    req(`Host ${label(host.slice(0, 40))}`, 'invalid', { ...r, headers: { ...r.headers, host } });
  }
  const served = new Set(chatRoutes.filter((r) => r.path === route.path).map((r) => r.method));
  for (const method of ['PUT', 'PATCH'].filter((m) => !served.has(m as RouteRecord['method']))) req(`method ${method}`, 'invalid', { ...chatRequest(route, who, base, base.params), method });
  return cases;
}

/** Failures that need a change outside this test's files (none known: a password with NULs is refused in verifyPassword). */
const CHAT_KNOWN: Known[] = [];

t.test(`chat routes (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_FUZZ_SEED=${seed}`);
  // Call providers configured, BigBlueButton a local stand-in, so that their routes have valid requests.
  // So do push notifications, through a local stand-in for the relay.
  const bbb = await fakeBbb('fuzz-secret');
  t.teardown(() => bbb.server.close());
  const bouncer = await fakeBouncer();
  t.teardown(() => bouncer.server.close());
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-fuzz-')), jitsiServerUrl: 'https://jitsi.invalid', bbbUrl: bbb.url, bbbSecret: 'fuzz-secret', pushBouncerUrl: bouncer.url } });
  t.teardown(f.stop);
  const logs: string[] = [];
  const app = new ChatApp(chatRoutes, f.runtime, f.config, lineLogger((line) => logs.push(line), 'error'), f.mail);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const victim = await f.createUser('victim@example.com', 'Victim');
  if ((await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id])).status !== 200) throw new Error('subscribe failed');
  if ((await f.subscribe(f.owner, 'random', [f.owner.user_id])).status !== 200) throw new Error('subscribe failed');
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'seed', content: 'seed message' });
  const dm = await f.call(alice, 'POST', '/api/v1/messages', { type: 'direct', to: [f.owner.user_id], content: 'seed dm' });
  const registered = await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['message'] });
  if (sent.status !== 200 || dm.status !== 200 || registered.status !== 200) throw new Error('fixture setup failed');
  const queueId: string = registered.json.queue_id;
  const mid = String(sent.json.id);
  const doomed = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'seed', content: 'to be deleted' });
  // Read receipts on, and a private moderation request channel, so that those routes have valid requests.
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'moderation' }], invite_only: true });
  const moderation = channelIdByName(f.runtime, 1, 'moderation');
  if ((await f.call(f.owner, 'PATCH', '/api/v1/realm', { enable_read_receipts: true, moderation_request_channel_id: moderation })).status !== 200) throw new Error('fixture setup failed');
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'seed.example', allow_subdomains: false });
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'doomed.example', allow_subdomains: false });
  const seedLinkifier = (await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: 'SEED(?P<n>[0-9]+)', url_template: 'https://seed.example/{n}' })).json.id as number;
  const doomedLinkifier = (await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: 'DOOM(?P<n>[0-9]+)', url_template: 'https://doom.example/{n}' })).json.id as number;
  const addPlayground = async (name: string): Promise<number> => (await f.call(f.owner, 'POST', '/api/v1/realm/playgrounds', { name, pygments_language: 'Python', url_template: 'https://play.example/?c={code}' })).json.id as number;
  await addPlayground('Seed playground');
  const doomedPlayground = await addPlayground('Doomed playground');
  // A data export, built, whose archive is served.
  const exportId = (await f.call(f.owner, 'POST', '/api/v1/export/realm')).json.id as number;
  for (let i = 0; i < 2000 && exportProgress(f.runtime, 1).find((e) => e.id === exportId)?.status === 'requested'; i++) await new Promise((r) => setTimeout(r, 5));
  const exportUrl = (await f.call(f.owner, 'GET', '/api/v1/export/realm')).json.exports[0]?.export_url as string;
  if (!exportUrl) throw new Error('fixture export failed');
  // A second one, built, for DELETE /export/realm/{export_id} to delete.
  const doomedExport = (await f.call(f.owner, 'POST', '/api/v1/export/realm')).json.id as number;
  for (let i = 0; i < 2000 && exportProgress(f.runtime, 1).find((e) => e.id === doomedExport)?.status === 'requested'; i++) await new Promise((r) => setTimeout(r, 5));
  if (exportProgress(f.runtime, 1).find((e) => e.id === doomedExport)?.status !== 'succeeded') throw new Error('fixture export failed');
  await f.subscribe(f.owner, 'fuzzed channel');
  await f.subscribe(f.owner, 'doomed channel');
  const fuzzChannel = channelIdByName(f.runtime, 1, 'fuzzed channel');
  const doomedChannel = channelIdByName(f.runtime, 1, 'doomed channel');
  const leaver = await f.createUser('leaver@example.com', 'Leaver');
  const fuzzBot = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Seed Bot', short_name: 'seed' })).json.user_id as number;
  const doomedBot = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Doomed Bot', short_name: 'doomed' })).json.user_id as number;
  const profileField = (await f.call(f.owner, 'POST', '/api/v1/realm/profile_fields', { name: 'Seed field', field_type: 1 })).json.id as number;
  const doomedField = (await f.call(f.owner, 'POST', '/api/v1/realm/profile_fields', { name: 'Doomed field', field_type: 1 })).json.id as number;
  // Each route's base stands on its own: the shards run routes apart, in no shared order.
  const seedFolder = (await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Seed folder', description: '' })).json.channel_folder_id as number;
  await f.call(f.owner, 'POST', `/api/v1/messages/${mid}/reactions`, { emoji_name: 'heart' });
  const seedGroup = (await f.call(f.owner, 'POST', '/api/v1/user_groups/create', { name: 'seed group', description: '', members: `[${alice.user_id}]` })).json.group_id as number;
  const doomedGroup = (await f.call(f.owner, 'POST', '/api/v1/user_groups/create', { name: 'doomed group', description: '', members: '[]' })).json.group_id as number;
  if (doomed.status !== 200 || !seedGroup || !doomedGroup || !seedFolder) throw new Error('fixture setup failed');
  // Invitations: ids 1 (resent) and 2 (revoked); links 1 (revoked) and 2 (accepted).
  const invited = await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'seed-invitee@example.com,doomed-invitee@example.com', stream_ids: [] });
  await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', {});
  const joinLink = (await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', {})).json.invite_link as string;
  if (doomed.status !== 200 || invited.status !== 200 || !joinLink) throw new Error('fixture setup failed');
  // Scheduled messages and a reminder, far in the future: one edited by the fuzz, one deleted.
  const later = String(Math.floor(f.clock.t / 1000) + 86_400);
  const general = channelIdByName(f.runtime, 1, 'general');
  const schedule = (content: string) => f.call(f.owner, 'POST', '/api/v1/scheduled_messages', { type: 'stream', to: general, topic: 'seed', content, scheduled_delivery_timestamp: later });
  const seedScheduled = (await schedule('seed scheduled')).json.scheduled_message_id as number;
  const doomedScheduled = (await schedule('doomed scheduled')).json.scheduled_message_id as number;
  const doomedReminder = (await f.call(f.owner, 'POST', '/api/v1/reminders', { message_id: sent.json.id, scheduled_delivery_timestamp: later })).json.reminder_id as number;
  if (!seedScheduled || !doomedScheduled || !doomedReminder) throw new Error('fixture setup failed');

  // Uploads: one kept (its file served), one to delete.
  const uploadBody = (name: string): { contentType: string; body: Buffer } => ({
    contentType: 'multipart/form-data; boundary=fuzz',
    body: Buffer.from(`--fuzz\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n${name}\r\n--fuzz--\r\n`),
  });
  const uploadAs = async (name: string): Promise<string> => {
    const raw = uploadBody(name);
    const res = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { authorization: basicAuth(f.owner), 'content-type': raw.contentType }, body: raw.body });
    if (res.status !== 200) throw new Error(`fixture upload failed: ${res.body}`);
    return res.json.url as string;
  };
  const seedUpload = (await uploadAs('seed.txt')).split('/').slice(2);
  await uploadAs('doomed.txt');
  const temporaryUrl = (await f.call(f.owner, 'GET', `/api/v1/user_uploads/${seedUpload.join('/')}`)).json.url as string;
  if (!temporaryUrl) throw new Error('fixture temporary URL failed');
  const doomedAttachment = String((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments.find((a: any) => a.name === 'doomed.txt').id);
  // Custom emoji: one image served, one emoji to deactivate.
  const pngBody = (): { contentType: string; body: Buffer } => ({
    contentType: 'multipart/form-data; boundary=fuzz',
    body: Buffer.concat([Buffer.from('--fuzz\r\nContent-Disposition: form-data; name="file"; filename="e.png"\r\nContent-Type: image/png\r\n\r\n'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]), Buffer.from('\r\n--fuzz--\r\n')]),
  });
  for (const name of ['seed_emoji', 'doomed_emoji']) {
    const raw = pngBody();
    const res = await injectChecked(f.app, { method: 'POST', url: `/api/v1/realm/emoji/${name}`, headers: { authorization: basicAuth(f.owner), 'content-type': raw.contentType }, body: raw.body });
    if (res.status !== 200) throw new Error(`fixture emoji failed: ${res.body}`);
  }
  // Personal data: drafts 1 (edited) and 2 (deleted), snippets 1 and 2, two custom views, a muted user, a bot with storage.
  const personal = [
    await f.call(f.owner, 'POST', '/api/v1/drafts', { drafts: JSON.stringify([{ type: 'stream', to: [general], topic: 'seed', content: 'seed draft' }, { type: '', to: [], topic: '', content: 'doomed draft' }]) }),
    await f.call(f.owner, 'POST', '/api/v1/saved_snippets', { title: 'Seed', content: 'seed snippet' }),
    await f.call(f.owner, 'POST', '/api/v1/saved_snippets', { title: 'Doomed', content: 'doomed snippet' }),
    await f.call(f.owner, 'POST', '/api/v1/navigation_views', { fragment: 'narrow/is/seed', is_pinned: true, name: 'Seed view' }),
    await f.call(f.owner, 'POST', '/api/v1/navigation_views', { fragment: 'narrow/is/doomed', is_pinned: true, name: 'Doomed view' }),
  ];
  const muted = await f.createUser('muted@example.com', 'Muted');
  personal.push(await f.call(f.owner, 'POST', `/api/v1/users/me/muted_users/${muted.user_id}`));
  // The owner's presence, for GET /users/{user_id_or_email}/presence whichever shard POST /users/me/presence falls in.
  personal.push(await f.call(f.owner, 'POST', '/api/v1/users/me/presence', { status: 'active' }));
  const storeBotMade = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Storage Bot', short_name: 'storage' })).json;
  const storeBot: Credentials = await botCredentials(f, storeBotMade);
  personal.push(await f.call(storeBot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ seed: 'value' }) }));
  if (personal.some((r) => r.status !== 200)) throw new Error('fixture setup failed');
  // Resumable uploads: one to append to and ask about, one to terminate.
  const TUS = { 'tus-resumable': '1.0.0' };
  const tusUpload = async (): Promise<string> => {
    const res = await injectChecked(f.app, { method: 'POST', url: '/api/v1/tus', headers: { ...TUS, authorization: basicAuth(f.owner), 'upload-length': '1000' } });
    if (res.status !== 201) throw new Error(`fixture tus upload failed: ${res.status}`);
    return res.headers.location.split('/').pop()!;
  };
  const seedTus = await tusUpload();
  const doomedTus = await tusUpload();

  // Push: tokens to remove and to test, a device registered with the relay, one to remove, one to register.
  await f.call(f.owner, 'POST', '/api/v1/users/me/apns_device_token', { token: 'deadbeef', appid: 'org.zulip.Zulip' });
  await f.call(f.owner, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'doomed-fcm' });
  await f.call(f.owner, 'POST', '/api/v1/users/me/android_gcm_reg_id', { token: 'seed-fcm' });
  const pushKey = Buffer.concat([Buffer.from([0x31]), Buffer.alloc(32, 1)]).toString('base64');
  const tokenId = (n: number): string => Buffer.from([0, 0, 0, 0, 0, 0, 0, n]).toString('base64');
  const newDevice = async (): Promise<number> => (await f.call(f.owner, 'POST', '/api/v1/register_client_device')).json.device_id as number;
  const seedDevice = await newDevice();
  const pushRegistration = (device: number, token: number) => ({ device_id: String(device), token_kind: 'fcm', push_key: pushKey, push_key_id: '1', bouncer_public_key: 'bpk', encrypted_push_registration: 'ciphertext', token_id: tokenId(token) });
  if ((await f.call(f.owner, 'POST', '/api/v1/mobile_push/register', pushRegistration(seedDevice, 1))).status !== 200) throw new Error('fixture setup failed');
  const doomedDevice = await newDevice();
  const blankDevice = await newDevice();
  // A poll of the owner's, for POST /submessage (sent last, so no other base's ids move).
  const seedPoll = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'seed', content: '/poll Seed?\nyes\nno' });
  if (seedPoll.status !== 200) throw new Error('fixture setup failed');
  const bbbLink = new URL((await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'seed' })).json.url as string, 'http://x');

  /** A valid request for each route, from which every case breaks one thing. */
  const BASES: Record<string, ChatBase | ChatBase[]> = {
    'POST /api/v1/fetch_api_key': { params: { username: 'owner@example.com', password: 'owner-pass' } },
    'POST /api/v1/user_uploads': { params: {}, raw: uploadBody('fuzz.txt') },
    'GET /api/v1/realm/emoji': { params: {} },
    'POST /api/v1/realm/emoji/{emoji_name}': { params: {}, pathParams: { emoji_name: 'fuzz_emoji' }, raw: pngBody(), namesInPath: ['emoji_name'] },
    'DELETE /api/v1/realm/emoji/{emoji_name}': { params: {}, pathParams: { emoji_name: 'doomed_emoji' } },
    'GET /user_avatars/{realm_id}/emoji/images/{file_name}': { params: {}, pathParams: { realm_id: '1', file_name: '1.png' } },
    'GET /user_uploads/{realm_id}/{dir}/{name}/{filename}': { params: {}, pathParams: { realm_id: seedUpload[0], dir: seedUpload[1], name: seedUpload[2], filename: seedUpload[3] } },
    'GET /api/v1/user_uploads/{realm_id_str}/{dir}/{name}/{filename}': { params: {}, pathParams: { realm_id_str: seedUpload[0], dir: seedUpload[1], name: seedUpload[2], filename: seedUpload[3] } },
    'GET /user_uploads/temporary/{token}/{filename}': { params: {}, pathParams: { token: temporaryUrl.split('/')[3], filename: temporaryUrl.split('/')[4] } },
    'DELETE /api/v1/attachments/{attachment_id}': { params: {}, pathParams: { attachment_id: doomedAttachment } },
    'OPTIONS /api/v1/tus': { params: {} },
    'POST /api/v1/tus': { params: {}, headers: { ...TUS, 'upload-length': '10', 'upload-metadata': `filename ${Buffer.from('fuzz.txt').toString('base64')}` } },
    'HEAD /api/v1/tus/{upload_id}': { params: {}, pathParams: { upload_id: seedTus }, headers: TUS },
    'PATCH /api/v1/tus/{upload_id}': { params: {}, pathParams: { upload_id: seedTus }, headers: { ...TUS, 'upload-offset': '0' }, raw: { contentType: 'application/offset+octet-stream', body: Buffer.from('fuzz') } },
    'DELETE /api/v1/tus/{upload_id}': { params: {}, pathParams: { upload_id: doomedTus }, headers: TUS },
    'POST /api/v1/register': { params: { event_types: '["message"]' } },
    'GET /api/v1/events': { params: { queue_id: queueId, last_event_id: '-1', dont_block: 'true' } },
    'DELETE /api/v1/events': { params: { queue_id: queueId } },
    'POST /api/v1/messages': [
      { params: { type: 'stream', to: 'general', topic: 'fuzz', content: 'hello' } },
      {
        params: { type: 'direct', to: `[${alice.user_id}]`, content: 'hello' },
        semantic: {
          to: ['[99999]', '[-1]', '[0]', `[${alice.user_id},99999]`, '["nobody@example.com"]', '["alice@example.com\\u0000"]', 'alice@example.com\u0000', 'alice@example.com,nobody@example.com', 'general', '99999', `[${'99999,'.repeat(100_000)}99999]`],
          content: ['', '   ', 'a\u0000b'],
        },
      },
    ],
    'GET /api/v1/messages': { params: { anchor: 'newest', num_before: '5', num_after: '0' } },
    'GET /api/v1/messages/{message_id}': { pathParams: { message_id: mid }, params: {} },
    'GET /api/v1/messages/{message_id}/read_receipts': { pathParams: { message_id: mid }, params: {} },
    'GET /api/v1/messages/matches_narrow': {
      params: { msg_ids: `[${mid}]`, narrow: JSON.stringify([{ operator: 'search', operand: 'seed' }]) },
      semantic: { narrow: [JSON.stringify([{ operator: 'channel', operand: 'nowhere' }]), JSON.stringify([{ operator: 'sender', operand: 99999 }]), '[{}]'] },
    },
    'POST /api/v1/messages/{message_id}/report': {
      params: { report_type: 'spam', description: 'fuzz' },
      semantic: { report_type: ['bogus', ''], description: ['x'.repeat(1001)] },
    },
    'POST /api/v1/users/{user_id}/status': { pathParams: { user_id: String(alice.user_id) }, params: { status_text: 'fuzzed', emoji_name: 'car' }, semantic: { status_text: ['x'.repeat(61)], emoji_name: ['no_such_emoji'] } },
    'POST /api/v1/users/me/status': { params: { status_text: 'fuzzing', emoji_name: 'car' } },
    'POST /api/v1/users/me/presence': [{ params: { status: 'active', last_update_id: '-1', history_limit_days: '14', new_user_input: 'true' } }, { params: { status: 'idle', slim_presence: 'true', ping_only: 'false' } }],
    'GET /api/v1/users/{user_id_or_email}/presence': [{ pathParams: { user_id_or_email: 'owner@example.com' }, params: { slim_presence: 'true' } }, { pathParams: { user_id_or_email: '1' }, params: {} }],
    'GET /api/v1/users/{user_id}/status': { pathParams: { user_id: '1' }, params: {} },
    'POST /api/v1/bots': { params: { full_name: 'Fuzz Bot', short_name: 'fuzz' } },
    'PATCH /api/v1/bots/{bot_id}': { pathParams: { bot_id: String(fuzzBot) }, params: { full_name: 'Fuzzed' } },
    'DELETE /api/v1/bots/{bot_id}': { pathParams: { bot_id: String(doomedBot) }, params: {} },
    'POST /api/v1/bots/{bot_id}/api_key/regenerate': { pathParams: { bot_id: String(fuzzBot) }, params: {} },
    'GET /api/v1/realm/domains': { params: {} },
    'POST /api/v1/realm/domains': { params: { domain: 'fuzz.example', allow_subdomains: 'false' } },
    'PATCH /api/v1/realm/domains/{domain}': { pathParams: { domain: 'seed.example' }, params: { allow_subdomains: 'true' } },
    'DELETE /api/v1/realm/domains/{domain}': { pathParams: { domain: 'doomed.example' }, params: {} },
    // A user of their own, since the request deactivates whoever sends it.
    'DELETE /api/v1/users/me': { who: leaver, params: {} },
    'PATCH /api/v1/users/{user_id}': { pathParams: { user_id: String(alice.user_id) }, params: { full_name: 'Alice F.' } },
    'PATCH /api/v1/users/{email}': { pathParams: { email: 'alice@example.com' }, params: { full_name: 'Alice G.' } },
    'PATCH /api/v1/realm/linkifiers': { get params() { return { ordered_linkifier_ids: JSON.stringify(linkifierIds(f.runtime, 1)) }; } },
    'POST /api/v1/realm/filters': { params: { pattern: 'FUZZ(?P<n>[0-9]+)', url_template: 'https://fuzz.example/{n}' } },
    'PATCH /api/v1/realm/filters/{filter_id}': { pathParams: { filter_id: String(seedLinkifier) }, params: { pattern: 'SEED2(?P<n>[0-9]+)', url_template: 'https://seed.example/{n}' } },
    'DELETE /api/v1/realm/filters/{filter_id}': { pathParams: { filter_id: String(doomedLinkifier) }, params: {} },
    'GET /api/v1/export/realm': { params: {} },
    // A full export while no owner consents: refused whatever else it holds, so no build runs on into other routes' cases.
    'POST /api/v1/export/realm': { params: { export_type: '2' }, semantic: { export_type: ['0', '3', '-1'] } },
    'GET /api/v1/export/realm/consents': { params: {} },
    'DELETE /api/v1/export/realm/{export_id}': { pathParams: { export_id: String(doomedExport) }, params: {} },
    'GET /user_avatars/exports/{realm_id}/{key}/{filename}': { params: {}, pathParams: { realm_id: '1', key: exportUrl.split('/')[6], filename: exportUrl.split('/')[7] } },
    'POST /api/v1/realm/test_welcome_bot_custom_message': { params: { welcome_message_custom_text: 'Welcome, fuzz!' }, semantic: { welcome_message_custom_text: ['', 'x'.repeat(8001)] } },
    // Refused whatever it holds (as on a Zulip production server): its base is no valid request.
    'POST /api/v1/dev_fetch_api_key': { params: { username: 'owner@example.com' } },
    'POST /api/v1/realm/playgrounds': {
      params: { name: 'Fuzz playground', pygments_language: 'Python', url_template: 'https://fuzz.example/{code}' },
      semantic: { name: ['', '  ', 'Seed playground'], pygments_language: ['a$b', 'p'.repeat(41)], url_template: ['', 'https://x.example/{code', 'https://x.example/', 'https://x.example/{code}{other}'] },
    },
    'DELETE /api/v1/realm/playgrounds/{playground_id}': { pathParams: { playground_id: String(doomedPlayground) }, params: {}, semantic: {} },
    'POST /api/v1/calls/{provider}/create': { pathParams: { provider: 'jitsi' }, params: { is_video_call: 'false' } },
    'GET /api/v1/calls/bigbluebutton/create': { params: { meeting_name: 'fuzz', voice_only: 'true' } },
    'GET /calls/bigbluebutton/join': { params: { bigbluebutton: bbbLink.searchParams.get('bigbluebutton')! } },
    'POST /api/v1/users/me/apns_device_token': { params: { token: 'c0ffee', appid: 'org.zulip.Zulip' }, semantic: { token: ['', 'xyz', 'abc'], appid: ['', 'a/b', 'a b'] } },
    'DELETE /api/v1/users/me/apns_device_token': { params: { token: 'deadbeef' }, semantic: { token: ['', 'xyz', 'c0c0'] } },
    'POST /api/v1/users/me/android_gcm_reg_id': { params: { token: 'fuzz-fcm' }, semantic: { token: ['', 'x'.repeat(4097)] } },
    // Tokens never registered: not junk, which the POST route's cases may have registered when sharing a process.
    'DELETE /api/v1/users/me/android_gcm_reg_id': { params: { token: 'doomed-fcm' }, semantic: { token: ['', 'never-registered-fcm'] } },
    'POST /api/v1/mobile_push/test_notification': { params: { token: 'seed-fcm' }, semantic: { token: ['', 'never-registered-fcm'] } },
    'POST /api/v1/mobile_push/e2ee/test_notification': { params: { device_id: String(seedDevice) }, semantic: { device_id: ['99999', '-1', String(blankDevice)] } },
    'POST /api/v1/register_client_device': { params: {} },
    'POST /api/v1/remove_client_device': { params: { device_id: String(doomedDevice) }, semantic: { device_id: ['99999', '-1', '0'] } },
    'POST /api/v1/mobile_push/register': {
      params: pushRegistration(blankDevice, 2),
      semantic: { device_id: ['99999', '-1'], push_key: ['', 'x', Buffer.alloc(33, 0x32).toString('base64')], token_id: ['', 'x', Buffer.alloc(8, 0xff).toString('base64')] },
    },
    'POST /api/v1/users/me/alert_words': { params: { alert_words: JSON.stringify(['fuzz', 'deploy']) } },
    'DELETE /api/v1/users/me/alert_words': { params: { alert_words: JSON.stringify(['deploy']) } },
    'PATCH /api/v1/streams/{stream_id}': { pathParams: { stream_id: String(fuzzChannel) }, params: { description: 'fuzzed' } },
    'DELETE /api/v1/streams/{stream_id}': { pathParams: { stream_id: String(doomedChannel) }, params: {} },
    'POST /api/v1/streams/{stream_id}/delete_topic': { pathParams: { stream_id: String(fuzzChannel) }, params: { topic_name: 'fuzz doomed topic' } },
    'POST /api/v1/channels/create': { params: { name: 'fuzz created', subscribers: '[1]' } },
    'POST /api/v1/default_streams': { params: { stream_id: String(fuzzChannel) }, semantic: { stream_id: ['99999', '0'] } },
    'DELETE /api/v1/default_streams': { params: { stream_id: String(fuzzChannel) }, semantic: { stream_id: ['99999', '0'] } },
    'PATCH /api/v1/realm': { params: { waiting_period_threshold: '2', can_resolve_topics_group: JSON.stringify({ new: 7 }) } },
    'PATCH /api/v1/settings': { params: { enter_sends: 'true', color_scheme: '2' } },
    'PATCH /api/v1/settings/display': { params: { high_contrast_mode: 'true' } },
    'PATCH /api/v1/settings/notifications': { params: { enable_sounds: 'false' } },
    'PATCH /api/v1/realm/user_settings_defaults': { params: { enter_sends: 'true', emojiset: 'text' } },
    'POST /api/v1/realm/profile_fields': { params: { name: 'Fuzz field', field_type: '1' } },
    // The order names every field there is when the request is made (other bases create fields).
    'PATCH /api/v1/realm/profile_fields': { get params() { return { order: JSON.stringify(profileFieldIds(f.runtime, 1)) }; } },
    'PATCH /api/v1/realm/profile_fields/{field_id}': { pathParams: { field_id: String(profileField) }, params: { hint: 'fuzzed' } },
    'DELETE /api/v1/realm/profile_fields/{field_id}': { pathParams: { field_id: String(doomedField) }, params: {} },
    'PATCH /api/v1/users/me/profile_data': { params: { data: JSON.stringify([{ id: profileField, value: 'x' }]) } },
    'DELETE /api/v1/users/me/profile_data': { params: { data: JSON.stringify([profileField]) } },
    'PATCH /api/v1/messages/{message_id}': { pathParams: { message_id: mid }, params: { content: 'edited' } },
    'GET /api/v1/messages/{message_id}/history': { pathParams: { message_id: mid }, params: {} },
    'POST /api/v1/messages/flags': { params: { messages: `[${mid}]`, op: 'add', flag: 'starred' } },
    'DELETE /api/v1/messages/{message_id}': { pathParams: { message_id: String(doomed.json.id) }, params: {} },
    'PATCH /api/v1/channel_folders': { get params() { return { order: JSON.stringify(listChannelFolders(f.runtime, 1, true).map((x) => x.id)) }; } },
    'POST /api/v1/channel_folders/create': { params: { name: 'Fuzz folder', description: 'made by the fuzz test' } },
    'PATCH /api/v1/channel_folders/{channel_folder_id}': { pathParams: { channel_folder_id: String(seedFolder) }, params: { description: 'fuzzed' } },
    'POST /api/v1/users/me/subscriptions/properties': { params: { subscription_data: JSON.stringify([{ stream_id: channelIdByName(f.runtime, 1, 'general'), property: 'pin_to_top', value: true }]) } },
    'POST /api/v1/messages/{message_id}/reactions': { pathParams: { message_id: mid }, params: { emoji_name: 'tada' } },
    'DELETE /api/v1/messages/{message_id}/reactions': { pathParams: { message_id: mid }, params: { emoji_name: 'heart' } },
    'POST /api/v1/submessage': {
      params: { message_id: String(seedPoll.json.id), msg_type: 'widget', content: '{"type":"vote","key":"canned,0","vote":1}' },
      semantic: {
        message_id: ['99999', '-1', '0', String(dm.json.id)],
        content: ['', 'not json', '[]', 'null', '{"type":"bogus"}', '{"type":"vote","key":"canned,0","vote":2}', '{"type":"vote","key":"canned,0","vote":1,"x":1}', '{"type":"new_option","idx":1001,"option":"x"}', '{"type":"new_option","idx":-1,"option":"x"}'],
      },
    },
    'POST /api/v1/user_topics': { params: { stream_id: String(channelIdByName(f.runtime, 1, 'general')), topic: 'fuzz', visibility_policy: '1' } },
    'PATCH /api/v1/users/me/subscriptions/muted_topics': { params: { stream: 'general', topic: 'fuzz legacy', op: 'add' } },
    'POST /api/v1/messages/render': { params: { content: 'hello **world**' } },
    'POST /api/v1/typing': { params: { op: 'start', to: `[${alice.user_id}]` } },
    'POST /api/v1/messages/{message_id}/typing': { pathParams: { message_id: mid }, params: { op: 'start' } },
    'POST /api/v1/messages/flags/narrow': { params: { anchor: 'newest', num_before: '5', num_after: '0', narrow: '[]', op: 'add', flag: 'starred' } },
    'POST /api/v1/mark_stream_as_read': { params: { stream_id: String(channelIdByName(f.runtime, 1, 'general')) } },
    'POST /api/v1/mark_topic_as_read': { params: { stream_id: String(channelIdByName(f.runtime, 1, 'general')), topic_name: 'seed' } },
    'GET /api/v1/users/{user_id}': { pathParams: { user_id: String(alice.user_id) }, params: {} },
    'GET /api/v1/users/{email}': { pathParams: { email: 'alice@example.com' }, params: {} },
    'GET /api/v1/streams/{stream_id}/email_address': { pathParams: { stream_id: String(channelIdByName(f.runtime, 1, 'general')) }, params: {} },
    'GET /api/v1/users/{user_id}/subscriptions/{stream_id}': { pathParams: { user_id: String(alice.user_id), stream_id: String(channelIdByName(f.runtime, 1, 'general')) }, params: {} },
    'GET /api/v1/streams/{stream_id}/members': { pathParams: { stream_id: String(channelIdByName(f.runtime, 1, 'general')) }, params: {} },
    'GET /api/v1/users/me/{stream_id}/topics': { pathParams: { stream_id: String(channelIdByName(f.runtime, 1, 'general')) }, params: {} },
    'GET /api/v1/streams/{stream_id}': { pathParams: { stream_id: String(channelIdByName(f.runtime, 1, 'general')) }, params: {} },
    'POST /api/v1/users': { params: { email: 'fuzz-new@example.com', password: 'pw', full_name: 'Fuzz New' } },
    'DELETE /api/v1/users/{user_id}': { pathParams: { user_id: String(victim.user_id) }, params: {} },
    // The victim is active, so this base is itself refused: only the path matters here.
    'POST /api/v1/users/{user_id}/reactivate': { pathParams: { user_id: String(victim.user_id) }, params: {} },
    'GET /api/v1/get_stream_id': { params: { stream: 'general' } },
    'POST /api/v1/user_groups/create': { params: { name: 'fuzz group', description: 'made by the fuzz test', members: `[${alice.user_id}]`, subgroups: `[${seedGroup}]` } },
    'GET /api/v1/user_groups': { params: { include_deactivated_groups: 'true' } },
    'PATCH /api/v1/user_groups/{user_group_id}': { pathParams: { user_group_id: String(seedGroup) }, params: { description: 'fuzzed', can_join_group: JSON.stringify({ new: 6 }) } },
    'POST /api/v1/user_groups/{user_group_id}/deactivate': { pathParams: { user_group_id: String(doomedGroup) }, params: {} },
    'POST /api/v1/user_groups/{user_group_id}/members': { pathParams: { user_group_id: String(seedGroup) }, params: { add: '[1]' } },
    'POST /api/v1/user_groups/{user_group_id}/subgroups': { pathParams: { user_group_id: String(seedGroup) }, params: { add: '[4]' } },
    'GET /api/v1/user_groups/{user_group_id}/members': { pathParams: { user_group_id: String(seedGroup) }, params: { direct_member_only: 'true' } },
    'GET /api/v1/user_groups/{user_group_id}/subgroups': { pathParams: { user_group_id: String(seedGroup) }, params: {} },
    'GET /api/v1/user_groups/{user_group_id}/members/{user_id}': { pathParams: { user_group_id: String(seedGroup), user_id: String(alice.user_id) }, params: {} },
    'POST /api/v1/invites': {
      params: { invitee_emails: 'fuzz-invitee@example.com', stream_ids: '[]' },
      semantic: {
        invitee_emails: ['', 'nope', 'owner@example.com', 'a@example.com,nope', ',', 'x\u0000@example.com', `${'x'.repeat(300)}@example.com`],
        stream_ids: ['[99999]', '[-1]', '[0]'], group_ids: ['[99999]', '[6]', '[1]'], invite_as: ['500', '0', '-1'], invite_expires_in_minutes: ['0', '-5'],
      },
    },
    'POST /api/v1/invites/multiuse': { params: {}, semantic: { stream_ids: ['[99999]', '[-1]'], group_ids: ['[99999]', '[6]'], invite_as: ['500'], invite_expires_in_minutes: ['0'] } },
    'DELETE /api/v1/invites/{invite_id}': { pathParams: { invite_id: '2' }, params: {} },
    'DELETE /api/v1/invites/multiuse/{invite_id}': { pathParams: { invite_id: '1' }, params: {} },
    'POST /api/v1/invites/{invite_id}/resend': { pathParams: { invite_id: '1' }, params: {} },
    'POST /api/v1/parley/invites/accept': {
      params: { key: joinLink.split('/join/')[1].replace('/', ''), full_name: 'Fuzz Joiner', password: 'pw', email: 'fuzz-joiner@example.com' },
      semantic: { key: ['nope', '', 'x'.repeat(201), 'x\u0000'], email: ['', 'nope', 'owner@example.com', 'x\u0000@example.com'], full_name: ['', '   ', 'a\u0000b'], password: [''] },
    },
    'POST /api/v1/scheduled_messages': [
      {
        params: { type: 'stream', to: String(general), topic: 'fuzz', content: 'later', scheduled_delivery_timestamp: later },
        semantic: { to: ['99999', '[99999]', '[-1]', `[${general},${general}]`], scheduled_delivery_timestamp: ['0', '-1'], content: ['', '   ', 'a\u0000b'], topic: ['a\u0000b'] },
      },
      { params: { type: 'direct', to: `[${alice.user_id}]`, content: 'later', scheduled_delivery_timestamp: later }, semantic: { to: ['[99999]', '[-1]', '[0]'] } },
    ],
    'PATCH /api/v1/scheduled_messages/{scheduled_message_id}': {
      pathParams: { scheduled_message_id: String(seedScheduled) },
      params: { content: 'fuzzed', scheduled_delivery_timestamp: later },
      semantic: { scheduled_delivery_timestamp: ['0'], to: ['99999'], content: ['', 'a\u0000b'] },
    },
    'DELETE /api/v1/scheduled_messages/{scheduled_message_id}': { pathParams: { scheduled_message_id: String(doomedScheduled) }, params: {} },
    'POST /api/v1/reminders': {
      params: { message_id: mid, scheduled_delivery_timestamp: later, note: 'fuzz' },
      semantic: { message_id: ['99999', '-1'], scheduled_delivery_timestamp: ['0'], note: ['x'.repeat(1001)] },
    },
    'DELETE /api/v1/reminders/{reminder_id}': { pathParams: { reminder_id: String(doomedReminder) }, params: {} },
    'POST /api/v1/users/me/subscriptions': { params: { subscriptions: '[{"name":"general"}]' } },
    'PATCH /api/v1/users/me/subscriptions': { params: { add: '[{"name":"general","color":"#c2c2c2"}]', delete: '["random"]' }, semantic: { add: ['[{"name":""}]', '[{"name":"general","color":"red"}]'], delete: ['["nosuch"]'] } },
    'DELETE /api/v1/users/me/subscriptions': { params: { subscriptions: '["random"]' } },
    'POST /api/v1/drafts': {
      params: { drafts: JSON.stringify([{ type: 'stream', to: [general], topic: 'fuzz', content: 'fuzz draft' }]) },
      semantic: { drafts: [JSON.stringify([{ type: 'stream', to: [], topic: 't', content: 'c' }]), JSON.stringify([{ type: 'private', to: [99999], topic: '', content: 'c' }]), JSON.stringify([{ type: '', to: [], topic: '', content: 'a\u0000b' }])] },
    },
    'PATCH /api/v1/drafts/{draft_id}': { pathParams: { draft_id: '1' }, params: { draft: JSON.stringify({ type: '', to: [], topic: '', content: 'fuzzed draft' }) } },
    'DELETE /api/v1/drafts/{draft_id}': { pathParams: { draft_id: '2' }, params: {} },
    'POST /api/v1/saved_snippets': { params: { title: 'Fuzz', content: 'fuzz snippet' } },
    'PATCH /api/v1/saved_snippets/{saved_snippet_id}': { pathParams: { saved_snippet_id: '1' }, params: { title: 'Fuzzed' } },
    'DELETE /api/v1/saved_snippets/{saved_snippet_id}': { pathParams: { saved_snippet_id: '2' }, params: {} },
    // Alice's, so that views the cases create (a fragment of `-0`) are not the owner's, whose paths the next routes fuzz.
    'POST /api/v1/navigation_views': { who: alice, params: { fragment: 'narrow/is/fuzz', is_pinned: 'true', name: 'Fuzz view' }, semantic: { fragment: ['inbox', ' '], name: [' '] } },
    'PATCH /api/v1/navigation_views/{fragment}': { pathParams: { fragment: 'narrow/is/seed' }, params: { is_pinned: 'false' } },
    'DELETE /api/v1/navigation_views/{fragment}': { pathParams: { fragment: 'narrow/is/doomed' }, params: {} },
    'POST /api/v1/users/me/muted_users/{muted_user_id}': { pathParams: { muted_user_id: String(alice.user_id) }, params: {} },
    'DELETE /api/v1/users/me/muted_users/{muted_user_id}': { pathParams: { muted_user_id: String(muted.user_id) }, params: {} },
    'GET /api/v1/bot_storage': { who: storeBot, params: { keys: '["seed"]' } },
    'PUT /api/v1/bot_storage': { who: storeBot, params: { storage: JSON.stringify({ fuzz: 'value' }) } },
    'DELETE /api/v1/bot_storage': { who: storeBot, params: {} },
  };
  // Queues are the one thing a refused request may legitimately touch (a poll's bookkeeping), so they are left out.
  const digest = (): string => stateDigest(f.runtime);
  let total = 0;
  const mine = chatRoutes.filter((_, i) => i % SHARDS === SHARD - 1);
  for (const route of mine) {
    const key = `${route.method} ${route.path}`;
    const bases = [BASES[key] ?? { params: {} }].flat();
    const cases = bases.flatMap((base, i) => chatCases(route, base.who ?? f.owner, base, i === 0));
    total += cases.length;
    const refusedBase = key === 'POST /api/v1/dev_fetch_api_key' || key === 'POST /api/v1/export/realm' || (key === 'POST /api/v1/users/{user_id}/reactivate' && (await f.call(f.owner, 'GET', `/api/v1/users/${victim.user_id}`)).json.user.is_active);
    const valid = refusedBase ? [] : bases.map((b) => chatRequest(route, b.who ?? f.owner, b, b.params));
    const problemOf = route.path.startsWith('/api/v1/tus') ? tusProblem : chatProblem;
    await t.test(key, (t) => runCases(t, key, cases, { app, digest, problemOf, logs, known: CHAT_KNOWN, bases: valid }));
  }
  t.comment(`${total} chat cases over ${mine.length} of ${chatRoutes.length} routes (shard ${SHARD}/${SHARDS})`);
});

// ---------------------------------------------------------------------------
// Board
// ---------------------------------------------------------------------------

/** A canonical JSON of the board's state (maps and sets sorted). */
function boardDigest(f: BoardFixture): string {
  const canon = (v: unknown): unknown => {
    if (v instanceof IdSet) return v.toArray();
    if (v instanceof Map) return [...v.entries()].map(([k, x]) => [canon(k), canon(x)]).sort((a, b) => JSON.stringify(a[0]).localeCompare(JSON.stringify(b[0])));
    if (v instanceof Set) return [...v].map(canon).sort();
    if (Array.isArray(v)) return v.map(canon);
    if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().filter((k) => k !== 'seq').map((k) => [k, canon((v as Record<string, unknown>)[k])]));
    return v;
  };
  return JSON.stringify(canon(f.runtime.board()));
}

/** Query values every integer parameter refuses (plain decimal digits only, within its bounds). */
function badIntegers(schema: Record<string, unknown>): string[] {
  const out = ['', 'abc', '1.5', '-1', '+5', '05', ' 5', '5 ', '1e2', '0x10', '99999999999', '9'.repeat(400), '5\u0000', '\u0665'];
  if (typeof schema.minimum === 'number') out.push(String(schema.minimum - 1));
  if (typeof schema.maximum === 'number') out.push(String(schema.maximum + 1));
  return out;
}

/** Query values a string parameter refuses, from its schema. */
function badStrings(schema: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof schema.minLength === 'number' && schema.minLength > 0) out.push('');
  if (typeof schema.maxLength === 'number') out.push('x'.repeat(schema.maxLength + 1));
  if (typeof schema['x-maxCodePoints'] === 'number') out.push('😀'.repeat((schema['x-maxCodePoints'] as number) + 1));
  if (typeof schema['x-maxUtf8Bytes'] === 'number') out.push('é'.repeat(Math.ceil((schema['x-maxUtf8Bytes'] as number) / 2) + 1));
  if (typeof schema.const === 'string') out.push(schema.const.toUpperCase(), `${schema.const}\u0000`, '');
  if (Array.isArray(schema.enum)) out.push('bogus');
  return out;
}

/** JSON bodies of the wrong shape, from the body schema: each breaks one rule of an otherwise valid body. */
function badBodies(schema: Record<string, any>): Array<[string, string]> {
  const props: Record<string, any> = schema.properties ?? {};
  const required: string[] = schema.required ?? [];
  const valid: Record<string, unknown> = Object.fromEntries(required.map((k) => [k, 'fuzz']));
  const out: Array<[string, string]> = [
    ['an array', '[]'], ['a string', '"fuzz"'], ['null', 'null'], ['a number', '1'], ['true', 'true'],
    ['an empty object', '{}'], ['an unknown property', JSON.stringify({ ...valid, zz: 1 })], ['a deep array', deepArray(5000)],
    ['a deep object in a property', `{"${required[0]}":${deepObject(5000)}}`], ['__proto__ as a property', `{${required.map((k) => `"${k}":"fuzz"`).join(',')},"__proto__":{"x":1}}`],
    ['a duplicate key with a bad value last', `{${required.map((k) => `"${k}":"fuzz","${k}":5`).join(',')}}`],
  ];
  for (const k of required) {
    const { [k]: _, ...rest } = valid;
    out.push([`without ${k}`, JSON.stringify(rest)]);
  }
  for (const [k, p] of Object.entries(props)) {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    for (const [what, v] of [['5', 5], ['[]', []], ['{}', {}], ['true', true], ['null', null]] as Array<[string, unknown]>) {
      const jsonType = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'object';
      if (!types.includes(jsonType) && !(Array.isArray(p.enum) && p.enum.includes(v))) out.push([`${k}: ${what}`, JSON.stringify({ ...valid, [k]: v })]);
    }
    if (types.includes('string')) {
      for (const s of badStrings(p)) out.push([`${k}: ${label(s.slice(0, 20))} (${s.length} chars)`, JSON.stringify({ ...valid, [k]: s })]);
      if (p['x-wellFormed']) out.push([`${k}: a lone surrogate`, `{${Object.entries(valid).filter(([x]) => x !== k).map(([x, y]) => `"${x}":"${y}",`).join('')}"${k}":"a\\ud800b"}`]);
      if (p['x-httpUrl']) for (const u of ['javascript:alert(1)', 'ftp://example.com/', 'http://', 'http://a b/', 'http://x/\u0000', '//example.com/']) out.push([`${k}: ${label(u)}`, JSON.stringify({ ...valid, [k]: u })]);
    }
    if (k === 'replyTo') for (const id of ['m99999', 'm0', 'g1', 'x', '']) out.push([`replyTo: ${id} (no such message)`, JSON.stringify({ ...valid, replyTo: id })]);
  }
  return out;
}

/** The valid request a board route's cases are derived from. */
function boardBase(route: RouteRecord, nonce: string): InjectRequest {
  const required = queryParamsOf(route).filter(([, p]) => p.required);
  const query = new URLSearchParams(required.map(([n, p]): [string, string] => [n, typeof p.schema.const === 'string' ? p.schema.const : 'fuzz'])).toString();
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'nonce' ? nonce : name === 'id' ? 'm1' : 'x'));
  const body = route.body ? JSON.stringify(Object.fromEntries(((route.body.schema as any).required ?? []).map((k: string) => [k, 'fuzz']))) : undefined;
  return { method: route.method, url: query ? `${path}?${query}` : path, body, headers: route.body ? { 'content-type': 'application/json' } : {} };
}

/** Every case of one board route. */
function boardCases(route: RouteRecord, nonce: string): Case[] {
  const cases: Case[] = [];
  const req = (what: string, r: InjectRequest): void => void cases.push({ what, expect: 'invalid', req: r });
  const query = Object.fromEntries(queryParamsOf(route));
  // A valid query: required parameters at valid values (only the publish path has any).
  const validQuery: Record<string, string> = {};
  for (const [name, p] of Object.entries(query)) {
    if (!p.required) continue;
    validQuery[name] = typeof p.schema.const === 'string' ? p.schema.const : 'fuzz';
  }
  const segments = (over: Record<string, string> = {}): string =>
    route.path.replace(/\{(\w+)\}/g, (_, name: string) => over[name] ?? (name === 'nonce' ? nonce : name === 'id' ? 'm1' : 'x'));
  const url = (q: string, over?: Record<string, string>): string => (q ? `${segments(over)}?${q}` : segments(over));
  const body = route.body ? JSON.stringify(Object.fromEntries(((route.body.schema as any).required ?? []).map((k: string) => [k, 'fuzz']))) : undefined;
  const json: Record<string, string> = route.body ? { 'content-type': 'application/json' } : {};
  const base = (q: string, over?: Record<string, string>): InjectRequest => ({ method: route.method, url: url(q, over), body, headers: json });
  const validQs = new URLSearchParams(validQuery).toString();

  // Query parameters of the wrong value.
  for (const [name, p] of Object.entries(query)) {
    const bad = p.schema.type === 'integer' ? badIntegers(p.schema) : p.schema.type === 'string' ? badStrings(p.schema) : [];
    const chosen = name === 'cursor'
      ? ['', '!!!', 'x'.repeat(65), Buffer.from(`v1:${route.path.startsWith('/guestbook') ? 'm' : 'g'}:1`).toString('base64url'), Buffer.from('v1:m:999999').toString('base64url'), Buffer.from('v1:m:0').toString('base64url'), Buffer.from('v2:m:1').toString('base64url'), Buffer.from('v1:m:01').toString('base64url'), '%FF', 'AAAA']
      : bad;
    for (const raw of chosen) {
      const encoded = raw.startsWith('%') ? raw : encodeURIComponent(raw);
      const qs = [Object.entries(validQuery).filter(([k]) => k !== name).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&'), `${name}=${encoded}`].filter((x) => x).join('&');
      req(`${name}=${label(raw.slice(0, 40))}`, base(qs));
    }
    const once = `${name}=${encodeURIComponent(validQuery[name] ?? '5')}`;
    req(`${name} given twice`, base([validQs, once, ...(name in validQuery ? [] : [once])].filter((x) => x).join('&')));
  }
  for (const q of ['zz=1', '__proto__=1', 'constructor=1', '%FF=1', 'a=%FF', 'a=%G1', '%=x', 'a=%C0%AF', 'a=%ED%A0%80']) req(`query ${q}`, base([validQs, q].filter((x) => x).join('&')));
  req('a U+FFFD the transport left for an invalid byte in the query', base([validQs, 'zz=\uFFFD'].filter((x) => x).join('&')));
  // Path parameters that name nothing.
  for (const name of pathParamsOf(route).map(([name]) => name)) {
    const segs = name === 'id' ? ['m0', 'm', 'x1', 'm01', 'm99999', 'm1%00', '%FF', 'm-1', `m${'9'.repeat(20)}`, 'g1', 'M1', 'm1%2F', '%6D1x'] : ['x', '%FF', '%00', 'a'.repeat(300), '..', '%2E%2E'];
    for (const seg of segs) req(`{${name}}=${seg}`, base(validQs, { [name]: seg }));
  }
  // Bodies: media type, bytes, JSON, shape, size.
  if (route.body) {
    const raw = (what: string, b: string | Buffer, type = 'application/json'): void => req(what, { method: route.method, url: url(validQs), body: b, headers: { 'content-type': type } });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'application/jsonx', 'multipart/form-data; boundary=x']) raw(`content-type ${type}`, body!, type);
    req('no content-type', { method: route.method, url: url(validQs), body });
    raw('raw 0xFF inside a JSON string', Buffer.concat([Buffer.from(body!.slice(0, -2)), Buffer.from([0xff]), Buffer.from('"}')]));
    raw('an overlong UTF-8 encoding', Buffer.concat([Buffer.from(body!.slice(0, -2)), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]));
    raw('a UTF-16 body', Buffer.from(body!, 'utf16le'));
    for (const bad of ['', '{', '{"a":1,}', "{'a':1}", 'NaN', '{"a":1} x', '\u0000']) raw(`invalid JSON ${label(bad)}`, bad);
    for (const [what, b] of badBodies(route.body.schema as Record<string, any>)) raw(what, b);
    raw(`a body over ${route.body.maxBytes} bytes`, JSON.stringify({ x: 'x'.repeat(route.body.maxBytes) }));
  }
  // Methods the path does not have.
  for (const method of ['PUT', 'DELETE', 'PATCH']) req(`method ${method}`, { ...base(validQs), method });
  return cases;
}

/** Failures that need a change outside this test's files (none known). */
const BOARD_KNOWN: Known[] = [];

if (SHARD === 1) t.test(`board routes (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_FUZZ_SEED=${seed}`);
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  await f.setSwitch('compat', true);
  for (const body of ['first', 'second']) {
    const r = await f.call('POST', '/api/v1/messages', { json: { body } });
    if (r.status !== 201) throw new Error(`board post failed: ${r.body}`);
  }
  if ((await f.call('POST', '/api/v1/guestbook', { json: { message: 'hello' } })).status !== 201) throw new Error('guestbook failed');
  // A live nonce: a refused publish must not consume it.
  const nonce = await challenge(f);
  let total = 0;
  for (const route of boardRoutes) {
    const key = `${route.method} ${route.path}`;
    const cases = boardCases(route, nonce);
    total += cases.length;
    await t.test(key, (t) => runCases(t, key, cases, { app: f.app, digest: () => boardDigest(f), problemOf: boardProblem, logs: f.logs, known: BOARD_KNOWN, bases: [boardBase(route, nonce)] }));
  }
  t.comment(`${total} board cases over ${boardRoutes.length} routes`);
});
