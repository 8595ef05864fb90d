/**
 * Realm domains: owners add, change and remove them; anyone lists them;
 * `realm_domains` events converge with `/register`; removing the last domain lifts
 * `emails_restricted_to_domains`.
 */
import t from 'tap';
import { chatFixture, queueEvents, type Credentials, withRole } from './helpers.js';
import { register, verifyState } from './client_model.js';


t.test('owners manage domains; the checks', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, number]> = [
    ['owner', f.owner, 200], ['administrator', await withRole(f, 'admin@example.com', 200), 400], ['moderator', await withRole(f, 'mod@example.com', 300), 400],
    ['member', await withRole(f, 'member@example.com', 400), 400], ['guest', await withRole(f, 'guest@example.com', 600), 400],
  ];
  for (const [role, who, status] of roles) {
    const r = await f.call(who, 'POST', '/api/v1/realm/domains', { domain: `${role}.example.com`, allow_subdomains: false });
    t.same([r.status, r.json.code], [status, status === 200 ? undefined : 'UNAUTHORIZED_PRINCIPAL'], `${role}: ${r.body}`);
  }
  const added = await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'Example.ORG', allow_subdomains: true });
  t.same(added.json.new_domain, ['example.org', true]);
  const bad = async (method: string, path: string, params: Record<string, unknown>, msg: string) => {
    const r = await f.call(f.owner, method, path, params);
    t.same([r.status, r.json.msg], [400, msg], `${method} ${path}`);
  };
  await bad('POST', '/api/v1/realm/domains', { domain: 'example.org', allow_subdomains: false }, 'The domain example.org is already a part of your organization.');
  await bad('POST', '/api/v1/realm/domains', { domain: 'localhost', allow_subdomains: false }, 'Invalid domain: Domain must have at least one dot (.)');
  await bad('POST', '/api/v1/realm/domains', { domain: '1.5', allow_subdomains: false }, 'Invalid domain: Domain must end in a top-level domain of letters.');
  await bad('POST', '/api/v1/realm/domains', { domain: 'bad_domain.com', allow_subdomains: false }, "Invalid domain: Domain can only have letters, numbers, '.' and '-'s.");
  await bad('PATCH', '/api/v1/realm/domains/nope.example', { allow_subdomains: true }, 'No entry found for domain nope.example.');
  t.same((await f.call(roles[3][1], 'GET', '/api/v1/realm/domains')).json.domains, [{ domain: 'owner.example.com', allow_subdomains: false }, { domain: 'example.org', allow_subdomains: true }], 'anyone lists them');
});

t.test('convergence: realm_domains from register plus events equal a fresh register; the last removal lifts the restriction', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'a.example', allow_subdomains: false });
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { emails_restricted_to_domains: true });
  const types = ['realm_domains', 'realm'];
  const reg = await register(f, f.owner, types);
  t.equal(reg.realm_emails_restricted_to_domains, true);
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'b.example', allow_subdomains: false });
  await f.call(f.owner, 'PATCH', '/api/v1/realm/domains/b.example', { allow_subdomains: true });
  await f.call(f.owner, 'DELETE', '/api/v1/realm/domains/a.example');
  // The domains and every realm_ setting (emails_restricted_to_domains among them), in one comparison.
  await verifyState(t, f, f.owner, reg, types, ['realm_*']);
  t.same((await register(f, f.owner, types)).realm_domains, [{ domain: 'b.example', allow_subdomains: true }]);
  await f.call(f.owner, 'DELETE', '/api/v1/realm/domains/b.example');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] })).json.realm_emails_restricted_to_domains, false, 'no domain left: no restriction');
  t.same((await queueEvents(f, f.owner, reg.queue_id, 'realm')).slice(-1), [{ type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false }], 'and clients are told');
});
