/**
 * Invitation rules (Zulip's `zerver/views/invite.py` access checks and
 * `zerver/lib/email_validation.py`): who may invite and as what, which channels and
 * groups an invitation may carry, which addresses may be invited, and the daily limit.
 */
import { ApiError, badRequest } from '../shared/errors.js';
import { hasGroupPermission, hasGroupUpdatePermission, isSystemGroup } from './group_settings.js';
import { canAccessChannel } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from './realm_settings.js';
import type { StateView } from '../core/state_view.js';
import { Role, type RoleNumber, type UserRecord } from '../shared/types.js';
import { isValidEmail } from './users.js';
import { codePointLength } from './messages.js';

/** What every invitation holds: who made it, what the new user gets, and its key. */
export interface InviteBase {
  id: number;
  referrer_id: number;
  invited_as: RoleNumber;
  /** Unix seconds the invitation was made. */
  invited: number;
  /** Unix seconds it expires; null: never. */
  expiry: number | null;
  stream_ids: number[];
  /** User groups the new user is to join (stored; applied once user groups exist, see `groupsOnJoin`). */
  group_ids: number[];
  include_realm_default_subscriptions: boolean;
  notify_referrer_on_join: boolean;
  /** Administrators only; null: the organization's default. */
  welcome_message_custom_text: string | null;
  /** The secret that accepts the invitation, chosen when it was decided. */
  key: string;
  /** `used`: an email invitation that made its account (reusable links stay active). */
  status: 'active' | 'used' | 'revoked';
}
/** An invitation sent to one email address. */
export interface EmailInvite extends InviteBase {
  email: string;
  /** Unix seconds it was last sent (made or resent): what the daily limit counts. */
  sent: number;
}
/** A reusable invitation link. */
export type MultiuseInvite = InviteBase;

/** The organization's invitations. Used and revoked ones are kept, so that a stale key is refused with the reason. */
export interface InviteBook {
  email: Map<number, EmailInvite>;
  multiuse: Map<number, MultiuseInvite>;
  lastEmailId: number;
  lastMultiuseId: number;
  /** Key to invitation (derived: rebuilt on restore). */
  byKey: Map<string, { multiuse: boolean; id: number }>;
}

/** An empty invitation book, or one holding `email` and `multiuse`. */
export function inviteBook(email: EmailInvite[] = [], multiuse: MultiuseInvite[] = [], lastEmailId = 0, lastMultiuseId = 0): InviteBook {
  const book: InviteBook = { email: new Map(), multiuse: new Map(), lastEmailId, lastMultiuseId, byKey: new Map() };
  for (const i of email) addInvite(book, i, false);
  for (const i of multiuse) addInvite(book, i, true);
  return book;
}

/** Records an invitation in the book. */
export function addInvite(book: InviteBook, invite: EmailInvite | MultiuseInvite, multiuse: boolean): void {
  if (multiuse) {
    book.multiuse.set(invite.id, invite);
    book.lastMultiuseId = Math.max(book.lastMultiuseId, invite.id);
  } else {
    book.email.set(invite.id, invite as EmailInvite);
    book.lastEmailId = Math.max(book.lastEmailId, invite.id);
  }
  book.byKey.set(invite.key, { multiuse, id: invite.id });
}

/** Zulip's `INVITATION_LINK_VALIDITY_MINUTES` default: 10 days. */
export const DEFAULT_INVITE_EXPIRY_MINUTES = 14400;
/** Invitations an organization may send in any 24 hours (Zulip's `INVITES_STANDARD_REALM_DAILY_MAX`). */
export const MAX_INVITES_PER_DAY = 3000;
/** Zulip's `MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH`, in code points. */
export const MAX_WELCOME_TEXT_LENGTH = 8000;
/** The roles an invitation may give. */
export const INVITE_ROLES = [Role.OWNER, Role.ADMIN, Role.MODERATOR, Role.MEMBER, Role.GUEST] as const;

