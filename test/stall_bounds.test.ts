/**
 * Requests the `stall` bench scenario found holding the event loop after the first round
 * (issue 24, §2, round 2) are refused or bounded: drafts and subscription property changes
 * per request, bot storage refused to a human before its body is decoded, search
 * highlighting compiled once per request, unmatched brackets in Markdown, and the realm
 * export built in slices. Nothing here is timed: each input is refused with Zulip's
 * error shape, or its work is counted, or its output is compared with the plain way's.
 */
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_BOT_STORAGE_ENTRIES_PER_REQUEST } from '../actors/areas/bot_storage.js';
import { MAX_DRAFTS_PER_REQUEST } from '../actors/areas/drafts.js';
import { MAX_PROPERTY_CHANGES_PER_REQUEST } from '../actors/areas/subscription_settings.js';
import { exportProgress } from '../actors/areas/realm_exports.js';
import { highlighter } from '../actors/render/highlight.js';
import { renderMarkdown, type MarkdownEnv } from '../actors/engines/markdown/index.js';
import { LINK_RULE_BOUND } from '../actors/engines/markdown/links.js';
import fc from 'fast-check';
import { ANSWER_SLICE } from '../src/http/slices.js';
import { EXPORT_SLICE } from '../src/exports/realm_export.js';
import { botCredentials, chatFixture, untar, type ApiResult, type Credentials, injectChecked } from './helpers.js';

function refused(t: Test, r: ApiResult, status: number, code: string, msg: string): void {
  t.same([r.status, r.json?.result, r.json?.code, r.json?.msg], [status, 'error', code, msg], msg);
}

t.test('one POST /drafts creates at most 1000 drafts; more are refused before any is checked', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/settings', { enable_drafts_synchronization: true })).status, 200);
  const drafts = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ type: '', to: [], topic: '', content: `draft ${i}` })));
  const msg = `Invalid drafts: must NOT have more than ${MAX_DRAFTS_PER_REQUEST} items`;
  refused(t, await f.call(f.owner, 'POST', '/api/v1/drafts', { drafts: drafts(MAX_DRAFTS_PER_REQUEST + 1) }), 400, 'BAD_REQUEST', msg);
  refused(t, await f.call(f.owner, 'POST', '/api/v1/drafts', { drafts: drafts(10_000) }), 400, 'BAD_REQUEST', msg);
  t.equal((await f.call(f.owner, 'GET', '/api/v1/drafts')).json.count, 0, 'nothing created');
  const ok = await f.call(f.owner, 'POST', '/api/v1/drafts', { drafts: drafts(MAX_DRAFTS_PER_REQUEST) });
  t.equal(ok.json.ids.length, MAX_DRAFTS_PER_REQUEST, 'at the limit: all created');
});

t.test('one subscription properties request asks for at most 1000 changes', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  const streamId = (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'general' })).json.stream_id as number;
  const changes = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ stream_id: streamId, property: 'pin_to_top', value: i % 2 === 0 })));
  const msg = `Invalid subscription_data: must NOT have more than ${MAX_PROPERTY_CHANGES_PER_REQUEST} items`;
  refused(t, await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions/properties', { subscription_data: changes(MAX_PROPERTY_CHANGES_PER_REQUEST + 1) }), 400, 'BAD_REQUEST', msg);
  refused(t, await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions/properties', { subscription_data: changes(40_000) }), 400, 'BAD_REQUEST', msg);
  const sub = async () => (await f.call(f.owner, 'GET', '/api/v1/users/me/subscriptions')).json.subscriptions.find((s: { stream_id: number }) => s.stream_id === streamId);
  t.equal((await sub()).pin_to_top, false, 'nothing changed');
  const ok = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions/properties', { subscription_data: changes(MAX_PROPERTY_CHANGES_PER_REQUEST) });
  t.equal(ok.status, 200, 'at the limit: accepted');
  t.equal((await sub()).pin_to_top, false, 'the last change wins (an even count ends with false)');
});

