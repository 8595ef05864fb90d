/**
 * The organization actor: the user directory and roles, the channel directory, and
 * the organization's direct messages. It is the shard unit: nothing in it refers to
 * another organization.
 */
import type { Persistence } from '../core/persistence.js';
import type { ChannelFolderRecord, ChannelRecord, MessageRecord, OrgRecord, StoredMessage, ProfileFieldRecord, RoleNumber, UserGroupRecord, UserRecord } from '../shared/types.js';
import { LAST_SYSTEM_GROUP_ID } from '../rules/group_settings.js';
import { IdMap } from '../shared/id_map.js';
import { MessageTable } from '../shared/message_table.js';
import { stampHas } from '../engines/message_has.js';
import { persistedMessage, restoredMessage, storeMessage, type Bodies, type PersistedMessage } from '../core/bodies.js';

/** State of one organization actor. */
export interface OrgContext {
  seq: number;
  org: OrgRecord;
  users: Map<number, UserRecord>;
  /** Lower-cased API email to user id. */
  byEmail: Map<string, number>;
  /** Lower-cased channel name to channel id. */
  channelsByName: Map<string, number>;
  /** Next free id for users, channels and recipients, each counted separately. */
  nextUserId: number;
  nextChannelId: number;
  nextRecipientId: number;
  /** Direct messages, as columns ascending by id. */
  directMessages: MessageTable;
  /** Where the bodies of `directMessages` are (the runtime's body store; not part of snapshots). */
  bodies: Bodies;
  /** The highest direct message id ever added (kept when it is deleted). */
  lastDirectId: number;
  /** Each user's direct message ids, ascending. */
  directIdsByUser: Map<number, number[]>;
  /** Recipient id of each group conversation, keyed by its sorted user ids. */
  groupRecipients: Map<string, number>;
  /** Which channel each channel message lives in. */
  messageChannel: IdMap;
  /** Channel folders, by id (archived ones included). */
  folders: Map<number, ChannelFolderRecord>;
  /** Custom profile fields, by id. */
  profileFields: Map<number, ProfileFieldRecord>;
  /** The highest custom profile field id ever used (kept when that field is deleted). */
  lastProfileFieldId: number;
  /** Settings new users start with, where they differ from Zulip's defaults. */
  userDefaults: Record<string, unknown>;
  /** The organization's settings that differ from Zulip's defaults (`actors/rules/realm_settings.ts`). */
  realmSettings: Record<string, unknown>;
  /** The organization's email domains (`realm_domains`), in the order they were added. */
  domains: RealmDomain[];
  /** Linkifiers, in the order they apply. */
  linkifiers: Linkifier[];
  /** The highest linkifier id ever used. */
  lastLinkifierId: number;
  /** Data exports of the organization, by id (`actors/areas/realm_exports.ts`). */
  exports: Map<number, RealmExportRecord>;
  /** The highest export id ever used. */
  lastExportId: number;
  /** Code playgrounds, in the order they were added. */
  playgrounds: Playground[];
  /** The highest playground id ever used. */
  lastPlaygroundId: number;
  /** Each user's alert words, for the users who have any (a send checks only these). */
  alertWords: Map<number, string[]>;
  /** The organization's own user groups, by id (deactivated ones included); system groups are derived from roles. */
  userGroups: Map<number, UserGroupRecord>;
  /** The highest user group id ever used (system groups take the ids up to `LAST_SYSTEM_GROUP_ID`). */
  lastGroupId: number;
  /**
   * Presence, by user id (Zulip's `UserPresence`): in memory and in snapshots, never
   * in the log (see `actors/areas/presence.ts`).
   */
  presence: Map<number, PresenceRow>;
  /** The organization's newest presence update id (Zulip's `PresenceSequence`); 0: none yet. */
  presenceLastUpdateId: number;
  /** Invitations to join: by email and reusable links (`actors/areas/invites.ts`). */
  invites: InviteBook;
  /** Uploaded files, by attachment id (`actors/areas/attachments.ts`). */
  attachments: Map<number, AttachmentRecord>;
  /** Attachment id by `path_id`; derived from `attachments`, never persisted. */
  attachmentByPath: Map<string, number>;
  /** The highest attachment id ever used. */
  lastAttachmentId: number;
  /** Custom emoji, by id (deactivated ones included). */
  realmEmoji: Map<number, RealmEmojiRecord>;
  /** The highest custom emoji id ever used. */
  lastEmojiId: number;
  /** Message deletions still under way, by id (`actors/areas/deletion_jobs.ts`); finished ones leave. */
  deletionJobs: Map<number, MessageDeletionJob>;
  /** The highest deletion job id ever used. */
  lastDeletionJobId: number;
}

