/**
 * Personal settings and the organization's defaults for new users (Zulip's
 * `zerver/actions/user_settings.py`, `zerver/views/user_settings.py` and
 * `zerver/actions/realm_settings.py` `do_set_realm_user_default_setting`).
 *
 * `PATCH /settings` changes the caller's preferences, name, time zone or password:
 * one `user_settings` `update` event per setting to the user, and a `realm_user`
 * `update` to everyone for the name and time zone. `PATCH
 * /realm/user_settings_defaults` changes what users who join later start with:
 * `realm_user_settings_defaults` `update` events. The organization actor keeps both
 * (a user's settings live on their user record).
 */
import { area, command, fact, orgFact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { activeUsersWhere, deliveryEmailDelivery, eventJson } from '../render/events.js';
import { Role, type UserRecord } from '../shared/types.js';
import { checkFullName } from '../rules/users.js';
import { exportConsentDelivery } from './realm_exports.js';
import { presenceToggled, type PresenceNotified } from './presence.js';
import { DEFAULTABLE_SETTINGS, effectiveSettings, EMOJISETS, LANGUAGES, NOTIFICATION_SOUNDS, storedSettings, USER_SETTINGS } from '../rules/user_settings.js';
import { usersWhoCanAccess } from '../rules/user_access.js';
import { orgState } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Settings new users start with, where they differ from Zulip's defaults. */
    userDefaults: Record<string, unknown>;
  }
}

orgState({ userDefaults: { empty: () => ({}) } });

/** A user's settings changed (only the settings that did), and perhaps their name, time zone or password. */
export interface UserSettingsChanged {
  type: 'UserSettingsChanged';
  org: number;
  user_id: number;
  settings: Record<string, unknown>;
  full_name?: string;
  timezone?: string;
  password_hash?: string;
}
/** The defaults for new users changed (only the settings that did). */
export interface UserDefaultsChanged { type: 'UserDefaultsChanged'; org: number; settings: Record<string, unknown> }

/** Change the caller's settings; `password_hash` is the new password, already hashed and the old one checked. */
export interface UpdateSettings {
  type: 'UPDATE_SETTINGS';
  org: number;
  user_id: number;
  settings: Record<string, unknown>;
  full_name?: string;
  password_hash?: string;
  /** `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE`, for the presence update a `presence_enabled` change forces. */
  limited?: boolean;
}
/** Change the defaults for new users (administrators only). */
export interface UpdateUserDefaults { type: 'UPDATE_USER_DEFAULTS'; org: number; actor_id: number; settings: Record<string, unknown> }

/** A user's settings as `/register`'s `user_settings` shows them. */
export function userSettingsView(user: UserRecord): Record<string, unknown> {
  return { ...effectiveSettings(user.settings), timezone: user.timezone, available_notification_sounds: NOTIFICATION_SOUNDS, emojiset_choices: EMOJISETS };
}

/** Checks each given setting; returns those whose value differs from `current`. */
function changedSettings(given: Record<string, unknown>, current: Record<string, unknown>, allowed: (key: string) => boolean): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    const def = USER_SETTINGS[key];
    if (!def || !allowed(key)) continue;
    const checked = def.check(value, key);
    if (checked !== current[key]) changed[key] = checked;
  }
  return changed;
}

export const updateSettings = command({
  type: 'UPDATE_SETTINGS',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateSettings, env: DecideEnv): Decision<Record<string, never>, UserSettingsChanged | PresenceNotified> {
    const user = ctx.users.get(c.user_id);
    if (!user || !user.is_active) throw badRequest('Invalid user');
    const current = { ...effectiveSettings(user.settings), timezone: user.timezone };
    const settings = changedSettings(c.settings, current, () => true);
    const fact: UserSettingsChanged = { type: 'UserSettingsChanged', org: c.org, user_id: user.user_id, settings };
    if ('timezone' in settings) {
      fact.timezone = settings.timezone as string;
      delete settings.timezone;
    }
    if (c.full_name !== undefined) {
      const name = checkFullName(c.full_name);
      if (name !== user.full_name) fact.full_name = name;
    }
    if (c.password_hash !== undefined) fact.password_hash = c.password_hash;
    const nothing = Object.keys(settings).length === 0 && fact.timezone === undefined && fact.full_name === undefined && fact.password_hash === undefined;
    if (nothing) return { facts: [], value: {} };
    if (typeof settings.presence_enabled === 'boolean') {
      const toggled = presenceToggled(ctx, user, settings.presence_enabled, env.now(), c.limited ?? false);
      return { facts: [fact, toggled.fact], volatile: [toggled.volatile], value: {} };
    }
    return { facts: [fact], value: {} };
  },
});

export const updateUserDefaults = command({
  type: 'UPDATE_USER_DEFAULTS',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateUserDefaults): Decision<Record<string, never>, UserDefaultsChanged> {
    const actor = ctx.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    const defaultable = new Set(DEFAULTABLE_SETTINGS);
    const settings = changedSettings(c.settings, effectiveSettings(ctx.userDefaults), (key) => defaultable.has(key));
    return { facts: Object.keys(settings).length === 0 ? [] : [{ type: 'UserDefaultsChanged', org: c.org, settings }], value: {} };
  },
});

