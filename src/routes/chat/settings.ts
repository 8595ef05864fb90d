/**
 * Settings: `PATCH /settings` (the caller's preferences, name, time zone and
 * password; `/settings/display` and `/settings/notifications` are Zulip's deprecated
 * aliases) and `PATCH /realm/user_settings_defaults` (what users who join later start
 * with; administrators only). Parameters a route does not know are listed back in
 * `ignored_parameters_unsupported` by the HTTP layer.
 */
import type { TSchema } from '@sinclair/typebox';
import { badRequest } from '../../../actors/shared/errors.js';
import { hashPassword, NO_PASSWORD_HASH, verifyPassword } from '../../../actors/rules/passwords.js';
import { DEFAULTABLE_SETTINGS, USER_SETTINGS } from '../../../actors/rules/user_settings.js';
import { R, route, type RouteRecord, S } from '../../http/route.js';

/** A parameter per setting, typed as its default is. */
function settingParams(keys: string[]): Record<string, { schema: TSchema }> {
  const out: Record<string, { schema: TSchema }> = {};
  for (const key of keys) {
    const d = USER_SETTINGS[key].default;
    out[key] = { schema: typeof d === 'boolean' ? S.bool : typeof d === 'number' ? S.int : S.str };
  }
  return out;
}

const PERSONAL = settingParams(Object.keys(USER_SETTINGS));

function pick(params: Record<string, unknown>, keys: Iterable<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (params[key] !== undefined) out[key] = params[key];
  return out;
}

function settingsRoute(path: string, operationId: string, summary: string): RouteRecord {
  return route({
    method: 'PATCH',
    path,
    operationId,
    auth: 'user',
    summary,
    response: R.empty,
    params: {
      ...PERSONAL,
      full_name: { schema: S.str },
      email: { schema: S.str },
      old_password: { schema: S.str },
      new_password: { schema: S.str },
    },
    async handler({ params, org, user, runtime, config }) {
      const p = params as Record<string, unknown> & { full_name?: string; email?: string; old_password?: string; new_password?: string };
      if (p.email !== undefined) throw badRequest('Email address changes are disabled in this organization.');
      let passwordHash: string | undefined;
      if (p.new_password !== undefined) {
        if (p.new_password === '') throw badRequest('New password cannot be blank.');
        if (!(await verifyPassword(p.old_password ?? '', user.password_hash || NO_PASSWORD_HASH))) throw badRequest('Wrong password!');
        passwordHash = await hashPassword(p.new_password);
      }
      await runtime.execute({ type: 'UPDATE_SETTINGS', org: org.id, user_id: user.user_id, settings: pick(p, Object.keys(USER_SETTINGS)), full_name: p.full_name, password_hash: passwordHash, limited: config.canAccessAllUsersGroupLimitsPresence });
      return { json: {} };
    },
  }) as RouteRecord;
}

export const updateSettings = settingsRoute('/api/v1/settings', 'updateSettings', "Change the caller's settings, name, time zone or password");
export const updateDisplaySettings = settingsRoute('/api/v1/settings/display', 'updateDisplaySettings', 'Deprecated alias of PATCH /settings');
export const updateNotificationSettings = settingsRoute('/api/v1/settings/notifications', 'updateNotificationSettings', 'Deprecated alias of PATCH /settings');

export const updateUserDefaults = route({
  method: 'PATCH',
  path: '/api/v1/realm/user_settings_defaults',
  operationId: 'updateRealmUserSettingsDefaults',
  auth: 'user',
  summary: 'Change the settings users who join later start with (organization administrators only)',
  params: settingParams(DEFAULTABLE_SETTINGS),
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'UPDATE_USER_DEFAULTS', org: org.id, actor_id: user.user_id, settings: pick(params, DEFAULTABLE_SETTINGS) });
    return { json: {} };
  },
});
