/**
 * Custom emoji (Zulip's `zerver/actions/realm_emoji.py` and `zerver/views/realm_emoji.py`):
 * members of `can_add_custom_emoji_group` upload an image under a name; its author or
 * an administrator deactivates it (deactivated emoji stay listed, and stay in old
 * messages). Every change sends `realm_emoji` `update` with the whole list. Markdown
 * renders an active one for `:name:`, ahead of a Unicode emoji of that name.
 *
 * The image is a file of the upload store (`src/uploads/`), named by its SHA-256; it
 * is durable before the fact that adds the emoji, and kept as long as a live emoji or
 * a kept snapshot names it.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { ApiError, badRequest, notFound } from '../shared/errors.js';
import { hasGroupPermission } from '../rules/group_settings.js';
import { emojiCodeOf, type CustomEmoji } from '../engines/emoji.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role } from '../shared/types.js';
import { orgState, recordsById } from '../core/state_slices.js';

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

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Custom emoji, by id (deactivated ones included). */
    realmEmoji: Map<number, RealmEmojiRecord>;
    /** The highest custom emoji id ever used. */
    lastEmojiId: number;
  }
}

orgState({ realmEmoji: recordsById(), lastEmojiId: { empty: () => 0 } });

/** Zulip's `MAX_EMOJI_FILE_SIZE_MIB`. */
export const MAX_EMOJI_FILE_SIZE_MIB = 5;

/** The image types an emoji may be, by their leading bytes, with the file extension each gets. */
const IMAGE_TYPES: Array<{ type: string; ext: string; test: (b: Buffer) => boolean }> = [
  { type: 'image/png', ext: 'png', test: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  { type: 'image/gif', ext: 'gif', test: (b) => b.subarray(0, 6).toString('latin1') === 'GIF87a' || b.subarray(0, 6).toString('latin1') === 'GIF89a' },
  { type: 'image/jpeg', ext: 'jpg', test: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { type: 'image/webp', ext: 'webp', test: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP' },
];

/** The image type of a file's first bytes, or "Invalid image format" (Zulip's check that the file is an image). */
export function emojiImageType(head: Buffer): { type: string; ext: string } {
  const found = IMAGE_TYPES.find((t) => t.test(head));
  if (!found) throw badRequest('Invalid image format');
  return { type: found.type, ext: found.ext };
}

/** Zulip's emoji name rules, after spaces become underscores and letters lower case (as the API describes). */
export function checkEmojiName(raw: string): string {
  const name = raw.trim().replace(/ /g, '_').toLowerCase();
  if (name === '') throw badRequest('Emoji name is missing');
  if (name.length > 60) throw badRequest('Emoji name is too long');
  if (!/^[0-9a-z\-_]+$/.test(name)) throw badRequest('Emoji names must contain only lowercase alphanumeric characters, underscores, and dashes.');
  if (/[-_]$/.test(name)) throw badRequest('Emoji names must end with either a letter or digit.');
  return name;
}

/** Where an emoji's image is served, relative to the organization's URL. */
export function emojiSourceUrl(org: number, e: RealmEmojiRecord): string {
  return `/user_avatars/${org}/emoji/images/${e.file_name}`;
}

/** Every custom emoji, deactivated ones too, keyed by id, as `realm_emoji` shows them. */
export function realmEmojiView(ctx: OrgContext): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of ctx.realmEmoji.values()) {
    out[String(e.id)] = { id: String(e.id), name: e.name, source_url: emojiSourceUrl(ctx.org.id, e), still_url: null, deactivated: e.deactivated, author_id: e.author_id };
  }
  return out;
}

/** The active custom emoji of a name. */
export function activeEmojiNamed(ctx: OrgContext, name: string): RealmEmojiRecord | undefined {
  for (const e of ctx.realmEmoji.values()) if (!e.deactivated && e.name === name) return e;
  return undefined;
}

/** The organization's custom emoji as reactions and statuses look them up. */
export function customEmojiOf(ctx: OrgContext): CustomEmoji {
  return {
    byName: (name) => activeEmojiNamed(ctx, name),
    byId: (id) => ctx.realmEmoji.get(id),
  };
}

/** An image was added as a custom emoji. */
export interface RealmEmojiAdded { type: 'RealmEmojiAdded'; org: number; emoji: RealmEmojiRecord }
/** A custom emoji was deactivated. */
export interface RealmEmojiDeactivated { type: 'RealmEmojiDeactivated'; org: number; emoji_id: number }

export interface AddRealmEmoji {
  type: 'ADD_REALM_EMOJI';
  org: number;
  actor_id: number;
  name: string;
  /** The stored image: its digest, size and type (already checked to be an image). */
  sha256: string;
  size: number;
  content_type: string;
  ext: string;
}
export interface DeactivateRealmEmoji { type: 'DEACTIVATE_REALM_EMOJI'; org: number; actor_id: number; name: string }

/** Checks that `actor` may add an emoji of this name now (before and after the upload). */
export function checkCanAddEmoji(ctx: OrgContext, actorId: number, rawName: string): string {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  if (!hasGroupPermission(ctx, actor, realmSettings(ctx).can_add_custom_emoji_group)) throw badRequest('Insufficient permission');
  const name = checkEmojiName(rawName);
  if (activeEmojiNamed(ctx, name)) throw badRequest('A custom emoji with this name already exists.');
  if (emojiCodeOf(name) !== undefined && actor.role > Role.ADMIN) throw badRequest('Only administrators can override default emoji.');
  return name;
}

export const addRealmEmoji = command({
  type: 'ADD_REALM_EMOJI',
  actor: 'org',
  decide(ctx: OrgContext, c: AddRealmEmoji): Decision<{ id: number }, RealmEmojiAdded> {
    const name = checkCanAddEmoji(ctx, c.actor_id, c.name);
    const id = ctx.lastEmojiId + 1;
    const emoji: RealmEmojiRecord = { id, name, file_name: `${id}.${c.ext}`, sha256: c.sha256, size: c.size, content_type: c.content_type, author_id: c.actor_id, deactivated: false };
    return { facts: [{ type: 'RealmEmojiAdded', org: c.org, emoji }], value: { id } };
  },
});

export const deactivateRealmEmoji = command({
  type: 'DEACTIVATE_REALM_EMOJI',
  actor: 'org',
  decide(ctx: OrgContext, c: DeactivateRealmEmoji, _env: DecideEnv): Decision<Record<string, never>, RealmEmojiDeactivated> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active) throw badRequest('Invalid user');
    const emoji = activeEmojiNamed(ctx, c.name);
    if (!emoji) throw notFound(`Emoji '${c.name}' does not exist`);
    if (actor.role > Role.ADMIN && emoji.author_id !== actor.user_id) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator or emoji author');
    return { facts: [{ type: 'RealmEmojiDeactivated', org: c.org, emoji_id: emoji.id }], value: {} };
  },
});

