/**
 * The client model itself: it refuses an event it does not know (so a new event type
 * fails the suite until the model learns it), and verifyAction compares what it should.
 */
import t from 'tap';
import { applyEvent, verifyAction } from './client_model.js';
import { chatFixture } from './helpers.js';

t.test('an unknown event type, or op, is refused by name', async (t) => {
  t.throws(() => applyEvent({}, { type: 'no_such_event', id: 0 }, 1), /does not know event no_such_event: teach it/);
  t.throws(() => applyEvent({ drafts: [] }, { type: 'drafts', op: 'frobnicate', id: 0 }, 1), /does not know event drafts\/frobnicate/);
});

t.test('verifyAction: alert words, linkifiers, user topics and realm settings converge', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'general', [f.owner.user_id]);
  const general = (await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: 'general' })).json.stream_id;
  const events = await verifyAction(t, f, f.owner, ['alert_words', 'realm_linkifiers', 'user_topic', 'realm'], ['alert_words', 'realm_linkifiers', 'user_topics', 'realm_name', 'realm_waiting_period_threshold'], async () => {
    await f.call(f.owner, 'POST', '/api/v1/users/me/alert_words', { alert_words: ['lunch', 'deploy'] });
    await f.call(f.owner, 'DELETE', '/api/v1/users/me/alert_words', { alert_words: ['lunch'] });
    await f.call(f.owner, 'POST', '/api/v1/realm/filters', { pattern: '#(?P<id>[0-9]+)', url_template: 'https://example.com/{id}' });
    await f.call(f.owner, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'plans', visibility_policy: 3 });
    await f.call(f.owner, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'chatter', visibility_policy: 1 });
    await f.call(f.owner, 'POST', '/api/v1/user_topics', { stream_id: general, topic: 'plans', visibility_policy: 0 });
    await f.call(f.owner, 'PATCH', '/api/v1/realm', { name: 'Renamed', waiting_period_threshold: 3 });
  });
  t.ok(events.length >= 7, `the actions made events (${events.length})`);
});

t.test('a section the fresh register lacks is refused, not compared as undefined with undefined', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  await t.rejects(verifyAction(t, f, f.owner, ['alert_words'], ['alert_wordz'], async () => {}), /fresh register has no alert_wordz/);
});
