/**
 * Custom emoji: list them; upload one (an image, streamed into the upload store and
 * durable before its fact); deactivate one (its author or an administrator); and serve
 * their images, as Zulip does, under `/user_avatars/` without credentials.
 */
import { open } from 'node:fs/promises';
import { checkCanAddEmoji, emojiImageType, MAX_EMOJI_FILE_SIZE_MIB, realmEmojiView } from '../../../actors/areas/realm_emoji.js';
import { ApiError } from '../../../actors/shared/errors.js';
import { route, S } from '../../http/route.js';
import { receiveUpload } from '../../uploads/multipart.js';
import { refuseWrite } from '../../uploads/write_failure.js';
import { uploadStore } from '../../uploads/store.js';

export const listRealmEmoji = route({
  method: 'GET',
  path: '/api/v1/realm/emoji',
  operationId: 'getCustomEmoji',
  auth: 'user',
  summary: "The organization's custom emoji, deactivated ones included",
  params: {},
  handler({ org, runtime }) {
    return { json: { emoji: realmEmojiView(runtime.org(org.id)!) } };
  },
});

/** The first bytes of a received file, to tell its image type. */
async function headOf(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(16);
    const { bytesRead } = await handle.read(buf, 0, 16, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

export const uploadRealmEmoji = route({
  method: 'POST',
  path: '/api/v1/realm/emoji/{emoji_name}',
  operationId: 'uploadCustomEmoji',
  auth: 'user',
  streamBody: true,
  summary: `Add a custom emoji: one image file (PNG, GIF, JPEG or WebP, at most ${MAX_EMOJI_FILE_SIZE_MIB} MiB), multipart`,
  params: { emoji_name: { schema: S.str, in: 'path', required: true } },
  async handler({ params, request, org, user, runtime, config, log }) {
    // Refused before the file is read when the name or the permission already rules it out.
    checkCanAddEmoji(runtime.org(org.id)!, user.user_id, params.emoji_name);
    const store = uploadStore(config.dataDir);
    const where = { org: org.id, user: user.user_id, route: 'POST /api/v1/realm/emoji/{emoji_name}' };
    const file = await receiveUpload(request, store, MAX_EMOJI_FILE_SIZE_MIB).catch((err: unknown) => {
      throw refuseWrite(err, log, where);
    });
    try {
      const image = emojiImageType(await headOf(file.received.tmpPath));
      await store.commit(org.id, file.received).catch((err: unknown) => {
        throw refuseWrite(err, log, where);
      });
      await runtime.execute({ type: 'ADD_REALM_EMOJI', org: org.id, actor_id: user.user_id, name: params.emoji_name, sha256: file.received.sha256, size: file.received.size, content_type: image.type, ext: image.ext });
    } catch (err) {
      // Not yet in place (or in place but not named by any emoji): the collector or this removes it.
      await store.discard(file.received);
      throw err;
    }
    return { json: {} };
  },
});

export const deactivateRealmEmoji = route({
  method: 'DELETE',
  path: '/api/v1/realm/emoji/{emoji_name}',
  operationId: 'deactivateCustomEmoji',
  auth: 'user',
  summary: 'Deactivate a custom emoji (its author or an administrator); old messages keep it',
  params: { emoji_name: { schema: S.str, in: 'path', required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'DEACTIVATE_REALM_EMOJI', org: org.id, actor_id: user.user_id, name: params.emoji_name });
    return { json: {} };
  },
});

export const serveRealmEmoji = route({
  method: 'GET',
  path: '/user_avatars/{realm_id}/emoji/images/{file_name}',
  operationId: 'getCustomEmojiImage',
  auth: 'none',
  summary: "A custom emoji's image (no credentials, as in Zulip; deactivated emoji too, for old messages)",
  params: { realm_id: { schema: S.int, in: 'path', required: true }, file_name: { schema: S.str, in: 'path', required: true } },
  responses: { 200: { description: 'The image (PNG, GIF, JPEG or WebP)', mediaType: 'application/octet-stream' } },
  handler({ params, org, runtime, config }) {
    const ctx = runtime.org(org.id)!;
    // Another organization's realm id is no image of this one.
    const emoji = params.realm_id === org.id ? [...ctx.realmEmoji.values()].find((e) => e.file_name === params.file_name) : undefined;
    if (!emoji) throw new ApiError('NOT_FOUND', 'File not found.');
    return {
      file: { path: uploadStore(config.dataDir).pathOf(org.id, emoji.sha256), start: 0, length: emoji.size },
      headers: [['Content-Type', emoji.content_type], ['X-Content-Type-Options', 'nosniff'], ['Cache-Control', 'public, max-age=86400'], ['Content-Security-Policy', "default-src 'none'; sandbox"]],
    };
  },
});