/**
 * A durable job deleting every message some accounts sent, of the kinds asked for (a
 * user's deactivation with `actions`): recorded by the decision that deactivates them,
 * advanced one channel per decision, and removed by the decision that deletes the direct
 * messages last (`actors/areas/deletion_jobs.ts`; the runtime's `DeletionJobs` runs it).
 */
export interface MessageDeletionJob {
  id: number;
  /** The administrator who asked. */
  actor_id: number;
  /** The accounts whose messages go: the user and the bots they own. */
  sender_ids: number[];
  public_channels: boolean;
  private_channels: boolean;
  direct_messages: boolean;
  /** The channels still to go through, ascending; then the direct messages, and the job is done. */
  channels: number[];
}

/** A custom emoji: its name, and its image in the upload store. */
export interface RealmEmojiRecord {
  id: number;
  name: string;
  /** The name it is served under: `<id>.<ext>`. */
  file_name: string;
  sha256: string;
  size: number;
  content_type: string;
  author_id: number | null;
  deactivated: boolean;
}

/**
 * An uploaded file (Zulip's `Attachment`). The bytes live in the upload store under
 * the organization, named by their SHA-256 (`src/uploads/store.ts`); `path_id` is the
 * URL path the client sees. Times are Unix seconds.
 */
export interface AttachmentRecord {
  id: number;
  owner_id: number;
  name: string;
  path_id: string;
  size: number;
  content_type: string;
  sha256: string;
  create_time: number;
  /** Messages whose content links the file, ascending by id. */
  messages: Array<{ id: number; date_sent: number }>;
}

/** One user's presence. Times are Unix seconds. */
export interface PresenceRow {
  /** When the user was last reported active; null: never (shown as their join date). */
  active: number | null;
  /** When a client of the user last reported in at all (Zulip's `last_connected_time`). */
  connected: number;
  /** The `presenceLastUpdateId` this row was last changed at. */
  update_id: number;
}

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

/** A pattern that Markdown turns into links (Zulip's `RealmFilter`). */
export interface Linkifier {
  id: number;
  /** An RE2 pattern with Python-style named groups, as Zulip takes it. */
  pattern: string;
  /** An RFC 6570 URL template over the pattern's named groups. */
  url_template: string;
}

/**
 * A data export (Zulip's `RealmExport`). Times are Unix seconds. Its archive, once
 * built, is a file of the upload store (named by its SHA-256) served at `file.url`.
 */
export interface RealmExportRecord {
  id: number;
  acting_user_id: number;
  /** 1: public, 2: full with members' consent. */
  type: number;
  requested: number;
  status: 'requested' | 'succeeded' | 'failed' | 'deleted';
  succeeded?: number;
  failed?: number;
  deleted?: number;
  file?: { sha256: string; size: number; name: string; key: string; url: string };
}

/** A code playground (Zulip's `RealmPlayground`): where a code block of a language opens. */
export interface Playground {
  id: number;
  name: string;
  pygments_language: string;
  /** An RFC 6570 URL template whose one variable is `code`. */
  url_template: string;
}

/** An email domain of the organization. */
export interface RealmDomain {
  domain: string;
  allow_subdomains: boolean;
}

