/**
 * Code playgrounds: Zulip's checks and errors, administrators only, `realm_playgrounds`
 * events converging with `/register`, other organizations untouched, and durability
 * across a snapshot and the log.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, withRole, type Credentials, openTestStore, storeClient } from './helpers.js';
import { register, verifyState } from './client_model.js';

const PYTHON = { name: 'Python playground', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' };

t.test('add and remove, with Zulip\'s checks', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const add = (params: Record<string, unknown>) => f.call(f.owner, 'POST', '/api/v1/realm/playgrounds', params);
  const refused = async (params: Record<string, unknown>, msg: string, errors?: Record<string, string[]>) => {
    const r = await add(params);
    t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', msg], `${JSON.stringify(params)}: ${msg}`);
    t.same(r.json.errors, errors, `${msg}: errors by field`);
  };
  const first = await add(PYTHON);
  t.equal(first.status, 200, first.body);
  t.type(first.json.id, 'number');
  // Another playground for the same language, under another name, is fine.
  const second = await add({ ...PYTHON, name: 'Python playground 2', url_template: 'https://python2.example.com{code}' });
  t.equal(second.status, 200, second.body);
  t.ok(second.json.id > first.json.id);

  await refused({ ...PYTHON, name: 'x', pygments_language: 'a$b$c' }, 'Invalid characters in pygments language');
  await refused({ ...PYTHON, name: 'x', pygments_language: 'p'.repeat(41) }, 'pygments_language is too long (limit: 40 characters)');
  await refused({ ...PYTHON, name: 'x', url_template: 'https://template.com{?test,code}' }, '"code" should be the only variable present in the URL template', { __all__: ['"code" should be the only variable present in the URL template'] });
  await refused({ ...PYTHON, name: 'x', url_template: 'https://template.com?test={test' }, 'Invalid URL template.', { url_template: ['Invalid URL template.'] });
  await refused({ ...PYTHON, name: 'x', url_template: 'https://template.com{?test}' }, 'Missing the required variable "code" in the URL template', { __all__: ['Missing the required variable "code" in the URL template'] });
  await refused({ ...PYTHON, name: '   ' }, 'This field cannot be blank.', { name: ['This field cannot be blank.'] });
  const dup = 'Realm playground with this Realm, Pygments language and Name already exists.';
  await refused(PYTHON, dup, { __all__: [dup] });
  await refused({ ...PYTHON, name: ` ${PYTHON.name} ` }, dup, { __all__: [dup] });
  const missing = await f.call(f.owner, 'POST', '/api/v1/realm/playgrounds', { name: 'x', pygments_language: 'C' });
  t.same([missing.status, missing.json.code, missing.json.msg], [400, 'REQUEST_VARIABLE_MISSING', "Missing 'url_template' argument"]);
  // Characters Zulip's pattern allows: a space, and the range from + to . (which includes a comma).
  t.equal((await add({ name: 'odd', pygments_language: 'c++ ,-./#_9', url_template: 'https://x.example/{code}' })).status, 200);

  const state = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm_playgrounds'] })).json.realm_playgrounds;
  t.same(state.slice(0, 2), [
    { id: first.json.id, ...PYTHON },
    { id: second.json.id, name: 'Python playground 2', pygments_language: 'Python', url_template: 'https://python2.example.com{code}' },
  ]);

  const removed = await f.call(f.owner, 'DELETE', `/api/v1/realm/playgrounds/${first.json.id}`);
  t.equal(removed.status, 200, removed.body);
  const again = await f.call(f.owner, 'DELETE', `/api/v1/realm/playgrounds/${first.json.id}`);
  t.same([again.status, again.json.code, again.json.msg], [400, 'BAD_REQUEST', 'Invalid playground']);
  t.equal((await f.call(f.owner, 'DELETE', '/api/v1/realm/playgrounds/99999')).json.msg, 'Invalid playground');
  const after = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm_playgrounds'] })).json.realm_playgrounds;
  t.same(after.map((p: { id: number }) => p.id), [second.json.id, second.json.id + 1]);
  // Ids are never reused.
  t.equal((await add({ ...PYTHON, name: 'Python again' })).json.id, second.json.id + 2);
});

t.test('administrators only; events to everyone; convergence', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const member = await withRole(f, 'member@example.com', 400);
  const reg = (await f.call(member, 'POST', '/api/v1/register', { event_types: ['realm_playgrounds'], fetch_event_types: ['realm_playgrounds'] })).json;
  t.same(reg.realm_playgrounds, [], 'none yet');
  let i = 0;
  for (const [role, who, ok] of [
    ['owner', f.owner, true], ['administrator', await withRole(f, 'admin@example.com', 200), true], ['moderator', await withRole(f, 'mod@example.com', 300), false],
    ['member', member, false], ['guest', await withRole(f, 'guest@example.com', 600), false],
  ] as Array<[string, Credentials, boolean]>) {
    const res = await f.call(who, 'POST', '/api/v1/realm/playgrounds', { ...PYTHON, name: `${role} playground` });
    t.same([res.status, res.json.code], ok ? [200, undefined] : [400, 'UNAUTHORIZED_PRINCIPAL'], `${role} may${ok ? '' : ' not'} add`);
    if (!ok) t.equal(res.json.msg, 'Must be an organization administrator');
    const del = await f.call(who, 'DELETE', '/api/v1/realm/playgrounds/1');
    if (!ok) t.same([del.status, del.json.code, del.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], `${role} may not remove`);
    else if (i++ === 0) t.equal(del.status, 200, `${role} removes`);
  }
  const events = (await verifyState(t, f, member, reg, ['realm_playgrounds'], ['realm_playgrounds'])).filter((e) => e.type === 'realm_playgrounds');
  t.equal(events.length, 3, 'one event per change, to a member too');
  for (const e of events) t.same(Object.keys(e).sort(), ['realm_playgrounds', 'type']);
  const fresh = (await register(f, member, ['realm_playgrounds'])).realm_playgrounds;
  t.same(fresh.map((p: { name: string }) => p.name), ['administrator playground']);
});

t.test('other organizations: their playgrounds are not this one\'s', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const host = { headers: { host: 'beta.localhost' } };
  const theirs = await f.call(beta.owner, 'POST', '/api/v1/realm/playgrounds', PYTHON, host);
  t.equal(theirs.status, 200, theirs.body);
  t.same((await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm_playgrounds'] })).json.realm_playgrounds, []);
  // The same name and language is no duplicate here, and the other organization's id names nothing here.
  t.equal((await f.call(f.owner, 'POST', '/api/v1/realm/playgrounds', PYTHON)).status, 200);
  const playgrounds = async (who: Credentials, extra = {}) => (await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: ['realm_playgrounds'] }, extra)).json.realm_playgrounds;
  const mine = (await playgrounds(f.owner))[0].id;
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/realm/playgrounds/${theirs.json.id + 5}`)).json.msg, 'Invalid playground');
  t.equal((await f.call(beta.owner, 'DELETE', `/api/v1/realm/playgrounds/${mine}`, {}, host)).status, 200, 'ids count per organization');
  t.equal((await playgrounds(f.owner)).length, 1, 'removing theirs left mine');
  t.equal((await playgrounds(beta.owner, host)).length, 0);
});

t.test('playgrounds survive a restart (snapshot, then the log)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-playgrounds-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const add = (name: string) => store.runtime.execute({ type: 'ADD_PLAYGROUND', org, actor_id: 1, ...PYTHON, name });
  await add('one');
  await store.snapshot();
  const { id } = await add('two');
  await store.runtime.execute({ type: 'REMOVE_PLAYGROUND', org, actor_id: 1, playground_id: 1 });
  await store.close();
  store = open();
  t.same((await storeClient(store, owner)('POST', '/api/v1/register', { fetch_event_types: ['realm_playgrounds'] })).realm_playgrounds.map((p: any) => [p.id, p.name]), [[id, 'two']]);
  t.ok((await add('three')).id > id, 'ids are never reused');
  await store.close();
});
