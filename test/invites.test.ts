/**
 * Invitations: sending them by email (with Zulip's INVITATION_FAILED shapes), reusable
 * links, listing, revoking, resending, accepting (the account, its role, channels and
 * the referrer's notice), expiry by the injected clock, `invites_changed` events,
 * tenant isolation, and recovery after a restart.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_INVITES_PER_DAY } from '../actors/rules/invites.js';
import { createOrganization } from '../src/bootstrap.js';
import { type Store } from '../src/store.js';
import { chatFixture, queueEvents, withRole, type ChatFixture, openTestStore } from './helpers.js';
import { register, verifyState } from './client_model.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { inviteLedger } from '../actors/areas/invites.js';

const keyOf = (text: string): string => /\/join\/([A-Za-z0-9_-]+)\//.exec(text)![1];
const ACCEPT = '/api/v1/parley/invites/accept';

async function channel(f: ChatFixture, name: string, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name }], ...extra });
  if (r.status !== 200) throw new Error(r.body);
  return channelIdByName(f.runtime, 1, name);
}

t.test('sending invitations: success, mail, listing', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const general = await channel(f, 'general');
  const r = await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'a@example.com, Bob <b@example.com>\nc@example.com,a@example.com', stream_ids: [general] });
  t.same([r.status, r.json], [200, { result: 'success', msg: '' }]);
  t.same(f.mail.sent.map((m) => m.to), ['a@example.com', 'b@example.com', 'c@example.com'], 'one mail per address, once each');
  t.match(f.mail.sent[0].subject, 'Olivia Owner invited you to join Test Org');
  t.match(f.mail.sent[0].raw, /^To: a@example\.com$/m);
  t.match(f.mail.sent[0].text, '/api/v1/parley/invites/accept');
  const list = (await f.call(f.owner, 'GET', '/api/v1/invites')).json.invites;
  t.equal(list.length, 3);
  t.same(list[0], { email: 'a@example.com', id: 1, invited_by_user_id: f.owner.user_id, invited: 1_800_000_000, expiry_date: 1_800_000_000 + 14400 * 60, invited_as: 400, is_multiuse: false, notify_referrer_on_join: true });
  const never = await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'd@example.com', stream_ids: [], invite_expires_in_minutes: null, notify_referrer_on_join: false });
  t.equal(never.status, 200);
  t.match((await f.call(f.owner, 'GET', '/api/v1/invites')).json.invites[3], { email: 'd@example.com', expiry_date: null, notify_referrer_on_join: false });
});

t.test('who may invite, and as what', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const mod = await withRole(f, 'mod@example.com', 300);
  const member = await withRole(f, 'member@example.com', 400);
  const guest = await withRole(f, 'guest@example.com', 600);
  const bad = async (who: typeof f.owner, params: Record<string, unknown>, status: number, msg: string, code = 'BAD_REQUEST') => {
    const r = await f.call(who, 'POST', '/api/v1/invites', { invitee_emails: 'new@example.com', stream_ids: [], ...params });
    t.same([r.status, r.json.code, r.json.msg], [status, code, msg], msg);
  };
  await bad(guest, {}, 400, 'Not allowed for guest users');
  await bad(member, { invite_as: 200 }, 400, 'Must be an organization administrator');
  await bad(mod, { invite_as: 300 }, 400, 'Must be an organization administrator');
  await bad(admin, { invite_as: 100 }, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  await bad(member, { welcome_message_custom_text: 'hi' }, 400, 'Must be an organization administrator');
  await bad(admin, { welcome_message_custom_text: 'x'.repeat(8001) }, 400, 'Invalid welcome_message_custom_text: must NOT have more than 8000 characters');
  await bad(member, { invitee_emails: '' }, 400, 'You must specify at least one email address.');
  await bad(member, { stream_ids: [999] }, 400, 'Invalid channel ID 999. No invites were sent.');
  await bad(member, { group_ids: [999] }, 400, 'Invalid user group');
  await bad(admin, { group_ids: [6] }, 400, 'Insufficient permission');
  await bad(member, { invite_as: 500 }, 400, 'Invalid invite_as: must be equal to one of the allowed values');
  const priv = await channel(f, 'secret', { invite_only: true });
  await bad(member, { stream_ids: [priv] }, 400, `Invalid channel ID ${priv}. No invites were sent.`);
  t.equal((await f.call(admin, 'POST', '/api/v1/invites', { invitee_emails: 'x1@example.com', stream_ids: [priv], invite_as: 200, welcome_message_custom_text: '😀'.repeat(8000) })).status, 200, 'administrators invite administrators, into private channels, with a welcome text of 8000 code points');
  t.equal((await f.call(member, 'POST', '/api/v1/invites', { invitee_emails: 'x2@example.com', stream_ids: [], invite_as: 600 })).status, 200, 'members invite guests');
  // can_invite_users_group: administrators only.
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_invite_users_group: JSON.stringify({ new: 3 }) });
  await bad(member, {}, 400, 'Insufficient permission');
  t.equal((await f.call(member, 'POST', '/api/v1/register', { fetch_event_types: ['realm_user'] })).json.can_invite_others_to_realm, false, 'register says so');
  t.equal((await f.call(admin, 'POST', '/api/v1/register', { fetch_event_types: ['realm_user'] })).json.can_invite_others_to_realm, true);
  t.equal(inviteLedger(f.runtime, 1).email.length, 2, 'no refused request invited anyone');
});

t.test('INVITATION_FAILED: invalid, existing, deactivated, outside the domains, the daily limit', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const gone = await f.createUser('gone@example.com');
  await f.call(f.owner, 'DELETE', `/api/v1/users/${gone.user_id}`);
  const invite = (emails: string) => f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: emails, stream_ids: [] });
  let r = await invite('fine@example.com, not-an-address, owner@example.com');
  t.same([r.status, r.json], [400, {
    result: 'error', code: 'INVITATION_FAILED', msg: "Some emails did not validate, so we didn't send any invitations.",
    errors: [['not-an-address', 'Invalid address.', false], ['owner@example.com', 'Already has an account.', false]],
    sent_invitations: false, license_limit_reached: false, daily_limit_reached: false,
  }]);
  t.equal(inviteLedger(f.runtime, 1).email.length, 0, 'nobody invited');
  r = await invite('OWNER@example.com,gone@example.com');
  t.same([r.status, r.json.msg, r.json.errors, r.json.sent_invitations], [400, "We weren't able to invite anyone.", [['OWNER@example.com', 'Already has an account.', false], ['gone@example.com', 'Account has been deactivated.', true]], false]);
  r = await invite('new@example.com,owner@example.com');
  t.same([r.status, r.json.code, r.json.msg, r.json.errors, r.json.sent_invitations], [400, 'INVITATION_FAILED', "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!", [['owner@example.com', 'Already has an account.', false]], true]);
  t.same(f.mail.sent.map((m) => m.to), ['new@example.com'], 'the valid address is invited all the same');
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'corp.example', allow_subdomains: true });
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { emails_restricted_to_domains: true });
  r = await invite('x@other.example');
  t.same(r.json.errors, [['x@other.example', 'Outside your domain.', false]]);
  t.equal((await invite('x@corp.example, y@eu.corp.example')).status, 200, 'the domain and its subdomains');
  const many = Array.from({ length: MAX_INVITES_PER_DAY }, (_, i) => `u${i}@corp.example`).join(',');
  r = await invite(many);
  t.same([r.status, r.json.code, r.json.daily_limit_reached, r.json.sent_invitations, r.json.errors], [400, 'INVITATION_FAILED', true, false, []], 'over the daily limit: none sent');
  f.clock.t += 86_401_000;
  t.equal((await invite(many)).status, 200, 'a day later the limit has room again');
});

t.test('reusable links, listing rules, revoking, resending', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const member = await withRole(f, 'member@example.com', 400);
  const other = await withRole(f, 'other@example.com', 400);
  t.same((await f.call(member, 'POST', '/api/v1/invites/multiuse', {})).json.msg, 'Insufficient permission', 'links are for administrators by default');
  const link = await f.call(admin, 'POST', '/api/v1/invites/multiuse', { invite_expires_in_minutes: 60 });
  t.match(link.json.invite_link, /^http:\/\/[^/]+\/join\/[A-Za-z0-9_-]{32}\/$/);
  await f.call(member, 'POST', '/api/v1/invites', { invitee_emails: 'm1@example.com', stream_ids: [] });
  await f.call(other, 'POST', '/api/v1/invites', { invitee_emails: 'o1@example.com', stream_ids: [] });
  await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'own@example.com', stream_ids: [], invite_as: 100 });
  const emails = async (who: typeof f.owner) => (await f.call(who, 'GET', '/api/v1/invites')).json.invites.map((i: any) => i.email ?? i.link_url);
  t.same(await emails(member), ['m1@example.com'], 'members see their own');
  t.same(await emails(admin), ['m1@example.com', 'o1@example.com', 'own@example.com', link.json.invite_link], 'administrators see all');
  // Revoking.
  const revoke = (who: typeof f.owner, path: string) => f.call(who, 'DELETE', path);
  t.same((await revoke(member, '/api/v1/invites/2')).json.msg, 'Must be an organization administrator', "a member cannot revoke another's");
  t.same((await revoke(admin, '/api/v1/invites/3')).json.msg, 'Must be an organization owner', "an administrator cannot revoke an owner's owner invitation");
  t.same((await revoke(member, '/api/v1/invites/99')).json.msg, 'No such invitation');
  t.equal((await revoke(member, '/api/v1/invites/1')).status, 200);
  t.same((await revoke(member, '/api/v1/invites/1')).json.msg, 'No such invitation', 'once');
  t.equal((await revoke(admin, '/api/v1/invites/multiuse/1')).status, 200);
  t.same((await revoke(admin, '/api/v1/invites/multiuse/1')).json.msg, 'Invitation has already been revoked');
  t.same(await emails(admin), ['o1@example.com', 'own@example.com']);
  const r = await f.call(null, 'POST', ACCEPT, { key: keyOf(link.json.invite_link), full_name: 'Late', password: 'pw', email: 'late@example.com' });
  t.same([r.status, r.json.msg], [400, 'This invitation has been revoked']);
  const m1 = keyOf(f.mail.sent[0].text);
  t.same((await f.call(null, 'POST', ACCEPT, { key: m1, full_name: 'M', password: 'pw' })).json.msg, 'This invitation has been revoked');
  // Resending.
  t.equal((await f.call(other, 'POST', '/api/v1/invites/2/resend')).status, 200);
  t.same(f.mail.sent.map((m) => m.to), ['m1@example.com', 'o1@example.com', 'own@example.com', 'o1@example.com'], 'sent again');
  t.same((await f.call(other, 'POST', '/api/v1/invites/1/resend')).json.msg, 'No such invitation', 'not a revoked one');
  t.same((await f.call(member, 'POST', '/api/v1/invites/2/resend')).json.msg, 'Must be an organization administrator');
});

t.test("PATCH /invites/multiuse/{invite_id}: editing a reusable link's terms, with the checks of creating one, invites_changed, and the new terms at join", async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const admin = await withRole(f, 'admin@example.com', 200);
  const member = await withRole(f, 'member@example.com', 400);
  const other = await withRole(f, 'other@example.com', 400);
  const guest = await withRole(f, 'guest@example.com', 600);
  const general = await channel(f, 'general');
  const lobby = await channel(f, 'lobby');
  // Members may make links.
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { create_multiuse_invite_group: JSON.stringify({ new: 6 }) });
  const regAdmin = (await f.call(admin, 'POST', '/api/v1/register', { event_types: ['invites_changed'] })).json;
  const regOther = (await f.call(other, 'POST', '/api/v1/register', { event_types: ['invites_changed'] })).json;
  const mine = await f.call(member, 'POST', '/api/v1/invites/multiuse', { stream_ids: [general] });
  t.equal(mine.status, 200, mine.body);
  const owners = await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', { invite_as: 100 });
  t.equal(owners.status, 200, 'link 2: an owner link');
  const edit = (who: typeof f.owner, id: number, params: Record<string, unknown>) => f.call(who, 'PATCH', `/api/v1/invites/multiuse/${id}`, params);
  const refused = async (who: typeof f.owner, id: number, params: Record<string, unknown>, msg: string, code = 'BAD_REQUEST') => {
    const r = await edit(who, id, params);
    t.same([r.status, r.json.code, r.json.msg], [400, code, msg], `${msg} (${JSON.stringify(params)})`);
  };
  // Who may edit which link.
  await refused(member, 99, { invite_as: 400 }, 'No such invitation');
  await refused(other, 1, { invite_as: 400 }, 'Must be an organization administrator', 'BAD_REQUEST');
  await refused(guest, 1, { invite_as: 400 }, 'Not allowed for guest users');
  await refused(admin, 2, { invite_as: 400 }, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  // The terms are checked as creating a link checks them.
  await refused(member, 1, { invite_as: 200 }, 'Must be an organization administrator');
  await refused(admin, 1, { invite_as: 100 }, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  await refused(member, 1, { welcome_message_custom_text: 'hi' }, 'Must be an organization administrator');
  await refused(member, 1, { stream_ids: [9999] }, 'Invalid channel ID 9999. No invites were sent.');
  const bad = await edit(member, 1, { invite_as: 500 });
  t.equal(bad.status, 400, 'an unknown role');
  // A member edits their own link; an administrator edits it too.
  t.equal((await edit(member, 1, { stream_ids: [general, lobby] })).status, 200);
  t.equal((await edit(admin, 1, { invite_as: 300, welcome_message_custom_text: 'Welcome!' })).status, 200);
  t.equal((await edit(admin, 1, { invite_as: 300 })).status, 200, 'no change: success, and no event');
  const listed = (await f.call(member, 'GET', '/api/v1/invites')).json.invites;
  t.match(listed, [{ id: 1, is_multiuse: true, invited_as: 300, link_url: mine.json.invite_link }], 'the link keeps its URL, with the new role');
  // Creating permission is needed to edit, as to create.
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { create_multiuse_invite_group: JSON.stringify({ new: 3 }) });
  await refused(member, 1, { invite_as: 400 }, 'Insufficient permission');
  // invites_changed: to administrators and the link's referrer, once per change.
  t.equal((await queueEvents(f, admin, regAdmin.queue_id, 'invites_changed')).length, 4, 'created twice, edited twice');
  t.same(await queueEvents(f, other, regOther.queue_id, 'invites_changed'), [], 'not to other members');
  // Joining by the edited link gives the new role and channels.
  const joined = await f.call(null, 'POST', ACCEPT, { key: keyOf(mine.json.invite_link), full_name: 'Joy', password: 'pw', email: 'joy@example.com' });
  t.equal(joined.status, 200, joined.body);
  const joy = { user_id: joined.json.user_id, email: 'joy@example.com', api_key: joined.json.api_key };
  t.equal((await f.call(joy, 'GET', '/api/v1/users/me')).json.role, 300, 'the edited role');
  t.same((await f.call(joy, 'GET', '/api/v1/users/me/subscriptions')).json.subscriptions.map((s: any) => s.stream_id).sort(), [general, lobby].sort(), 'the edited channels');
  // A revoked link cannot be edited.
  t.equal((await f.call(admin, 'DELETE', '/api/v1/invites/multiuse/1')).status, 200);
  await refused(admin, 1, { invite_as: 400 }, 'Invitation has already been revoked');
});

t.test('accepting: the account, its role and channels, the referrer told, used once; expiry', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const member = await withRole(f, 'member@example.com', 400);
  const general = await channel(f, 'general');
  const created = await f.call(f.owner, 'POST', '/api/v1/channels/create', { name: 'lobby', subscribers: [f.owner.user_id], is_default_stream: true });
  const lobby: number = created.json.id;
  t.equal((await f.call(f.owner, 'GET', '/api/v1/streams', { include_default: true })).json.streams.find((s: any) => s.stream_id === lobby)?.is_default, true, 'a default channel');
  await channel(f, 'not default');
  // Quietly: Notification Bot would otherwise tell the member of it (send_new_subscription_messages).
  await f.call(f.owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [member.user_id], send_new_subscription_messages: false });
  const reg = (await f.call(f.owner, 'POST', '/api/v1/register', { event_types: ['invites_changed'] })).json;
  const regMember = (await f.call(member, 'POST', '/api/v1/register', { event_types: ['invites_changed', 'message'] })).json;
  const other = await withRole(f, 'other@example.com', 400);
  const regOther = (await f.call(other, 'POST', '/api/v1/register', { event_types: ['invites_changed'] })).json;
  await f.call(member, 'POST', '/api/v1/invites', { invitee_emails: 'new@example.com', stream_ids: [general], invite_as: 600, include_realm_default_subscriptions: true });
  const key = keyOf(f.mail.sent[0].text);
  t.same((await f.call(null, 'POST', ACCEPT, { key: 'nope', full_name: 'N', password: 'pw' })).json.msg, 'Invalid invitation key');
  t.same((await f.call(null, 'POST', ACCEPT, { key, full_name: 'N', password: 'pw', email: 'else@example.com' })).json.msg, 'This invitation is for another email address');
  const r = await f.call(null, 'POST', ACCEPT, { key, full_name: 'Nina New', password: 'secret' });
  t.equal(r.status, 200, r.body);
  t.match(r.json, { user_id: Number, email: 'new@example.com', api_key: String });
  const nina = { user_id: r.json.user_id, email: 'new@example.com', api_key: r.json.api_key };
  t.equal((await f.call(null, 'POST', '/api/v1/fetch_api_key', { username: 'new@example.com', password: 'secret' })).json.api_key, nina.api_key, 'the password works');
  const me = (await f.call(nina, 'GET', '/api/v1/users/me')).json;
  t.equal(me.role, 600, 'the role invited as');
  const subs = (await f.call(nina, 'GET', '/api/v1/users/me/subscriptions')).json.subscriptions.map((s: any) => s.stream_id);
  t.same(subs, [general, lobby], "the invitation's channels and the default ones");
  t.same((await f.call(null, 'POST', ACCEPT, { key, full_name: 'Again', password: 'pw' })).json.msg, 'This invitation has already been used');
  // The referrer is told, by the notification bot.
  const dms = (await queueEvents(f, member, regMember.queue_id, 'message')).map((e) => e.message);
  t.equal(dms.length, 1);
  t.match(dms[0], { sender_email: 'notification-bot@zulip.com', type: 'private', content: `<p><span class="user-mention silent" data-user-id="${nina.user_id}">Nina New</span> accepted your invitation to join Zulip!</p>` });
  t.same(dms[0].display_recipient.map((p: any) => p.email).sort(), ['member@example.com', 'notification-bot@zulip.com']);
  const listed = (await f.call(member, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'is', operand: 'dm' }] })).json.messages;
  t.same(listed.map((m: any) => m.id), [dms[0].id], 'the notice is among the direct messages');
  const unread = (await f.call(member, 'POST', '/api/v1/register', { fetch_event_types: ['update_message_flags'] })).json.unread_msgs;
  t.same(unread.pms, [{ other_user_id: 2_000_000_001, sender_id: 2_000_000_001, unread_message_ids: [dms[0].id] }], 'unread, in the conversation with the bot');
  // invites_changed: administrators and the referrer, not other members.
  t.same((await queueEvents(f, f.owner, reg.queue_id, 'invites_changed')).length, 2, 'owner: sent, accepted');
  t.same((await queueEvents(f, member, regMember.queue_id, 'invites_changed')), [{ type: 'invites_changed' }, { type: 'invites_changed' }]);
  t.same(await queueEvents(f, other, regOther.queue_id, 'invites_changed'), []);
  t.same((await f.call(member, 'GET', '/api/v1/invites')).json.invites, [], 'a used invitation is no longer listed');
  // Expiry by the injected clock.
  await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'late@example.com', stream_ids: [], invite_expires_in_minutes: 60 });
  f.clock.t += 61 * 60_000;
  t.same((await f.call(f.owner, 'GET', '/api/v1/invites')).json.invites, [], 'an expired invitation is not listed');
  t.same((await f.call(null, 'POST', ACCEPT, { key: keyOf(f.mail.sent[1].text), full_name: 'Late', password: 'pw' })).json.msg, 'This invitation has expired');
  t.same((await f.call(f.owner, 'POST', '/api/v1/invites/2/resend')).json.msg, 'No such invitation');
});

t.test('reusable links make many accounts; email and domain checks', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const link = (await f.call(f.owner, 'POST', '/api/v1/invites/multiuse', { invite_as: 300 })).json.invite_link;
  t.same((await f.call(null, 'POST', ACCEPT, { key: keyOf(link), full_name: 'A', password: 'pw' })).json.code, 'REQUEST_VARIABLE_MISSING');
  const a = await f.call(null, 'POST', ACCEPT, { key: link, full_name: 'Ann', password: 'pw', email: 'ann@example.com' });
  const b = await f.call(null, 'POST', ACCEPT, { key: keyOf(link), full_name: 'Ben', password: 'pw', email: 'ben@example.com' });
  t.same([a.status, b.status], [200, 200], 'the link itself is accepted as the key');
  t.equal((await f.call(f.owner, 'GET', `/api/v1/users/${b.json.user_id}`)).json.user.role, 300);
  t.same((await f.call(null, 'POST', ACCEPT, { key: keyOf(link), full_name: 'A2', password: 'pw', email: 'ANN@example.com' })).json.msg, "Email 'ANN@example.com' already in use");
  await f.call(f.owner, 'POST', '/api/v1/realm/domains', { domain: 'corp.example', allow_subdomains: false });
  await f.call(f.owner, 'PATCH', '/api/v1/realm', { emails_restricted_to_domains: true });
  t.same((await f.call(null, 'POST', ACCEPT, { key: keyOf(link), full_name: 'C', password: 'pw', email: 'c@else.example' })).json.msg,
    'Your email address, c@else.example, is not in one of the domains that are allowed to register for accounts in this organization.');
  t.same((await f.call(f.owner, 'GET', '/api/v1/invites')).json.invites.length, 1, 'a link stays after use');
});

t.test('tenant isolation: a key or id of another organization', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const other = await createOrganization(f.runtime, { name: 'Other', subdomain: 'other', ownerEmail: 'boss@other.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { user_id: other.owner.user_id, email: other.owner.email, api_key: other.owner.api_key };
  const host = { headers: { host: 'other.localhost' } };
  await f.call(f.owner, 'POST', '/api/v1/invites', { invitee_emails: 'x@example.com', stream_ids: [] });
  const key = keyOf(f.mail.sent[0].text);
  t.same((await f.call(null, 'POST', ACCEPT, { key, full_name: 'X', password: 'pw' }, host)).json.msg, 'Invalid invitation key');
  t.same((await f.call(boss, 'DELETE', '/api/v1/invites/1', {}, host)).json.msg, 'No such invitation');
  t.same((await f.call(boss, 'GET', '/api/v1/invites', {}, host)).json.invites, []);
  t.equal((await f.call(null, 'POST', ACCEPT, { key, full_name: 'X', password: 'pw' })).status, 200, 'in its own organization it works');
});

t.test('invitations survive a restart (snapshot plus log replay); no mail on replay', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-invites-'));
  const open = (): Store => openTestStore(dir);
  let store = open();
  const { organization_id: org } = await createOrganization(store.runtime, { name: 'Acme', subdomain: '', ownerEmail: 'o@example.com', ownerPassword: 'pw', ownerName: 'O' });
  const first = await store.runtime.execute({ type: 'INVITE_USERS', org, actor_id: 1, invitee_emails: 'a@example.com,b@example.com', stream_ids: [] });
  await store.snapshot();
  const link = await store.runtime.execute({ type: 'CREATE_MULTIUSE_INVITE', org, actor_id: 1 });
  await store.runtime.execute({ type: 'REVOKE_INVITE', org, actor_id: 1, multiuse: false, id: 2 });
  await store.runtime.execute({ type: 'ACCEPT_INVITE', org, key: first.invites[0].key, full_name: 'A', password_hash: '' });
  const expected = inviteLedger(store.runtime, org);
  await store.close();
  store = open();
  t.same(inviteLedger(store.runtime, org), expected, 'the same invitations after the snapshot and the replayed log');
  t.same(inviteLedger(store.runtime, org).email.map((i) => i.status), ['used', 'revoked']);
  await t.rejects(store.runtime.execute({ type: 'ACCEPT_INVITE', org, key: first.invites[1].key, full_name: 'B', password_hash: '' }), { message: 'This invitation has been revoked' });
  const c = await store.runtime.execute({ type: 'ACCEPT_INVITE', org, key: link.invite.key, full_name: 'C', password_hash: '', email: 'c@example.com' });
  t.equal(c.user.email, 'c@example.com', 'a link made before the restart still works');
  const next = await store.runtime.execute({ type: 'INVITE_USERS', org, actor_id: 1, invitee_emails: 'd@example.com', stream_ids: [] });
  t.equal(next.invites[0].id, 3, 'ids are never reused');
  await store.snapshot();
  await store.close();
  store = open();
  t.same(inviteLedger(store.runtime, org).lastIds, [3, 1], 'and after a second snapshot');
  await store.close();
});

t.test('convergence: register plus the events of inviting and joining equals a fresh register', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const bob = await withRole(f, 'bob@example.com', 400);
  const general = await channel(f, 'general');
  await f.subscribe(f.owner, 'general', [bob.user_id]);
  const types = ['realm_user', 'subscription', 'message', 'invites_changed'];
  const initial = await register(f, bob, types);
  let invites = (await f.call(bob, 'GET', '/api/v1/invites')).json.invites;
  t.same(invites, []);
  await f.call(bob, 'POST', '/api/v1/invites', { invitee_emails: 'joiner@example.com, later@example.com', stream_ids: [general] });
  const r = await f.call(null, 'POST', ACCEPT, { key: keyOf(f.mail.sent[0].text), full_name: 'Joiner', password: 'pw' });
  t.equal(r.status, 200, r.body);
  await f.call(bob, 'DELETE', '/api/v1/invites/2');
  // The users, every channel's subscribers and max_message_id converge.
  const events = await verifyState(t, f, bob, initial, types, ['realm_users', 'realm_non_active_users', 'subscriptions', 'unsubscribed', 'never_subscribed', 'max_message_id']);
  t.same(events.map((e) => e.type).filter((type) => type === 'invites_changed').length, 3, 'sent, accepted, revoked');
  // A client refetches GET /invites on invites_changed, as Zulip's does.
  if (events.some((e) => e.type === 'invites_changed')) invites = (await f.call(bob, 'GET', '/api/v1/invites')).json.invites;
  t.same(invites, [], 'and the invitation list: one used, one revoked');
});
