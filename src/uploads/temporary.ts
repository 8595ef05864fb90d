/**
 * Temporary file URLs (Zulip's `generate_unauthed_file_access_url`): a token that
 * names one uploaded file and when it stops working, signed so that only this server
 * makes them. The URL downloads without credentials for 60 seconds, as Zulip's does.
 *
 * The signing key is the process's own, chosen at start: a URL this short-lived need
 * not outlive a restart.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** How long a temporary URL works, in seconds (Zulip's `max_age`). */
export const TEMPORARY_URL_SECONDS = 60;

const KEY = randomBytes(32);

function sign(payload: string): string {
  return createHmac('sha256', KEY).update(payload).digest('base64url');
}

/** The token of a file of an organization: `<org>:<path_id>:<expiry>:<signature>`, hex-encoded as Zulip's is. */
export function temporaryToken(orgId: number, pathId: string, nowMs: number): string {
  const payload = `${orgId}:${pathId}:${Math.floor(nowMs / 1000) + TEMPORARY_URL_SECONDS}`;
  return Buffer.from(`${payload}:${sign(payload)}`).toString('hex').toUpperCase();
}

/** The file a token names, if its signature holds and it has not expired; otherwise null. */
export function readTemporaryToken(token: string, nowMs: number): { org: number; pathId: string } | null {
  if (!/^(?:[0-9A-F]{2})+$/.test(token) || token.length > 4096) return null;
  const text = Buffer.from(token, 'hex').toString('utf8');
  const cut = text.lastIndexOf(':');
  if (cut < 0) return null;
  const payload = text.slice(0, cut);
  const given = Buffer.from(text.slice(cut + 1));
  const expected = Buffer.from(sign(payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  const m = /^(\d+):(.+):(\d+)$/.exec(payload);
  if (!m || Number(m[3]) * 1000 < nowMs) return null;
  return { org: Number(m[1]), pathId: m[2] };
}
