/**
 * Data exports of the organization (administrators): ask for one (public, or full with
 * members' consent), list them, and see who consents; the archive is built off the
 * request and downloads from an unguessable URL without credentials, as Zulip's export
 * tarballs do; and delete a built one (Zulip's `DELETE /export/realm/{export_id}`, a
 * route its OpenAPI description leaves out), which removes its archive from the upload
 * store as soon as no kept snapshot names it.
 */
import { exportConsents, listExports } from '../../../actors/areas/realm_exports.js';
import { uploadSpaceUsed } from '../../../actors/areas/attachments.js';
import { ApiError } from '../../../actors/shared/errors.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import { buildExport } from '../../exports/realm_export.js';
import { R, route, S } from '../../http/route.js';
import { collectUploads } from '../../uploads/collect.js';
import { uploadStore } from '../../uploads/store.js';
import { realmUrl } from './server.js';
import { randomBytes } from 'node:crypto';

/** Every message of the organization: Zulip's estimate of an export's size counts them all. */
function messageCount(runtime: Runtime, orgId: number): number {
  const org = runtime.org(orgId)!;
  let n = org.directMessages.size;
  for (const id of org.channelsByName.values()) n += runtime.channel(orgId, id)?.messages.size ?? 0;
  return n;
}

export const getRealmExports = route({
  method: 'GET',
  path: '/api/v1/export/realm',
  operationId: 'getRealmExports',
  auth: 'user',
  requires: 'admin',
  summary: "The organization's data exports (organization administrators only)",
  params: {},
  handler({ org, user, runtime }) {
    return { json: { exports: listExports(runtime.org(org.id)!) } };
  },
});

export const exportRealm = route({
  method: 'POST',
  path: '/api/v1/export/realm',
  operationId: 'exportRealm',
  auth: 'user',
  requires: 'admin',
  summary: 'Ask for a data export: 1, public data (default), or 2, full with members\' consent (organization administrators only)',
  params: { export_type: { schema: S.int } },
  async handler({ params, org, user, runtime, config, request, log }) {
    const { id } = await runtime.execute({ type: 'REQUEST_EXPORT', org: org.id, actor_id: user.user_id, export_type: params.export_type ?? 1, support: `support@${config.externalHost}`, messages: messageCount(runtime, org.id), upload_bytes: uploadSpaceUsed(runtime.org(org.id)!) });
    // Built after the answer, as Zulip's deferred_work queue does.
    const url = realmUrl(request.headers.host);
    void buildExport(runtime, config.dataDir, org.id, id, url, () => randomBytes(18).toString('base64url')).catch((err: Error) => log.error({ event: 'export.failed', error: err.message }, `data export failed: ${err.message}`));
    return { json: { id } };
  },
});

export const deleteRealmExport = route({
  method: 'DELETE',
  path: '/api/v1/export/realm/{export_id}',
  operationId: 'deleteRealmExport',
  auth: 'user',
  requires: 'admin',
  summary: 'Delete a data export that was built: its archive is removed and its URL stops working (organization administrators only)',
  response: R.empty,
  params: { export_id: { schema: S.nonNegInt, in: 'path', required: true } },
  async handler({ params, org, user, runtime, config }) {
    // Zulip's require_realm_admin comes before the export is looked up.
    await runtime.execute({ type: 'DELETE_EXPORT', org: org.id, actor_id: user.user_id, id: params.export_id });
    // The archive goes now, unless a snapshot still on disk names it (then at the sweep after that snapshot is gone).
    await collectUploads(runtime, config.dataDir);
    return { json: {} };
  },
});

export const getRealmExportConsents = route({
  method: 'GET',
  path: '/api/v1/export/realm/consents',
  operationId: 'getRealmExportConsents',
  auth: 'user',
  requires: 'admin',
  summary: 'Which members consent to administrators exporting their private data (organization administrators only)',
  params: {},
  handler({ org, user, runtime }) {
    return { json: { export_consents: exportConsents(runtime.org(org.id)!) } };
  },
});

export const serveRealmExport = route({
  method: 'GET',
  path: '/user_avatars/exports/{realm_id}/{key}/{filename}',
  operationId: 'getRealmExportArchive',
  auth: 'none',
  summary: "A data export's archive, at the URL its export lists (no credentials, as Zulip serves export tarballs)",
  params: { realm_id: { schema: S.int, in: 'path', required: true }, key: { schema: S.str, in: 'path', required: true }, filename: { schema: S.str, in: 'path', required: true } },
  responses: { 200: { description: 'The export archive (a gzipped tarball)', mediaType: 'application/octet-stream' } },
  handler({ params, org, runtime, config }) {
    const ctx = runtime.org(org.id)!;
    // Another organization's realm id is no export of this one.
    const e = params.realm_id === org.id ? [...ctx.exports.values()].find((x) => x.status === 'succeeded' && x.file?.key === params.key && x.file.name === params.filename) : undefined;
    if (!e?.file) throw new ApiError('NOT_FOUND', 'File not found.');
    return {
      file: { path: uploadStore(config.dataDir).pathOf(org.id, e.file.sha256), start: 0, length: e.file.size },
      headers: [
        ['Content-Type', 'application/gzip'], ['Content-Disposition', `attachment; filename="${e.file.name}"`], ['X-Content-Type-Options', 'nosniff'],
        ['Cache-Control', 'private, no-store'], ['Content-Security-Policy', "default-src 'none'; sandbox"],
      ],
    };
  },
});
