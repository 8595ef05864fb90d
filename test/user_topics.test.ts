/**
 * Topic visibility: `POST /user_topics` and the legacy muted-topics endpoint,
 * `user_topic` events, the `user_topics` and `muted_topics` sections of
 * `/register`, convergence, and durability.
 */
import t from 'tap';
import { chatFixture } from './helpers.js';
import { verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';

t.test('mute, follow, unmute; events and register converge', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id]);
  const general = channelIdByName(f.runtime, 1, 'general');
  const register = async () => (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['user_topic'], fetch_event_types: ['user_topic', 'muted_topics'] })).json;
  const initial = await register();
  t.same(initial.user_topics, []);
  const set = (topic: string, visibility_policy: number) => f.call(alice, 'POST', '/api/v1/user_topics', { stream_id: general, topic, visibility_policy });
  t.equal((await set('Lunch', 1)).status, 200);
  t.equal((await set('plans', 3)).status, 200);
  t.equal((await set('general chat', 2)).status, 200, 'the empty topic, by its display name');
  t.equal((await set('LUNCH', 3)).status, 200, 'one entry per topic whatever its case');
  t.equal((await set('plans', 0)).status, 200, 'back to the default');
  const events = await verifyState(t, f, alice, initial, ['user_topic'], ['user_topics']);
  t.same(events.map((e: any) => [e.type, e.topic_name, e.visibility_policy]), [['user_topic', 'Lunch', 1], ['user_topic', 'plans', 3], ['user_topic', 'general chat', 2], ['user_topic', 'Lunch', 3], ['user_topic', 'plans', 0]]);
  t.same((await register()).muted_topics, [], 'nothing muted any more');
  await set('dinner', 1);
  t.same((await register()).muted_topics.map((m: any[]) => [m[0], m[1]]), [['general', 'dinner']], 'the legacy muted_topics form');
});

t.test('errors, and the legacy endpoint', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [f.owner.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'vault' }]), invite_only: true });
  const general = channelIdByName(f.runtime, 1, 'general');
  const vault = channelIdByName(f.runtime, 1, 'vault');
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ stream_id: general, topic: 't', visibility_policy: 7 }, 'Invalid visibility_policy'],
    [{ stream_id: 99999, topic: 't', visibility_policy: 1 }, 'Invalid channel ID'],
    [{ stream_id: vault, topic: 't', visibility_policy: 1 }, 'Invalid channel ID'],
  ];
  for (const [params, msg] of cases) {
    const r = await f.call(alice, 'POST', '/api/v1/user_topics', params);
    t.same([r.status, r.json.msg], [400, msg], JSON.stringify(params));
  }
  t.equal((await f.call(alice, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 't', visibility_policy: 1 })).status, 200, 'a public channel one is not in');
  const legacy = (params: Record<string, unknown>) => f.call(alice, 'PATCH', '/api/v1/users/me/subscriptions/muted_topics', params);
  t.same((await legacy({ stream_id: general, topic: 't', op: 'add' })).json.msg, 'Topic already muted');
  t.equal((await legacy({ stream: 'general', topic: 't', op: 'remove' })).status, 200);
  t.same((await legacy({ stream_id: general, topic: 't', op: 'remove' })).json.msg, 'Topic is not muted');
  t.same((await legacy({ topic: 't', op: 'add' })).json.msg, "Please supply 'stream'.");
  t.same((await legacy({ stream: 'general', stream_id: general, topic: 't', op: 'add' })).json.msg, "Please choose one: 'stream' or 'stream_id'.");
  t.equal((await legacy({ stream: 'general', topic: 'x', op: 'add' })).status, 200);
  const kept = (await f.call(alice, 'POST', '/api/v1/register', { fetch_event_types: ['user_topic'] })).json.user_topics;
  t.same(kept.map((x: any) => [x.topic_name, x.visibility_policy]), [['x', 1]]);
});
