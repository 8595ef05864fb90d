/**
 * Uploads (Zulip's `zerver/views/upload.py` and `zerver/views/attachments.py`):
 * `POST /user_uploads` streams one multipart file to the upload store as it arrives;
 * `GET /user_uploads/{realm_id}/...` serves a file to those who may read it, with
 * ranges and safe headers; `GET /attachments` and `DELETE /attachments/{id}` manage
 * the caller's own.
 */
import { attachmentsOf, canReadAttachment, uploadSpaceUsed } from '../../../actors/areas/attachments.js';
import { ApiError, badRequest } from '../../../actors/shared/errors.js';
import type { AttachmentRecord } from '../../../actors/areas/attachments.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import type { UserRecord } from '../../../actors/shared/types.js';
import { route, S, type Reply } from '../../http/route.js';
import { collectUploads } from '../../uploads/collect.js';
import { receiveUpload } from '../../uploads/multipart.js';
import { fileHeaders, parseRange } from '../../uploads/serve.js';
import { uploadStore } from '../../uploads/store.js';
import { storing } from '../../uploads/write_failure.js';
import { readTemporaryToken, temporaryToken } from '../../uploads/temporary.js';

export const uploadFile = route({
  method: 'POST',
  path: '/api/v1/user_uploads',
  operationId: 'uploadFile',
  auth: 'user',
  streamBody: true,
  summary: 'Upload one file (multipart), streamed to disk; it is durable before the reply',
  params: {},
  async handler({ request, org, user, runtime, config, log }) {
    const store = uploadStore(config.dataDir);
    const file = await storing(log, { org: org.id, user: user.user_id, route: 'POST /api/v1/user_uploads' }, async () => {
      const got = await receiveUpload(request, store, config.maxFileUploadSizeMib);
      try {
        await store.commit(org.id, got.received);
      } catch (err) {
        await store.discard(got.received);
        throw err;
      }
      return got;
    });
    const { attachment } = await runtime.execute({ type: 'ADD_ATTACHMENT', org: org.id, owner_id: user.user_id, name: file.filename, size: file.received.size, content_type: file.contentType, sha256: file.received.sha256 });
    const url = `/user_uploads/${attachment.path_id}`;
    return { json: { uri: url, url, filename: attachment.name } };
  },
});

/** Path parameters of a file's URL: `/user_uploads/{realm_id}/{a}/{b}/{filename}`. */
const FILE_PATH = {
  realm_id: { schema: S.int, in: 'path' as const, required: true as const },
  dir: { schema: S.str, in: 'path' as const, required: true as const },
  name: { schema: S.str, in: 'path' as const, required: true as const },
  filename: { schema: S.str, in: 'path' as const, required: true as const },
};

export const serveFile = route({
  method: 'GET',
  path: '/user_uploads/{realm_id}/{dir}/{name}/{filename}',
  operationId: 'getUploadedFile',
  auth: 'user',
  summary: 'An uploaded file, to its uploader or anyone who can read a message linking it (Range supported)',
  params: FILE_PATH,
  responses: { 200: { description: 'The file (its own content type; 206 for a Range)', mediaType: 'application/octet-stream' }, 206: { description: 'The part of the file a Range asked for', mediaType: 'application/octet-stream' } },
  handler({ params, org, user, runtime, config, request }) {
    const a = readableAttachment(runtime, org.id, user, params);
    return fileReply(config.dataDir, org.id, a, request.headers.range);
  },
});

/**
 * The attachment a file's URL names, if the user may read it: another organization's
 * realm id is no file of this one (never reach across), answered as one that does not exist.
 */
function readableAttachment(runtime: Runtime, orgId: number, user: UserRecord, path: { realm_id: number; dir: string; name: string; filename: string }): AttachmentRecord {
  const ctx = runtime.org(orgId)!;
  const id = path.realm_id === orgId ? ctx.attachmentByPath.get(`${path.realm_id}/${path.dir}/${path.name}/${path.filename}`) : undefined;
  const a = id === undefined ? undefined : ctx.attachments.get(id);
  if (!a) throw new ApiError('NOT_FOUND', 'File not found.');
  if (!canReadAttachment(runtime, ctx, user, a)) throw new ApiError('ACCESS_DENIED', 'You are not authorized to view this file.');
  return a;
}

