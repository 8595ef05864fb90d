/**
 * Channel folders (Zulip's `zerver/actions/channel_folders.py`): named groups of
 * channels for the left sidebar, created, renamed, described, reordered, archived
 * and unarchived by administrators; `channel_folder` events to everyone; the
 * `channel_folders` section of `/register`. The organization actor owns them.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { renderMarkdown } from '../engines/markdown/index.js';
import { codePointLength, LIMITS } from '../rules/messages.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type ChannelFolderRecord } from '../shared/types.js';
import { mentionResolver } from './messages.js';
import { orgState, recordsById } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Channel folders, by id (archived ones included). */
    folders: Map<number, ChannelFolderRecord>;
  }
}

orgState({ folders: recordsById() });

/** A channel folder was created. */
export interface ChannelFolderCreated { type: 'ChannelFolderCreated'; org: number; folder: ChannelFolderRecord }
/** What changed in a folder: the fields of Zulip's `channel_folder` `update` event. */
export interface FolderChanges { name?: string; description?: string; rendered_description?: string; is_archived?: boolean }
/** A channel folder was renamed, described, archived or unarchived. */
export interface ChannelFolderUpdated { type: 'ChannelFolderUpdated'; org: number; folder_id: number; data: FolderChanges }
/** The folders were put in a new order (ids, first to last). */
export interface ChannelFoldersReordered { type: 'ChannelFoldersReordered'; org: number; order: number[] }

/** Create a folder (administrators only). */
export interface CreateChannelFolder { type: 'CREATE_CHANNEL_FOLDER'; org: number; actor_id: number; name: string; description: string }
/** Change a folder (administrators only); absent fields stay as they are. */
export interface UpdateChannelFolder { type: 'UPDATE_CHANNEL_FOLDER'; org: number; actor_id: number; folder_id: number; name?: string; description?: string; is_archived?: boolean }
/** Reorder every folder (administrators only). */
export interface ReorderChannelFolders { type: 'REORDER_CHANNEL_FOLDERS'; org: number; actor_id: number; order: number[] }

function requireAdmin(ctx: OrgContext, actorId: number): void {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
}

/** Zulip's `check_channel_folder_name`, with the length limit its endpoint applies. */
function checkFolderName(ctx: OrgContext, name: string): string {
  if (codePointLength(name) > LIMITS.max_channel_folder_name_length) throw badRequest(`name is too long (limit: ${LIMITS.max_channel_folder_name_length} characters)`);
  if (name.trim() === '') throw badRequest("Channel folder name can't be empty.");
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) throw badRequest(`Invalid character in channel folder name, at position ${i + 1}.`);
  }
  const lower = name.toLowerCase();
  for (const f of ctx.folders.values()) if (f.name.toLowerCase() === lower) throw badRequest(`Channel folder '${name}' already exists`);
  return name;
}

function checkDescription(description: string): string {
  if (codePointLength(description) > LIMITS.max_channel_folder_description_length) {
    throw badRequest(`description is too long (limit: ${LIMITS.max_channel_folder_description_length} characters)`);
  }
  return description;
}

const rendered = (ctx: OrgContext, description: string): string => (description === '' ? '' : renderMarkdown(description, mentionResolver(ctx)).html);

export const createChannelFolder = command({
  type: 'CREATE_CHANNEL_FOLDER',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateChannelFolder, env: DecideEnv): Decision<{ channel_folder_id: number }, ChannelFolderCreated> {
    requireAdmin(ctx, c.actor_id);
    const description = checkDescription(c.description);
    const name = checkFolderName(ctx, c.name);
    let id = 1;
    for (const existing of ctx.folders.keys()) id = Math.max(id, existing + 1);
    const folder: ChannelFolderRecord = {
      id, name, description, rendered_description: rendered(ctx, description), creator_id: c.actor_id, date_created: env.now(), is_archived: false, order: id,
    };
    return { facts: [{ type: 'ChannelFolderCreated', org: c.org, folder }], value: { channel_folder_id: id } };
  },
});

