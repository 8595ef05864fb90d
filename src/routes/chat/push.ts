/**
 * Push notifications (Zulip's `zerver/views/push_notifications.py`, `views/devices.py`):
 * the mobile apps' push tokens, client devices and their E2EE registration, and test
 * notifications through the push relay (`--push-bouncer-url`). Registrations are the
 * user actor's; only the relay calls happen here.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { ApiError, badRequest, missingArgument } from '../../../actors/shared/errors.js';
import { checkAppId, checkPushToken } from '../../../actors/rules/push_devices.js';
import type { Logger } from '../../../actors/core/logger.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import type { UserRecord } from '../../../actors/shared/types.js';
import { sendToBouncer, usesBouncer } from '../../push/bouncer.js';
import { Enum, R, route, S } from '../../http/route.js';

/** Zulip's `human_users_only`. */
function humansOnly(user: UserRecord): void {
  if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
}

const NO_DEVICE = (): ApiError => new ApiError('NO_ACTIVE_PUSH_DEVICE', 'No active registered push device');

export const addApnsToken = route({
  method: 'POST',
  path: '/api/v1/users/me/apns_device_token',
  operationId: 'addApnsToken',
  auth: 'user',
  summary: 'Register an APNs device token (hex) for iOS push notifications',
  params: { token: { schema: S.str, required: true }, appid: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    humansOnly(user);
    checkAppId(params.appid);
    checkPushToken(params.token, 'apns');
    await runtime.execute({ type: 'ADD_PUSH_TOKEN', user_id: user.user_id, org: org.id, kind: 'apns', token: params.token, ios_app_id: params.appid });
    return { json: {} };
  },
});

/** `DELETE` of one push token of the caller's, APNs or FCM (Zulip's `remove_*_device_token`). */
function removeTokenRoute(kind: 'apns' | 'fcm', path: string, operationId: string, summary: string) {
  return route({
    method: 'DELETE',
    path,
    operationId,
    auth: 'user',
    summary,
    params: { token: { schema: S.str, required: true } },
    async handler({ params, org, user, runtime }) {
      humansOnly(user);
      checkPushToken(params.token, kind);
      await runtime.execute({ type: 'REMOVE_PUSH_TOKEN', user_id: user.user_id, org: org.id, kind, token: params.token });
      return { json: {} };
    },
  });
}

export const removeApnsToken = removeTokenRoute('apns', '/api/v1/users/me/apns_device_token', 'removeApnsToken', 'Remove an APNs device token');

export const addFcmToken = route({
  method: 'POST',
  path: '/api/v1/users/me/android_gcm_reg_id',
  operationId: 'addFcmToken',
  auth: 'user',
  summary: 'Register an FCM registration token for push notifications',
  params: { token: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    humansOnly(user);
    checkPushToken(params.token, 'fcm');
    await runtime.execute({ type: 'ADD_PUSH_TOKEN', user_id: user.user_id, org: org.id, kind: 'fcm', token: params.token, ios_app_id: null });
    return { json: {} };
  },
});

export const removeFcmToken = removeTokenRoute('fcm', '/api/v1/users/me/android_gcm_reg_id', 'removeFcmToken', 'Remove an FCM registration token');

export const testNotification = route({
  method: 'POST',
  path: '/api/v1/mobile_push/test_notification',
  operationId: 'testNotify',
  auth: 'user',
  summary: "Send a test push notification, through the push relay, to the caller's device with `token` or all of their registered tokens",
  params: { token: { schema: S.str } },
  async handler({ params, org, user, runtime, config }) {
    humansOnly(user);
    const tokens = runtime.user(org.id, user.user_id)?.pushTokens ?? [];
    const devices = params.token === undefined ? tokens : tokens.filter((t) => t.token === params.token);
    if (params.token !== undefined && devices.length === 0) throw new ApiError('INVALID_PUSH_DEVICE_TOKEN', 'Device not recognized');
    if (devices.length === 0) throw NO_DEVICE();
    await sendToBouncer(config.pushBouncerUrl, 'remotes/push/test_notification', {
      realm_id: org.id,
      user_id: user.user_id,
      devices: devices.map((d) => ({ kind: d.kind, token: d.token, appid: d.ios_app_id })),
      payload: { event: 'test', realm_name: org.name, user_id: user.user_id },
    });
    return { json: {} };
  },
});