/** A stored file as a response: whole, one range of it (206), or 416 for a range past its end. */
function fileReply(dataDir: string, orgId: number, a: AttachmentRecord, rangeHeader: string | undefined): Reply {
  const path = uploadStore(dataDir).pathOf(orgId, a.sha256);
  const range = parseRange(rangeHeader, a.size);
  if (range === 'unsatisfiable') {
    return { status: 416, empty: true, headers: [['Content-Range', `bytes */${a.size}`], ...fileHeaders(a)] };
  }
  if (range) {
    return { status: 206, file: { path, start: range.start, length: range.end - range.start + 1 }, headers: [['Content-Range', `bytes ${range.start}-${range.end}/${a.size}`], ...fileHeaders(a)] };
  }
  return { file: { path, start: 0, length: a.size }, headers: fileHeaders(a) };
}

export const getFileTemporaryUrl = route({
  method: 'GET',
  path: '/api/v1/user_uploads/{realm_id_str}/{dir}/{name}/{filename}',
  operationId: 'getFileTemporaryUrl',
  auth: 'user',
  summary: 'A URL that downloads an uploaded file without credentials for 60 seconds (to those who may read the file)',
  params: {
    realm_id_str: { schema: S.int, in: 'path', required: true },
    dir: { schema: S.str, in: 'path', required: true },
    name: { schema: S.str, in: 'path', required: true },
    filename: { schema: S.str, in: 'path', required: true },
  },
  handler({ params, org, user, runtime }) {
    const a = readableAttachment(runtime, org.id, user, { realm_id: params.realm_id_str, dir: params.dir, name: params.name, filename: params.filename });
    const token = temporaryToken(org.id, a.path_id, runtime.nowMs());
    return { json: { url: `/user_uploads/temporary/${token}/${encodeURIComponent(params.filename)}` } };
  },
});

export const serveTemporaryFile = route({
  method: 'GET',
  path: '/user_uploads/temporary/{token}/{filename}',
  operationId: 'getTemporaryFile',
  auth: 'none',
  summary: 'An uploaded file, by a temporary URL from GET /api/v1/user_uploads/...: no credentials, 60 seconds (Range supported)',
  params: { token: { schema: S.str, in: 'path', required: true }, filename: { schema: S.str, in: 'path', required: true } },
  responses: { 200: { description: 'The file (its own content type; 206 for a Range)', mediaType: 'application/octet-stream' }, 206: { description: 'The part of the file a Range asked for', mediaType: 'application/octet-stream' } },
  handler({ params, org, runtime, config, request }) {
    // A token of another organization is no token here.
    const named = readTemporaryToken(params.token, runtime.nowMs());
    if (!named || named.org !== org.id) throw badRequest('Invalid token');
    if (named.pathId.split('/').pop() !== params.filename) throw badRequest('Invalid filename');
    const ctx = runtime.org(org.id)!;
    const id = ctx.attachmentByPath.get(named.pathId);
    const a = id === undefined ? undefined : ctx.attachments.get(id);
    // Deleted since the URL was made.
    if (!a) throw new ApiError('NOT_FOUND', 'File not found.');
    return fileReply(config.dataDir, org.id, a, request.headers.range);
  },
});

export const getAttachments = route({
  method: 'GET',
  path: '/api/v1/attachments',
  operationId: 'getAttachments',
  auth: 'user',
  summary: "The caller's uploaded files, the messages linking each, and the organization's upload space used",
  params: {},
  handler({ org, user, runtime }) {
    const ctx = runtime.org(org.id)!;
    return { json: { attachments: attachmentsOf(ctx, user.user_id), upload_space_used: uploadSpaceUsed(ctx) } };
  },
});

export const deleteAttachment = route({
  method: 'DELETE',
  path: '/api/v1/attachments/{attachment_id}',
  operationId: 'removeAttachment',
  auth: 'user',
  summary: 'Delete one of your uploaded files',
  params: { attachment_id: { schema: S.int, in: 'path', required: true } },
  async handler({ params, org, user, runtime, config }) {
    if (!runtime.org(org.id)!.attachments.has(params.attachment_id)) throw badRequest('Invalid attachment');
    await runtime.execute({ type: 'DELETE_ATTACHMENT', org: org.id, actor_id: user.user_id, attachment_id: params.attachment_id });
    await collectUploads(runtime, config.dataDir);
    return { json: {} };
  },
});