t.test('bot storage is refused to a human before the body is decoded', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const msg = 'This endpoint is only available to bots.';
  const many = JSON.stringify(Object.fromEntries(Array.from({ length: 87_000 }, (_, i) => [`k${i}`, 'v'])));
  refused(t, await f.call(f.owner, 'PUT', '/api/v1/bot_storage', { storage: many }), 403, 'PERMISSION_DENIED', msg);
  // Not JSON, and a parameter missing: a human still gets the 403, so nothing was decoded.
  refused(t, await f.call(f.owner, 'PUT', '/api/v1/bot_storage', { storage: '{"unterminated' }), 403, 'PERMISSION_DENIED', msg);
  refused(t, await f.call(f.owner, 'PUT', '/api/v1/bot_storage'), 403, 'PERMISSION_DENIED', msg);
  refused(t, await f.call(f.owner, 'GET', '/api/v1/bot_storage', { keys: '[[[' }), 403, 'PERMISSION_DENIED', msg);
  refused(t, await f.call(f.owner, 'DELETE', '/api/v1/bot_storage', { keys: '[[[' }), 403, 'PERMISSION_DENIED', msg);
  const made = (await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Keeper', short_name: 'keeper' })).json;
  const bot: Credentials = await botCredentials(f, made);
  refused(t, await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: '{"unterminated' }), 400, 'BAD_REQUEST', 'Argument "storage" is not valid JSON.');
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: JSON.stringify({ a: 'b' }) })).status, 200, 'a bot is served');
  const entries = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'])));
  const tooMany = `Invalid storage: must NOT have more than ${MAX_BOT_STORAGE_ENTRIES_PER_REQUEST} properties`;
  refused(t, await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: entries(MAX_BOT_STORAGE_ENTRIES_PER_REQUEST + 1) }), 400, 'BAD_REQUEST', tooMany);
  refused(t, await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: many }), 400, 'BAD_REQUEST', tooMany);
  t.same(Object.keys((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage), ['a'], 'nothing set');
  t.equal((await f.call(bot, 'PUT', '/api/v1/bot_storage', { storage: entries(MAX_BOT_STORAGE_ENTRIES_PER_REQUEST) })).status, 200, 'at the limit: set');
  t.equal(Object.keys((await f.call(bot, 'GET', '/api/v1/bot_storage')).json.storage).length, MAX_BOT_STORAGE_ENTRIES_PER_REQUEST + 1);
});

