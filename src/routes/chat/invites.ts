/**
 * Invitations: send them by email, make reusable links, list, revoke and resend
 * them; and Parley's own `POST /api/v1/parley/invites/accept`, which makes the
 * account (Zulip does that in its web sign-up pages, which Parley does not have).
 * Mail goes out only after the invitation's facts are durable.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { checkInviteKey, invitesControlledBy } from '../../../actors/areas/invites.js';
import { accessInviter, invitationFailed, inviteLink, inviteView, MAX_WELCOME_TEXT_LENGTH } from '../../../actors/rules/invites.js';
import type { EmailInvite } from '../../../actors/rules/invites.js';
import { hashPassword } from '../../../actors/rules/passwords.js';
import type { OrgRecord } from '../../../actors/shared/types.js';
import { checkFullName } from '../../../actors/rules/users.js';
import { type ChatContext, Nullable, R, route, S } from '../../http/route.js';
import { invitationMail } from '../../mail/invitation_mail.js';
import { realmUrl } from './server.js';

const terms = {
  invite_expires_in_minutes: { schema: Nullable(Type.Integer({ minimum: 1, maximum: 100 * 525600 })), description: 'Minutes until the invitation expires; null: never (default 14400, 10 days)' },
  invite_as: { schema: Type.Unsafe<number>({ type: 'integer', enum: [100, 200, 300, 400, 600] }), description: 'Role of the new user (default 400, member)' },
  group_ids: { schema: S.intArray },
  include_realm_default_subscriptions: { schema: S.bool },
  welcome_message_custom_text: { schema: Type.String({ maxLength: MAX_WELCOME_TEXT_LENGTH }), description: 'Administrators only' },
};

/** Sends each invitation's mail; a mail that fails is logged (the invitation stands and can be resent). */
async function mailInvitations(ctx: Pick<ChatContext, 'mailer' | 'runtime' | 'request' | 'log'>, org: OrgRecord, invites: EmailInvite[]): Promise<void> {
  const url = realmUrl(ctx.request.headers.host);
  for (const invite of invites) {
    const referrer = ctx.runtime.org(org.id)!.users.get(invite.referrer_id)!;
    try {
      await ctx.mailer.send(invitationMail(org, referrer, invite, url));
    } catch (err) {
      const error = (err as Error).message;
      ctx.log.warn({ event: 'mail.failed', mail: 'invitation', org: org.id, invite_id: invite.id, error }, `invitation mail ${invite.id} failed: ${error}`);
    }
  }
}

export const listInvites = route({
  method: 'GET',
  path: '/api/v1/invites',
  operationId: 'getInvites',
  auth: 'user',
  summary: 'The unexpired invitations the caller can manage (all of them for administrators)',
  params: {},
  handler({ org, user, runtime, request }) {
    accessInviter(runtime.org(org.id)!, user.user_id);
    const url = realmUrl(request.headers.host);
    return { json: { invites: invitesControlledBy(runtime, org.id, user, runtime.nowSeconds()).map((i) => inviteView(i.invite, i.multiuse, url)) } };
  },
});

export const sendInvites = route({
  method: 'POST',
  path: '/api/v1/invites',
  operationId: 'sendInvites',
  auth: 'user',
  summary: 'Invite people by email',
  params: {
    invitee_emails: { schema: S.str, required: true, description: 'Addresses separated by commas or newlines' },
    stream_ids: { schema: S.intArray, required: true },
    notify_referrer_on_join: { schema: S.bool },
    ...terms,
  },
  async handler(ctx) {
    const { params, org, user, runtime } = ctx;
    const { invites, skipped } = await runtime.execute({ type: 'INVITE_USERS', org: org.id, actor_id: user.user_id, invitee_emails: params.invitee_emails, expires_in_minutes: params.invite_expires_in_minutes, invite_as: params.invite_as, stream_ids: params.stream_ids, group_ids: params.group_ids, include_realm_default_subscriptions: params.include_realm_default_subscriptions, notify_referrer_on_join: params.notify_referrer_on_join, welcome_message_custom_text: params.welcome_message_custom_text });
    await mailInvitations(ctx, org, invites);
    if (skipped.length > 0) {
      throw invitationFailed("Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!", skipped, { sent: true });
    }
    return { json: {} };
  },
});

