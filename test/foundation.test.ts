import t from 'tap';
import { chatFixture, settle, startPoll } from './helpers.js';

t.test('a parked poll completes with a channel message sent by another user', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  const reg = await f.call(bob, 'POST', '/api/v1/register', { event_types: ['message'] });
  t.equal(reg.status, 200);
  const poll = startPoll(f, bob, { queue_id: reg.json.queue_id, last_event_id: reg.json.last_event_id });
  await settle();
  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'greetings', content: 'hello bob' });
  t.equal(sent.status, 200, sent.body);
  const got = await poll.result;
  t.equal(got.status, 200);
  t.equal(got.json.events.length, 1);
  t.equal(got.json.events[0].type, 'message');
  t.equal(got.json.events[0].message.id, sent.json.id);
  t.same(got.json.events[0].flags, []);
});
