/**
 * Channel administration: `PATCH /streams/{id}` (name, description, privacy and
 * history, folder, topics policy, retention, permission groups, unarchiving) and
 * `DELETE /streams/{id}` (archiving); who may; the `stream` events and convergence;
 * the notification bot's notices; topics policy on send and on moves; isolation.
 */
import t from 'tap';
import { NOTIFICATION_BOT } from '../actors/rules/system_bots.js';
import { SYSTEM_GROUPS } from '../actors/rules/group_settings.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { createOrganization } from '../src/bootstrap.js';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials } from './helpers.js';
import { world } from './world.js';
import { register, verifyAction, verifyState } from './client_model.js';

/** Alice and the owner in the channel design. */
const DESIGN = { users: { alice: 'Alice' }, channels: { design: ['owner', 'alice'] } } as const;
const patch = (f: ChatFixture, who: Credentials, id: number, params: Record<string, unknown>) => f.call(who, 'PATCH', `/api/v1/streams/${id}`, params);

t.test('rename and describe, with events and the notification bot', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const q = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['stream', 'message'] })).json.queue_id;
  const r = await patch(f, f.owner, id, { new_name: 'Design Team', description: 'All **design** work' });
  t.equal(r.status, 200, r.body);
  const notices = (await queueEvents(f, alice, q, 'message')).map((e: any) => e.message);
  t.same((await queueEvents(f, alice, q, 'stream')).map((e: any) => [e.property, e.value, e.name, e.rendered_description]), [
    ['name', 'Design Team', 'design', undefined], ['description', 'All **design** work', 'design', '<p>All <strong>design</strong> work</p>'],
    ['first_message_id', notices[0].id, 'Design Team', undefined],
  ], 'and the first message of the channel is announced, as Zulip does');
  t.same(notices.map((m: any) => [m.sender_id, m.subject]), [[NOTIFICATION_BOT.user_id, 'channel events'], [NOTIFICATION_BOT.user_id, 'channel events']]);
  t.match(notices[0].content, /renamed channel <strong>design<\/strong> to <strong>Design Team<\/strong>/);
  t.equal((await f.call(alice, 'GET', '/api/v1/get_stream_id', { stream: 'design team' })).json.stream_id, id, 'the new name finds it');
  t.equal((await f.call(alice, 'GET', '/api/v1/get_stream_id', { stream: 'design' })).status, 400, 'the old one no longer does');
  await f.subscribe(f.owner, 'other');
  t.same((await patch(f, f.owner, id, { new_name: 'OTHER' })).json.msg, "Channel 'OTHER' already exists");
  t.same((await patch(f, f.owner, id, { new_name: '  ' })).json.msg, "Channel name can't be empty.");
  t.same((await patch(f, alice, id, { new_name: 'mine' })).json.msg, 'You do not have permission to administer this channel.');
  t.same((await patch(f, f.owner, 9999, { new_name: 'x' })).json.msg, 'Invalid channel ID');
});

t.test('privacy: those who start or stop seeing the channel are told', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  const [qAlice, qBob] = [(await f.call(alice, 'POST', '/api/v1/register', { event_types: ['stream'] })).json.queue_id, (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['stream'] })).json.queue_id];
  t.equal((await patch(f, f.owner, id, { is_private: true, history_public_to_subscribers: false })).status, 200);
  t.same((await queueEvents(f, bob, qBob)).map((e: any) => e.op), ['delete'], 'Bob no longer sees it');
  t.same((await queueEvents(f, alice, qAlice)).map((e: any) => [e.op, e.property, e.value, e.history_public_to_subscribers]), [['update', 'invite_only', true, false]]);
  t.same((await f.call(bob, 'GET', `/api/v1/streams/${id}`)).json.msg, 'Invalid channel ID');
  t.same((await patch(f, f.owner, id, { is_private: false, history_public_to_subscribers: false })).json.msg, 'Invalid parameters: public channels must have history available to subscribers.');
  t.equal((await patch(f, f.owner, id, { is_private: false })).status, 200);
  t.same((await queueEvents(f, bob, qBob)).map((e: any) => e.op), ['delete', 'create'], 'and sees it again');
  t.equal((await f.call(bob, 'GET', `/api/v1/streams/${id}`)).json.stream.history_public_to_subscribers, true, 'a public channel shares its history');
  t.same((await patch(f, f.owner, id, { is_web_public: true })).json.msg, 'Web-public channels are not enabled.');
});

