/**
 * Invitations (Zulip's `zerver/actions/invites.py` and `zerver/views/invite.py`):
 * email invitations and reusable links, listing, revoking and resending them, and
 * accepting one, which makes the account. `invites_changed` events go to the
 * administrators and the invitation's referrer.
 *
 * Every key is chosen in the decision; the reducers only record what was decided.
 * Mail is not sent here: the HTTP layer sends it once the facts are durable.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { AnyFact, Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest, missingArgument } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type RoleNumber, type UserRecord } from '../shared/types.js';
import { checkEmail, makeUser } from '../rules/users.js';
import {
  accessInvite, accessInviter, checkInvitedAs, checkInviteTargets, DEFAULT_INVITE_EXPIRY_MINUTES, emailAllowedInOrg, groupsOnJoin, invitationFailed, inviteeEmails, inviteeError,
  isLive, MAX_INVITES_PER_DAY, sentToday, addInvite, inviteBook, type EmailInvite, type InviteBase, type InviteBook, type InviteeError, type MultiuseInvite,
} from '../rules/invites.js';
import { hasGroupPermission } from '../rules/group_settings.js';
import { realmSettings } from '../rules/realm_settings.js';
import { mentionResolver, notificationBotDirect, type MessageSent } from './messages.js';
import { settingsForNewUser } from './settings.js';
import { COLORS, defaultSubscriptionProps, type SubscriptionsAdded } from './subscriptions.js';
import { defaultChannelIds, type UserCreated } from './users.js';
import type { UserGroupMembersChanged } from './user_groups.js';
import { orgState } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Invitations to join: by email and reusable links. */
    invites: InviteBook;
  }
}

orgState({
  invites: {
    empty: () => inviteBook(),
    save: (book) => ({ email: [...book.email.values()], multiuse: [...book.multiuse.values()], lastEmailId: book.lastEmailId, lastMultiuseId: book.lastMultiuseId }),
    load: (c: { email: EmailInvite[]; multiuse: MultiuseInvite[]; lastEmailId: number; lastMultiuseId: number }) => inviteBook(c.email, c.multiuse, c.lastEmailId, c.lastMultiuseId),
  },
});

/** Email invitations were made (one request's worth). */
export interface InvitationsSent { type: 'InvitationsSent'; org: number; invites: EmailInvite[] }
/** A reusable invitation link was made. */
export interface MultiuseInviteCreated { type: 'MultiuseInviteCreated'; org: number; invite: MultiuseInvite }
/** An invitation was revoked. */
export interface InviteRevoked { type: 'InviteRevoked'; org: number; multiuse: boolean; id: number }
/** A reusable link's terms were changed (only the fields named). */
export interface MultiuseInviteEdited { type: 'MultiuseInviteEdited'; org: number; id: number; changes: InviteChanges }
/** An email invitation was sent again. */
export interface InviteResent { type: 'InviteResent'; org: number; id: number; sent: number }
/** An invitation made an account (an email invitation is then used up). */
export interface InviteAccepted { type: 'InviteAccepted'; org: number; multiuse: boolean; id: number; user_id: number }

/** What an invitation request asks for, beyond its addresses. */
interface InviteTerms {
  org: number;
  actor_id: number;
  expires_in_minutes?: number | null;
  invite_as?: number;
  stream_ids?: number[];
  group_ids?: number[];
  include_realm_default_subscriptions?: boolean;
  welcome_message_custom_text?: string | null;
}
/** `POST /invites`. */
export interface InviteUsers extends InviteTerms { type: 'INVITE_USERS'; invitee_emails: string; notify_referrer_on_join?: boolean }
/** `POST /invites/multiuse`. */
export interface CreateMultiuseInvite extends InviteTerms { type: 'CREATE_MULTIUSE_INVITE' }
/** The terms of a reusable link that an edit may change. */
export type InviteChanges = Partial<Pick<InviteBase, 'invited_as' | 'stream_ids' | 'group_ids' | 'include_realm_default_subscriptions' | 'welcome_message_custom_text'>>;
/** `PATCH /invites/multiuse/{id}`: each term given replaces the link's. */
export interface EditMultiuseInvite extends Omit<InviteTerms, 'expires_in_minutes'> { type: 'EDIT_MULTIUSE_INVITE'; id: number }
/** `DELETE /invites/{id}` and `DELETE /invites/multiuse/{id}`. */
export interface RevokeInvite { type: 'REVOKE_INVITE'; org: number; actor_id: number; multiuse: boolean; id: number }
/** `POST /invites/{id}/resend`. */
export interface ResendInvite { type: 'RESEND_INVITE'; org: number; actor_id: number; id: number }
/** Accept an invitation: make the account. `email` is for reusable links. */
export interface AcceptInvite { type: 'ACCEPT_INVITE'; org: number; key: string; full_name: string; password_hash: string; email?: string }

