/**
 * Organization data exports (Zulip's `zerver/views/realm_export.py` and
 * `zerver/actions/realm_export.py`): administrators ask for a public export or a full
 * one with members' consent; the server builds the archive off the request
 * (`src/exports/`) and records how it ended. `realm_export` events, with every export
 * of the organization, go to its human administrators when one is asked for and when
 * it is done; the one who asked also gets a direct message from the notification bot
 * when it succeeds, as in Zulip. An administrator deletes a built export
 * (`DELETE /export/realm/{id}`, Zulip's `delete_realm_export`): it is marked deleted, its
 * `file` dropped so that the upload store's sweep removes the archive, and the list sent
 * again.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type UserRecord } from '../shared/types.js';
import { notificationBotDirect, type MessageSent } from './messages.js';
import { orgState, recordsById } from '../core/state_slices.js';

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

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Data exports of the organization, by id (a snapshot's list names the archives it covers). */
    exports: Map<number, RealmExportRecord>;
    /** The highest export id ever used. */
    lastExportId: number;
  }
}

orgState({ exports: recordsById(), lastExportId: { empty: () => 0 } });

/** Zulip's `RealmExport.EXPORT_PUBLIC` and `EXPORT_FULL_WITH_CONSENT`. */
export const EXPORT_PUBLIC = 1;
export const EXPORT_FULL_WITH_CONSENT = 2;
/** Exports an organization may ask for in any 7 days (Zulip's `EXPORT_LIMIT`). */
export const EXPORT_LIMIT = 5;
/** Beyond these, Zulip asks for a manual export (`MAX_MESSAGE_HISTORY`, `MAX_UPLOAD_QUOTA`). */
export const MAX_MESSAGE_HISTORY = 250_000;
export const MAX_UPLOAD_QUOTA = 20 * 1024 * 1024 * 1024;
/** Zulip's `email_address_visibility` value that hides an address even from administrators. */
const EMAIL_VISIBLE_TO_NOBODY = 4;

/** An export was asked for. */
export interface ExportRequested { type: 'ExportRequested'; org: number; export: RealmExportRecord }
/** An export ended: its archive stored (`file`), or failed (no `file`). */
export interface ExportFinished { type: 'ExportFinished'; org: number; id: number; time: number; file?: RealmExportRecord['file'] }

/**
 * Ask for an export. `support`: the address Zulip's errors name (its `FromAddress.SUPPORT`);
 * `messages` and `upload_bytes`: the organization's size, which the caller counts.
 */
export interface RequestExport { type: 'REQUEST_EXPORT'; org: number; actor_id: number; export_type: number; support: string; messages: number; upload_bytes: number }
/** A built export was deleted: its archive is no longer named, and it is listed with `deleted_timestamp`. */
export interface ExportDeleted { type: 'ExportDeleted'; org: number; id: number; time: number }
/** Delete a built export (administrators). */
export interface DeleteExport { type: 'DELETE_EXPORT'; org: number; actor_id: number; id: number }
/** Record how an export ended (the server's own command, once the archive is built or has failed). */
export interface FinishExport { type: 'FINISH_EXPORT'; org: number; id: number; file?: RealmExportRecord['file'] }

/** Zulip's `realm.get_human_admin_users()`: active, not bots, administrators or owners. */
export function humanAdmins(view: StateView, org: number): number[] {
  return activeUsersWhere(view, org, (u) => !u.is_bot && u.role <= Role.ADMIN);
}

/**
 * Zulip's `realm_export_consent` event, to the human administrators: sent when a user changes
 * `allow_private_data_export`, and when a human user is created or reactivated (their
 * `realm_user` events carry no consent), so that `GET /export/realm/consents` plus the events
 * stays whole.
 */
export function exportConsentDelivery(view: StateView, org: number, seq: number, userId: number, consented: boolean): Delivery {
  return { org, seq, type: 'realm_export_consent', user_ids: humanAdmins(view, org), event: eventJson('realm_export_consent', { user_id: userId, consented }) };
}

/** Who has consented to administrators exporting their private data: active humans whose setting says so. */
export function consentingUsers(ctx: OrgContext): UserRecord[] {
  return [...ctx.users.values()].filter((u) => u.is_active && !u.is_bot && u.settings?.allow_private_data_export === true);
}

/** `GET /export/realm/consents`: every active human, and whether they consent (Zulip's `get_users_export_consents`). */
export function exportConsents(ctx: OrgContext): Array<{ user_id: number; consented: boolean }> {
  return [...ctx.users.values()].filter((u) => u.is_active && !u.is_bot).map((u) => ({ user_id: u.user_id, consented: u.settings?.allow_private_data_export === true }));
}

/** An export's progress: its status and, once built and until deleted, where its archive is. */
export interface ExportProgress {
  id: number;
  status: RealmExportRecord['status'];
  /** The archive's hash, its name in the upload store. */
  sha256: string | null;
  url: string | null;
  deleted: number | null;
}

/** The organization's exports by id, with the stored archive that `GET /export/realm` does not name (none for an unknown organization). */
export function exportProgress(view: StateView, org: number): ExportProgress[] {
  const ctx = view.org(org);
  if (!ctx) return [];
  return [...ctx.exports.values()].sort((a, b) => a.id - b.id).map((e) => ({ id: e.id, status: e.status, sha256: e.file?.sha256 ?? null, url: e.file?.url ?? null, deleted: e.deleted ?? null }));
}

