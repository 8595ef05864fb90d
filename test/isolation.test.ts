/**
 * No reach across organizations: message ids are server-wide, so an id that belongs
 * to another organization must get exactly the answer of an id that does not exist,
 * on every endpoint that takes one.
 */
import t from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { chatFixture } from './helpers.js';

t.test('a message id of another organization is an id that does not exist', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const org = beta.organization_id;
  await f.runtime.execute({ type: 'SUBSCRIBE', org, actor_id: 1, channels: [{ name: 'general' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const streamId = channelIdByName(f.runtime, org, 'general');
  const foreign = (await f.runtime.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { stream_id: streamId, topic: 't' }, content: 'secret', client: 't', read_by_sender: false })).id;
  const foreignDm = (await f.runtime.execute({ type: 'SEND_MESSAGE', org, sender_id: 1, to: { user_ids: [1] }, content: 'note', client: 't', read_by_sender: false })).id;
  // The default organization's owner has user id 1 too, and a channel with the same id.
  await f.subscribe(f.owner, 'general');
  const missing = 999_999;
  const probes: Array<[string, string, (id: number) => Record<string, unknown>]> = [
    ['GET', '/api/v1/messages/{id}', () => ({})],
    ['DELETE', '/api/v1/messages/{id}', () => ({})],
    ['PATCH', '/api/v1/messages/{id}', () => ({ content: 'mine now' })],
    ['PATCH', '/api/v1/messages/{id}', () => ({ topic: 'moved', propagate_mode: 'change_all' })],
    ['GET', '/api/v1/messages/{id}/history', () => ({})],
    ['POST', '/api/v1/messages/{id}/typing', () => ({ op: 'start' })],
    ['POST', '/api/v1/messages/flags', (id) => ({ messages: JSON.stringify([id]), op: 'add', flag: 'starred' })],
    ['POST', '/api/v1/submessage', (id) => ({ message_id: id, msg_type: 'widget', content: '{}' })],
    ['POST', '/api/v1/messages/flags/narrow', (id) => ({ anchor: id, num_before: 0, num_after: 0, narrow: '[]', op: 'add', flag: 'read' })],
  ];
  for (const [method, template, params] of probes) {
    const answer = async (id: number) => {
      const r = await f.call(f.owner, method, template.replace('{id}', String(id)), params(id));
      return [r.status, r.json?.code, r.json?.msg, r.json?.processed_count];
    };
    const expected = await answer(missing);
    for (const id of [foreign, foreignDm]) t.same(await answer(id), expected, `${method} ${template} with ${id === foreign ? 'a channel' : 'a direct'} message of another organization`);
  }
  // As the other organization's owner sees it.
  const theirs = (method: string, path: string, params: Record<string, unknown> = {}) => f.call(beta.owner, method, path, params, { headers: { host: 'beta.localhost' } });
  const messages = async (narrow: unknown[]) => (await theirs('GET', '/api/v1/messages', { anchor: 'newest', num_before: 100, num_after: 0, apply_markdown: false, narrow })).json.messages as any[];
  const inChannel = await messages([{ operator: 'channel', operand: streamId }]);
  t.equal(inChannel.length, 1, 'and the other organization\'s message is untouched');
  t.same(inChannel.map((m) => [m.content, m.subject]), [['secret', 't']]);
  t.same(await messages([{ operator: 'is', operand: 'starred' }]), []);
  const dm = await theirs('GET', `/api/v1/messages/${foreignDm}`, { apply_markdown: false });
  t.same([dm.status, dm.json.message?.content], [200, 'note']);
});