t.test('GET /messages: topic links follow the linkifiers, though kept by topic', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  const send = (topic: string) => f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic, content: 'hello' });
  for (const topic of ['T-1 here', 'T-2 there', 'T-1 here', 'see https://example.com/x']) t.equal((await send(topic)).status, 200);
  const links = async () => (await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 10, num_after: 0 })).json.messages.map((m: { topic_links: unknown }) => m.topic_links);
  t.same(await links(), [[], [], [], [{ text: 'https://example.com/x', url: 'https://example.com/x' }]], 'no linkifiers: only URLs');
  const added = await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: 'T-(?P<id>[0-9]+)', url_template: 'https://t.example/{id}' });
  t.equal(added.status, 200, added.body);
  const one = [{ text: 'T-1', url: 'https://t.example/1' }];
  t.same(await links(), [one, [{ text: 'T-2', url: 'https://t.example/2' }], one, [{ text: 'https://example.com/x', url: 'https://example.com/x' }]], 'a new linkifier applies at once');
  const page = await links();
  page[0][0].text = 'changed';
  t.same((await links())[0], one, 'each answer has its own copy');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/realm/filters/${added.json.id}`)).status, 200);
  t.same((await links())[0], [], 'a removed linkifier no longer applies');
});

t.test('search highlighting compiles its pattern once, however many messages it marks', async (t) => {
  const Native = globalThis.RegExp;
  let compiled = 0;
  globalThis.RegExp = class extends Native {
    constructor(...args: ConstructorParameters<typeof RegExp>) {
      super(...args);
      compiled++;
    }
  } as RegExpConstructor;
  try {
    const h = highlighter(['pie', 'a.b', 'x&y']);
    const html = Array.from({ length: 500 }, () => h.html('<p>apple pie, a.b and <a href="pie">PIE</a> x&amp;y</p>'));
    const topics = Array.from({ length: 500 }, () => h.text('pie & a.b <x&y>'));
    t.equal(compiled, 1, 'one pattern for 1,000 texts');
    t.equal(html[499], '<p>apple <span class="highlight">pie</span>, <span class="highlight">a.b</span> and <a href="pie"><span class="highlight">PIE</span></a> <span class="highlight">x&amp;y</span></p>', 'never inside a tag');
    t.equal(topics[499], '<span class="highlight">pie</span> &amp; <span class="highlight">a.b</span> &lt;<span class="highlight">x&amp;y</span>&gt;', 'a topic is escaped, then marked');
  } finally {
    globalThis.RegExp = Native;
  }
  t.equal(highlighter([]).text('<b>'), '&lt;b&gt;', 'no words: the topic escaped');
  t.equal(highlighter(['']).html('<p>x</p>'), '<p>x</p>', 'no words: the HTML as it is');
});

t.test('GET /messages builds its page in slices, and the answer is the same byte for byte', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: 'T-(?P<id>[0-9]+)', url_template: 'https://t.example/{id}' })).status, 200);
  for (let i = 0; i < 40; i++) {
    const content = i % 3 === 0 ? `the quick **brown** fox ${i}` : `a lazy dog ${i}, T-${i}`;
    t.equal((await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: `T-${i % 4} fox`, content })).status, 200);
  }
  const get = (narrow: unknown[]) => f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow: JSON.stringify(narrow) });
  const narrows = [[], [{ operator: 'channel', operand: 'general' }, { operator: 'search', operand: 'fox brown' }]];
  const saved = { ...ANSWER_SLICE };
  t.teardown(() => Object.assign(ANSWER_SLICE, saved));
  for (const narrow of narrows) {
    Object.assign(ANSWER_SLICE, { items: 1_000_000, ms: Infinity, onYield: undefined });
    const whole = await get(narrow);
    t.equal(whole.status, 200);
    let slices = 1;
    Object.assign(ANSWER_SLICE, { items: 3, onYield: () => slices++ });
    const sliced = await get(narrow);
    const n = whole.json.messages.length;
    t.ok(n > 10, `${n} messages`);
    t.equal(slices, Math.ceil(n / 3), 'three messages a slice');
    t.equal(sliced.body, whole.body, 'the same answer');
  }
});

/** The files of a gzipped tar archive, as text. */
async function untarText(gz: Buffer): Promise<Map<string, string>> {
  return new Map([...(await untar(gz))].map(([name, bytes]) => [name, bytes.toString()]));
}

t.test('a realm export gathers its messages in slices, with the same archive', async (t) => {
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-stall-export-')) } });
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  await f.subscribe(f.owner, 'other');
  for (let i = 0; i < 24; i++) t.equal((await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: i % 3 === 0 ? 'other' : 'general', topic: 't', content: `m ${i}` })).status, 200);
  const saved = { ...EXPORT_SLICE };
  t.teardown(() => Object.assign(EXPORT_SLICE, saved));
  const build = async (): Promise<Map<string, string>> => {
    const id = (await f.call(f.owner, 'POST', '/api/v1/export/realm')).json.id as number;
    for (let i = 0; i < 2000 && exportProgress(f.runtime, 1).find((e) => e.id === id)?.status === 'requested'; i++) await new Promise((r) => setTimeout(r, 5));
    const done = (await f.call(f.owner, 'GET', '/api/v1/export/realm')).json.exports.find((e: { id: number }) => e.id === id);
    const res = await injectChecked(f.app, { method: 'GET', url: new URL(done.export_url).pathname, headers: {} });
    return untarText(Buffer.from(res.body, 'latin1'));
  };
  let yields = 0;
  Object.assign(EXPORT_SLICE, { cover: 1_000_000, onYield: () => yields++ });
  const whole = await build();
  const baseline = yields;
  yields = 0;
  Object.assign(EXPORT_SLICE, { cover: 4 });
  const sliced = await build();
  t.ok(yields - baseline >= 24 / 4 - 1, `${yields - baseline} more yields while 24 messages were gathered, 4 at a time`);
  t.equal(JSON.parse(sliced.get('messages-000001.json')!).messages.length, 24);
  t.equal(sliced.get('messages-000001.json'), whole.get('messages-000001.json'), 'the same messages, in id order');
  t.equal(sliced.get('channels.json'), whole.get('channels.json'));
});

t.test("markdown-it's link rule runs only where a `]` follows, with the same HTML", async (t) => {
  const env: MarkdownEnv = { user: () => undefined, group: () => undefined, channel: () => undefined };
  const runs = (source: string): number => {
    LINK_RULE_BOUND.runs = 0;
    renderMarkdown(source, env);
    return LINK_RULE_BOUND.runs;
  };
  t.equal(runs('['.repeat(10_000)), 0, '10,000 `[` and no `]`: never run');
  t.equal(runs('!['.repeat(5000)), 0, 'nor for `![`');
  t.equal(runs('[a](http://e.com) ' + '['.repeat(1000)), 1, 'only the `[` a `]` follows');
  t.equal(runs('['.repeat(10_000) + '\n[message truncated]'), 1, 'a cut message: only the `[` its `]` can close');
  t.ok(runs('['.repeat(1000) + ' `]` ]') >= 1000, 'a code span after it may hide a bracket: every `[` is tried');
  const closed = '['.repeat(100) + '`x`]';
  const bounded = runs(closed);
  LINK_RULE_BOUND.enabled = false;
  const unbounded = runs(closed);
  LINK_RULE_BOUND.enabled = true;
  t.ok(bounded >= 100 && bounded === unbounded, `a \`]\` at the end: the rule runs as before (${bounded} times)`);
  LINK_RULE_BOUND.enabled = false;
  t.ok(runs('['.repeat(1000)) >= 1000, 'without the bound, 1,000 `[` ran it at least 1,000 times');
  LINK_RULE_BOUND.enabled = true;
  const pieces = ['[', '[', ']', ']', '[x]', '](http://e.com)', '(', ')', '!', 'a', ' ', '\n', '`', '**', '@**x**', '#**c**', 'http://e.com', '$$', '<time:1>', '\\', ':smile:', '> '];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 80 }), (parts) => {
      const source = parts.join('');
      LINK_RULE_BOUND.enabled = false;
      const plain = renderMarkdown(source, env).html;
      LINK_RULE_BOUND.enabled = true;
      return renderMarkdown(source, env).html === plain;
    }),
    { numRuns: 4000, seed: 24 },
  );
  LINK_RULE_BOUND.enabled = true;
});