/** The invitation itself, from a request's terms, once they are checked. */
function inviteFrom(c: InviteTerms, env: DecideEnv, id: number): InviteBase {
  const now = env.now();
  const minutes = c.expires_in_minutes === undefined ? DEFAULT_INVITE_EXPIRY_MINUTES : c.expires_in_minutes;
  return {
    id, referrer_id: c.actor_id, invited_as: (c.invite_as ?? Role.MEMBER) as RoleNumber, invited: now, expiry: minutes === null ? null : now + minutes * 60,
    stream_ids: [...new Set(c.stream_ids ?? [])], group_ids: [...new Set(c.group_ids ?? [])],
    include_realm_default_subscriptions: c.include_realm_default_subscriptions ?? false, notify_referrer_on_join: true,
    welcome_message_custom_text: c.welcome_message_custom_text ?? null, key: env.token(24), status: 'active',
  };
}

function checkTargets(ctx: OrgContext, view: StateView, actor: UserRecord, c: InviteTerms): void {
  checkInviteTargets(ctx, view, actor, { stream_ids: c.stream_ids ?? [], group_ids: c.group_ids ?? [], welcome_message_custom_text: c.welcome_message_custom_text ?? null });
}

export const inviteUsers = command({
  type: 'INVITE_USERS',
  actor: 'org',
  decide(ctx: OrgContext, c: InviteUsers, env: DecideEnv, view: StateView): Decision<{ invites: EmailInvite[]; skipped: InviteeError[] }, InvitationsSent> {
    const actor = accessInviter(ctx, c.actor_id);
    if (!hasGroupPermission(ctx, actor, realmSettings(ctx).can_invite_users_group)) throw badRequest('Insufficient permission');
    checkInvitedAs(actor, c.invite_as ?? Role.MEMBER);
    if (c.invitee_emails === '') throw badRequest('You must specify at least one email address.');
    checkTargets(ctx, view, actor, c);
    const emails = inviteeEmails(c.invitee_emails);
    const now = env.now();
    if (sentToday(ctx, now) + emails.length > MAX_INVITES_PER_DAY) {
      throw invitationFailed('To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.', [], { sent: false, dailyLimit: true });
    }
    const errors: InviteeError[] = [];
    const skipped: InviteeError[] = [];
    const good: string[] = [];
    for (const email of emails) {
      const why = inviteeError(ctx, email);
      if (!why) good.push(email);
      else (why.existing ? skipped : errors).push([email, why.reason, why.deactivated]);
    }
    if (errors.length > 0) throw invitationFailed("Some emails did not validate, so we didn't send any invitations.", [...errors, ...skipped], { sent: false });
    if (good.length === 0) throw invitationFailed("We weren't able to invite anyone.", skipped, { sent: false });
    const invites = good.map((email, i): EmailInvite => ({
      ...inviteFrom(c, env, ctx.invites.lastEmailId + 1 + i), notify_referrer_on_join: c.notify_referrer_on_join ?? true, email, sent: now,
    }));
    return { facts: [{ type: 'InvitationsSent', org: c.org, invites }], value: { invites, skipped } };
  },
});

export const createMultiuseInvite = command({
  type: 'CREATE_MULTIUSE_INVITE',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateMultiuseInvite, env: DecideEnv, view: StateView): Decision<{ invite: MultiuseInvite }, MultiuseInviteCreated> {
    const actor = accessInviter(ctx, c.actor_id);
    if (!hasGroupPermission(ctx, actor, realmSettings(ctx).create_multiuse_invite_group)) throw badRequest('Insufficient permission');
    checkInvitedAs(actor, c.invite_as ?? Role.MEMBER);
    checkTargets(ctx, view, actor, c);
    const invite = inviteFrom(c, env, ctx.invites.lastMultiuseId + 1);
    return { facts: [{ type: 'MultiuseInviteCreated', org: c.org, invite }], value: { invite } };
  },
});

/**
 * Edits a reusable link (Zulip's newer `PATCH /invites/multiuse/{invite_id}`): the
 * link as revoking finds it (`access_multiuse_invite_by_id`: another's link needs an
 * administrator, an owner link an owner; a revoked one is refused), then every check
 * that creating a link with the new terms makes. Its key and expiry stay. An edit that
 * changes nothing records nothing.
 */
