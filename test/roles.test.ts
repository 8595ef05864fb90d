/**
 * Permissions per role (owner, administrator, moderator, member, guest) on the
 * endpoints of the chat API part 1 landed so far: deleting messages, channel
 * folders, typing, topics and channel members.
 */
import t from 'tap';
import { Role } from '../actors/shared/types.js';
import { type Credentials } from './helpers.js';
import { world } from './world.js';

/** One user of each role; general is everyone's but the guest's, guests everyone's. */
async function everyone() {
  const w = await world({
    users: { admin: 'admin', mod: 'mod', member: 'member', guest: 'guest' },
    roles: { admin: Role.ADMIN, mod: Role.MODERATOR, guest: Role.GUEST },
    channels: { general: ['owner', 'admin', 'mod', 'member'], guests: ['owner', 'admin', 'mod', 'member', 'guest'] },
  });
  const people: Record<string, Credentials> = { owner: w.owner, administrator: w.admin, moderator: w.mod, member: w.member, guest: w.guest };
  return { f: w.f, people, general: w.channels.general, guests: w.channels.guests };
}

const ROLES = ['owner', 'administrator', 'moderator', 'member', 'guest'] as const;

t.test("deleting someone else's message: administrators only; one's own: everyone", async (t) => {
  const { f, people } = await everyone();
  t.teardown(f.stop);
  const allowed = { owner: true, administrator: true, moderator: false, member: false, guest: false };
  for (const role of ROLES) {
    const theirs = (await f.call(people.member === people[role] ? people.owner : people.member, 'POST', '/api/v1/messages', { type: 'stream', to: 'guests', topic: 't', content: 'x' })).json.id;
    const r = await f.call(people[role], 'DELETE', `/api/v1/messages/${theirs}`);
    t.equal(r.status, allowed[role] ? 200 : 400, `${role}: ${r.body}`);
    const own = (await f.call(people[role], 'POST', '/api/v1/messages', { type: 'stream', to: 'guests', topic: 't', content: 'mine' })).json.id;
    t.equal((await f.call(people[role], 'DELETE', `/api/v1/messages/${own}`)).status, 200, `${role} deletes their own`);
  }
});

t.test('channel folders: administrators change them, everyone reads them', async (t) => {
  const { f, people } = await everyone();
  t.teardown(f.stop);
  let n = 0;
  for (const role of ROLES) {
    const r = await f.call(people[role], 'POST', '/api/v1/channel_folders/create', { name: `Folder ${role}`, description: '' });
    const admin = role === 'owner' || role === 'administrator';
    t.same([r.status, r.json.code], admin ? [200, undefined] : [400, 'UNAUTHORIZED_PRINCIPAL'], role);
    if (admin) n++;
    const listed = await f.call(people[role], 'GET', '/api/v1/channel_folders');
    t.equal(listed.json.channel_folders.length, n, `${role} reads them`);
    const patched = await f.call(people[role], 'PATCH', '/api/v1/channel_folders/1', { description: role });
    t.same([patched.status, patched.json.code], admin ? [200, undefined] : [400, 'UNAUTHORIZED_PRINCIPAL'], `${role} changes one`);
  }
});

t.test('a guest: only the channels they are subscribed to', async (t) => {
  const { f, people, general, guests } = await everyone();
  t.teardown(f.stop);
  await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'members only', content: 'x' });
  for (const role of ROLES) {
    const member = role !== 'guest';
    const typing = await f.call(people[role], 'POST', '/api/v1/typing', { type: 'channel', op: 'start', stream_id: general, topic: 'x' });
    t.same([typing.status, typing.json.msg ?? ''], member ? [200, ''] : [400, 'Invalid channel ID'], `${role}: typing in a public channel they are not in (guest) or are in`);
    t.equal((await f.call(people[role], 'GET', `/api/v1/users/me/${general}/topics`)).status, member ? 200 : 400, `${role}: topics`);
    t.equal((await f.call(people[role], 'GET', `/api/v1/streams/${general}/members`)).status, member ? 200 : 400, `${role}: members`);
    t.equal((await f.call(people[role], 'GET', `/api/v1/users/me/${guests}/topics`)).status, 200, `${role}: topics of a channel they are in`);
  }
});
