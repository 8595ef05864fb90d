/**
 * Push devices (Zulip's `zerver/actions/push_notifications.py`, `actions/devices.py`):
 * the mobile apps' push tokens, and client devices with their E2EE push
 * registration. The user's actor keeps both; client devices are announced to the
 * user's clients by `device` events and listed by `/register`'s `devices`. Tokens
 * have no events, as in Zulip.
 */
import { area, command, fact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { badRequest } from '../errors.js';
import type { UserContext } from '../kinds/user.js';
import type { ClientDevice, DevicePushState, PushToken } from '../push_devices.js';
import { eventJson } from '../render/events.js';

export interface PushTokenAdded { type: 'PushTokenAdded'; org: number; user_id: number; token: PushToken }
export interface PushTokenRemoved { type: 'PushTokenRemoved'; org: number; user_id: number; kind: PushToken['kind']; token: string }
export interface ClientDeviceRegistered { type: 'ClientDeviceRegistered'; org: number; user_id: number; device_id: number }
export interface ClientDeviceRemoved { type: 'ClientDeviceRemoved'; org: number; user_id: number; device_id: number }
/** A device's push registration fields changed to these. */
export interface DevicePushChanged { type: 'DevicePushChanged'; org: number; user_id: number; device_id: number; changes: Partial<DevicePushState> }

export interface AddPushToken { type: 'ADD_PUSH_TOKEN'; org: number; kind: PushToken['kind']; token: string; ios_app_id: string | null }
export interface RemovePushToken { type: 'REMOVE_PUSH_TOKEN'; org: number; kind: PushToken['kind']; token: string }
export interface RegisterClientDevice { type: 'REGISTER_CLIENT_DEVICE'; org: number }
export interface RemoveClientDevice { type: 'REMOVE_CLIENT_DEVICE'; org: number; device_id: number }
export interface SetDevicePush { type: 'SET_DEVICE_PUSH'; org: number; device_id: number; changes: Partial<DevicePushState> }

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

const setDevicePush = command({
  type: 'SET_DEVICE_PUSH',
  actor: 'user',
  decide(ctx: UserContext, c: SetDevicePush): Decision<Record<string, never>, DevicePushChanged> {
    const d = accessDevice(ctx, c.device_id);
    const changes = Object.fromEntries(Object.entries(c.changes).filter(([k, v]) => d[k as keyof DevicePushState] !== v));
    if (Object.keys(changes).length === 0) return { facts: [], value: {} };
    return { facts: [{ type: 'DevicePushChanged', org: c.org, user_id: ctx.user_id, device_id: c.device_id, changes }], value: {} };
  },
});

const pushTokenAdded = fact<PushTokenAdded>({
  type: 'PushTokenAdded',
  apply: { user: (ctx, f) => void (ctx.pushTokens = [...ctx.pushTokens, { ...f.token }]) },
  route: (f, to) => to.user(f.org, f.user_id),
});

const pushTokenRemoved = fact<PushTokenRemoved>({
  type: 'PushTokenRemoved',
  apply: { user: (ctx, f) => void (ctx.pushTokens = ctx.pushTokens.filter((t) => !(t.kind === f.kind && t.token === f.token))) },
  route: (f, to) => to.user(f.org, f.user_id),
});

const clientDeviceRegistered = fact<ClientDeviceRegistered>({
  type: 'ClientDeviceRegistered',
  apply: {
    user(ctx, f) {
      ctx.devices.set(f.device_id, { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_registration_error_code: null });
      ctx.nextDeviceId = Math.max(ctx.nextDeviceId, f.device_id + 1);
    },
  },
  route: (f, to) => to.user(f.org, f.user_id),
  notify: (f, seq) => [{ org: f.org, seq, type: 'device', user_ids: [f.user_id], event: eventJson('device', { op: 'add', device_id: f.device_id }) }],
});

const clientDeviceRemoved = fact<ClientDeviceRemoved>({
  type: 'ClientDeviceRemoved',
  apply: { user: (ctx, f) => void ctx.devices.delete(f.device_id) },
  route: (f, to) => to.user(f.org, f.user_id),
  notify: (f, seq) => [{ org: f.org, seq, type: 'device', user_ids: [f.user_id], event: eventJson('device', { op: 'remove', device_id: f.device_id }) }],
});

const devicePushChanged = fact<DevicePushChanged>({
  type: 'DevicePushChanged',
  apply: {
    user(ctx, f) {
      const d = ctx.devices.get(f.device_id);
      if (d) ctx.devices.set(f.device_id, { ...d, ...f.changes });
    },
  },
  route: (f, to) => to.user(f.org, f.user_id),
  notify(f, seq) {
    // Only what clients see: the key never leaves the server.
    const { push_key: _key, push_token_kind: _kind, ...visible } = f.changes;
    if (Object.keys(visible).length === 0) return [];
    return [{ org: f.org, seq, type: 'device', user_ids: [f.user_id], event: eventJson('device', { op: 'update', device_id: f.device_id, ...visible }) }];
  },
});

export const pushDevices = area({
  name: 'push devices',
  commands: [addPushToken, removePushToken, registerClientDevice, removeClientDevice, setDevicePush],
  facts: [pushTokenAdded, pushTokenRemoved, clientDeviceRegistered, clientDeviceRemoved, devicePushChanged],
  register: [
    { types: ['device'], fill: (state, r, view) => void (state.devices = listDevices(view.user(r.org.id, r.user.user_id))) },
    // Parley has no Zoom integration, so no user ever holds a Zoom token.
    { types: ['has_zoom_token'], fill: (state) => void (state.has_zoom_token = false) },
  ],
});