/** One skipped or refused address: `[email, reason, deactivated]`, as Zulip's `errors` lists them. */
export type InviteeError = [string, string, boolean];

/**
 * Zulip's `InvitationError`: code `INVITATION_FAILED` with the addresses that failed and
 * whether any invitation went out.
 */
export function invitationFailed(msg: string, errors: InviteeError[], opts: { sent: boolean; dailyLimit?: boolean }): ApiError {
  return new ApiError('INVITATION_FAILED', msg, { errors, sent_invitations: opts.sent, license_limit_reached: false, daily_limit_reached: opts.dailyLimit ?? false });
}

/** `require_member_or_admin`: an active human who is not a guest. */
export function accessInviter(ctx: OrgContext, actorId: number): UserRecord {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  if (actor.is_bot) throw badRequest('This endpoint does not accept bot requests.');
  if (actor.role === Role.GUEST) throw badRequest('Not allowed for guest users');
  return actor;
}

/** Zulip's `check_role_based_permissions`: owners invite owners; administrators invite administrators and moderators. */
export function checkInviteRole(actor: UserRecord, invitedAs: number, requireAdmin: boolean): void {
  if (invitedAs === Role.OWNER && actor.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner');
  if (requireAdmin && actor.role > Role.ADMIN) throw badRequest('Must be an organization administrator');
}

/** The role a new invitation gives: one of Zulip's, and no more than the inviter may give. */
export function checkInvitedAs(actor: UserRecord, invitedAs: number): void {
  if (!(INVITE_ROLES as readonly number[]).includes(invitedAs)) throw badRequest('Invalid invite_as');
  checkInviteRole(actor, invitedAs, invitedAs <= Role.MODERATOR);
}

/** What a new invitation carries (channels, groups, welcome text), checked in Zulip's order. */
export function checkInviteTargets(
  ctx: OrgContext,
  view: StateView,
  actor: UserRecord,
  c: { stream_ids: number[]; group_ids: number[]; welcome_message_custom_text: string | null },
): void {
  checkInviteChannels(ctx, view, actor, c.stream_ids);
  checkInviteGroups(ctx, actor, c.group_ids);
  if (c.welcome_message_custom_text !== null) {
    if (actor.role > Role.ADMIN) throw badRequest('Must be an organization administrator');
    if (codePointLength(c.welcome_message_custom_text) > MAX_WELCOME_TEXT_LENGTH) {
      throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_TEXT_LENGTH} characters)`);
    }
  }
}

/** Zulip's `access_streams_for_invite`: channels the inviter can reach and may add others to (default channels always). */
function checkInviteChannels(ctx: OrgContext, view: StateView, actor: UserRecord, ids: number[]): void {
  const settings = realmSettings(ctx);
  let cannotAdd = false;
  for (const id of ids) {
    const ch = view.channel(ctx.org.id, id);
    if (!ch || ch.channel.is_archived || !canAccessChannel(actor, ch.channel, ch.subscribers)) throw badRequest(`Invalid channel ID ${id}. No invites were sent.`);
    if (ch.channel.is_default || actor.role <= Role.ADMIN) continue;
    const channelGroup = ch.channel.groups?.can_add_subscribers_group;
    if (!hasGroupPermission(ctx, actor, settings.can_add_subscribers_group) && !(channelGroup !== undefined && hasGroupPermission(ctx, actor, channelGroup))) cannotAdd = true;
  }
  if (cannotAdd) throw badRequest('You do not have permission to subscribe other users to channels.');
}

/**
 * Zulip's `access_user_groups_for_invite`: groups of the organization that are not
 * system groups (no one adds members to those), active, and whose members the inviter
 * may add.
 */
function checkInviteGroups(ctx: OrgContext, actor: UserRecord, ids: number[]): void {
  for (const id of ids) {
    const group = ctx.userGroups.get(id);
    if (isSystemGroup(id)) throw badRequest('Insufficient permission');
    if (!group || group.deactivated) throw badRequest('Invalid user group');
    if (!hasGroupUpdatePermission(ctx, realmSettings(ctx).can_manage_all_groups, actor, group, 'can_add_members_group')) throw badRequest('Insufficient permission');
  }
}

/** The user groups a new user joins when accepting `invite`: those of it that still exist and are active. */
export function groupsOnJoin(ctx: OrgContext, invite: InviteBase): number[] {
  return invite.group_ids.filter((id) => ctx.userGroups.get(id)?.deactivated === false);
}

/**
 * Zulip's `get_invitee_emails_set`: split at commas and newlines, `Name <email>`
 * reduced to the email, trimmed, each once (first-seen order).
 */
export function inviteeEmails(raw: string): string[] {
  const out = new Set<string>();
  for (const part of raw.split(/[,\n]/)) {
    const named = /<(.*)>/s.exec(part);
    out.add((named ? named[1] : part).trim());
  }
  return [...out];
}

/** Whether the organization takes an address (its domains, when emails are restricted to them). */
export function emailAllowedInOrg(ctx: OrgContext, email: string): boolean {
  if (!realmSettings(ctx).emails_restricted_to_domains) return true;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return ctx.domains.some((d) => d.domain === domain || (d.allow_subdomains && domain.endsWith(`.${d.domain}`)));
}

/** Zulip's `validate_email_is_valid` then `get_existing_user_errors`: why an address cannot be invited, or null. */
export function inviteeError(ctx: OrgContext, email: string): { reason: string; deactivated: boolean; existing: boolean } | null {
  if (!isValidEmail(email)) return { reason: 'Invalid address.', deactivated: false, existing: false };
  if (!emailAllowedInOrg(ctx, email)) return { reason: 'Outside your domain.', deactivated: false, existing: false };
  const id = ctx.byEmail.get(email.toLowerCase());
  const user = id === undefined ? undefined : ctx.users.get(id);
  if (user) return user.is_active ? { reason: 'Already has an account.', deactivated: false, existing: true } : { reason: 'Account has been deactivated.', deactivated: true, existing: true };
  return null;
}

/** Invitation emails sent in the 24 hours up to `now` (made or resent). */
export function sentToday(ctx: OrgContext, now: number): number {
  let n = 0;
  for (const i of ctx.invites.email.values()) if (i.sent > now - 86400) n++;
  return n;
}

/** Whether an invitation can still be used: active, unexpired, its referrer still active. */
export function isLive(ctx: OrgContext, invite: InviteBase, now: number): boolean {
  return invite.status === 'active' && (invite.expiry === null || invite.expiry > now) && ctx.users.get(invite.referrer_id)?.is_active === true;
}

/** Zulip's `access_invite_by_id` / `access_multiuse_invite_by_id`: the referrer, or administrators (owners for owner invitations). */
export function accessInvite<T extends InviteBase>(ctx: OrgContext, actor: UserRecord, invite: T | undefined): T {
  if (!invite) throw badRequest('No such invitation');
  if (invite.referrer_id !== actor.user_id) checkInviteRole(actor, invite.invited_as, true);
  return invite;
}

/** An invitation as `GET /invites` lists it. */
export function inviteView(invite: EmailInvite | InviteBase, multiuse: boolean, realmUrl: string): Record<string, unknown> {
  const common = {
    id: invite.id, invited_by_user_id: invite.referrer_id, invited: invite.invited, expiry_date: invite.expiry,
    invited_as: invite.invited_as, is_multiuse: multiuse, notify_referrer_on_join: invite.notify_referrer_on_join,
  };
  return multiuse ? { ...common, link_url: inviteLink(realmUrl, invite.key) } : { email: (invite as EmailInvite).email, ...common };
}

/** Where an invitation is accepted (Zulip's `/join/<key>/`). */
export function inviteLink(realmUrl: string, key: string): string {
  return `${realmUrl}/join/${key}/`;
}