/** Context before the organization's `OrgCreated` fact is applied. */
export function emptyOrg(id: number, bodies: Bodies): OrgContext {
  return {
    seq: 0,
    org: { id, name: '', subdomain: '', description: '', date_created: 0, deactivated: false },
    users: new Map(),
    byEmail: new Map(),
    channelsByName: new Map(),
    nextUserId: 1,
    nextChannelId: 1,
    nextRecipientId: 1,
    directMessages: new MessageTable(),
    bodies,
    lastDirectId: 0,
    directIdsByUser: new Map(),
    groupRecipients: new Map(),
    messageChannel: new IdMap(),
    folders: new Map(),
    profileFields: new Map(),
    lastProfileFieldId: 0,
    userDefaults: {},
    realmSettings: {},
    domains: [],
    linkifiers: [],
    lastLinkifierId: 0,
    playgrounds: [],
    lastPlaygroundId: 0,
    exports: new Map(),
    lastExportId: 0,
    alertWords: new Map(),
    userGroups: new Map(),
    lastGroupId: LAST_SYSTEM_GROUP_ID,
    presence: new Map(),
    presenceLastUpdateId: 0,
    invites: inviteBook(),
    attachments: new Map(),
    realmEmoji: new Map(),
    lastEmojiId: 0,
    attachmentByPath: new Map(),
    lastAttachmentId: 0,
    deletionJobs: new Map(),
    lastDeletionJobId: 0,
  };
}

/** Looks a user up by API email, case-insensitively. */
export function userByEmail(ctx: OrgContext, email: string): UserRecord | undefined {
  const id = ctx.byEmail.get(email.toLowerCase());
  return id === undefined ? undefined : ctx.users.get(id);
}

/** Adds a user to the directory. */
export function addUser(ctx: OrgContext, user: UserRecord): void {
  ctx.users.set(user.user_id, { ...user });
  ctx.byEmail.set(user.email.toLowerCase(), user.user_id);
  ctx.nextUserId = Math.max(ctx.nextUserId, user.user_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, user.recipient_id + 1);
}

/** Adds a channel to the directory. */
export function addChannel(ctx: OrgContext, channel: ChannelRecord): void {
  ctx.channelsByName.set(channel.name.toLowerCase(), channel.stream_id);
  ctx.nextChannelId = Math.max(ctx.nextChannelId, channel.stream_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, channel.recipient_id + 1);
}

/** Records a direct message in the organization's indexes. */
export function addDirectMessage(ctx: OrgContext, m: MessageRecord): void {
  const old = ctx.directMessages.get(m.id);
  if (old) ctx.bodies.release(old.body);
  indexDirectMessage(ctx, storeMessage(ctx.bodies, m.has === undefined ? stampHas(m) : m));
}

/** Records a direct message, its body stored already, in the organization's indexes. */
function indexDirectMessage(ctx: OrgContext, m: StoredMessage): void {
  ctx.directMessages.set(m.id, m);
  if (m.id > ctx.lastDirectId) ctx.lastDirectId = m.id;
  for (const uid of m.dm_user_ids ?? []) {
    let ids = ctx.directIdsByUser.get(uid);
    if (!ids) ctx.directIdsByUser.set(uid, (ids = []));
    ids.push(m.id);
  }
}

/** Replaces a direct message the organization holds (an edit), its old body released; one it does not hold stays out. */
export function replaceDirectMessage(ctx: OrgContext, m: MessageRecord): void {
  const old = ctx.directMessages.get(m.id);
  if (!old) return;
  ctx.bodies.release(old.body);
  ctx.directMessages.set(m.id, storeMessage(ctx.bodies, stampHas(m)));
}