export const editMultiuseInvite = command({
  type: 'EDIT_MULTIUSE_INVITE',
  actor: 'org',
  decide(ctx: OrgContext, c: EditMultiuseInvite, _env: DecideEnv, view: StateView): Decision<Record<string, never>, MultiuseInviteEdited> {
    const actor = accessInviter(ctx, c.actor_id);
    const invite = accessInvite(ctx, actor, ctx.invites.multiuse.get(c.id));
    if (invite.status === 'revoked') throw badRequest('Invitation has already been revoked');
    if (!hasGroupPermission(ctx, actor, realmSettings(ctx).create_multiuse_invite_group)) throw badRequest('Insufficient permission');
    if (c.invite_as !== undefined) checkInvitedAs(actor, c.invite_as);
    checkInviteTargets(ctx, view, actor, { stream_ids: c.stream_ids ?? [], group_ids: c.group_ids ?? [], welcome_message_custom_text: c.welcome_message_custom_text ?? null });
    const asked: InviteChanges = {
      ...(c.invite_as === undefined ? {} : { invited_as: c.invite_as as RoleNumber }),
      ...(c.stream_ids === undefined ? {} : { stream_ids: [...new Set(c.stream_ids)] }),
      ...(c.group_ids === undefined ? {} : { group_ids: [...new Set(c.group_ids)] }),
      ...(c.include_realm_default_subscriptions === undefined ? {} : { include_realm_default_subscriptions: c.include_realm_default_subscriptions }),
      ...(c.welcome_message_custom_text === undefined ? {} : { welcome_message_custom_text: c.welcome_message_custom_text }),
    };
    const changes = Object.fromEntries(Object.entries(asked).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(invite[k as keyof InviteChanges]))) as InviteChanges;
    if (Object.keys(changes).length === 0) return { facts: [], value: {} };
    return { facts: [{ type: 'MultiuseInviteEdited', org: c.org, id: invite.id, changes }], value: {} };
  },
});

export const revokeInvite = command({
  type: 'REVOKE_INVITE',
  actor: 'org',
  decide(ctx: OrgContext, c: RevokeInvite, env: DecideEnv): Decision<Record<string, never>, InviteRevoked> {
    const actor = accessInviter(ctx, c.actor_id);
    const found = c.multiuse ? ctx.invites.multiuse.get(c.id) : ctx.invites.email.get(c.id);
    // A used email invitation is gone, as in Zulip; a revoked link is reported as such.
    const invite = accessInvite(ctx, actor, found && (c.multiuse || found.status === 'active') ? found : undefined);
    if (invite.status === 'revoked') throw badRequest('Invitation has already been revoked');
    if (!c.multiuse && !isLive(ctx, invite, env.now())) throw badRequest('No such invitation');
    return { facts: [{ type: 'InviteRevoked', org: c.org, multiuse: c.multiuse, id: invite.id }], value: {} };
  },
});

export const resendInvite = command({
  type: 'RESEND_INVITE',
  actor: 'org',
  decide(ctx: OrgContext, c: ResendInvite, env: DecideEnv): Decision<{ invite: EmailInvite }, InviteResent> {
    const actor = accessInviter(ctx, c.actor_id);
    const now = env.now();
    const found = ctx.invites.email.get(c.id);
    const invite = accessInvite(ctx, actor, found && isLive(ctx, found, now) ? found : undefined);
    if (sentToday(ctx, now) + 1 > MAX_INVITES_PER_DAY) {
      throw invitationFailed('To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.', [], { sent: false, dailyLimit: true });
    }
    return { facts: [{ type: 'InviteResent', org: c.org, id: invite.id, sent: now }], value: { invite: { ...invite, sent: now } } };
  },
});

/** Why a key cannot be used now, or the invitation it names. */
function liveInvite(ctx: OrgContext, key: string, now: number): { invite: InviteBase; multiuse: boolean } {
  const ref = ctx.invites.byKey.get(key);
  const invite = ref && (ref.multiuse ? ctx.invites.multiuse.get(ref.id) : ctx.invites.email.get(ref.id));
  if (!ref || !invite) throw badRequest('Invalid invitation key');
  if (invite.status === 'used') throw badRequest('This invitation has already been used');
  if (invite.status === 'revoked' || ctx.users.get(invite.referrer_id)?.is_active !== true) throw badRequest('This invitation has been revoked');
  if (invite.expiry !== null && invite.expiry <= now) throw badRequest('This invitation has expired');
  return { invite, multiuse: ref.multiuse };
}

