/**
 * `POST /messages/{message_id}/report` (Zulip's `report_message_backend` and
 * `send_message_report`) and the `moderation_request_channel_id` organization setting
 * it needs (`PATCH /realm`, register, `realm` events, restart).
 */
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chatFixture, queueEvents, withRole, type ChatFixture, type Credentials, openTestStore, storeClient } from './helpers.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { Role } from '../actors/shared/types.js';
import { NOTIFICATION_BOT } from '../actors/rules/system_bots.js';
import { type Store } from '../src/store.js';
import { createOrganization } from '../src/bootstrap.js';

const report = (f: ChatFixture, who: Credentials, id: number, params: Record<string, unknown>) => f.call(who, 'POST', `/api/v1/messages/${id}/report`, params);
const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

async function setup(t: Test) {
  const f = await chatFixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, alice.user_id, bob.user_id]);
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'reports' }], invite_only: true });
  const reports = channelIdByName(f.runtime, 1, 'reports');
  return { f, alice, bob, reports };
}

/** The newest message of the moderation channel, as its subscribers fetch it. */
async function lastReport(f: ChatFixture) {
  const r = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: 'reports' }]), apply_markdown: false, allow_empty_topic_name: true });
  return r.json.messages[0];
}

t.test('reporting: the notification bot posts Zulip\'s report to the moderation channel', async (t) => {
  const { f, alice, bob, reports } = await setup(t);
  const sent = f.clock.t;
  const id = (await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 'food', content: 'I squeeze toothpaste from the middle' })).json.id as number;

  let r = await report(f, alice, id, { report_type: 'harassment' });
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Message reporting is not enabled in this organization.'], 'off until a channel is set');
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['message'] })).json;
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: reports })).status, 200);

  r = await report(f, alice, id, { report_type: 'harassment', description: 'this is crime against food' });
  t.equal(r.status, 200, r.body);
  const m = await lastReport(f);
  t.equal(m.sender_id, NOTIFICATION_BOT.user_id);
  t.equal(m.subject, 'Bob moderation');
  t.equal(m.content, `@_**Alice|${alice.user_id}** reported a message sent by @_**Bob|${bob.user_id}** at <time:${iso(sent)}>.\n\`\`\`quote\n**Harassment**. this is crime against food\n\`\`\`\n\n\`\`\` spoiler Original message at #**general>food@${id}**\nI squeeze toothpaste from the middle\n\`\`\``);
  const events = await queueEvents(f, f.owner, reg.queue_id, 'message');
  t.same(events.map((e) => [e.message.id, e.flags]), [[m.id, []]], 'the moderators get it as a new, unread message');

  // Every report type; "other" needs a description; the description has a limit.
  for (const [type, label] of [['spam', 'Spam'], ['inappropriate', 'Inappropriate content'], ['norms', 'Violates community norms'], ['other', 'Other reason']]) {
    r = await report(f, alice, id, { report_type: type, description: 'why' });
    t.equal(r.status, 200, type);
    t.match((await lastReport(f)).content, `**${label}**. why\n`);
  }
  const bad = async (params: Record<string, unknown>, msg: string) => {
    const res = await report(f, alice, id, params);
    t.same([res.status, res.json.code, res.json.msg], [400, 'BAD_REQUEST', msg], JSON.stringify(params).slice(0, 60));
  };
  await bad({ report_type: 'other' }, 'An explanation is required.');
  await bad({ report_type: 'other', description: '' }, 'An explanation is required.');
  await bad({ report_type: 'rude' }, 'Invalid report_type');
  await bad({ report_type: 'spam', description: 'x'.repeat(1001) }, 'description is too long (limit: 1000 characters)');
  const missing = await report(f, alice, id, {});
  t.same([missing.status, missing.json.code, missing.json.msg], [400, 'REQUEST_VARIABLE_MISSING', "Missing 'report_type' argument"]);
  t.equal((await report(f, alice, id, { report_type: 'spam', description: '😀'.repeat(1000) })).status, 200, '1000 code points is the limit');

  // Access: a message the reporter cannot read is invalid, a missing one too; reporting one's own is allowed, as in Zulip.
  await f.call(bob, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'hidden' }], invite_only: true });
  const hidden = (await f.call(bob, 'POST', '/api/v1/messages', { type: 'stream', to: 'hidden', topic: 't', content: 'x' })).json.id as number;
  t.same((await report(f, alice, hidden, { report_type: 'spam' })).json.msg, 'Invalid message(s)');
  t.same((await report(f, alice, 99999, { report_type: 'spam' })).json.msg, 'Invalid message(s)');
  t.equal((await report(f, bob, id, { report_type: 'spam' })).status, 200);
  // A public channel's message may be reported without being subscribed.
  await f.call(alice, 'DELETE', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(['general']) });
  t.equal((await report(f, alice, id, { report_type: 'spam' })).status, 200);

  // Disabled again with -1: reports are refused.
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: -1 });
  const before = (await lastReport(f)).id;
  t.same((await report(f, alice, id, { report_type: 'spam' })).json.msg, 'Message reporting is not enabled in this organization.');
  t.equal((await lastReport(f)).id, before, 'and nothing was posted');
});

