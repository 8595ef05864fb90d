/**
 * Push devices (Zulip's `zerver/lib/push_notifications.py` and `zerver/lib/devices.py`):
 * the records the user actor keeps and the checks Zulip applies to what clients send.
 */
import { badRequest } from '../shared/errors.js';

/** A mobile app's push token, registered by the legacy endpoints (Zulip's `PushDeviceToken`). */
export interface PushToken {
  kind: 'fcm' | 'apns';
  token: string;
  /** The iOS app's bundle id (APNs only). */
  ios_app_id: string | null;
  /** Unix seconds. */
  date_created: number;
}

/** A client device and its E2EE push registration, as `/register`'s `devices` shows it (Zulip's `Device`). */
export interface ClientDevice {
  push_key_id: number | null;
  push_token_id: number | null;
  pending_push_token_id: number | null;
  push_registration_error_code: string | null;
}

/** A device as the user actor keeps it: also its push key (never shown) and token kind. */
export interface DevicePushState extends ClientDevice {
  push_key: string | null;
  push_token_kind: 'fcm' | 'apns' | null;
}

/**
 * A push account registered for E2EE push notifications in the form of Zulip 11.0
 * (feature level 406, `PushDevice`): keyed by the client's `push_account_id`, as
 * `/register`'s `push_devices` shows it (status and error code) plus what stays here.
 */
export interface PushAccount {
  token_kind: 'fcm' | 'apns';
  push_public_key: string;
  status: 'pending' | 'active' | 'failed';
  error_code: string | null;
}

/** Zulip's `validate_token`: non-empty, at most 4096 characters, and hex for APNs. */
export function checkPushToken(token: string, kind: 'fcm' | 'apns'): void {
  if (token === '' || token.length > 4096) throw badRequest('Empty or invalid length token');
  // Python's bytes.fromhex: pairs of hex digits, spaces allowed between pairs.
  if (kind === 'apns' && !/^\s*(?:[0-9a-fA-F]{2}\s*)*$/.test(token)) throw badRequest('Invalid APNS token');
}

/** Zulip's `ApnsAppId`: a bundle id of letters, digits, dots and dashes. */
export function checkAppId(appid: string): void {
  if (!/^[.a-zA-Z0-9-]+$/.test(appid)) throw badRequest('Invalid app ID');
}

/** Zulip's `check_push_key`: base64 of a 1-byte prefix (0x31, libsodium secretbox) and a 32-byte key. */
export function checkPushKey(pushKey: string): void {
  const bytes = /^[A-Za-z0-9+/]*={0,2}$/.test(pushKey) && pushKey.length % 4 === 0 ? Buffer.from(pushKey, 'base64') : null;
  if (!bytes || bytes.length !== 33 || bytes[0] !== 0x31) throw badRequest('Invalid push_key');
}

/** Zulip's token id: base64 of 8 bytes, an unsigned integer (Parley keeps those below 2^53). */
export function tokenIdOf(tokenIdBase64: string): number {
  const bytes = /^[A-Za-z0-9+/]*={0,2}$/.test(tokenIdBase64) && tokenIdBase64.length % 4 === 0 ? Buffer.from(tokenIdBase64, 'base64') : null;
  if (!bytes || bytes.length !== 8) throw badRequest('Invalid token_id');
  const value = bytes.readBigUInt64BE();
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw badRequest('Invalid token_id');
  return Number(value);
}
