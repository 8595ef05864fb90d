/**
 * Requests that held the event loop (issue 24, §2) are refused or bounded: a form body
 * over the non-upload ceiling or with too many fields, JSON nested too deeply, too many
 * alert words, content to render past `max_message_length`, many linkifier matches, and
 * too many channels in one subscribe. Nothing here is timed: each input is refused with
 * Zulip's error shape, or its work is counted, or a large allowed input gets the right
 * answer. (The figures before and after are in docs/api.md, HTTP limits.)
 */
import t, { type Test } from 'tap';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { MAX_ALERT_WORDS } from '../actors/areas/alert_words.js';
import { MAX_CHANNELS_PER_REQUEST } from '../actors/areas/subscriptions.js';
import { compileLinkifiers, expandTemplate, hasLinkifierMatch, linkifierMatches, type CompiledLinkifier, type LinkifierWork } from '../actors/rules/linkifiers.js';
import { LIMITS, MESSAGE_TRUNCATED } from '../actors/rules/messages.js';
import { Role } from '../actors/shared/types.js';
import { loadConfig } from '../src/config.js';
import { MAX_FORM_FIELDS } from '../src/http/body.js';
import { MAX_JSON_DEPTH, nestedWithin } from '../src/http/params.js';
import type { IncomingRequest } from '../src/http/types.js';
import { chatFixture, withRole, type ApiResult } from './helpers.js';

function refused(t: Test, r: ApiResult, status: number, code: string, msg: string): void {
  t.same([r.status, r.json?.result, r.json?.code, r.json?.msg], [status, 'error', code, msg], msg);
}

t.test('a body that is not an upload is held to 2.5 MiB; an upload to its own ceiling', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  t.equal(loadConfig([], {}).maxBodyBytes, 2621440, "Django's DATA_UPLOAD_MAX_MEMORY_SIZE by default");
  const req = (path: string) => ({ method: 'POST', path, query: '', headers: {}, body: Buffer.alloc(0), remoteAddress: '127.0.0.1' }) as unknown as IncomingRequest;
  t.equal(f.app.bodyLimit(req('/api/v1/fetch_api_key')), 2621440, 'a form: the small ceiling (413 before buffering, test/http_limits.test.ts)');
  t.ok(f.app.bodyLimit(req('/api/v1/user_uploads')) >= f.config.maxFileUploadSizeMib * 1024 * 1024, 'an upload: max_file_upload_size_mib');
});

t.test('a form body of more than 1000 fields is refused before it is decoded', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const post = (body: string) => f.call(null, 'POST', '/api/v1/fetch_api_key', {}, { body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const msg = `Too many fields in a form body (at most ${MAX_FORM_FIELDS})`;
  const credentials = 'username=owner%40example.com&password=owner-pass';
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `x${i}=1`).join('&');
  const atLimit = await post(`${credentials}&${filler(MAX_FORM_FIELDS - 2)}`);
  t.equal(atLimit.status, 200, '1000 fields: answered as usual');
  t.equal(atLimit.json.ignored_parameters_unsupported.length, MAX_FORM_FIELDS - 2);
  refused(t, await post(`${credentials}&${filler(MAX_FORM_FIELDS - 1)}`), 400, 'BAD_REQUEST', msg);
  refused(t, await post('a=1&'.repeat(600_000)), 400, 'BAD_REQUEST', msg);
  refused(t, await post('&'.repeat(MAX_FORM_FIELDS)), 400, 'BAD_REQUEST', msg);
});

t.test('JSON parameters nested more than 100 deep are refused before they are parsed', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  t.ok(nestedWithin(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH));
  t.notOk(nestedWithin(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH));
  t.ok(nestedWithin(`[{"operator":"search","operand":"${'[{'.repeat(500)}\\"]"}]`, 2), 'brackets in strings, and escaped quotes, do not count');
  t.notOk(nestedWithin('{"a":{"b":[[]]}}', 3));
  const flags = (narrow: string) => f.call(f.owner, 'POST', '/api/v1/messages/flags/narrow', { narrow, anchor: 'newest', num_before: 1, num_after: 0, op: 'add', flag: 'read' });
  const msg = `Argument "narrow" is nested too deeply (at most ${MAX_JSON_DEPTH} levels).`;
  const deep = await flags(nested(MAX_JSON_DEPTH + 1));
  refused(t, deep, 400, 'BAD_REQUEST', msg);
  t.equal(deep.json.var_name, 'narrow');
  refused(t, await flags(nested(1_000_000)), 400, 'BAD_REQUEST', msg);
  const atLimit = await flags(nested(MAX_JSON_DEPTH));
  t.equal(atLimit.status, 400);
  t.not(atLimit.json.msg, msg, 'at the limit: parsed, and refused as any bad narrow is');
  t.equal((await flags(JSON.stringify([{ operator: 'search', operand: '['.repeat(500) }]))).status, 200, 'brackets in a search are text');
});

