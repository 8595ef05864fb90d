/**
 * Resumable uploads at `/api/v1/tus`: the tus 1.0 protocol (core, creation,
 * termination), served by Parley itself where Zulip puts tusd in front of its hooks
 * (`zerver/views/tusd.py`). A finished upload becomes an attachment exactly as
 * `POST /user_uploads` makes one, and its final PATCH answers what Zulip's pre-finish
 * hook makes tusd answer: 200 with `{url, filename}`.
 *
 * Errors are plain tus statuses (404, 409, 410, 412, 413, 415) with an empty body;
 * what the pipeline refuses before the handler (credentials, Host, rate limits) keeps
 * Zulip's JSON shape. Every answer carries `Tus-Resumable` (`CHAT_API.commonHeaders`).
 */
import { Readable } from 'node:stream';
import { ApiError } from '../../../actors/shared/errors.js';
import { route, S, type ChatContext, type Reply } from '../../http/route.js';
import { PastLength, parseMetadata, tusStore, type TusUpload } from '../../uploads/tus.js';
import { uploadStore, WriteFailed } from '../../uploads/store.js';
import { refuseWrite, storing } from '../../uploads/write_failure.js';

/** The one protocol version served. */
export const TUS_VERSION = '1.0.0';

/** An answer that is all status and headers. */
function plain(status: number, headers: Array<[string, string]> = []): Reply {
  return { status, empty: true, headers };
}

/** 412 for a request without the supported `Tus-Resumable`, as the protocol requires; undefined when it has it. */
function unsupportedVersion(ctx: ChatContext): Reply | undefined {
  return ctx.request.headers['tus-resumable'] === TUS_VERSION ? undefined : plain(412, [['Tus-Version', TUS_VERSION]]);
}

/** A non-negative integer header of plain digits, or undefined. */
function count(value: string | undefined): number | undefined {
  return value !== undefined && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
}

const UPLOAD_ID = { upload_id: { schema: S.str, in: 'path' as const, required: true as const } };

/** The caller's upload of this path, or the plain answer for an unknown (404) or terminated (410) one. */
function access(ctx: ChatContext<{ upload_id: string }>): TusUpload | Reply {
  const u = tusStore(uploadStore(ctx.config.dataDir).root).get(ctx.org.id, ctx.user.user_id, ctx.params.upload_id);
  if (!u) return plain(404);
  if (u.terminated) return plain(410);
  return u;
}

function isUpload(x: TusUpload | Reply): x is TusUpload {
  return x !== null && typeof x === 'object' && 'owner_id' in x;
}

/** Where a tus request was, for the `uploads.write_failed` log event. */
function where(ctx: ChatContext, route: string): { org: number; user: number; route: string } {
  return { org: ctx.org.id, user: ctx.user.user_id, route };
}

/** Moves a finished upload into the store and records its attachment, as `POST /user_uploads` does. */
async function finish(ctx: ChatContext, u: TusUpload, route: string): Promise<Reply> {
  const store = uploadStore(ctx.config.dataDir);
  const tus = tusStore(store.root);
  const sha256 = await tus.digest(ctx.org.id, u.id);
  await storing(ctx.log, where(ctx, route), () => store.commit(ctx.org.id, { tmpPath: tus.partPath(ctx.org.id, u.id), size: u.length, sha256 }));
  const name = u.metadata.filename ?? '';
  const { attachment } = await ctx.runtime.execute({ type: 'ADD_ATTACHMENT', org: ctx.org.id, owner_id: ctx.user.user_id, name: ['', '.', '..'].includes(name) ? 'uploaded-file' : name, size: u.length, content_type: (u.metadata.filetype || 'application/octet-stream').toLowerCase().slice(0, 255), sha256 });
  const done = { url: `/user_uploads/${attachment.path_id}`, filename: attachment.name };
  await storing(ctx.log, where(ctx, route), () => tus.save(ctx.org.id, { ...u, done }));
  return completed(u.length, done);
}

/** What the request that finishes an upload answers: the uploaded file, as `POST /user_uploads` names it. */
const DONE = { type: 'object', required: ['url', 'filename'], properties: { url: { type: 'string' }, filename: { type: 'string' } }, additionalProperties: false };

function completed(length: number, done: NonNullable<TusUpload['done']>): Reply {
  return { raw: JSON.stringify(done), headers: [['Upload-Offset', String(length)]] };
}

export const tusOptions = route({
  method: 'OPTIONS',
  path: '/api/v1/tus',
  operationId: 'tusOptions',
  auth: 'none',
  summary: 'tus 1.0 discovery: versions, extensions (creation, termination) and the largest upload',
  params: {},
  responses: { 204: { description: 'Tus-Version, Tus-Extension and Tus-Max-Size', body: false } },
  handler({ config }) {
    return plain(204, [['Tus-Version', TUS_VERSION], ['Tus-Extension', 'creation,termination'], ['Tus-Max-Size', String(config.maxFileUploadSizeMib * 1024 * 1024)]]);
  },
});