export const createInviteLink = route({
  method: 'POST',
  path: '/api/v1/invites/multiuse',
  operationId: 'createInviteLink',
  auth: 'user',
  summary: 'Make a reusable invitation link',
  params: { stream_ids: { schema: S.intArray }, ...terms },
  async handler({ params, org, user, runtime, request }) {
    const { invite } = await runtime.execute({ type: 'CREATE_MULTIUSE_INVITE', org: org.id, actor_id: user.user_id, expires_in_minutes: params.invite_expires_in_minutes, invite_as: params.invite_as, stream_ids: params.stream_ids, group_ids: params.group_ids, include_realm_default_subscriptions: params.include_realm_default_subscriptions, welcome_message_custom_text: params.welcome_message_custom_text });
    return { json: { invite_link: inviteLink(realmUrl(request.headers.host), invite.key) } };
  },
});

export const revokeInvite = route({
  method: 'DELETE',
  path: '/api/v1/invites/{invite_id}',
  operationId: 'revokeEmailInvite',
  auth: 'user',
  summary: 'Revoke an email invitation',
  params: { invite_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REVOKE_INVITE', org: org.id, actor_id: user.user_id, multiuse: false, id: params.invite_id });
    return { json: {} };
  },
});

export const revokeInviteLink = route({
  method: 'DELETE',
  path: '/api/v1/invites/multiuse/{invite_id}',
  operationId: 'revokeInviteLink',
  auth: 'user',
  summary: 'Revoke a reusable invitation link',
  params: { invite_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REVOKE_INVITE', org: org.id, actor_id: user.user_id, multiuse: true, id: params.invite_id });
    return { json: {} };
  },
});

export const editInviteLink = route({
  method: 'PATCH',
  path: '/api/v1/invites/multiuse/{invite_id}',
  operationId: 'editInviteLink',
  auth: 'user',
  summary: "Change a reusable invitation link's role, channels, groups or welcome text (Zulip's newer edit); its URL and expiry stay",
  response: R.empty,
  params: {
    invite_id: { schema: S.nonNegInt, in: 'path', required: true },
    invite_as: terms.invite_as,
    stream_ids: { schema: S.intArray },
    group_ids: terms.group_ids,
    include_realm_default_subscriptions: terms.include_realm_default_subscriptions,
    welcome_message_custom_text: terms.welcome_message_custom_text,
  },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'EDIT_MULTIUSE_INVITE', org: org.id, actor_id: user.user_id, id: params.invite_id, invite_as: params.invite_as, stream_ids: params.stream_ids, group_ids: params.group_ids, include_realm_default_subscriptions: params.include_realm_default_subscriptions, welcome_message_custom_text: params.welcome_message_custom_text });
    return { json: {} };
  },
});

export const resendInvite = route({
  method: 'POST',
  path: '/api/v1/invites/{invite_id}/resend',
  operationId: 'resendEmailInvite',
  auth: 'user',
  summary: 'Send an email invitation again',
  params: { invite_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler(ctx) {
    const { params, org, user, runtime } = ctx;
    const { invite } = await runtime.execute({ type: 'RESEND_INVITE', org: org.id, actor_id: user.user_id, id: params.invite_id });
    await mailInvitations(ctx, org, [invite]);
    return { json: {} };
  },
});

export const acceptInvite = route({
  method: 'POST',
  path: '/api/v1/parley/invites/accept',
  operationId: 'parleyAcceptInvite',
  auth: 'none',
  summary: "Accept an invitation and make the account (Parley's own: Zulip does this in its web sign-up pages)",
  response: R.fields({ user_id: Type.Integer(), email: Type.String(), api_key: Type.String() }),
  description: 'Takes the key of an email invitation or a reusable link (the last path segment of its `/join/<key>/` link). Answers with the new account and its API key.',
  params: {
    key: { schema: Type.String({ minLength: 1, maxLength: 200 }), required: true },
    full_name: { schema: S.str, required: true },
    password: { schema: Type.String({ minLength: 1, maxLength: 1024 }), required: true },
    email: { schema: S.str, description: 'Required for a reusable link; for an email invitation, if given, it must be the invited address' },
  },
  async handler({ params, org, runtime }) {
    const key = params.key.replace(/^.*\/join\/|\/$/g, '');
    checkInviteKey(runtime, org.id, key, runtime.nowSeconds());
    checkFullName(params.full_name);
    const password_hash = await hashPassword(params.password);
    const { user } = await runtime.execute({ type: 'ACCEPT_INVITE', org: org.id, key, full_name: params.full_name, password_hash, email: params.email });
    return { json: { user_id: user.user_id, email: user.email, api_key: user.api_key } };
  },
});
