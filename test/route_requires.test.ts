/**
 * Route records declare who may call them (`requires`, Zulip's view decorators); the
 * pipeline refuses anyone else before the parameters are decoded, and the generated
 * OpenAPI document says it.
 */
import t from 'tap';
import { refusal, type Requirement } from '../src/http/route.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { chatOpenApi } from '../src/http/chat_openapi.js';
import { Role, type RoleNumber } from '../actors/shared/types.js';
import { chatFixture, withRole } from './helpers.js';

t.test('each requirement admits whom Zulip admits, and refuses the rest with its error', async (t) => {
  const as = (role: RoleNumber, is_bot = false): { role: RoleNumber; is_bot: boolean } => ({ role, is_bot });
  const cases: [Requirement, ReturnType<typeof as>, string | null][] = [
    ['owner', as(Role.OWNER), null],
    ['owner', as(Role.ADMIN), 'Must be an organization owner'],
    ['admin', as(Role.ADMIN), null],
    ['admin', as(Role.OWNER), null],
    ['admin', as(Role.MODERATOR), 'Must be an organization administrator'],
    ['member', as(Role.MEMBER), null],
    ['member', as(Role.GUEST), 'Not allowed for guest users'],
    ['member', as(Role.MEMBER, true), 'This endpoint does not accept bot requests.'],
    ['bot', as(Role.MEMBER, true), null],
    ['bot', as(Role.OWNER), 'This endpoint is only available to bots.'],
  ];
  for (const [requires, user, msg] of cases) t.equal(refusal(requires, user)?.message ?? null, msg, `${requires}: role ${user.role}${user.is_bot ? ' bot' : ''}`);
  t.equal(refusal(undefined, as(Role.GUEST)), null, 'no requirement: anyone authenticated');
});

t.test('the pipeline refuses before it reads the parameters', async (t) => {
  const f = await chatFixture();
  const member = await withRole(f, 'member@example.com', Role.MEMBER);
  const noParams = await f.call(member, 'POST', '/api/v1/users', {});
  t.same([noParams.status, noParams.json.code, noParams.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], 'not "Missing \'email\' argument"');
  const badPath = await f.call(member, 'POST', '/api/v1/streams/1/delete_topic', {});
  t.equal(badPath.json.msg, 'Must be an organization administrator');
  t.equal((await f.call(member, 'GET', '/api/v1/export/realm/consents')).json.msg, 'Must be an organization administrator');
  t.equal((await f.call(member, 'POST', '/api/v1/default_streams', { stream_id: 1 })).json.msg, 'Must be an organization administrator');
  t.equal((await f.call(f.owner, 'GET', '/api/v1/bot_storage')).json.msg, 'This endpoint is only available to bots.');
  const created = await f.call(f.owner, 'POST', '/api/v1/users', { email: 'new@example.com', password: 'pw-123456', full_name: 'New' });
  t.equal(created.status, 200, 'an administrator gets through');
});

t.test('the generated document shows each requirement', async (t) => {
  const doc = chatOpenApi(chatRoutes) as { paths: Record<string, Record<string, { 'x-requires'?: string; responses: Record<string, unknown> }>> };
  let shown = 0;
  for (const r of chatRoutes) {
    const op = doc.paths[r.path]?.[r.method.toLowerCase()];
    if (!op) continue;
    t.equal(op['x-requires'], r.requires, `${r.method} ${r.path}`);
    if (r.requires) {
      shown++;
      t.ok(op.responses['403'], `${r.method} ${r.path} documents the refusal`);
    }
  }
  t.ok(shown >= 9, `the declared requirements are shown (${shown})`);
});