export const updateChannelFolder = command({
  type: 'UPDATE_CHANNEL_FOLDER',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateChannelFolder, _env: DecideEnv, view: StateView): Decision<Record<string, never>, ChannelFolderUpdated> {
    requireAdmin(ctx, c.actor_id);
    const folder = ctx.folders.get(c.folder_id);
    if (!folder) throw badRequest('Invalid channel folder ID');
    // One fact per kind of change, as Zulip sends one event per change.
    const facts: ChannelFolderUpdated[] = [];
    const change = (data: FolderChanges): void => void facts.push({ type: 'ChannelFolderUpdated', org: c.org, folder_id: folder.id, data });
    if (c.name !== undefined && c.name !== folder.name) change({ name: checkFolderName(ctx, c.name) });
    if (c.description !== undefined && c.description !== folder.description) {
      change({ description: checkDescription(c.description), rendered_description: rendered(ctx, c.description) });
    }
    if (c.is_archived !== undefined && c.is_archived !== folder.is_archived) {
      // Zulip's check_channel_folder_in_use: an archived folder holds no live channel.
      const inUse = view.channelIdsOf(c.org).some((id) => {
        const ch = view.channel(c.org, id)!.channel;
        return ch.folder_id === folder.id && !ch.is_archived;
      });
      if (c.is_archived && inUse) throw badRequest('You need to remove all the channels from this folder to archive it.');
      change({ is_archived: c.is_archived });
    }
    return { facts, value: {} };
  },
});

export const reorderChannelFolders = command({
  type: 'REORDER_CHANNEL_FOLDERS',
  actor: 'org',
  decide(ctx: OrgContext, c: ReorderChannelFolders): Decision<Record<string, never>, ChannelFoldersReordered> {
    requireAdmin(ctx, c.actor_id);
    const listed = new Set(c.order);
    for (const id of ctx.folders.keys()) if (!listed.has(id)) throw badRequest('Invalid order mapping.');
    return { facts: [{ type: 'ChannelFoldersReordered', org: c.org, order: c.order }], value: {} };
  },
});

/** Everyone active in the organization hears of folder changes. */
function toEveryone(view: StateView, org: number, seq: number, body: Record<string, unknown>): Delivery[] {
  return [{ org, seq, type: 'channel_folder', user_ids: activeUsersWhere(view, org), event: eventJson('channel_folder', body) }];
}

const channelFolderCreated = orgFact<ChannelFolderCreated>({
  type: 'ChannelFolderCreated',
  apply: (ctx, f) => void ctx.folders.set(f.folder.id, { ...f.folder }),
  notify: (f, seq, view) => toEveryone(view, f.org, seq, { op: 'add', channel_folder: folderView(f.folder) }),
});

const channelFolderUpdated = orgFact<ChannelFolderUpdated>({
  type: 'ChannelFolderUpdated',
  apply(ctx, f) {
    const folder = ctx.folders.get(f.folder_id);
    // Records are replaced, never changed in place.
    if (folder) ctx.folders.set(f.folder_id, { ...folder, ...f.data });
  },
  notify: (f, seq, view) => toEveryone(view, f.org, seq, { op: 'update', channel_folder_id: f.folder_id, data: f.data }),
});

const channelFoldersReordered = orgFact<ChannelFoldersReordered>({
  type: 'ChannelFoldersReordered',
  apply(ctx, f) {
    f.order.forEach((id, position) => {
      const folder = ctx.folders.get(id);
      if (folder) ctx.folders.set(id, { ...folder, order: position });
    });
  },
  notify: (f, seq, view) => toEveryone(view, f.org, seq, { op: 'reorder', order: f.order }),
});

/** A folder as the API shows it. */
function folderView(f: ChannelFolderRecord): Record<string, unknown> {
  return { id: f.id, name: f.name, description: f.description, rendered_description: f.rendered_description, creator_id: f.creator_id, date_created: f.date_created, is_archived: f.is_archived, order: f.order };
}

/** The folders, sorted by `order` (then id), archived ones only when asked. */
export function listChannelFolders(view: StateView, org: number, includeArchived: boolean): Record<string, unknown>[] {
  return [...view.org(org)!.folders.values()]
    .filter((f) => includeArchived || !f.is_archived)
    .sort((a, b) => a.order - b.order || a.id - b.id)
    .map(folderView);
}

export const channelFolders = area({
  name: 'channel folders',
  commands: [createChannelFolder, updateChannelFolder, reorderChannelFolders],
  facts: [channelFolderCreated, channelFolderUpdated, channelFoldersReordered],
  register: [{ types: ['channel_folders', 'channel_folder'], fill: (state, r, view) => void (state.channel_folders = listChannelFolders(view, r.org.id, true)) }],
});