/** `realm_emoji` `update` with the whole list, to everyone. */
function everyoneTold(f: { org: number }, seq: number, view: StateView): Delivery[] {
  return [{ org: f.org, seq, type: 'realm_emoji', user_ids: activeUsersWhere(view, f.org), event: eventJson('realm_emoji', { op: 'update', realm_emoji: realmEmojiView(view.org(f.org)!) }) }];
}

const realmEmojiAdded = orgFact<RealmEmojiAdded>({
  type: 'RealmEmojiAdded',
  apply(ctx, f) {
    ctx.realmEmoji.set(f.emoji.id, { ...f.emoji });
    ctx.lastEmojiId = Math.max(ctx.lastEmojiId, f.emoji.id);
  },
  notify: everyoneTold,
});

const realmEmojiDeactivated = orgFact<RealmEmojiDeactivated>({
  type: 'RealmEmojiDeactivated',
  apply(ctx, f) {
    const e = ctx.realmEmoji.get(f.emoji_id);
    if (e) ctx.realmEmoji.set(f.emoji_id, { ...e, deactivated: true });
  },
  notify: everyoneTold,
});

export const realmEmoji = area({
  name: 'realm emoji',
  commands: [addRealmEmoji, deactivateRealmEmoji],
  facts: [realmEmojiAdded, realmEmojiDeactivated],
  register: [{ types: ['realm_emoji'], fill: (state, r, view) => void (state.realm_emoji = realmEmojiView(view.org(r.org.id)!)) }],
});