t.test('archiving and unarchiving', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  t.same((await f.call(alice, 'DELETE', `/api/v1/streams/${id}`)).json.msg, 'You do not have permission to administer this channel.');
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${id}`)).status, 200);
  t.same((await f.call(f.owner, 'DELETE', `/api/v1/streams/${id}`)).json.msg, 'Channel is already deactivated');
  const send = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: 't', content: 'x' });
  t.equal(send.status, 400, 'an archived channel takes no message');
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream.is_archived, true, 'it is still there');
  t.same((await patch(f, f.owner, id, { description: 'x' })).json.msg, 'Channel is archived.');
  t.equal((await patch(f, f.owner, id, { is_archived: false })).status, 200);
  t.equal((await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: 't', content: 'back' })).status, 200);
});

t.test('archiving: stream/delete to clients without the archived_channels capability, an is_archived update to those with it; both converge', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const types = ['stream', 'subscription'];
  const register = async (caps: Record<string, boolean>) => (await f.call(alice, 'POST', '/api/v1/register', { event_types: types, client_capabilities: caps })).json;
  const plain = await register({});
  const modern = await register({ archived_channels: true });
  t.ok(plain.streams.some((s: any) => s.stream_id === id) && modern.streams.some((s: any) => s.stream_id === id), 'both see the channel');
  const [plainCaps, modernCaps] = [{ client_capabilities: {} }, { client_capabilities: { archived_channels: true } }];
  t.equal((await f.call(f.owner, 'DELETE', `/api/v1/streams/${id}`)).status, 200);
  const plainEvents = await queueEvents(f, alice, plain.queue_id, 'stream');
  const modernEvents = await queueEvents(f, alice, modern.queue_id, 'stream');
  t.match(plainEvents, [{ type: 'stream', op: 'delete', streams: [{ stream_id: id }], stream_ids: [id] }], 'without the capability: the channel goes');
  t.equal(plainEvents.length, 1, 'and nothing else about it');
  t.same(modernEvents, [{ type: 'stream', op: 'update', stream_id: id, name: 'design', property: 'is_archived', value: true }], 'with it: an update');
  // Without the capability: register plus the events equals a fresh register (no archived channel); with it, the channel is kept, archived.
  await verifyState(t, f, alice, plain, types, ['streams', 'subscriptions'], plainCaps);
  await verifyState(t, f, alice, modern, types, ['streams', 'subscriptions'], modernCaps);
  t.ok((await register(modernCaps.client_capabilities)).streams.some((s: any) => s.stream_id === id && s.is_archived === true));

  // Unarchiving: the channel comes back to the first, an update to the second.
  const plain2 = await register({});
  const modern2 = await register({ archived_channels: true });
  t.equal((await patch(f, f.owner, id, { is_archived: false })).status, 200);
  const back = await queueEvents(f, alice, plain2.queue_id, 'stream');
  t.match(back, [{ op: 'create', streams: [{ stream_id: id, is_archived: false }] }]);
  t.same(await queueEvents(f, alice, modern2.queue_id, 'stream'), [{ type: 'stream', op: 'update', stream_id: id, name: 'design', property: 'is_archived', value: false }]);
  await verifyState(t, f, alice, plain2, types, ['streams'], plainCaps);
});

t.test('folder, topics policy, retention and groups', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const folder = (await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Work', description: '' })).json.channel_folder_id;
  t.equal((await patch(f, f.owner, id, { folder_id: folder })).status, 200);
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream.folder_id, folder);
  t.same((await patch(f, f.owner, id, { folder_id: 999 })).json.msg, 'Invalid channel folder ID');
  t.equal((await patch(f, f.owner, id, { folder_id: JSON.stringify(null) })).status, 200, 'null takes it out');
  t.equal((await patch(f, f.owner, id, { topics_policy: 'disable_empty_topic' })).status, 200);
  const empty = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: '', content: 'x' });
  t.same([empty.status, empty.json.msg], [400, 'Sending messages to the general chat topic is not allowed in this channel.']);
  const named = (await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: 'named', content: 'x' })).json.id;
  t.same((await patch(f, f.owner, id, { topics_policy: 'empty_topic_only' })).json.msg, 'To enable this configuration, all messages in this channel must be in the general chat topic. Consider renaming or deleting other topics.');
  t.same((await f.call(alice, 'PATCH', `/api/v1/messages/${named}`, { topic: '' })).json.msg, 'Sending messages to the general chat topic is not allowed in this channel.', 'a move into the empty topic too');
  t.same((await patch(f, f.owner, id, { topics_policy: 'sometimes' })).json.msg, 'Invalid topics_policy');
  const admin = await withRole(f, 'admin@example.com', 200);
  t.same((await patch(f, admin, id, { message_retention_days: 30 })).json.msg, 'Must be an organization owner');
  t.equal((await patch(f, f.owner, id, { message_retention_days: 30 })).status, 200);
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream.message_retention_days, 30);
  // Making Alice a channel administrator through the channel's group setting.
  t.same((await patch(f, alice, id, { description: 'mine' })).status, 400);
  t.equal((await patch(f, f.owner, id, { can_administer_channel_group: JSON.stringify({ new: { direct_members: [alice.user_id], direct_subgroups: [] } }) })).status, 200);
  t.equal((await patch(f, alice, id, { description: 'mine now' })).status, 200, 'a member of can_administer_channel_group administers it');
  t.same((await patch(f, f.owner, id, { can_send_message_group: JSON.stringify({ new: SYSTEM_GROUPS.internet }) })).json.msg, "'can_send_message_group' setting cannot be set to 'role:internet' group.");
});

t.test('per role: who administers a channel by default', async (t) => {
  const { f, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const roles: Array<[string, Credentials, boolean]> = [
    ['owner', f.owner, true], ['administrator', await withRole(f, 'a@example.com', 200), true], ['moderator', await withRole(f, 'm@example.com', 300), false],
    ['member', await withRole(f, 'u@example.com', 400), false],
  ];
  for (const [role, who, allowed] of roles) t.equal((await patch(f, who, id, { description: `by ${role}` })).status, allowed ? 200 : 400, role);
  const guest = await withRole(f, 'g@example.com', 600);
  t.same((await patch(f, guest, id, { description: 'x' })).json.msg, 'Invalid channel ID', 'a guest does not even see it');
});

t.test('convergence: streams from register plus stream events equal a fresh register', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  await f.subscribe(f.owner, 'public');
  const pub = channelIdByName(f.runtime, 1, 'public');
  // The client model's stream: update sets the property (and the extra fields given); create adds; delete removes.
  await verifyAction(t, f, alice, ['stream'], ['streams'], async () => {
    await patch(f, f.owner, id, { new_name: 'D2', description: 'new **words**', topics_policy: 'disable_empty_topic' });
    await patch(f, f.owner, pub, { is_private: true });
    await patch(f, f.owner, id, { can_delete_own_message_group: JSON.stringify({ new: SYSTEM_GROUPS.members }) });
  });
  const fresh = { streams: (await register(f, alice, ['stream'])).streams };
  t.match(fresh.streams.find((x: any) => x.stream_id === id), { name: 'D2', topics_policy: 'disable_empty_topic', can_delete_own_message_group: SYSTEM_GROUPS.members });
  t.notOk(fresh.streams.some((x: any) => x.stream_id === pub), 'the channel made private left her list');
});

t.test('isolation: a channel id of another organization is a missing one', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'b@beta.example', ownerPassword: 'pw', ownerName: 'B' });
  await f.runtime.execute({ type: 'SUBSCRIBE', org: beta.organization_id, actor_id: 1, channels: [{ name: 'secret' }], principals: null, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const foreign = channelIdByName(f.runtime, beta.organization_id, 'secret');
  const ownIds = new Set(f.runtime.channelIdsOf(1));
  const missing = 9999;
  for (const [method, params] of [['PATCH', { new_name: 'stolen' }], ['DELETE', {}]] as const) {
    const answer = async (sid: number) => { const r = await f.call(f.owner, method, `/api/v1/streams/${sid}`, params); return [r.status, r.json.msg]; };
    if (!ownIds.has(foreign)) t.same(await answer(foreign), await answer(missing), method);
  }
  t.equal((await f.call(beta.owner, 'GET', `/api/v1/streams/${foreign}`, {}, { headers: { host: 'beta.localhost' } })).json.stream.name, 'secret');
});

t.test('POST /channels/create: every parameter, and its events', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const folder = (await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Work', description: '' })).json.channel_folder_id;
  const [qAlice, qBob] = [
    (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['stream', 'subscription', 'message', 'default_streams'] })).json.queue_id,
    (await f.call(bob, 'POST', '/api/v1/register', { event_types: ['stream', 'subscription'] })).json.queue_id,
  ];
  const r = await f.call(f.owner, 'POST', '/api/v1/channels/create', {
    name: 'Launch', description: 'The **launch**', subscribers: JSON.stringify([f.owner.user_id, alice.user_id]), folder_id: folder, topics_policy: 'disable_empty_topic',
    is_default_stream: true, can_send_message_group: JSON.stringify({ direct_members: [alice.user_id], direct_subgroups: [] }),
  });
  t.equal(r.status, 200, r.body);
  const id = r.json.id;
  const stream = (await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream;
  t.match(stream, { name: 'Launch', rendered_description: '<p>The <strong>launch</strong></p>', folder_id: folder, topics_policy: 'disable_empty_topic', invite_only: false, history_public_to_subscribers: true,
    can_administer_channel_group: { direct_members: [f.owner.user_id], direct_subgroups: [] }, can_send_message_group: { direct_members: [alice.user_id], direct_subgroups: [] } });
  const aliceEvents = await queueEvents(f, alice, qAlice);
  t.ok(aliceEvents.some((e: any) => e.type === 'stream' && e.op === 'create'));
  t.ok(aliceEvents.some((e: any) => e.type === 'subscription' && e.op === 'add'));
  t.ok(aliceEvents.some((e: any) => e.type === 'default_streams' && e.default_streams.includes(id)));
  const notice = aliceEvents.find((e: any) => e.type === 'message');
  t.match(notice.message, { subject: 'channel events', sender_email: 'notification-bot@zulip.com' });
  t.match(notice.message.content, /<strong>Public<\/strong> channel created by/);
  t.same((await queueEvents(f, bob, qBob)).map((e: any) => `${e.type} ${e.op} ${e.property ?? ''}`.trim()), ['stream create', 'subscription peer_add', 'stream update first_message_id'], 'a non-subscriber sees it appear');
  t.ok((await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['default_streams'] })).json.realm_default_streams.includes(id));
  t.equal((await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'Launch', topic: 't', content: 'x' })).status, 400, 'can_send_message_group holds');
  const err = async (who: Credentials, params: Record<string, unknown>, status: number, msg: string, code?: string) => {
    const res = await f.call(who, 'POST', '/api/v1/channels/create', { subscribers: '[]', ...params });
    t.same([res.status, res.json.msg, ...(code ? [res.json.code] : [])], [status, msg, ...(code ? [code] : [])], JSON.stringify(params));
  };
  await err(f.owner, { name: 'launch' }, 409, "Channel 'launch' already exists", 'CHANNEL_ALREADY_EXISTS');
  await err(f.owner, { name: 'web', is_web_public: true }, 400, 'Web-public channels are not enabled.');
  await err(f.owner, { name: 'p', invite_only: false, history_public_to_subscribers: false }, 400, 'Invalid parameters: public channels must have history available to subscribers.');
  await err(f.owner, { name: 'f', folder_id: 999 }, 400, 'Invalid channel folder ID');
  await err(f.owner, { name: 's', subscribers: JSON.stringify([999]) }, 400, 'Invalid user ID: 999');
  await err(alice, { name: 'd', is_default_stream: true }, 400, 'Insufficient permission');
  await err(alice, { name: 'r', message_retention_days: 5 }, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  await err(f.owner, { name: 'pp', invite_only: true, history_public_to_subscribers: false, can_create_topic_group: String(SYSTEM_GROUPS.members) }, 400, "'can_create_topic_group' must be the everyone group for private channels with protected history.");
  const guest = await withRole(f, 'guest@example.com', 600);
  await err(guest, { name: 'g' }, 400, 'Insufficient permission');
  const priv = await f.call(alice, 'POST', '/api/v1/channels/create', { name: 'hidden', subscribers: JSON.stringify([alice.user_id]), invite_only: true });
  t.equal(priv.status, 200, 'members create private channels by default');
  const notices = async (name: string) => (await f.call(alice, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, narrow: JSON.stringify([{ operator: 'channel', operand: name }]), apply_markdown: false })).json.messages.map((m: any) => m.content.split('.')[0]);
  t.same(await notices('hidden'), [`**Private, protected history** channel created by @_**Alice|${alice.user_id}**`], "Zulip's policy names in the notice");
  t.equal((await f.call(alice, 'POST', '/api/v1/channels/create', { name: 'shared', subscribers: JSON.stringify([alice.user_id]), invite_only: true, history_public_to_subscribers: true })).status, 200);
  t.same(await notices('shared'), [`**Private, shared history** channel created by @_**Alice|${alice.user_id}**`]);
  t.equal((await f.call(bob, 'GET', `/api/v1/streams/${priv.json.id}`)).json.msg, 'Invalid channel ID');
  t.equal((await f.call(alice, 'PATCH', `/api/v1/streams/${priv.json.id}`, { description: 'mine' })).status, 200, 'its creator administers it');
});

t.test('POST /channels/create send_new_subscription_messages: taken, and no Notification Bot DM either way (Zulip sends none for a channel the request creates)', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const q = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['message'] })).json.queue_id;
  for (const [name, send] of [['asked', 'true'], ['not-asked', 'false']]) {
    const r = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name, subscribers: JSON.stringify([f.owner.user_id, alice.user_id]), send_new_subscription_messages: send });
    t.equal(r.status, 200, r.body);
    t.same(Object.keys(r.json).sort(), ['id', 'msg', 'result'], `${name}: the parameter is taken, and the answer is the id alone`);
  }
  const messages = await queueEvents(f, alice, q, 'message');
  t.same(messages.map((e: any) => [e.message.type, e.message.subject]), [['stream', 'channel events'], ['stream', 'channel events']], 'the creation notices in the channels, no direct message');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/channels/create', { name: 'bad', subscribers: '[]', send_new_subscription_messages: 'maybe' })).status, 400, 'a boolean');
});

t.test('is_recently_active: the periodic check, a message waking a channel, and convergence', async (t) => {
  const { f, alice, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: 't', content: 'early' });
  const reg = (await f.call(alice, 'POST', '/api/v1/register', { event_types: ['stream'], fetch_event_types: ['stream'] })).json;
  const streams: any[] = reg.streams;
  t.equal(streams.find((s) => s.stream_id === id).is_recently_active, true);
  const check = () => f.runtime.execute({ type: 'CHECK_CHANNEL_ACTIVITY', org: 1 });
  t.same(await check(), { changed: 0 }, 'nothing to change while messages are recent');
  f.clock.t += 181 * 24 * 3600 * 1000;
  t.same(await check(), { changed: 1 });
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream.is_recently_active, false);
  t.same(await check(), { changed: 0 }, 'and only once');
  await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'design', topic: 't', content: 'back again' });
  t.equal((await f.call(alice, 'GET', `/api/v1/streams/${id}`)).json.stream.is_recently_active, true, 'a message wakes it');
  const events = await verifyState(t, f, alice, reg, ['stream'], ['streams']);
  t.same(events.map((e: any) => [e.property, e.value]), [['is_recently_active', false], ['is_recently_active', true]]);
});

t.test('a folder that holds a channel cannot be archived', async (t) => {
  const { f, channels: { design: id } } = await world(DESIGN);
  t.teardown(f.stop);
  const folder = (await f.call(f.owner, 'POST', '/api/v1/channel_folders/create', { name: 'Busy', description: '' })).json.channel_folder_id;
  await patch(f, f.owner, id, { folder_id: folder });
  const r = await f.call(f.owner, 'PATCH', `/api/v1/channel_folders/${folder}`, { is_archived: true });
  t.same([r.status, r.json.msg], [400, 'You need to remove all the channels from this folder to archive it.']);
  await f.call(f.owner, 'DELETE', `/api/v1/streams/${id}`);
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/channel_folders/${folder}`, { is_archived: true })).status, 200, 'an archived channel does not count');
  await f.subscribe(f.owner, 'another');
  const another = channelIdByName(f.runtime, 1, 'another');
  t.same((await patch(f, f.owner, another, { folder_id: folder })).json.msg, 'Channel folder is archived', 'and no channel goes into an archived folder');
});