/** The settings a new user starts with: the organization's defaults. */
export function settingsForNewUser(ctx: OrgContext): Record<string, unknown> | undefined {
  return Object.keys(ctx.userDefaults).length === 0 ? undefined : { ...ctx.userDefaults };
}

const userSettingsChanged = fact<UserSettingsChanged>({
  type: 'UserSettingsChanged',
  apply: {
    org(ctx, f) {
      const user = ctx.users.get(f.user_id);
      if (!user) return;
      const next: UserRecord = { ...user, settings: storedSettings({ ...effectiveSettings(user.settings), ...f.settings }) };
      if (f.full_name !== undefined) next.full_name = f.full_name;
      if (f.timezone !== undefined) next.timezone = f.timezone;
      if (f.password_hash !== undefined) next.password_hash = f.password_hash;
      ctx.users.set(f.user_id, next);
    },
    user(ctx, f) {
      // Turning synchronization off deletes the server's copies, with no draft events (Zulip's `do_change_user_setting`).
      if (f.settings.enable_drafts_synchronization === false) ctx.personal.drafts.clear();
    },
  },
  route(f, to) {
    to.org(f.org);
    if (f.settings.enable_drafts_synchronization === false) to.user(f.org, f.user_id);
  },
  notify(f, seq, view) {
    const out: Delivery[] = [];
    const mine = [f.user_id];
    const setting = (property: string, value: unknown): void => {
      const body: Record<string, unknown> = { op: 'update', property, value };
      if (property === 'default_language') body.language_name = LANGUAGES[value as string] ?? value;
      out.push({ org: f.org, seq, type: 'user_settings', user_ids: mine, event: eventJson('user_settings', body) });
    };
    for (const [key, value] of Object.entries(f.settings)) setting(key, value);
    if (f.timezone !== undefined) setting('timezone', f.timezone);
    // Those who may access the user (Zulip's get_user_ids_who_can_access_user), computed once if needed.
    let who: number[] | undefined;
    const audience = (): number[] => (who ??= usersWhoCanAccess(view, f.org, view.org(f.org)!.users.get(f.user_id)!));
    if (f.full_name !== undefined) {
      out.push({ org: f.org, seq, type: 'realm_user', user_ids: audience(), event: eventJson('realm_user', { op: 'update', person: { user_id: f.user_id, full_name: f.full_name } }) });
    }
    if ('presence_enabled' in f.settings) {
      // The legacy `away` of user status is this setting, inverted.
      out.push({ org: f.org, seq, type: 'user_status', user_ids: audience(), event: eventJson('user_status', { user_id: f.user_id, away: !f.settings.presence_enabled }) });
    }
    if (f.timezone !== undefined) {
      out.push({ org: f.org, seq, type: 'realm_user', user_ids: audience(), event: eventJson('realm_user', { op: 'update', person: { user_id: f.user_id, timezone: f.timezone } }) });
    }
    const user = view.org(f.org)?.users.get(f.user_id);
    if ('email_address_visibility' in f.settings && user) out.push(deliveryEmailDelivery(view, f.org, seq, user));
    if ('allow_private_data_export' in f.settings) {
      // Administrators keep the consents they export by (Zulip's `realm_export_consent`).
      out.push(exportConsentDelivery(view, f.org, seq, f.user_id, f.settings.allow_private_data_export === true));
    }
    return out;
  },
});

const userDefaultsChanged = orgFact<UserDefaultsChanged>({
  type: 'UserDefaultsChanged',
  apply(ctx, f) {
    // Replaced, not changed: a snapshot being written keeps the object it holds.
    ctx.userDefaults = storedSettings({ ...effectiveSettings(ctx.userDefaults), ...f.settings });
  },
  notify(f, seq, view) {
    const everyone = activeUsersWhere(view, f.org);
    return Object.entries(f.settings).map(([property, value]) => ({
      org: f.org, seq, type: 'realm_user_settings_defaults', user_ids: everyone, event: eventJson('realm_user_settings_defaults', { op: 'update', property, value }),
    }));
  },
});

export const settings = area({
  name: 'settings',
  commands: [updateSettings, updateUserDefaults],
  facts: [userSettingsChanged, userDefaultsChanged],
  register: [
    { types: ['user_settings'], fill: (state, r, view) => void (state.user_settings = userSettingsView(view.org(r.org.id)!.users.get(r.user.user_id) ?? r.user)) },
    {
      types: ['realm_user_settings_defaults'],
      fill(state, r, view) {
        const defaults = effectiveSettings(view.org(r.org.id)!.userDefaults);
        const shown: Record<string, unknown> = { available_notification_sounds: NOTIFICATION_SOUNDS, emojiset_choices: EMOJISETS };
        for (const key of DEFAULTABLE_SETTINGS) shown[key] = defaults[key];
        state.realm_user_settings_defaults = shown;
      },
    },
  ],
});
