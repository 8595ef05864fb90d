/**
 * What a client is told when the server cannot store an upload, and what the operator
 * is told. A full disk or a quota (`ENOSPC`, `EDQUOT`) is 507 Insufficient Storage
 * (RFC 4918: the server cannot store what the request needs; the request may succeed
 * once space is freed); any other failed write (`EIO`, `EROFS`) is a 500 that says the
 * file was not stored. Neither blames the client, as a 400 would. Zulip itself answers
 * a failed write with Django's generic 500; the body here keeps Zulip's error shape.
 */
import type { LogFields, Logger } from '../../actors/core/logger.js';
import { ApiError } from '../../actors/shared/errors.js';
import { WriteFailed } from './store.js';

/** Errors that mean the disk (or the owner's quota) is full. */
const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);

/** The system error behind a failed write: a `WriteFailed`, or an fs call's own error (open, fsync, rename). */
function systemErrorOf(err: unknown): NodeJS.ErrnoException | undefined {
  if (err instanceof WriteFailed) return err.cause;
  const e = err as NodeJS.ErrnoException | null;
  return e instanceof Error && typeof e.code === 'string' && typeof e.syscall === 'string' ? e : undefined;
}

/**
 * The error to answer for `err`, thrown while an upload was written: a storage failure
 * is logged (`uploads.write_failed`, with `fields`) and becomes the server's error;
 * anything else is returned as it is.
 */
export function refuseWrite(err: unknown, log: Logger, fields: LogFields): unknown {
  const cause = systemErrorOf(err);
  if (!cause) return err;
  const full = NO_ROOM.has(cause.code!);
  log.error({ event: 'uploads.write_failed', ...fields, code: cause.code, syscall: cause.syscall, err: { message: cause.message } }, `upload not stored: ${cause.code} on ${cause.syscall}`);
  return full
    ? new ApiError('INSUFFICIENT_STORAGE', 'The server has no space left to store this file. Try again later.')
    : new ApiError('INTERNAL_SERVER_ERROR', 'The server could not store this file. Try again later.');
}

/** Runs `write` (a step that writes upload files), turning a storage failure into the server's error. */
export async function storing<T>(log: Logger, fields: LogFields, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw refuseWrite(err, log, fields);
  }
}