export const e2eeTestNotification = route({
  method: 'POST',
  path: '/api/v1/mobile_push/e2ee/test_notification',
  operationId: 'e2eeTestNotify',
  auth: 'user',
  summary: "Send an E2EE test notification to the caller's device `device_id` or push account `push_account_id`, or all of those registered with the relay",
  params: { device_id: { schema: S.int }, push_account_id: { schema: S.int } },
  async handler({ params, org, user, runtime, config }) {
    humansOnly(user);
    const me = runtime.user(org.id, user.user_id);
    // Either selector picks only its own kind; neither picks every device and account
    // registered with the relay. Another user's id finds nothing (Zulip filters by user).
    const { device_id: deviceId, push_account_id: accountId } = params;
    const all = deviceId === undefined && accountId === undefined;
    const devices = [...(me?.devices ?? [])].filter(([id, d]) => d.push_token_id !== null && (all || id === deviceId));
    const accounts = [...(me?.pushAccounts ?? [])].filter(([id, a]) => a.status === 'active' && (all || id === accountId));
    if (devices.length === 0 && accounts.length === 0) throw NO_DEVICE();
    await sendToBouncer(config.pushBouncerUrl, 'remotes/push/e2ee/test_notification', {
      realm_id: org.id,
      user_id: user.user_id,
      devices: [
        ...devices.map(([id, d]) => ({ device_id: id, push_token_id: d.push_token_id, push_key_id: d.push_key_id })),
        ...accounts.map(([id]) => ({ push_account_id: id })),
      ],
    });
    return { json: {} };
  },
});

export const registerClientDevice = route({
  method: 'POST',
  path: '/api/v1/register_client_device',
  operationId: 'registerClientDevice',
  auth: 'user',
  summary: 'Register a client device, to set up E2EE push notifications for it; answers its `device_id`',
  response: R.fields({ device_id: Type.Integer() }),
  params: {},
  async handler({ org, user, runtime }) {
    const value = await runtime.execute({ type: 'REGISTER_CLIENT_DEVICE', user_id: user.user_id, org: org.id });
    return { json: value };
  },
});

export const removeClientDevice = route({
  method: 'POST',
  path: '/api/v1/remove_client_device',
  grows: false,
  operationId: 'removeClientDevice',
  auth: 'user',
  summary: "Remove one of the caller's client devices",
  response: R.empty,
  params: { device_id: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'REMOVE_CLIENT_DEVICE', user_id: user.user_id, org: org.id, device_id: params.device_id });
    return { json: {} };
  },
});