interface OrgChunk {
  k: 'org';
  seq: number;
  org: OrgRecord;
  users: UserRecord[];
  channelsByName: Array<[string, number]>;
  nextUserId: number;
  nextChannelId: number;
  nextRecipientId: number;
  groupRecipients: Array<[string, number]>;
  /** Absent in chunks written before channel folders existed. */
  folders?: ChannelFolderRecord[];
  /** Absent in older chunks: then the highest direct message id restored. */
  lastDirectId?: number;
  /** Absent in chunks written before custom profile fields existed. */
  profileFields?: ProfileFieldRecord[];
  lastProfileFieldId?: number;
  /** Absent in chunks written before settings defaults existed. */
  userDefaults?: Record<string, unknown>;
  /** Absent in chunks written before organization settings could change. */
  realmSettings?: Record<string, unknown>;
  /** Absent in chunks written before realm domains existed. */
  domains?: RealmDomain[];
  /** Absent in chunks written before linkifiers existed. */
  linkifiers?: Linkifier[];
  lastLinkifierId?: number;
  /** Absent in chunks written before data exports existed. These name the archives a snapshot covers. */
  exports?: RealmExportRecord[];
  lastExportId?: number;
  /** Absent in chunks written before code playgrounds existed. */
  playgrounds?: Playground[];
  lastPlaygroundId?: number;
  /** Absent in chunks written before alert words existed. */
  alertWords?: Array<[number, string[]]>;
  /** Absent in chunks written before user groups existed. */
  userGroups?: UserGroupRecord[];
  lastGroupId?: number;
  /** Presence rows flattened, four numbers each: user id, active (-1: null), connected, update id. Absent before presence existed. */
  presence?: number[];
  presenceLastUpdateId?: number;
  /** Absent in chunks written before invitations existed. */
  invites?: { email: EmailInvite[]; multiuse: MultiuseInvite[]; lastEmailId: number; lastMultiuseId: number };
  /** Absent in chunks written before uploads existed. These name the files a snapshot covers. */
  attachments?: AttachmentRecord[];
  /** Absent in chunks written before custom emoji existed. */
  realmEmoji?: RealmEmojiRecord[];
  lastEmojiId?: number;
  lastAttachmentId?: number;
  /** Absent in chunks written before deletion jobs existed: then none is under way. */
  deletionJobs?: MessageDeletionJob[];
  lastDeletionJobId?: number;
}

/** Presence rows as four numbers each: compact in a snapshot of 10,000s of users. */
function flattenPresence(rows: Map<number, PresenceRow>): number[] {
  const out: number[] = [];
  for (const [id, r] of rows) out.push(id, r.active ?? -1, r.connected, r.update_id);
  return out;
}

function unflattenPresence(flat: number[] | undefined): Map<number, PresenceRow> {
  const rows = new Map<number, PresenceRow>();
  if (!flat) return rows;
  for (let i = 0; i + 3 < flat.length; i += 4) rows.set(flat[i], { active: flat[i + 1] < 0 ? null : flat[i + 1], connected: flat[i + 2], update_id: flat[i + 3] });
  return rows;
}
interface DirectMessagesChunk {
  k: 'dms';
  org: number;
  /** Whole before format 4; with a body store, as stored (`PersistedMessage`). */
  msgs: PersistedMessage[];
}

/** Where a restored organization goes, and where its slices find it. */
export interface OrgRestoreScope {
  installOrg(ctx: OrgContext): void;
  org(orgId: number): OrgContext | undefined;
  /** The runtime's body store, where restored bodies go. */
  bodies: Bodies;
  /** The store the snapshot's locators are of: `bodies`, or the source directory's in a restore. */
  bodySource: Bodies;
}

