/**
 * Linkifiers: the pattern and URL template checks, administrators' add, change,
 * remove and reorder, `realm_linkifiers` events converging with `/register`, roles,
 * and durability. (Markdown applying them is tested with the renderer.)
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expandTemplate } from '../actors/rules/linkifiers.js';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, type Credentials, withRole, openTestStore, storeClient } from './helpers.js';
import { register, verifyState } from './client_model.js';

const ISSUE = { pattern: '#(?P<id>[0-9]+)', url_template: 'https://github.com/zulip/zulip/issues/{id}' };

t.test('checks and changes', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bad = async (params: Record<string, unknown>, msg: string, field: string) => {
    const r = await f.call(f.owner, 'POST', '/api/v1/realm/filters', params);
    t.same([r.status, r.json.msg, r.json.errors?.[field]], [400, msg, [msg]], JSON.stringify(params));
  };
  const broken = await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: '#(?P<id>[0-9]+', url_template: 'https://x.example/{id}' });
  t.equal(broken.status, 400);
  t.match(broken.json.msg, /^Bad regular expression: /);
  t.same(broken.json.errors.pattern, [broken.json.msg]);
  t.match((await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: '(?<=a)(?P<id>[0-9]+)', url_template: 'https://x.example/{id}' })).json.msg, /^Bad regular expression/, 'no lookbehind: RE2 has none');
  await bad({ pattern: '#(?P<id>[0-9]+)', url_template: 'https://x.example/{id' }, 'Invalid URL template.', 'url_template');
  await bad({ pattern: '#(?P<id>[0-9]+)', url_template: 'https://x.example/{num}' }, "Group 'num' in URL template is not present in linkifier pattern.", '__all__');
  await bad({ pattern: '(?P<org>[a-z]+)#(?P<id>[0-9]+)', url_template: 'https://x.example/{id}' }, "Group 'org' in linkifier pattern is not present in URL template.", '__all__');
  const first = await f.call(f.owner, 'POST', '/api/v1/realm/filters', ISSUE);
  t.equal(first.status, 200, first.body);
  await bad(ISSUE, 'Linkifier with this Realm and Pattern already exists.', '__all__');
  const second = (await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: 'T(?P<id>[0-9]+)', url_template: 'https://tracker.example/T{id}' })).json.id;
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/realm/filters/${first.json.id}`, { pattern: 'zulip#(?P<id>[0-9]+)', url_template: ISSUE.url_template })).status, 200);
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm/linkifiers', { ordered_linkifier_ids: JSON.stringify([second, first.json.id]) })).status, 200);
  t.same((await f.call(f.owner, 'PATCH', '/api/v1/realm/linkifiers', { ordered_linkifier_ids: JSON.stringify([second]) })).json.msg, 'The ordered list must enumerate all existing linkifiers exactly once');
  t.same((await f.call(f.owner, 'PATCH', '/api/v1/realm/linkifiers', { ordered_linkifier_ids: JSON.stringify([second, second]) })).json.msg, 'The ordered list must not contain duplicated linkifiers');
  t.same((await f.call(f.owner, 'GET', '/api/v1/realm/linkifiers')).json.linkifiers, [
    { pattern: 'T(?P<id>[0-9]+)', url_template: 'https://tracker.example/T{id}', id: second },
    { pattern: 'zulip#(?P<id>[0-9]+)', url_template: ISSUE.url_template, id: first.json.id },
  ]);
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/realm/filters/${second}`)).status, 200);
  t.same((await f.call(f.owner, 'DELETE', `/api/v1/realm/filters/${second}`)).json.msg, 'Linkifier not found.');
  t.equal(expandTemplate('https://x.example/{id}?q={query}', { id: '7', query: 'a b&c' }), 'https://x.example/7?q=a%20b%26c');
  t.equal(expandTemplate('https://x.example/{+path}', { path: 'a/b c' }), 'https://x.example/a/b%20c');
});

t.test('per role, and convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  for (const [role, who, status] of [
    ['administrator', await withRole(f, 'admin@example.com', 200), 200], ['moderator', await withRole(f, 'mod@example.com', 300), 400],
    ['member', await withRole(f, 'member@example.com', 400), 400], ['guest', await withRole(f, 'guest@example.com', 600), 400],
  ] as Array<[string, Credentials, number]>) {
    const res = await f.call(who, 'POST', '/api/v1/realm/filters', { pattern: `${role}(?P<n>[0-9]+)`, url_template: 'https://x.example/{n}' });
    t.same([res.status, res.json.code], [status, status === 200 ? undefined : 'UNAUTHORIZED_PRINCIPAL'], `${role}: ${res.body}`);
  }
  const reg = await register(f, f.owner, ['realm_linkifiers']);
  const id = (await f.call(f.owner, 'POST', '/api/v1/realm/filters', ISSUE)).json.id;
  await f.call(f.owner, 'PATCH', '/api/v1/realm/linkifiers', { ordered_linkifier_ids: JSON.stringify([id, reg.realm_linkifiers[0].id]) });
  await verifyState(t, f, f.owner, reg, ['realm_linkifiers'], ['realm_linkifiers']);
  t.equal((await register(f, f.owner, ['realm_linkifiers'])).realm_linkifiers[0].id, id);
});

t.test('linkifiers survive a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-linkifiers-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  await store.runtime.execute({ type: 'SET_LINKIFIER', org, actor_id: 1, op: 'add', ...ISSUE });
  await store.snapshot();
  const { id } = await store.runtime.execute({ type: 'SET_LINKIFIER', org, actor_id: 1, op: 'add', pattern: 'X(?P<n>[0-9]+)', url_template: 'https://x.example/{n}' });
  await store.runtime.execute({ type: 'SET_LINKIFIER', org, actor_id: 1, op: 'remove', id: 1 });
  await store.close();
  store = open();
  t.same((await storeClient(store, owner)('GET', '/api/v1/realm/linkifiers')).linkifiers.map((l: any) => l.id), [id]);
  const next = await store.runtime.execute({ type: 'SET_LINKIFIER', org, actor_id: 1, op: 'add', pattern: 'Y(?P<n>[0-9]+)', url_template: 'https://y.example/{n}' });
  t.ok(next.id > id, 'ids are never reused');
  await store.close();
});

t.test('messages and topics are linkified', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general');
  await f.call(f.owner, 'POST', '/api/v1/realm/filters', ISSUE);
  await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: '(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)', url_template: 'https://github.com/{org}/{repo}/pull/{id}' });
  const id = (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'fix #12 now', content: 'see #123, zulip/parley#7 and `#99` and x#5' })).json.id;
  const m = (await f.call(f.owner, 'GET', `/api/v1/messages/${id}`)).json.message;
  t.equal(m.content, '<p>see <a href="https://github.com/zulip/zulip/issues/123">#123</a>, <a href="https://github.com/zulip/parley/pull/7">zulip/parley#7</a> and <code>#99</code> and x#5</p>');
  t.same(m.topic_links, [{ text: '#12', url: 'https://github.com/zulip/zulip/issues/12' }]);
});