t.test('alert words: linear de-duplication, and at most 1000', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', Role.GUEST);
  const add = (words: string[]) => f.call(guest, 'POST', '/api/v1/users/me/alert_words', { alert_words: JSON.stringify(words) });
  const msg = `Too many alert words (limit: ${MAX_ALERT_WORDS})`;
  refused(t, await add(Array.from({ length: 100_000 }, (_, i) => `w${i}`)), 400, 'BAD_REQUEST', msg);
  // Half the list repeats the other half in another case: each word is kept once, as first written.
  const half = Array.from({ length: MAX_ALERT_WORDS / 2 }, (_, i) => `Word${i}`);
  const first = await add([...half, ...half.map((w) => w.toUpperCase()), ...half.map((w) => w.toLowerCase())].slice(0, MAX_ALERT_WORDS));
  t.same(first.json.alert_words, half, `${MAX_ALERT_WORDS} words given, ${half.length} kept`);
  const more = Array.from({ length: MAX_ALERT_WORDS / 2 }, (_, i) => `more${i}`);
  t.equal((await add([...more, ...half])).json.alert_words.length, MAX_ALERT_WORDS, 'up to the limit');
  refused(t, await add(['one more']), 400, 'BAD_REQUEST', msg);
  t.equal((await add(['WORD0'])).status, 200, 'a word already held adds nothing, even at the limit');
  t.equal((await f.call(guest, 'GET', '/api/v1/users/me/alert_words')).json.alert_words.length, MAX_ALERT_WORDS, 'a refusal changes nothing');
});

t.test('content to render is cut at max_message_length, as a send cuts it', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const render = async (content: string) => (await f.call(f.owner, 'POST', '/api/v1/messages/render', { content })).json.rendered as string;
  const cut = '['.repeat(LIMITS.max_message_length - [...MESSAGE_TRUNCATED].length) + MESSAGE_TRUNCATED;
  t.equal(await render('['.repeat(2 * 1024 * 1024)), await render(cut), '2 MiB of [ renders as the message a send would keep');
  const exact = 'a'.repeat(LIMITS.max_message_length);
  t.equal(await render(exact), `<p>${exact}</p>`, 'content at the limit is not cut');
  // A run of whitespace before text made the send's trailing-whitespace regex quadratic.
  await f.subscribe(f.owner, 'general');
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `${' '.repeat(200_000)}x  ` });
  t.equal(sent.status, 200, sent.body.slice(0, 200));
  const raw = (await f.call(f.owner, 'GET', `/api/v1/messages/${sent.json.id}`, { apply_markdown: false })).json.message.content;
  t.equal(raw, ' '.repeat(LIMITS.max_message_length - [...MESSAGE_TRUNCATED].length) + MESSAGE_TRUNCATED);
});

