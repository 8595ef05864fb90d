/**
 * BigBlueButton calls, in Zulip's scheme (`zerver/views/video_calls.py`):
 *
 * 1. `create` answers a link to `/calls/bigbluebutton/join` carrying the meeting's
 *    details, signed so that they cannot be altered (another meeting, another
 *    moderator). Nothing is sent to BigBlueButton yet.
 * 2. `join` checks the signature, calls the BigBlueButton API's `create` (which is
 *    idempotent for a running meeting), and redirects to its `join` URL. Both API
 *    calls carry BigBlueButton's checksum: SHA-256 of the call name, the query
 *    string and the shared secret, hex.
 *
 * Parley's signature is an HMAC-SHA-256 under a key derived from the shared secret;
 * it also binds the link to its organization, which Zulip's does not.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from '../../actors/shared/errors.js';

/** What a join link carries. */
export interface BigBlueButtonMeeting {
  meeting_id: string;
  name: string;
  lock_settings_disable_cam: boolean;
  /** The user who created the call: the one moderator. */
  moderator: number;
  org: number;
}

function signingKey(secret: string): Buffer {
  return createHash('sha256').update('parley bigbluebutton join link\u0000').update(secret).digest();
}

/** The signed form of a meeting: `payload.signature`, both base64url. */
export function signMeeting(meeting: BigBlueButtonMeeting, secret: string): string {
  const payload = Buffer.from(JSON.stringify(meeting)).toString('base64url');
  const signature = createHmac('sha256', signingKey(secret)).update(payload).digest('base64url');
  return `${payload}.${signature}`;
}

/** The meeting a signed value carries; `Invalid signature.` when it was not signed under `secret`. */
export function unsignMeeting(signed: string, secret: string): BigBlueButtonMeeting {
  const [payload, signature, extra] = signed.split('.');
  if (payload === undefined || signature === undefined || extra !== undefined) throw badRequest('Invalid signature.');
  const expected = createHmac('sha256', signingKey(secret)).update(payload).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw badRequest('Invalid signature.');
  const m = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as BigBlueButtonMeeting;
  // Only this server signs, so a valid signature means a well-formed meeting.
  return m;
}

/** Percent-encodes as Python's `urlencode(..., quote_via=quote)` does: all but letters, digits and `_.-~`. */
function quote(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** A query string of `params`, in order. */
export function bbbQuery(params: Array<[string, string]>): string {
  return params.map(([k, v]) => `${quote(k)}=${quote(v)}`).join('&');
}

/** BigBlueButton's checksum of an API call: hex SHA-256 of `call + query + secret`. */
export function bbbChecksum(call: string, query: string, secret: string): string {
  return createHash('sha256').update(call + query + secret).digest('hex');
}

/** The full URL of an API call, checksum last. */
export function bbbApiUrl(baseUrl: string, call: string, params: Array<[string, string]>, secret: string): string {
  const query = bbbQuery(params);
  return `${baseUrl}/api/${call}?${query}&checksum=${bbbChecksum(call, query, secret)}`;
}

/** The `create` call for a meeting (Python's `str(bool)`: `True`/`False`, as Zulip sends it). */
export function createCallUrl(baseUrl: string, secret: string, m: BigBlueButtonMeeting): string {
  return bbbApiUrl(baseUrl, 'create', [['meetingID', m.meeting_id], ['name', m.name], ['lockSettingsDisableCam', m.lock_settings_disable_cam ? 'True' : 'False']], secret);
}

/** The `join` URL for a user, given the meeting's `createTime` from the `create` answer. */
export function joinCallUrl(baseUrl: string, secret: string, m: BigBlueButtonMeeting, user: { user_id: number; full_name: string }, createTime: string): string {
  return bbbApiUrl(baseUrl, 'join', [['meetingID', m.meeting_id], ['role', m.moderator === user.user_id ? 'MODERATOR' : 'VIEWER'], ['fullName', user.full_name], ['createTime', createTime]], secret);
}

/** The text of the first `<tag>` element of a BigBlueButton XML answer (they are flat and simple). */
export function xmlField(xml: string, tag: string): string | null {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m ? m[1].trim() : null;
}

/**
 * Calls BigBlueButton's `create` for the meeting and returns its `createTime`, or the
 * error Zulip gives: unreachable, checksum refused, or another failure.
 */
export async function createMeeting(baseUrl: string, secret: string, m: BigBlueButtonMeeting, timeoutMs = 5000): Promise<string> {
  let xml: string;
  try {
    const res = await fetch(createCallUrl(baseUrl, secret, m), { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    if (!res.ok) throw new Error(`status ${res.status}`);
    xml = await res.text();
  } catch {
    throw badRequest('Error connecting to the BigBlueButton server.');
  }
  if (xmlField(xml, 'messageKey') === 'checksumError') throw badRequest('Error authenticating to the BigBlueButton server.');
  const createTime = xmlField(xml, 'createTime');
  if (xmlField(xml, 'returncode') !== 'SUCCESS' || createTime === null) throw badRequest('BigBlueButton server returned an unexpected error.');
  return createTime;
}