export const registerPushDevice = route({
  method: 'POST',
  path: '/api/v1/mobile_push/register',
  operationId: 'registerPushDevice',
  auth: 'user',
  summary: "Register for E2EE push notifications with the relay: level 406's push account (push_account_id, push_public_key), or a client device's push key fields, token fields, or both (a key or token rotation)",
  description: "Without `device_id` this is Zulip 11.0's form (feature level 406, the level Parley reports): `token_kind`, `push_account_id`, `push_public_key`, `bouncer_public_key` and `encrypted_push_registration`, all required; the relay is asked after the answer, and the outcome arrives as a `push_device` event (`push_devices` in `/register`). With `device_id` (a device of `POST /register_client_device`) it is Zulip's later form.",
  params: {
    device_id: { schema: S.int },
    push_account_id: { schema: S.int },
    push_public_key: { schema: S.str },
    token_kind: { schema: Enum(['fcm', 'apns']) },
    push_key: { schema: S.str },
    push_key_id: { schema: S.nonNegInt },
    bouncer_public_key: { schema: S.str },
    encrypted_push_registration: { schema: S.str },
    token_id: { schema: S.str },
  },
  async handler({ params, org, user, runtime, config, log }) {
    humansOnly(user);
    if (!usesBouncer(config.pushBouncerUrl)) throw new ApiError('PUSH_SERVICE_NOT_CONFIGURED', 'Server is not configured to use push notification service.');
    if (params.device_id === undefined) return registerPushAccount(params, { org: org.id, user: user.user_id, runtime, bouncerUrl: config.pushBouncerUrl, log });
    const { bouncer_public_key, encrypted_push_registration, push_account_id: _account, push_public_key: _public, ...fields } = params;
    const deviceId = params.device_id;
    const relayFields = bouncer_public_key !== undefined && encrypted_push_registration !== undefined;
    const { pending_token_id: tokenId } = await runtime.execute({ type: 'REGISTER_PUSH_DEVICE', org: org.id, user_id: user.user_id, ...fields, device_id: deviceId, relay_fields: relayFields });
    if (tokenId === null) return { json: {} };
    // Zulip completes the registration from a queue worker; Parley asks the relay now and records its answer.
    const finish = (error_code: string | null) => runtime.execute({ type: 'FINISH_PUSH_REGISTRATION', org: org.id, user_id: user.user_id, device_id: deviceId, token_id: tokenId, error_code });
    try {
      await sendToBouncer(config.pushBouncerUrl, 'remotes/push/e2ee/register', { realm_id: org.id, user_id: user.user_id, bouncer_public_key, encrypted_push_registration, token_id: params.token_id });
    } catch (err) {
      // Refused: the registration failed for good. Unreachable or failing: it stays pending, as Zulip's worker retries.
      if (err instanceof ApiError && (err.code === 'ADMIN_ACTION_REQUIRED' || err.code === 'INVALID_REMOTE_PUSH_DEVICE_TOKEN')) await finish(err.code);
      throw err;
    }
    await finish(null);
    return { json: {} };
  },
});

/** What a level-406 registration needs of its request. */
interface AccountParams {
  token_kind?: 'fcm' | 'apns';
  push_account_id?: number;
  push_public_key?: string;
  bouncer_public_key?: string;
  encrypted_push_registration?: string;
}

/**
 * Zulip 11.0's `register_push_device` (feature level 406): records the push account,
 * pending, and answers; then asks the relay, as Zulip's queue worker does, and records
 * its answer (a `push_device` event either way). A relay that cannot be reached leaves
 * the account pending (Zulip's worker retries; here the client registers again).
 */
async function registerPushAccount(
  params: AccountParams,
  where: { org: number; user: number; runtime: Runtime; bouncerUrl: string; log: Logger },
): Promise<{ json: Record<string, never> }> {
  for (const name of ['token_kind', 'push_account_id', 'push_public_key', 'bouncer_public_key', 'encrypted_push_registration'] as const) {
    if (params[name] === undefined) throw missingArgument(name);
  }
  const pushAccountId = params.push_account_id!;
  const { pending } = await where.runtime.execute({ type: 'REGISTER_PUSH_ACCOUNT', org: where.org, user_id: where.user, push_account_id: pushAccountId, token_kind: params.token_kind!, push_public_key: params.push_public_key! });
  if (pending) {
    const body = { realm_id: where.org, user_id: where.user, push_account_id: pushAccountId, bouncer_public_key: params.bouncer_public_key, encrypted_push_registration: params.encrypted_push_registration };
    void sendToBouncer(where.bouncerUrl, 'remotes/push/e2ee/register', body).then(
      () => where.runtime.execute({ type: 'FINISH_PUSH_ACCOUNT', org: where.org, user_id: where.user, push_account_id: pushAccountId, error_code: null }),
      (err: unknown) => {
        const code = err instanceof ApiError ? err.code : undefined;
        if (code === 'ADMIN_ACTION_REQUIRED' || code === 'INVALID_REMOTE_PUSH_DEVICE_TOKEN') {
          return where.runtime.execute({ type: 'FINISH_PUSH_ACCOUNT', org: where.org, user_id: where.user, push_account_id: pushAccountId, error_code: code });
        }
        where.log.warn({ event: 'push.register_pending', org: where.org, user: where.user, error: (err as Error).message }, `push account registration left pending: ${(err as Error).message}`);
        return undefined;
      },
    ).catch((err: unknown) => where.log.warn({ event: 'push.register_pending', org: where.org, user: where.user, error: (err as Error).message }, 'push account registration not recorded'));
  }
  return { json: {} };
}