t.test('reporting direct messages: Zulip\'s headers and links', async (t) => {
  const { f, alice, bob, reports } = await setup(t);
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: reports });
  const carol = await f.createUser('carol@example.com', 'Carol');
  const when = `<time:${iso(f.clock.t)}>`;
  const dm = (await f.call(bob, 'POST', '/api/v1/messages', { type: 'direct', to: [alice.user_id], content: 'I dip fries in ice cream' })).json.id as number;
  t.equal((await report(f, alice, dm, { report_type: 'spam' })).status, 200);
  const pair = [alice.user_id, bob.user_id].sort((a, b) => a - b).join(',');
  t.equal((await lastReport(f)).content, `@_**Alice|${alice.user_id}** reported a message sent by @_**Bob|${bob.user_id}** at ${when}.\n\`\`\`quote\n**Spam**. \n\`\`\`\n\n\`\`\` spoiler [Original message](#narrow/dm/${pair}-dm/near/${dm})\nI dip fries in ice cream\n\`\`\``);
  t.equal((await report(f, bob, dm, { report_type: 'spam' })).status, 200, 'one\'s own direct message');
  t.match((await lastReport(f)).content, `@_**Bob|${bob.user_id}** reported a message sent by @_**Bob|${bob.user_id}** to @_**Alice|${alice.user_id}** at ${when}.`);
  t.same((await report(f, carol, dm, { report_type: 'spam' })).json.msg, 'Invalid message(s)', 'not a participant');
  const group = (await f.call(bob, 'POST', '/api/v1/messages', { type: 'direct', to: [alice.user_id, carol.user_id], content: 'cereal with water' })).json.id as number;
  t.equal((await report(f, carol, group, { report_type: 'norms' })).status, 200);
  t.match((await lastReport(f)).content, `@_**Carol|${carol.user_id}** reported a message sent by @_**Bob|${bob.user_id}** to @_**Alice|${alice.user_id}** and @_**Carol|${carol.user_id}** at ${when}.`);
  t.match((await lastReport(f)).content, /-group\/near\//);
  // A channel allowing only the empty topic gets reports there.
  // (Set on a fresh channel: one with topics already cannot take the policy.)
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'reports 2' }], invite_only: true });
  const fresh = channelIdByName(f.runtime, 1, 'reports 2');
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/streams/${fresh}`, { topics_policy: 'empty_topic_only' })).status, 200);
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: fresh });
  t.equal((await report(f, alice, dm, { report_type: 'spam' })).status, 200);
  const r = await f.call(f.owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: 'reports 2' }]), allow_empty_topic_name: true });
  t.same([r.json.messages[0].sender_id, r.json.messages[0].subject], [NOTIFICATION_BOT.user_id, '']);
});

t.test('moderation_request_channel_id: private channels only, administrators only, events converge, survives a restart', async (t) => {
  const { f, alice, reports } = await setup(t);
  const general = channelIdByName(f.runtime, 1, 'general');
  const moderator = await withRole(f, 'mod@example.com', Role.MODERATOR);
  for (const who of [alice, moderator]) t.equal((await f.call(who, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: reports })).json.code, 'UNAUTHORIZED_PRINCIPAL');
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['realm'], fetch_event_types: ['realm'] })).json;
  t.equal(reg.realm_moderation_request_channel_id, -1);
  const bad = async (value: unknown, msg: string) => {
    const r = await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: value });
    t.same([r.status, r.json.msg], [400, msg], String(value));
  };
  await bad(general, 'Moderation request channel must be private.');
  await bad(99999, 'Invalid channel ID');
  // Another organization's private channel is no channel here.
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  const host = { headers: { host: 'other.localhost' } };
  // Ids are the organization's own: make the other organization's private channel one whose id is free here.
  const ours = Math.max(...f.runtime.channelIdsOf(1));
  for (let i = 0; i <= ours; i++) await f.call(boss, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: `theirs ${i}` }], invite_only: true }, host);
  const theirs = channelIdByName(f.runtime, other.organization_id, `theirs ${ours}`);
  t.ok(theirs > ours && !f.runtime.channelIdsOf(1).includes(theirs), 'an id that is a channel only there');
  await bad(theirs, 'Invalid channel ID');
  const foreignMessage = (await f.call(boss, 'POST', '/api/v1/messages', { type: 'stream', to: `theirs ${ours}`, topic: 't', content: 'x' }, host)).json.id as number;

  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: reports });
  // A message of another organization is no message here.
  const here = await report(f, alice, foreignMessage, { report_type: 'spam' });
  t.same(here.json, (await report(f, alice, 99999, { report_type: 'spam' })).json);
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: -5 });
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { moderation_request_channel_id: reports });
  const events = await queueEvents(f, f.owner, reg.queue_id, 'realm');
  t.same(events, [
    { type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: reports },
    { type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: -1 },
    { type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: reports },
  ], 'any negative id is -1');
  for (const e of events) reg['realm_' + e.property] = e.value;
  const fresh = (await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] })).json;
  t.equal(fresh.realm_moderation_request_channel_id, reports);
  t.equal(reg.realm_moderation_request_channel_id, fresh.realm_moderation_request_channel_id);

  const dir = mkdtempSync(join(tmpdir(), 'parley-reports-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org, owner } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const setting = async () => (await storeClient(store, owner)('POST', '/api/v1/register', { fetch_event_types: ['realm'] })).realm_moderation_request_channel_id;
  await store.runtime.execute({ type: 'SUBSCRIBE', org, actor_id: 1, channels: [{ name: 'mods' }], principals: null, invite_only: true, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const mods = channelIdByName(store.runtime, org, 'mods');
  t.ok(mods, 'a private channel to use');
  await store.runtime.execute({ type: 'UPDATE_REALM', org, actor_id: 1, settings: { moderation_request_channel_id: mods } });
  await store.close();
  store = open();
  t.equal(await setting(), mods, 'replayed from the log');
  await store.snapshot();
  await store.close();
  store = open();
  t.equal(await setting(), mods, 'and from a snapshot');
  await store.close();
});
