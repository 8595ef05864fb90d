/**
 * Reads the one file of a multipart upload as it arrives, with busboy, into the
 * upload store's temp directory. Zulip's checks: exactly one file, no larger than
 * `max_file_upload_size_mib`. Whatever goes wrong, no temp file is left behind; a
 * failed write (a full disk) is passed on as `WriteFailed`, not blamed on the body.
 */
import busboy from 'busboy';
import { Readable } from 'node:stream';
import { ApiError, badRequest } from '../../actors/shared/errors.js';
import { busboyText, INVALID_UTF8 } from '../http/body.js';
import type { IncomingRequest } from '../http/types.js';
import { TooLarge, WriteFailed, type Received, type UploadStore } from './store.js';

/** A received upload: the file in the temp directory, its name and declared type. */
export interface Upload {
  received: Received;
  filename: string;
  contentType: string;
}

export function receiveUpload(req: IncomingRequest, store: UploadStore, maxMib: number): Promise<Upload> {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (!type.startsWith('multipart/form-data')) return Promise.reject(badRequest('You must specify a file to upload'));
  let parser: busboy.Busboy;
  try {
    // Part header parameters (the filename) are UTF-8, as Django reads them; busboy's default is latin1.
    parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { fields: 100, fieldSize: 64 * 1024, parts: 110, headerPairs: 100 } });
  } catch {
    return Promise.reject(badRequest('Malformed multipart body'));
  }
  const source = req.bodyStream ?? Readable.from([req.body]);
  return new Promise<Upload>((resolve, reject) => {
    let first: Promise<Upload> | undefined;
    let current: Readable | undefined;
    let files = 0;
    let settled = false;
    const fail = (err: unknown): void => {
      if (settled) return;
      settled = true;
      source.unpipe(parser);
      current?.destroy(err instanceof Error ? err : new Error(String(err)));
      // The answer waits until the file being received (or already received) is gone.
      const gone = first ? first.then((u) => store.discard(u.received), () => {}) : Promise.resolve();
      void gone.then(() => reject(err instanceof TooLarge ? badRequest(`Uploaded file is larger than the allowed limit of ${maxMib} MiB`) : err instanceof ApiError || err instanceof WriteFailed ? err : badRequest('Malformed multipart body')));
    };
    parser.on('file', (_field, file, info) => {
      files++;
      if (files > 1) {
        file.resume();
        return;
      }
      let filename: string;
      try {
        filename = busboyText(info.filename ?? 'uploaded-file');
      } catch {
        file.resume();
        return fail(badRequest(INVALID_UTF8));
      }
      current = file;
      first = store.receive(file, maxMib * 1024 * 1024).then((received) => ({
        received,
        filename,
        contentType: (info.mimeType || 'application/octet-stream').toLowerCase(),
      }));
      first.catch(fail);
    });
    parser.on('error', fail);
    parser.on('close', () => {
      if (settled) return;
      if (!first) return fail(badRequest('You must specify a file to upload'));
      if (files > 1) return fail(badRequest('You may only upload one file at a time'));
      first.then((u) => {
        if (settled) return void store.discard(u.received);
        settled = true;
        resolve(u);
      }, fail);
    });
    source.on('error', fail);
    source.pipe(parser);
  });
}