export const tusCreate = route({
  method: 'POST',
  path: '/api/v1/tus',
  operationId: 'tusCreate',
  auth: 'user',
  summary: 'tus creation: start a resumable upload of Upload-Length bytes (Upload-Metadata filename, filetype); Location names it',
  params: {},
  responses: { 201: { description: 'Created; Location names the upload. An empty upload (Upload-Length 0) is finished at once, with the body a finishing PATCH has', schema: DONE } },
  async handler(ctx) {
    const refused = unsupportedVersion(ctx);
    if (refused) return refused;
    const { request, config, org, user } = ctx;
    // Creation with upload is not offered: the bytes come by PATCH.
    if (request.body.length > 0) return plain(400);
    if (request.headers['upload-defer-length'] !== undefined) return plain(411);
    const length = count(request.headers['upload-length']);
    if (length === undefined) return plain(400);
    if (length > config.maxFileUploadSizeMib * 1024 * 1024) return plain(413);
    const rawMetadata = request.headers['upload-metadata'] ?? '';
    const metadata = parseMetadata(rawMetadata);
    if (!metadata || rawMetadata.length > 4096) return plain(400);
    const tus = tusStore(uploadStore(config.dataDir).root);
    const u = await storing(ctx.log, where(ctx, 'POST /api/v1/tus'), () => tus.create(org.id, { owner_id: user.user_id, length, rawMetadata, metadata: { ...metadata } }));
    const location: [string, string] = ['Location', `/api/v1/tus/${u.id}`];
    if (length === 0) {
      const reply = (await finish(ctx, u, 'POST /api/v1/tus')) as { raw: string; headers: Array<[string, string]> };
      return { ...reply, status: 201, headers: [location, ...reply.headers] };
    }
    return plain(201, [location]);
  },
});

export const tusHead = route({
  method: 'HEAD',
  path: '/api/v1/tus/{upload_id}',
  operationId: 'tusOffset',
  auth: 'user',
  summary: 'tus core: how many bytes of an upload the server holds (Upload-Offset), to resume from',
  params: UPLOAD_ID,
  responses: { 200: { description: 'Upload-Offset and Upload-Length', body: false } },
  handler(ctx) {
    const refused = unsupportedVersion(ctx);
    if (refused) return refused;
    const u = access(ctx);
    if (!isUpload(u)) return u;
    const headers: Array<[string, string]> = [
      ['Upload-Offset', String(tusStore(uploadStore(ctx.config.dataDir).root).offset(ctx.org.id, u))],
      ['Upload-Length', String(u.length)],
      ['Cache-Control', 'no-store'],
    ];
    if (u.rawMetadata !== '') headers.push(['Upload-Metadata', u.rawMetadata]);
    return plain(200, headers);
  },
});

export const tusPatch = route({
  method: 'PATCH',
  path: '/api/v1/tus/{upload_id}',
  operationId: 'tusAppend',
  auth: 'user',
  streamBody: true,
  summary: 'tus core: append application/offset+octet-stream bytes at Upload-Offset; the last ones answer {url, filename}',
  params: UPLOAD_ID,
  responses: {
    200: { description: 'The bytes finished the upload: the uploaded file', schema: DONE },
    204: { description: 'Appended; Upload-Offset says how far', body: false },
  },
  async handler(ctx) {
    const refused = unsupportedVersion(ctx);
    if (refused) return refused;
    const { request, org } = ctx;
    if ((request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() !== 'application/offset+octet-stream') return plain(415);
    const offset = count(request.headers['upload-offset']);
    if (offset === undefined) return plain(400);
    const u = access(ctx);
    if (!isUpload(u)) return u;
    const tus = tusStore(uploadStore(ctx.config.dataDir).root);
    if (!tus.lock(org.id, u.id)) return plain(409);
    try {
      const held = tus.offset(org.id, u);
      if (offset !== held) return plain(409, [['Upload-Offset', String(held)]]);
      const declared = count(request.headers['content-length']);
      if (declared !== undefined && offset + declared > u.length) return plain(413);
      if (u.done) return completed(u.length, u.done);
      const route = 'PATCH /api/v1/tus/{upload_id}';
      const failure = await storing(ctx.log, where(ctx, route), () => tus.append(org.id, u.id, request.bodyStream ?? Readable.from([request.body]), u.length - offset));
      // Terminated while the bytes arrived: nothing to finish.
      const now = tus.get(org.id, ctx.user.user_id, u.id);
      if (!now || now.terminated) return plain(410);
      const reached = tus.offset(org.id, u);
      if (failure instanceof PastLength) return plain(413, [['Upload-Offset', String(reached)]]);
      // What landed before a failed write stays: HEAD tells the client where to resume.
      if (failure instanceof WriteFailed) throw refuseWrite(failure, ctx.log, { ...where(ctx, route), offset: reached });
      if (failure) throw new ApiError('BAD_REQUEST', 'The upload was interrupted');
      if (reached === u.length) return await finish(ctx, u, route);
      return plain(204, [['Upload-Offset', String(reached)]]);
    } finally {
      tus.unlock(org.id, u.id);
    }
  },
});

export const tusDelete = route({
  method: 'DELETE',
  path: '/api/v1/tus/{upload_id}',
  operationId: 'tusTerminate',
  auth: 'user',
  summary: 'tus termination: drop an upload and its bytes (a finished one keeps its attachment)',
  params: UPLOAD_ID,
  responses: { 204: { description: 'Terminated', body: false } },
  async handler(ctx) {
    const refused = unsupportedVersion(ctx);
    if (refused) return refused;
    const u = access(ctx);
    if (!isUpload(u)) return u;
    await storing(ctx.log, where(ctx, 'DELETE /api/v1/tus/{upload_id}'), () => tusStore(uploadStore(ctx.config.dataDir).root).terminate(ctx.org.id, u));
    return plain(204);
  },
});