export const acceptInvite = command({
  type: 'ACCEPT_INVITE',
  actor: 'org',
  decide(ctx: OrgContext, c: AcceptInvite, env: DecideEnv, view: StateView): Decision<{ user: UserRecord; multiuse: boolean; invite_id: number; stream_ids: number[]; group_ids: number[] }, AnyFact> {
    const { invite, multiuse } = liveInvite(ctx, c.key, env.now());
    let email: string;
    if (multiuse) {
      if (c.email === undefined) throw missingArgument('email');
      email = checkEmail(c.email);
      if (!emailAllowedInOrg(ctx, email)) throw badRequest(`Your email address, ${email}, is not in one of the domains that are allowed to register for accounts in this organization.`);
    } else {
      email = (invite as EmailInvite).email;
      if (c.email !== undefined && c.email.trim().toLowerCase() !== email.toLowerCase()) throw badRequest('This invitation is for another email address');
    }
    if (ctx.byEmail.has(email.toLowerCase())) throw badRequest(`Email '${email}' already in use`);
    const user = makeUser(env, { user_id: ctx.nextUserId, recipient_id: ctx.nextRecipientId, email, password_hash: c.password_hash, full_name: c.full_name, role: invite.invited_as, waitingPeriodDays: realmSettings(ctx).waiting_period_threshold });
    const settings = settingsForNewUser(ctx);
    if (settings) user.settings = settings;
    const created: UserCreated = { type: 'UserCreated', org: c.org, user, acting_user_id: null };
    const accepted: InviteAccepted = { type: 'InviteAccepted', org: c.org, multiuse, id: invite.id, user_id: user.user_id };
    const facts: AnyFact[] = [created, accepted];
    const channels = joinedChannels(ctx, view, invite);
    if (channels.length > 0) {
      const joined: SubscriptionsAdded = {
        type: 'SubscriptionsAdded', org: c.org, created: [], acting_user_id: user.user_id,
        additions: channels.map((stream_id, i) => ({ stream_id, user_ids: [user.user_id], props: [defaultSubscriptionProps(COLORS[i % COLORS.length])] })),
      };
      facts.push(joined);
    }
    const groupIds = groupsOnJoin(ctx, invite);
    for (const id of groupIds) {
      const member: UserGroupMembersChanged = { type: 'UserGroupMembersChanged', org: ctx.org.id, group_id: id, add: [user.user_id], remove: [], add_subgroups: [], remove_subgroups: [] };
      facts.push(member);
    }
    const referrer = ctx.users.get(invite.referrer_id)!;
    if (invite.notify_referrer_on_join) facts.push(referrerNotice(ctx, env, referrer, user));
    return { facts, value: { user, multiuse, invite_id: invite.id, stream_ids: channels, group_ids: groupIds } };
  },
});

/** The channels a new user joins: the invitation's that still exist, and the default ones if asked. */
function joinedChannels(ctx: OrgContext, view: StateView, invite: InviteBase): number[] {
  const ids = new Set<number>();
  const live = (id: number): boolean => {
    const ch = view.channel(ctx.org.id, id);
    return ch !== undefined && !ch.channel.is_archived;
  };
  for (const id of invite.stream_ids) if (live(id)) ids.add(id);
  if (invite.include_realm_default_subscriptions) for (const id of defaultChannelIds(ctx, view)) ids.add(id);
  return [...ids].sort((a, b) => a - b);
}

/** The notification bot tells the referrer (Zulip's "accepted your invitation" direct message). */
function referrerNotice(ctx: OrgContext, env: DecideEnv, referrer: UserRecord, user: UserRecord): MessageSent {
  const content = `@_**${user.full_name}|${user.user_id}** accepted your invitation to join Zulip!`;
  // The new user is not in the directory until this decision's facts apply: the mention resolves them here.
  const base = mentionResolver(ctx);
  return notificationBotDirect(env, ctx, referrer, content, { ...base, user: (name, id) => (id === user.user_id ? user : base.user(name, id)) });
}

/** `invites_changed`: to the organization's administrators and the invitation's referrer. */
function invitesChanged(view: StateView, org: number, seq: number, referrerId: number | undefined): Delivery[] {
  const to = activeUsersWhere(view, org, (u) => !u.is_bot && (u.role <= Role.ADMIN || u.user_id === referrerId));
  return [{ org, seq, type: 'invites_changed', user_ids: to, event: eventJson('invites_changed', {}) }];
}

const invitationsSent = orgFact<InvitationsSent>({
  type: 'InvitationsSent',
  apply: (ctx, f) => f.invites.forEach((i) => addInvite(ctx.invites, { ...i }, false)),
  notify: (f, seq, view) => invitesChanged(view, f.org, seq, f.invites[0]?.referrer_id),
});

