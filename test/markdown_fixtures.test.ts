/**
 * Parley's Markdown renderer against Zulip's own fixture file
 * (`test/fixtures/zulip_markdown_test_cases.json`, see its SOURCE.md).
 *
 * Each case is either out of scope — it needs something Parley does not have
 * (link/image previews) — or in scope, and
 * then `renderMarkdown(input).html` must equal Zulip's `expected_output` exactly.
 * The linkify cases are expanded as Zulip's test does (`<a href="…">url</a>`).
 * The test asserts the pass ratio's floor and that the failing cases are exactly
 * the known ones below, each with its reason: a regression fails, and so does a
 * fix (update the list).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { renderMarkdown, type MarkdownEnv } from '../actors/engines/markdown/index.js';
import { fixturePath } from './paths.js';

interface RegularCase {
  name: string;
  input: string;
  expected_output: string;
  backend_only_rendering?: boolean;
  translate_emoticons?: boolean;
  ignore?: boolean;
}
const fixture = JSON.parse(readFileSync(fixturePath('zulip_markdown_test_cases.json'), 'utf8')) as {
  regular_tests: RegularCase[];
  linkify_tests: [string, string, string][];
};

/** The fixture names no users, groups or channels; Zulip's test server is at this URL. */
const env: MarkdownEnv = { user: () => undefined, group: () => undefined, channel: () => undefined, realmUrl: 'http://zulip.testserver' };

/** The minimum share of in-scope cases that must pass. */
const FLOOR = 0.9;

/** In-scope cases Parley renders differently from Zulip, each with why (none today). */
const KNOWN_FAILURES: Record<string, string> = {};

type Category = 'link/image previews' | 'ignored by Zulip';

/** Why a case is out of scope, or null when it is in scope. */
function outOfScope(c: RegularCase): Category | null {
  if (c.ignore) return 'ignored by Zulip';
  if (c.expected_output.includes('message_inline_image') || c.expected_output.includes('message_embed')) return 'link/image previews';
  return null;
}

/** `translate`: the case's sender turned on `translate_emoticons`. */
interface Case { name: string; input: string; expected: string; translate?: boolean }
const inScope: Case[] = [];
const skipped = new Map<Category, string[]>();
for (const c of fixture.regular_tests) {
  const category = outOfScope(c);
  if (category === null) inScope.push({ name: c.name, input: c.input, expected: c.expected_output, translate: c.translate_emoticons === true });
  else skipped.set(category, [...(skipped.get(category) ?? []), c.name]);
}
fixture.linkify_tests.forEach(([input, template, url], i) => {
  const href = url.startsWith('http') ? url : url.includes('@') ? 'mailto:' + url : 'http://' + url;
  const expected = template.includes('%s') ? template.replace('%s', `<a href="${href}">${url}</a>`) : template;
  inScope.push({ name: `linkify_${i}: ${input}`, input, expected });
});

t.test('Zulip fixture: in-scope cases render as Zulip renders them', async (t) => {
  const failing: string[] = [];
  for (const c of inScope) {
    const got = renderMarkdown(c.input, c.translate ? { ...env, translateEmoticons: true } : env).html;
    if (got !== c.expected) {
      failing.push(c.name);
      if (!(c.name in KNOWN_FAILURES)) t.comment(`${c.name}\n  input:    ${JSON.stringify(c.input)}\n  expected: ${JSON.stringify(c.expected)}\n  got:      ${JSON.stringify(got)}`);
    }
  }
  const passed = inScope.length - failing.length;
  const ratio = passed / inScope.length;
  t.comment(`in scope ${inScope.length}, passed ${passed}, ratio ${(ratio * 100).toFixed(1)}%`);
  let outTotal = 0;
  for (const [category, names] of skipped) {
    outTotal += names.length;
    t.comment(`out of scope, ${category}: ${names.length} (${names.join(', ')})`);
  }
  t.comment(`out of scope in all: ${outTotal}`);
  t.ok(ratio >= FLOOR, `at least ${FLOOR * 100}% of in-scope cases pass`);
  t.same(failing.sort(), Object.keys(KNOWN_FAILURES).sort(), 'the failing cases are exactly the known ones');
});

t.test('every known failure names a fixture case and says why', async (t) => {
  const names = new Set(inScope.map((c) => c.name));
  for (const [name, why] of Object.entries(KNOWN_FAILURES)) {
    t.ok(names.has(name), `${name} is an in-scope case`);
    t.ok(why.length > 10, `${name} has a reason`);
  }
});
