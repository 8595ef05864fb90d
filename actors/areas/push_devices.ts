/**
 * Push devices (Zulip's `zerver/actions/push_notifications.py`, `actions/devices.py`):
 * the mobile apps' push tokens, and client devices with their E2EE push
 * registration. The user's actor keeps both; client devices are announced to the
 * user's clients by `device` events and listed by `/register`'s `devices`. Tokens
 * have no events, as in Zulip.
 */
import { area, command, userFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { checkPushKey, tokenIdOf, type ClientDevice, type DevicePushState, type PushAccount, type PushToken } from '../rules/push_devices.js';
import { toOwner } from '../render/events.js';
import { mapEntries, userState } from '../core/state_slices.js';

declare module '../kinds/user.js' {
  interface UserContext {
    /** Push tokens of the mobile apps (FCM and APNs), in registration order. */
    pushTokens: PushToken[];
    /** Client devices (`register_client_device`) and their E2EE push registrations, by id. */
    devices: Map<number, DevicePushState>;
    /** The id the next client device gets. */
    nextDeviceId: number;
    /** E2EE push accounts in feature level 406's form (`POST /mobile_push/register` without `device_id`), by `push_account_id`. */
    pushAccounts: Map<number, PushAccount>;
  }
}

userState({
  pushTokens: { empty: () => [], chunkKey: 'push_tokens' },
  devices: mapEntries(),
  nextDeviceId: { empty: () => 1, chunkKey: 'next_device_id' },
  pushAccounts: { ...mapEntries(), chunkKey: 'push_accounts' },
});

export interface PushTokenAdded { type: 'PushTokenAdded'; org: number; user_id: number; token: PushToken }
export interface PushTokenRemoved { type: 'PushTokenRemoved'; org: number; user_id: number; kind: PushToken['kind']; token: string }
export interface ClientDeviceRegistered { type: 'ClientDeviceRegistered'; org: number; user_id: number; device_id: number }
export interface ClientDeviceRemoved { type: 'ClientDeviceRemoved'; org: number; user_id: number; device_id: number }
/** A level-406 push account was registered (pending) or its registration ended (active, failed). */
export interface PushAccountChanged { type: 'PushAccountChanged'; org: number; user_id: number; push_account_id: number; account: PushAccount }
/** A device's push registration fields changed to these. */
export interface DevicePushChanged { type: 'DevicePushChanged'; org: number; user_id: number; device_id: number; changes: Partial<DevicePushState> }

export interface AddPushToken { type: 'ADD_PUSH_TOKEN'; user_id: number; org: number; kind: PushToken['kind']; token: string; ios_app_id: string | null }
export interface RemovePushToken { type: 'REMOVE_PUSH_TOKEN'; user_id: number; org: number; kind: PushToken['kind']; token: string }
export interface RegisterClientDevice { type: 'REGISTER_CLIENT_DEVICE'; user_id: number; org: number }
export interface RemoveClientDevice { type: 'REMOVE_CLIENT_DEVICE'; user_id: number; org: number; device_id: number }
/**
 * Register a device for E2EE push (Zulip's `register_push_device`): push key fields,
 * token fields, or both. A new token waits, pending, for the relay's answer.
 */
export interface RegisterPushDevice {
  type: 'REGISTER_PUSH_DEVICE';
  user_id: number;
  org: number;
  device_id: number;
  push_key?: string;
  push_key_id?: number;
  token_kind?: 'fcm' | 'apns';
  token_id?: string;
  /** Both `bouncer_public_key` and `encrypted_push_registration` were given (their content is the relay's). */
  relay_fields: boolean;
}
/**
 * Register a push account in feature level 406's form (Zulip 11.0's `register_push_device`:
 * `push_account_id` chosen by the client, no `device_id`). Registering again what is
 * registered and not failed changes nothing.
 */
export interface RegisterPushAccount { type: 'REGISTER_PUSH_ACCOUNT'; user_id: number; org: number; push_account_id: number; token_kind: 'fcm' | 'apns'; push_public_key: string }
/** The relay's answer to a pending push account: accepted (`error_code` null) or refused. */
export interface FinishPushAccount { type: 'FINISH_PUSH_ACCOUNT'; user_id: number; org: number; push_account_id: number; error_code: string | null }
/** The relay's answer to a pending registration: accepted (`error_code` null) or refused. */
export interface FinishPushRegistration { type: 'FINISH_PUSH_REGISTRATION'; user_id: number; org: number; device_id: number; token_id: number; error_code: string | null }

/** Zulip's `check_device_id`: a device of this user. */
export function accessDevice(ctx: UserContext, deviceId: number): DevicePushState {
  const d = ctx.devices.get(deviceId);
  if (!d) throw badRequest('Invalid `device_id`');
  return d;
}

/** The device as clients see it (its key stays on the server). */
function shown(d: DevicePushState): ClientDevice {
  return { push_key_id: d.push_key_id, push_token_id: d.push_token_id, pending_push_token_id: d.pending_push_token_id, push_registration_error_code: d.push_registration_error_code };
}

/**
 * Everything the server keeps to reach a user's phones, including what no client is shown
 * (device keys and token kinds, the next device id, push accounts' keys); empty for no such user.
 */
export interface PushHoldings {
  tokens: PushToken[];
  devices: Array<[number, DevicePushState]>;
  nextDeviceId: number;
  accounts: Array<[number, PushAccount]>;
}

export function pushHoldings(view: StateView, org: number, userId: number): PushHoldings {
  const ctx = view.user(org, userId);
  return { tokens: [...(ctx?.pushTokens ?? [])], devices: [...(ctx?.devices ?? [])], nextDeviceId: ctx?.nextDeviceId ?? 1, accounts: [...(ctx?.pushAccounts ?? [])] };
}

/** Zulip's `get_devices`: the user's devices by id. */
export function listDevices(ctx: UserContext | undefined): Record<string, ClientDevice> {
  return Object.fromEntries([...(ctx?.devices ?? [])].map(([id, d]) => [String(id), shown(d)]));
}

const addPushToken = command({
  type: 'ADD_PUSH_TOKEN',
  actor: 'user',
  decide(ctx: UserContext, c: AddPushToken, env: DecideEnv): Decision<Record<string, never>, PushTokenAdded> {
    // Registering a token twice is a no-op, as Zulip's `ignore_conflicts`.
    if (ctx.pushTokens.some((t) => t.kind === c.kind && t.token === c.token)) return { facts: [], value: {} };
    return { facts: [{ type: 'PushTokenAdded', org: c.org, user_id: ctx.user_id, token: { kind: c.kind, token: c.token, ios_app_id: c.ios_app_id, date_created: env.now() } }], value: {} };
  },
});

const removePushToken = command({
  type: 'REMOVE_PUSH_TOKEN',
  actor: 'user',
  decide(ctx: UserContext, c: RemovePushToken): Decision<Record<string, never>, PushTokenRemoved> {
    if (!ctx.pushTokens.some((t) => t.kind === c.kind && t.token === c.token)) throw badRequest('Token does not exist');
    return { facts: [{ type: 'PushTokenRemoved', org: c.org, user_id: ctx.user_id, kind: c.kind, token: c.token }], value: {} };
  },
});

const registerClientDevice = command({
  type: 'REGISTER_CLIENT_DEVICE',
  actor: 'user',
  decide(ctx: UserContext, c: RegisterClientDevice): Decision<{ device_id: number }, ClientDeviceRegistered> {
    const id = ctx.nextDeviceId;
    return { facts: [{ type: 'ClientDeviceRegistered', org: c.org, user_id: ctx.user_id, device_id: id }], value: { device_id: id } };
  },
});

const removeClientDevice = command({
  type: 'REMOVE_CLIENT_DEVICE',
  actor: 'user',
  decide(ctx: UserContext, c: RemoveClientDevice): Decision<Record<string, never>, ClientDeviceRemoved> {
    accessDevice(ctx, c.device_id);
    return { facts: [{ type: 'ClientDeviceRemoved', org: c.org, user_id: ctx.user_id, device_id: c.device_id }], value: {} };
  },
});

const registerPushDevice = command({
  type: 'REGISTER_PUSH_DEVICE',
  actor: 'user',
  decide(ctx: UserContext, c: RegisterPushDevice): Decision<{ pending_token_id: number | null }, DevicePushChanged> {
    const d = accessDevice(ctx, c.device_id);
    const keyFields = c.push_key !== undefined && c.push_key_id !== undefined;
    const tokenFields = c.relay_fields && c.token_id !== undefined && c.token_kind !== undefined;
    if (!keyFields && !tokenFields) throw badRequest('Missing parameters: must provide either all push key fields, all token fields, or both.');
    if (keyFields) checkPushKey(c.push_key!);
    const key = keyFields ? { push_key: c.push_key, push_key_id: c.push_key_id } : {};
    const change = (changes: Partial<DevicePushState>, pending: number | null) =>
      ({ facts: [{ type: 'DevicePushChanged' as const, org: c.org, user_id: ctx.user_id, device_id: c.device_id, changes }], value: { pending_token_id: pending } });
    if (!tokenFields) {
      if (d.push_key_id === null) throw badRequest('No push registration exists to rotate key for.');
      return change(key, null);
    }
    if (d.push_registration_error_code === null && d.pending_push_token_id !== null) throw badRequest('A registration for the device already in progress.');
    const tokenId = tokenIdOf(c.token_id!);
    if (!keyFields && d.push_key_id === null) throw badRequest('No push registration exists to rotate token for.');
    // Idempotent: what is registered already.
    if (d.push_registration_error_code === null && d.push_token_id === tokenId && (!keyFields || (d.push_key_id === c.push_key_id && d.push_key === c.push_key))) return { facts: [], value: { pending_token_id: null } };
    return change({ ...key, push_token_kind: c.token_kind, pending_push_token_id: tokenId, push_registration_error_code: null }, tokenId);
  },
});

const finishPushRegistration = command({
  type: 'FINISH_PUSH_REGISTRATION',
  actor: 'user',
  decide(ctx: UserContext, c: FinishPushRegistration): Decision<Record<string, never>, DevicePushChanged> {
    const d = ctx.devices.get(c.device_id);
    // The device was removed, or another registration took this one's place, meanwhile.
    if (!d || d.pending_push_token_id !== c.token_id) return { facts: [], value: {} };
    const changes: Partial<DevicePushState> = c.error_code === null
      ? { push_token_id: c.token_id, pending_push_token_id: null, push_registration_error_code: null }
      : { push_registration_error_code: c.error_code };
    return { facts: [{ type: 'DevicePushChanged', org: c.org, user_id: ctx.user_id, device_id: c.device_id, changes }], value: {} };
  },
});

const registerPushAccount = command({
  type: 'REGISTER_PUSH_ACCOUNT',
  actor: 'user',
  decide(ctx: UserContext, c: RegisterPushAccount): Decision<{ pending: boolean }, PushAccountChanged> {
    checkPushPublicKey(c.push_public_key);
    const held = ctx.pushAccounts.get(c.push_account_id);
    if (held && held.error_code === null) return { facts: [], value: { pending: false } };
    const account: PushAccount = { token_kind: c.token_kind, push_public_key: c.push_public_key, status: 'pending', error_code: null };
    return { facts: [{ type: 'PushAccountChanged', org: c.org, user_id: ctx.user_id, push_account_id: c.push_account_id, account }], value: { pending: true } };
  },
});

const finishPushAccount = command({
  type: 'FINISH_PUSH_ACCOUNT',
  actor: 'user',
  decide(ctx: UserContext, c: FinishPushAccount): Decision<Record<string, never>, PushAccountChanged> {
    const held = ctx.pushAccounts.get(c.push_account_id);
    if (!held || held.status !== 'pending') return { facts: [], value: {} };
    const account: PushAccount = { ...held, status: c.error_code === null ? 'active' : 'failed', error_code: c.error_code };
    return { facts: [{ type: 'PushAccountChanged', org: c.org, user_id: ctx.user_id, push_account_id: c.push_account_id, account }], value: {} };
  },
});

/** A push public key: standard base64 of some bytes (the client's NaCl public key). */
function checkPushPublicKey(key: string): void {
  if (key === '' || key.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(key)) throw badRequest('Invalid push_public_key');
}

/** A push account as `/register`'s `push_devices` and `push_device` events show it. */
function shownAccount(a: PushAccount): { status: PushAccount['status']; error_code: string | null } {
  return { status: a.status, error_code: a.error_code };
}

/** Zulip's `push_devices` in `/register` (level 406): the user's push accounts by id. */
export function listPushAccounts(ctx: UserContext | undefined): Record<string, { status: string; error_code: string | null }> {
  return Object.fromEntries([...(ctx?.pushAccounts ?? [])].map(([id, a]) => [String(id), shownAccount(a)]));
}

const pushAccountChanged = userFact<PushAccountChanged>({
  type: 'PushAccountChanged',
  apply: (ctx, f) => void ctx.pushAccounts.set(f.push_account_id, { ...f.account }),
  notify: (f, seq) => toOwner(f, seq, 'push_device', { push_account_id: String(f.push_account_id), status: f.account.status, ...(f.account.error_code === null ? {} : { error_code: f.account.error_code }) }),
});

const pushTokenAdded = userFact<PushTokenAdded>({
  type: 'PushTokenAdded',
  apply: (ctx, f) => void (ctx.pushTokens = [...ctx.pushTokens, { ...f.token }]),
});

const pushTokenRemoved = userFact<PushTokenRemoved>({
  type: 'PushTokenRemoved',
  apply: (ctx, f) => void (ctx.pushTokens = ctx.pushTokens.filter((t) => !(t.kind === f.kind && t.token === f.token))),
});

const clientDeviceRegistered = userFact<ClientDeviceRegistered>({
  type: 'ClientDeviceRegistered',
  apply(ctx, f) {
    ctx.devices.set(f.device_id, { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_registration_error_code: null, push_key: null, push_token_kind: null });
    ctx.nextDeviceId = Math.max(ctx.nextDeviceId, f.device_id + 1);
  },
  notify: (f, seq) => toOwner(f, seq, 'device', { op: 'add', device_id: f.device_id }),
});

const clientDeviceRemoved = userFact<ClientDeviceRemoved>({
  type: 'ClientDeviceRemoved',
  apply: (ctx, f) => void ctx.devices.delete(f.device_id),
  notify: (f, seq) => toOwner(f, seq, 'device', { op: 'remove', device_id: f.device_id }),
});

const devicePushChanged = userFact<DevicePushChanged>({
  type: 'DevicePushChanged',
  apply(ctx, f) {
    const d = ctx.devices.get(f.device_id);
    if (d) ctx.devices.set(f.device_id, { ...d, ...f.changes });
  },
  notify(f, seq) {
    // Only what clients see: the key never leaves the server.
    const { push_key: _key, push_token_kind: _kind, ...visible } = f.changes;
    if (Object.keys(visible).length === 0) return [];
    return toOwner(f, seq, 'device', { op: 'update', device_id: f.device_id, ...visible });
  },
});

export const pushDevices = area({
  name: 'push devices',
  commands: [addPushToken, removePushToken, registerClientDevice, removeClientDevice, registerPushDevice, finishPushRegistration, registerPushAccount, finishPushAccount],
  facts: [pushTokenAdded, pushTokenRemoved, clientDeviceRegistered, clientDeviceRemoved, devicePushChanged, pushAccountChanged],
  register: [
    { types: ['push_device'], fill: (state, r, view) => void (state.push_devices = listPushAccounts(view.user(r.org.id, r.user.user_id))) },
    { types: ['device'], fill: (state, r, view) => void (state.devices = listDevices(view.user(r.org.id, r.user.user_id))) },
    // Parley has no Zoom integration, so no user ever holds a Zoom token.
    { types: ['has_zoom_token'], fill: (state) => void (state.has_zoom_token = false) },
  ],
});