const multiuseInviteCreated = orgFact<MultiuseInviteCreated>({
  type: 'MultiuseInviteCreated',
  apply: (ctx, f) => addInvite(ctx.invites, { ...f.invite }, true),
  notify: (f, seq, view) => invitesChanged(view, f.org, seq, f.invite.referrer_id),
});

/** Replaces an invitation's record (a snapshot being written keeps the one it holds). */
function setStatus(ctx: OrgContext, multiuse: boolean, id: number, status: InviteBase['status']): InviteBase | undefined {
  const book = multiuse ? ctx.invites.multiuse : ctx.invites.email;
  const invite = book.get(id);
  if (invite) book.set(id, { ...invite, status } as EmailInvite);
  return invite;
}

const inviteRevoked = orgFact<InviteRevoked>({
  type: 'InviteRevoked',
  apply: (ctx, f) => void setStatus(ctx, f.multiuse, f.id, 'revoked'),
  notify(f, seq, view) {
    const book = view.org(f.org)!.invites;
    return invitesChanged(view, f.org, seq, (f.multiuse ? book.multiuse : book.email).get(f.id)?.referrer_id);
  },
});

const multiuseInviteEdited = orgFact<MultiuseInviteEdited>({
  type: 'MultiuseInviteEdited',
  apply(ctx, f) {
    const invite = ctx.invites.multiuse.get(f.id);
    if (invite) ctx.invites.multiuse.set(f.id, { ...invite, ...f.changes });
  },
  notify: (f, seq, view) => invitesChanged(view, f.org, seq, view.org(f.org)!.invites.multiuse.get(f.id)?.referrer_id),
});

const inviteResent = orgFact<InviteResent>({
  type: 'InviteResent',
  apply(ctx, f) {
    const invite = ctx.invites.email.get(f.id);
    if (invite) ctx.invites.email.set(f.id, { ...invite, sent: f.sent });
  },
});

const inviteAccepted = orgFact<InviteAccepted>({
  type: 'InviteAccepted',
  apply: (ctx, f) => void (f.multiuse ? undefined : setStatus(ctx, false, f.id, 'used')),
  notify(f, seq, view) {
    const book = view.org(f.org)!.invites;
    return invitesChanged(view, f.org, seq, (f.multiuse ? book.multiuse : book.email).get(f.id)?.referrer_id);
  },
});

// Reads.

/** Refuses a key that cannot make an account now (a cheap check before a password is hashed; the decision checks again). */
export function checkInviteKey(view: StateView, org: number, key: string, now: number): void {
  liveInvite(view.org(org)!, key, now);
}

/** The invitations `user` may manage (Zulip's `do_get_invites_controlled_by_user`): all for administrators, else their own; live ones only. */
export function invitesControlledBy(view: StateView, org: number, user: UserRecord, now: number): Array<{ invite: InviteBase; multiuse: boolean }> {
  const ctx = view.org(org)!;
  const mine = (i: InviteBase): boolean => isLive(ctx, i, now) && (user.role <= Role.ADMIN || i.referrer_id === user.user_id);
  return [
    ...[...ctx.invites.email.values()].filter(mine).map((invite) => ({ invite, multiuse: false })),
    ...[...ctx.invites.multiuse.values()].filter(mine).map((invite) => ({ invite, multiuse: true })),
  ];
}

/**
 * Every invitation the organization ever made, used and revoked ones included (`GET /invites`
 * lists only those still open), with the keys that name them and the last ids given out.
 */
export interface InviteLedger {
  email: EmailInvite[];
  multiuse: MultiuseInvite[];
  keys: Array<{ key: string; multiuse: boolean; id: number }>;
  lastIds: [email: number, multiuse: number];
}

export function inviteLedger(view: StateView, org: number): InviteLedger {
  const book = view.org(org)?.invites;
  if (!book) return { email: [], multiuse: [], keys: [], lastIds: [0, 0] };
  return { email: [...book.email.values()], multiuse: [...book.multiuse.values()], keys: [...book.byKey].map(([key, named]) => ({ key, ...named })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)), lastIds: [book.lastEmailId, book.lastMultiuseId] };
}

export const invites = area({
  name: 'invites',
  commands: [inviteUsers, createMultiuseInvite, editMultiuseInvite, revokeInvite, resendInvite, acceptInvite],
  facts: [invitationsSent, multiuseInviteCreated, multiuseInviteEdited, inviteRevoked, inviteResent, inviteAccepted],
});