export const orgPersistence: Persistence<OrgContext, OrgRestoreScope> = {
  tags: ['org', 'dms'],
  *chunks(ctx, sliceSize) {
    // The head reflects the direct messages up to this id; later ones are left to replay.
    let bound = 0;
    yield (): OrgChunk => {
      bound = ctx.lastDirectId;
      return {
        k: 'org', seq: ctx.seq, org: ctx.org, users: [...ctx.users.values()], channelsByName: [...ctx.channelsByName],
        nextUserId: ctx.nextUserId, nextChannelId: ctx.nextChannelId, nextRecipientId: ctx.nextRecipientId, groupRecipients: [...ctx.groupRecipients],
        folders: [...ctx.folders.values()],
        lastDirectId: ctx.lastDirectId,
        profileFields: [...ctx.profileFields.values()],
        lastProfileFieldId: ctx.lastProfileFieldId,
        userDefaults: ctx.userDefaults,
        realmSettings: ctx.realmSettings,
        domains: ctx.domains,
        linkifiers: ctx.linkifiers,
        lastLinkifierId: ctx.lastLinkifierId,
        playgrounds: ctx.playgrounds,
        exports: [...ctx.exports.values()],
        lastExportId: ctx.lastExportId,
        lastPlaygroundId: ctx.lastPlaygroundId,
        alertWords: [...ctx.alertWords],
        userGroups: [...ctx.userGroups.values()],
        lastGroupId: ctx.lastGroupId,
        // Presence as it is when the head is taken: what changes after it is what a crash loses.
        presence: flattenPresence(ctx.presence),
        presenceLastUpdateId: ctx.presenceLastUpdateId,
        invites: { email: [...ctx.invites.email.values()], multiuse: [...ctx.invites.multiuse.values()], lastEmailId: ctx.invites.lastEmailId, lastMultiuseId: ctx.invites.lastMultiuseId },
        attachments: [...ctx.attachments.values()],
        realmEmoji: [...ctx.realmEmoji.values()],
        lastEmojiId: ctx.lastEmojiId,
        lastAttachmentId: ctx.lastAttachmentId,
        deletionJobs: [...ctx.deletionJobs.values()],
        lastDeletionJobId: ctx.lastDeletionJobId,
      };
    };
    // Direct messages are kept in id order; a deleted one leaves the map. Slices take them
    // in order up to the head's bound: exactly those the head reflects, as they are then.
    // An organization always writes at least one (possibly empty) slice, as format 1 did.
    const iter = ctx.directMessages.values();
    let finished = false;
    do {
      yield (): DirectMessagesChunk => {
        const msgs: PersistedMessage[] = [];
        while (!finished && msgs.length < sliceSize) {
          const next = iter.next();
          if (next.done || next.value.id > bound) finished = true;
          else msgs.push(persistedMessage(ctx.bodies, next.value));
        }
        return { k: 'dms', org: ctx.org.id, msgs };
      };
    } while (!finished);
  },
  restore(chunk, scope) {
    if (chunk.k === 'org') {
      const c = chunk as OrgChunk;
      scope.installOrg({
        seq: c.seq,
        org: c.org,
        users: new Map(c.users.map((u) => [u.user_id, u])),
        byEmail: new Map(c.users.map((u) => [u.email.toLowerCase(), u.user_id])),
        channelsByName: new Map(c.channelsByName),
        nextUserId: c.nextUserId,
        nextChannelId: c.nextChannelId,
        nextRecipientId: c.nextRecipientId,
        directMessages: new MessageTable(),
        bodies: scope.bodies,
        lastDirectId: c.lastDirectId ?? 0,
        directIdsByUser: new Map(),
        groupRecipients: new Map(c.groupRecipients),
        messageChannel: new IdMap(),
        folders: new Map((c.folders ?? []).map((f) => [f.id, f])),
        profileFields: new Map((c.profileFields ?? []).map((f) => [f.id, f])),
        lastProfileFieldId: c.lastProfileFieldId ?? 0,
        userDefaults: c.userDefaults ?? {},
        realmSettings: c.realmSettings ?? {},
        domains: c.domains ?? [],
        linkifiers: c.linkifiers ?? [],
        lastLinkifierId: c.lastLinkifierId ?? 0,
        playgrounds: c.playgrounds ?? [],
        exports: new Map((c.exports ?? []).map((e) => [e.id, e])),
        lastExportId: c.lastExportId ?? 0,
        lastPlaygroundId: c.lastPlaygroundId ?? 0,
        alertWords: new Map(c.alertWords ?? []),
        userGroups: new Map((c.userGroups ?? []).map((g) => [g.id, g])),
        lastGroupId: c.lastGroupId ?? LAST_SYSTEM_GROUP_ID,
        presence: unflattenPresence(c.presence),
        presenceLastUpdateId: c.presenceLastUpdateId ?? 0,
        invites: c.invites ? inviteBook(c.invites.email, c.invites.multiuse, c.invites.lastEmailId, c.invites.lastMultiuseId) : inviteBook(),
        attachments: new Map((c.attachments ?? []).map((a) => [a.id, a])),
        realmEmoji: new Map((c.realmEmoji ?? []).map((e) => [e.id, e])),
        lastEmojiId: c.lastEmojiId ?? 0,
        attachmentByPath: new Map((c.attachments ?? []).map((a) => [a.path_id, a.id])),
        lastAttachmentId: c.lastAttachmentId ?? 0,
        deletionJobs: new Map((c.deletionJobs ?? []).map((j) => [j.id, j])),
        lastDeletionJobId: c.lastDeletionJobId ?? 0,
      });
      return;
    }
    const c = chunk as DirectMessagesChunk;
    const org = scope.org(c.org)!;
    for (const m of c.msgs) indexDirectMessage(org, restoredMessage(org.bodies, scope.bodySource, 'body' in m || m.has !== undefined ? m : stampHas(m)));
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    org: OrgContext;
  }
}