/** The linkifier matching before it was made linear: every linkifier searched again from each match's end. */
function naiveMatches(text: string, linkifiers: CompiledLinkifier[], openStart: boolean, openEnd: boolean): Array<{ start: number; end: number; url: string }> {
  const out: Array<{ start: number; end: number; url: string }> = [];
  let from = 0;
  while (from < text.length) {
    let best: { start: number; end: number; url: string } | null = null;
    for (const l of linkifiers) {
      const m = l.regex.matcher(text);
      let at = from;
      while (at <= text.length && m.find(at)) {
        const start = m.start();
        const end = m.end();
        const okBefore = start === 0 ? openStart : /[\s'"(,:<]/.test(text[start - 1]);
        const okAfter = end === text.length ? openEnd : !/[\p{L}\p{N}_]/u.test(text[end]);
        if (end > start && okBefore && okAfter) {
          if (!best || start < best.start) {
            const groups: Record<string, string> = {};
            for (const name of Object.keys(l.regex.namedGroups())) groups[name] = m.group(name) ?? '';
            best = { start, end, url: expandTemplate(l.url_template, groups) };
          }
          break;
        }
        at = start + 1;
      }
    }
    if (!best) break;
    out.push(best);
    from = best.end;
  }
  return out;
}

t.test('linkifier matching searches each linkifier through the text about once', async (t) => {
  const linkifiers = compileLinkifiers([
    ...Array.from({ length: 99 }, (_, i) => ({ pattern: `L${i}x(?P<id>[0-9]+)`, url_template: `https://example.com/${i}/{id}` })),
    { pattern: '#(?P<id>[0-9]+)', url_template: 'https://example.com/issue/{id}' },
  ]);
  const text = Array.from({ length: 1600 }, (_, i) => `#${i % 10}`).join(' ');
  const work: LinkifierWork = { finds: 0 };
  const matches = linkifierMatches(text, linkifiers, true, true, work);
  t.equal(matches.length, 1600);
  t.same(matches[1], { start: 3, end: 5, url: 'https://example.com/issue/1' });
  t.ok(work.finds <= matches.length + linkifiers.length, `${work.finds} searches for ${matches.length} matches of 100 linkifiers (was one per linkifier per match, 160,000)`);
  t.same(matches, naiveMatches(text, linkifiers, true, true), 'the same matches as before');

  const f = await chatFixture();
  t.teardown(f.stop);
  for (let i = 0; i < 100; i++) t.equal((await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: i === 99 ? '#(?P<id>[0-9]+)' : `L${i}x(?P<id>[0-9]+)`, url_template: `https://example.com/${i}/{id}` })).status, 200);
  const rendered = (await f.call(f.owner, 'POST', '/api/v1/messages/render', { content: text })).json.rendered as string;
  t.equal(rendered.split('<a href="https://example.com/99/').length - 1, 1600, 'a message of 1,600 matches renders them all');
});

t.test('a near miss is not searched again from every position of a long word', async (t) => {
  const jira = compileLinkifiers([{ pattern: '(?P<key>[A-Z]+-[0-9]+)', url_template: 'https://jira.example/{key}' }]);
  const cases: Array<[string, Array<{ start: number; end: number; url: string }>]> = [
    ['A'.repeat(9997) + '-1x', []],
    ['A '.repeat(4997) + 'A-1x', []],
    ['A'.repeat(9990) + ' AB-12 x', [{ start: 9991, end: 9996, url: 'https://jira.example/AB-12' }]],
  ];
  for (const [text, expected] of cases) {
    const work: LinkifierWork = { finds: 0 };
    t.same(linkifierMatches(text, jira, true, true, work), expected);
    t.ok(work.finds <= 2, `${work.finds} searches, not one per character (${text.length})`);
  }
});

t.test('linkifier matching gives what it gave before, on any text and linkifiers', async (t) => {
  const patterns = ['#(?P<id>[0-9]+)', 'a+', '(?P<x>ab|a)', 'b(?P<y>a*)', '[a#]+(?P<z>[0-9])', 'ba', '(?P<w>a)\\b', '1'];
  fc.assert(
    fc.property(fc.subarray(patterns, { minLength: 1 }), fc.stringMatching(/^[ab#1( ,.é]{0,40}$/), fc.boolean(), fc.boolean(), (chosen, text, openStart, openEnd) => {
      const list = chosen.map((pattern, i) => {
        const names = Object.keys(RE2JS.compile(pattern).namedGroups());
        return { pattern, url_template: `https://x.example/${i}/${names.map((n) => `{${n}}`).join('/')}` };
      });
      const linkifiers = compileLinkifiers(list);
      const before = naiveMatches(text, linkifiers, openStart, openEnd);
      t.same(linkifierMatches(text, linkifiers, openStart, openEnd), before);
      t.equal(hasLinkifierMatch(text, linkifiers, openStart, openEnd), before.length > 0);
      return true;
    }),
    { numRuns: 300, seed: 24 },
  );
});

t.test('one subscribe request names at most 1000 channels', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const channels = (n: number, prefix: string) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${i}` })));
  const before = (await f.call(f.owner, 'GET', '/api/v1/streams')).json.streams.length;
  refused(t, await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: channels(MAX_CHANNELS_PER_REQUEST + 1, 'over') }), 400, 'BAD_REQUEST', `Too many channels in one request (limit: ${MAX_CHANNELS_PER_REQUEST}).`);
  refused(t, await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: channels(50_000, 'many') }), 400, 'BAD_REQUEST', `Too many channels in one request (limit: ${MAX_CHANNELS_PER_REQUEST}).`);
  t.equal((await f.call(f.owner, 'GET', '/api/v1/streams')).json.streams.length, before, 'nothing created');
  const ok = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: channels(MAX_CHANNELS_PER_REQUEST, 'ok') });
  t.equal(ok.json.subscribed[String(f.owner.user_id)].length, MAX_CHANNELS_PER_REQUEST, 'at the limit: all created');
});