/** The exports as Zulip's `get_realm_exports_serialized` lists them, by id. */
export function listExports(ctx: OrgContext): Array<Record<string, unknown>> {
  return [...ctx.exports.values()].sort((a, b) => a.id - b.id).map((e) => ({
    id: e.id,
    export_time: e.requested,
    acting_user_id: e.acting_user_id,
    export_url: e.status === 'succeeded' && e.file ? e.file.url : null,
    deleted_timestamp: e.deleted ?? null,
    failed_timestamp: e.failed ?? null,
    pending: e.status === 'requested',
    export_type: e.type,
  }));
}

export const requestExport = command({
  type: 'REQUEST_EXPORT',
  actor: 'org',
  decide(ctx: OrgContext, c: RequestExport, env: DecideEnv): Decision<{ id: number }, ExportRequested> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    if (c.export_type !== EXPORT_PUBLIC && c.export_type !== EXPORT_FULL_WITH_CONSENT) throw badRequest('Invalid export_type');
    const now = env.now();
    const recent = [...ctx.exports.values()].filter((e) => e.requested >= now - 7 * 86_400).length;
    if (recent >= EXPORT_LIMIT) throw badRequest('Exceeded rate limit.');
    if (c.messages > MAX_MESSAGE_HISTORY || c.upload_bytes > MAX_UPLOAD_QUOTA) throw badRequest(`Please request a manual export from ${c.support}.`);
    const owners = [...ctx.users.values()].filter((u) => u.is_active && !u.is_bot && u.role === Role.OWNER);
    if (c.export_type === EXPORT_FULL_WITH_CONSENT && !owners.some((u) => u.settings?.allow_private_data_export === true)) {
      throw badRequest(`Make sure at least one Organization Owner is consenting to the export or contact ${c.support} for help.`);
    }
    if (c.export_type === EXPORT_PUBLIC && !owners.some((u) => ((u.settings?.email_address_visibility as number | undefined) ?? 1) !== EMAIL_VISIBLE_TO_NOBODY)) {
      throw badRequest(`Make sure at least one Organization Owner allows other Administrators to see their email address or contact ${c.support} for help`);
    }
    const id = ctx.lastExportId + 1;
    const record: RealmExportRecord = { id, acting_user_id: actor.user_id, type: c.export_type, requested: now, status: 'requested' };
    return { facts: [{ type: 'ExportRequested', org: ctx.org.id, export: record }], value: { id } };
  },
});

export const finishExport = command({
  type: 'FINISH_EXPORT',
  actor: 'org',
  decide(ctx: OrgContext, c: FinishExport, env: DecideEnv): Decision<Record<string, never>, ExportFinished | MessageSent> {
    const e = ctx.exports.get(c.id);
    if (!e || e.status !== 'requested') return { facts: [], value: {} };
    const facts: Array<ExportFinished | MessageSent> = [{ type: 'ExportFinished', org: ctx.org.id, id: c.id, time: env.now(), ...(c.file ? { file: c.file } : {}) }];
    const actor = ctx.users.get(e.acting_user_id);
    if (c.file && actor?.is_active) {
      facts.push(notificationBotDirect(env, ctx, actor, 'Your data export is complete. [View and download exports](/#organization/data-exports-admin).'));
    }
    return { facts, value: {} };
  },
});

export const deleteExport = command({
  type: 'DELETE_EXPORT',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteExport, env: DecideEnv): Decision<Record<string, never>, ExportDeleted> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    const e = ctx.exports.get(c.id);
    // Zulip's delete_realm_export, in its order.
    if (!e) throw badRequest('Invalid data export ID');
    if (e.status === 'deleted') throw badRequest('Export already deleted');
    if (e.status === 'failed') throw badRequest('Export failed, nothing to delete');
    if (e.status === 'requested') throw badRequest('Export still in progress');
    return { facts: [{ type: 'ExportDeleted', org: ctx.org.id, id: c.id, time: env.now() }], value: {} };
  },
});

const exportsEvent = (f: { org: number }, seq: number, view: StateView) => [{
  org: f.org, seq, type: 'realm_export', user_ids: humanAdmins(view, f.org), event: eventJson('realm_export', { exports: listExports(view.org(f.org)!) }),
}];

const exportRequested = orgFact<ExportRequested>({
  type: 'ExportRequested',
  apply(ctx, f) {
    ctx.exports.set(f.export.id, { ...f.export });
    if (f.export.id > ctx.lastExportId) ctx.lastExportId = f.export.id;
  },
  notify: exportsEvent,
});

const exportFinished = orgFact<ExportFinished>({
  type: 'ExportFinished',
  apply(ctx, f) {
    const e = ctx.exports.get(f.id);
    if (!e) return;
    // Replaced, not changed: a snapshot being written keeps the record it holds.
    ctx.exports.set(f.id, f.file ? { ...e, status: 'succeeded', succeeded: f.time, file: f.file } : { ...e, status: 'failed', failed: f.time });
  },
  notify: exportsEvent,
});

const exportDeleted = orgFact<ExportDeleted>({
  type: 'ExportDeleted',
  apply(ctx, f) {
    const e = ctx.exports.get(f.id);
    if (!e) return;
    // Replaced, not changed (see above); without its file, which nothing in the live state names any more.
    const { file: _file, ...rest } = e;
    ctx.exports.set(f.id, { ...rest, status: 'deleted', deleted: f.time });
  },
  notify: exportsEvent,
});

export const realmExports = area({
  name: 'realm_exports',
  commands: [requestExport, finishExport, deleteExport],
  facts: [exportRequested, exportFinished, exportDeleted],
});
