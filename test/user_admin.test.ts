/**
 * `PATCH /users/{user_id}` and `PATCH /users/{email}`: administrators change a
 * user's name, role, custom profile values and (owners with the operator's grant)
 * email; the owner-role rules; `realm_user` events and convergence; roles.
 */
import t from 'tap';
import { chatFixture, queueEvents, type Credentials, withRole } from './helpers.js';
import { register, verifyAction } from './client_model.js';


t.test('name, role and profile values; the owner rules', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const field = (await f.call(f.owner, 'POST', '/api/v1/realm/profile_fields', { name: 'Team', field_type: 1, editable_by_user: false })).json.id;
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user'] })).json.queue_id;
  const r = await f.call(admin, 'PATCH', `/api/v1/users/${alice.user_id}`, { full_name: 'Alice Smith', role: 300, profile_data: JSON.stringify([{ id: field, value: 'core' }]) });
  t.equal(r.status, 200, r.body);
  t.match((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`, { include_custom_profile_fields: true })).json.user, { full_name: 'Alice Smith', role: 300, profile_data: { [field]: { value: 'core' } } });
  t.same((await queueEvents(f, f.owner, q, 'realm_user')).map((e: any) => e.person), [
    { user_id: alice.user_id, full_name: 'Alice Smith' }, { user_id: alice.user_id, role: 300 }, { user_id: alice.user_id, custom_profile_field: { id: field, value: 'core', rendered_value: '<p>core</p>' } },
  ]);
  t.equal((await f.call(admin, 'PATCH', '/api/v1/users/alice@example.com', { role: 400 })).status, 200, 'by email');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${alice.user_id}`)).json.user.role, 400);
  const bad = async (who: Credentials, path: string, params: Record<string, unknown>, status: number, msg: string, code?: string) => {
    const res = await f.call(who, 'PATCH', path, params);
    t.same([res.status, res.json.msg, ...(code ? [res.json.code] : [])], [status, msg, ...(code ? [code] : [])], `${path} ${JSON.stringify(params)}`);
  };
  await bad(admin, `/api/v1/users/${alice.user_id}`, { role: 100 }, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  await bad(admin, `/api/v1/users/${f.owner.user_id}`, { role: 200 }, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  await bad(f.owner, `/api/v1/users/${f.owner.user_id}`, { role: 200 }, 400, 'The owner permission cannot be removed from the only organization owner.');
  await bad(f.owner, `/api/v1/users/${alice.user_id}`, { role: 250 }, 400, 'Invalid role');
  await bad(alice, `/api/v1/users/${admin.user_id}`, { full_name: 'x' }, 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
  await bad(f.owner, '/api/v1/users/999', { full_name: 'x' }, 400, 'No such user');
  await bad(f.owner, `/api/v1/users/${alice.user_id}`, { new_email: 'alice2@example.com' }, 400, 'User not authorized to change user emails');
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${alice.user_id}`, { role: 100 })).status, 200, 'an owner makes an owner');
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${f.owner.user_id}`, { role: 200 })).status, 200, 'and may then step down');
});

t.test('an owner with the operator\'s grant changes an email', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.runtime.execute({ type: 'GRANT_EMAIL_CHANGES', org: 1, user_id: f.owner.user_id, granted: true });
  const q = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm_user'] })).json.queue_id;
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/users/${alice.user_id}`, { new_email: 'alice.new@example.com' })).status, 200);
  t.same((await queueEvents(f, f.owner, q, 'realm_user')).map((e: any) => e.person), [{ user_id: alice.user_id, new_email: 'alice.new@example.com' }, { user_id: alice.user_id, delivery_email: 'alice.new@example.com' }]);
  t.equal((await f.call({ ...alice, email: 'alice.new@example.com' }, 'GET', '/api/v1/users/me')).status, 200, 'she authenticates with the new email');
  t.equal((await f.call(alice, 'GET', '/api/v1/users/me')).status, 401, 'not the old one');
  t.same((await f.call(f.owner, 'PATCH', `/api/v1/users/${alice.user_id}`, { new_email: 'owner@example.com' })).json.msg, "Email 'owner@example.com' already in use");
});

t.test('convergence: realm_users from register plus realm_user updates equal a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await verifyAction(t, f, f.owner, ['realm_user'], ['realm_users', 'realm_non_active_users'], async () => {
    await f.call(f.owner, 'PATCH', `/api/v1/users/${alice.user_id}`, { full_name: 'A. Lice', role: 200 });
    await f.call(f.owner, 'PATCH', `/api/v1/users/${alice.user_id}`, { role: 600 });
  });
  const fresh = (await register(f, f.owner, ['realm_user'])).realm_users;
  t.match(fresh.find((u: any) => u.user_id === alice.user_id), { full_name: 'A. Lice', role: 600, is_guest: true });
});
