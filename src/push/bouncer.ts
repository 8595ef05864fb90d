/**
 * The push notification relay ("bouncer", Zulip's `send_to_push_bouncer`): the one
 * place Parley talks to it, and the errors clients get, as Zulip maps them:
 *
 * - no relay configured, or the relay refusing this server: `ADMIN_ACTION_REQUIRED`;
 * - the relay unreachable or too slow: `FAILED_TO_CONNECT_BOUNCER`;
 * - the relay failing (5xx): `INTERNAL_SERVER_ERROR_ON_BOUNCER`;
 * - the relay not knowing a device: `INVALID_REMOTE_PUSH_DEVICE_TOKEN`.
 */
import { ApiError } from '../../actors/shared/errors.js';

const ADMIN_ACTION = 'Push notification configuration issue on server, contact the server administrator or retry later.';

/** Codes the relay may answer that are the client's to see as they are. */
const PASSED_ON = new Set(['INVALID_REMOTE_PUSH_DEVICE_TOKEN']);

/** Whether a relay is configured. */
export function usesBouncer(bouncerUrl: string): boolean {
  return bouncerUrl !== '';
}

/** POSTs `body` as JSON to `<relay>/api/v1/<endpoint>` and returns its JSON answer, or throws the client's error. */
export async function sendToBouncer(bouncerUrl: string, endpoint: string, body: unknown, timeoutMs = 5000): Promise<Record<string, unknown>> {
  if (!usesBouncer(bouncerUrl)) throw new ApiError('ADMIN_ACTION_REQUIRED', ADMIN_ACTION);
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${bouncerUrl}/api/v1/${endpoint}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    text = await res.text();
  } catch {
    throw new ApiError('FAILED_TO_CONNECT_BOUNCER', 'Network error while connecting to the push notification service.');
  }
  if (res.status >= 500) throw new ApiError('INTERNAL_SERVER_ERROR_ON_BOUNCER', 'Internal server error on the push notification service, retry later.');
  let json: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') json = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: judged by its status alone.
  }
  if (res.status >= 400 || json.result !== 'success') {
    const code = typeof json.code === 'string' ? json.code : '';
    if (PASSED_ON.has(code)) throw new ApiError(code as 'INVALID_REMOTE_PUSH_DEVICE_TOKEN', typeof json.msg === 'string' ? json.msg : 'Device not recognized by the push bouncer');
    throw new ApiError('ADMIN_ACTION_REQUIRED', ADMIN_ACTION);
  }
  return json;
}
