/**
 * Custom profile fields (Zulip's `zerver/actions/custom_profile_fields.py` and
 * `zerver/views/custom_profile_fields.py`): the organization's fields, which
 * administrators create, change, reorder and delete, and each user's values. The
 * organization actor keeps both (a user's values live on their user record).
 * `custom_profile_fields` events carry the whole list, as Zulip's do; a value change
 * is a `realm_user` `update` with `custom_profile_field`.
 */
import { area, command, orgFact } from '../core/area.js';
import type { Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { renderMarkdown } from '../engines/markdown/index.js';
import { codePointLength } from '../rules/messages.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { usersWhoCanAccess } from '../rules/user_access.js';
import { Role, type ProfileFieldRecord, type ProfileValue, type UserRecord } from '../shared/types.js';
import { mentionResolver } from './messages.js';
import { DEFAULT_EXTERNAL_ACCOUNTS } from '../rules/external_accounts.js';
import { orgState, recordsById } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Custom profile fields, by id. */
    profileFields: Map<number, ProfileFieldRecord>;
    /** The highest custom profile field id ever used (kept when that field is deleted). */
    lastProfileFieldId: number;
  }
}

orgState({ profileFields: recordsById(), lastProfileFieldId: { empty: () => 0 } });

export { DEFAULT_EXTERNAL_ACCOUNTS };

/** Zulip's field types, with the names `custom_profile_field_types` shows. */
export const FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: 'Text (short)' },
  LONG_TEXT: { id: 2, name: 'Text (long)' },
  SELECT: { id: 3, name: 'List of options' },
  DATE: { id: 4, name: 'Date' },
  URL: { id: 5, name: 'Link' },
  USER: { id: 6, name: 'Users' },
  EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
  PRONOUNS: { id: 8, name: 'Pronouns' },
} as const;
const T = Object.fromEntries(Object.entries(FIELD_TYPES).map(([k, v]) => [k, v.id])) as { [K in keyof typeof FIELD_TYPES]: number };


const NAME_MAX = 40;
const HINT_MAX = 80;
const SUMMARY_MAX = 2;

/** A field was created or changed; the record as it is now. */
export interface ProfileFieldSaved { type: 'ProfileFieldSaved'; org: number; field: ProfileFieldRecord; dropped_values?: string[] }
/** A field was deleted, with every user's value of it. */
export interface ProfileFieldDeleted { type: 'ProfileFieldDeleted'; org: number; field_id: number }
/** The fields were put in a new order (ids, first to last). */
export interface ProfileFieldsReordered { type: 'ProfileFieldsReordered'; org: number; order: number[] }
/** A user's values changed; a `null` value removes it. */
export interface ProfileDataChanged { type: 'ProfileDataChanged'; org: number; user_id: number; changes: Array<{ id: number; value: ProfileValue | null }> }

/** The settings of a field as a request gives them. */
export interface FieldSettings {
  name?: string;
  hint?: string;
  field_type?: number;
  field_data?: Record<string, unknown>;
  display_in_profile_summary?: boolean;
  required?: boolean;
  editable_by_user?: boolean;
}
export interface CreateProfileField extends FieldSettings { type: 'CREATE_PROFILE_FIELD'; org: number; actor_id: number }
export interface UpdateProfileField extends FieldSettings { type: 'UPDATE_PROFILE_FIELD'; org: number; actor_id: number; field_id: number }
export interface DeleteProfileField { type: 'DELETE_PROFILE_FIELD'; org: number; actor_id: number; field_id: number }
export interface ReorderProfileFields { type: 'REORDER_PROFILE_FIELDS'; org: number; actor_id: number; order: number[] }
/** Set values for `user_id` (themselves, or an administrator for anyone). */
export interface SetProfileData { type: 'SET_PROFILE_DATA'; org: number; actor_id: number; user_id: number; data: Array<{ id: number; value: unknown }> }
/** Remove values of `user_id`. */
export interface RemoveProfileData { type: 'REMOVE_PROFILE_DATA'; org: number; actor_id: number; user_id: number; field_ids: number[] }

function requireAdmin(ctx: OrgContext, actorId: number): UserRecord {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
  return actor;
}

function fieldOf(ctx: OrgContext, id: number): ProfileFieldRecord {
  const field = ctx.profileFields.get(id);
  if (!field) throw badRequest(`Field id ${id} not found.`);
  return field;
}

/** `validate_select_field_data`: every option has a non-blank text and an order. */
function checkSelectData(data: Record<string, unknown>): void {
  if (Object.keys(data).length < 1) throw badRequest('Field must have at least one choice.');
  for (const [key, option] of Object.entries(data)) {
    if (key.trim() === '') throw badRequest("'value' cannot be blank.");
    if (typeof option !== 'object' || option === null || Array.isArray(option)) throw badRequest(`field_data["${key}"] is not a dict`);
    const o = option as Record<string, unknown>;
    for (const k of ['text', 'order']) {
      if (typeof o[k] !== 'string') throw badRequest(`field_data["${key}"]["${k}"] is not a string`);
      if ((o[k] as string).trim() === '') throw badRequest(`field_data["${key}"]["${k}"] cannot be blank.`);
    }
    const extra = Object.keys(o).filter((k) => k !== 'text' && k !== 'order');
    if (extra.length > 0) throw badRequest(`Unexpected arguments: ${extra.join(', ')}`);
  }
}

/** `validate_external_account_field_data`. */
function checkExternalData(data: Record<string, unknown>): void {
  const subtype = data.subtype;
  if (typeof subtype !== 'string') throw badRequest('subtype key is missing from field_data');
  if (subtype === 'custom') {
    const pattern = data.url_pattern;
    if (typeof pattern !== 'string' || pattern === '') throw badRequest('Custom external account must define URL pattern');
    if (pattern.split('%(username)s').length !== 2) throw badRequest('Malformed URL pattern.');
    if (!isUrl(pattern.replace('%(username)s', 'username'))) throw badRequest('url_pattern is not a URL');
  } else if (!(subtype in DEFAULT_EXTERNAL_ACCOUNTS)) {
    throw badRequest('Invalid external account type');
  }
}

function isUrl(s: string): boolean {
  try {
    const url = new URL(s);
    return ['http:', 'https:', 'ftp:', 'ftps:'].includes(url.protocol) && url.hostname !== '';
  } catch {
    return false;
  }
}

/** The checks of `validate_custom_profile_field`, on a field as it would be. */
function checkField(ctx: OrgContext, field: ProfileFieldRecord): void {
  const isDefaultExternal = field.type === T.EXTERNAL_ACCOUNT && JSON.parse(field.field_data || '{}').subtype !== 'custom';
  if (!isDefaultExternal) {
    if (field.name.trim() === '') throw badRequest('Label cannot be blank.');
    if (codePointLength(field.hint) > HINT_MAX) throw badRequest(`hint is too long (limit: ${HINT_MAX} characters)`);
    if (codePointLength(field.name) > NAME_MAX) throw badRequest(`name is too long (limit: ${NAME_MAX} characters)`);
  }
  if (field.display_in_profile_summary) {
    if (field.type === T.LONG_TEXT || field.type === T.USER) throw badRequest('Field type not supported for display in profile summary.');
    const others = [...ctx.profileFields.values()].filter((f) => f.id !== field.id && f.display_in_profile_summary).length;
    if (others >= SUMMARY_MAX) throw badRequest(`Only ${SUMMARY_MAX} custom profile fields can be displayed in the profile summary.`);
  }
  for (const other of ctx.profileFields.values()) {
    if (other.id !== field.id && other.name === field.name) throw badRequest('A field with that label already exists.');
  }
}

function fieldData(type: number, data: Record<string, unknown> | undefined): string {
  if (type === T.SELECT) checkSelectData(data ?? {});
  if (type === T.EXTERNAL_ACCOUNT) checkExternalData(data ?? {});
  return type === T.SELECT || type === T.EXTERNAL_ACCOUNT ? JSON.stringify(data ?? {}) : '';
}

export const createProfileField = command({
  type: 'CREATE_PROFILE_FIELD',
  actor: 'org',
  decide(ctx: OrgContext, c: CreateProfileField): Decision<{ id: number }, ProfileFieldSaved> {
    requireAdmin(ctx, c.actor_id);
    const type = c.field_type;
    if (type === undefined || !Object.values(T).includes(type)) throw badRequest('Invalid field type.');
    const data = fieldData(type, c.field_data);
    const id = ctx.lastProfileFieldId + 1;
    let name = (c.name ?? '').trim();
    let hint = c.hint ?? '';
    if (type === T.EXTERNAL_ACCOUNT) {
      const preset = DEFAULT_EXTERNAL_ACCOUNTS[String(c.field_data?.subtype)];
      if (preset) ({ name, hint } = preset);
    }
    const field: ProfileFieldRecord = {
      id, name, hint, type, field_data: type === T.EXTERNAL_ACCOUNT && DEFAULT_EXTERNAL_ACCOUNTS[String(c.field_data?.subtype)] ? JSON.stringify({ subtype: c.field_data!.subtype }) : data,
      order: id, required: c.required ?? false, editable_by_user: c.editable_by_user ?? true, display_in_profile_summary: c.display_in_profile_summary ?? false,
    };
    checkField(ctx, field);
    return { facts: [{ type: 'ProfileFieldSaved', org: c.org, field }], value: { id } };
  },
});

export const updateProfileField = command({
  type: 'UPDATE_PROFILE_FIELD',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdateProfileField): Decision<Record<string, never>, ProfileFieldSaved> {
    requireAdmin(ctx, c.actor_id);
    const old = fieldOf(ctx, c.field_id);
    const oldData = JSON.parse(old.field_data || '{}') as Record<string, unknown>;
    if (old.type === T.EXTERNAL_ACCOUNT && oldData.subtype !== 'custom') {
      const changed = (c.name !== undefined && c.name.trim() !== old.name) || (c.hint !== undefined && c.hint !== old.hint)
        || (c.field_data !== undefined && JSON.stringify(c.field_data) !== old.field_data);
      if (changed) throw badRequest('Default custom field cannot be updated.');
    }
    const field: ProfileFieldRecord = {
      ...old,
      name: c.name !== undefined ? c.name.trim() : old.name,
      hint: c.hint ?? old.hint,
      field_data: c.field_data !== undefined && (old.type === T.SELECT || old.type === T.EXTERNAL_ACCOUNT) ? fieldData(old.type, c.field_data) : old.field_data,
      required: c.required ?? old.required,
      editable_by_user: c.editable_by_user ?? old.editable_by_user,
      display_in_profile_summary: c.display_in_profile_summary ?? old.display_in_profile_summary,
    };
    checkField(ctx, field);
    // Options a list field no longer has take their users' values with them, as in Zulip.
    const dropped = old.type === T.SELECT && c.field_data !== undefined ? Object.keys(oldData).filter((k) => !(k in c.field_data!)) : [];
    const fact: ProfileFieldSaved = { type: 'ProfileFieldSaved', org: c.org, field };
    if (dropped.length > 0) fact.dropped_values = dropped;
    return { facts: [fact], value: {} };
  },
});

export const deleteProfileField = command({
  type: 'DELETE_PROFILE_FIELD',
  actor: 'org',
  decide(ctx: OrgContext, c: DeleteProfileField): Decision<Record<string, never>, ProfileFieldDeleted> {
    requireAdmin(ctx, c.actor_id);
    fieldOf(ctx, c.field_id);
    return { facts: [{ type: 'ProfileFieldDeleted', org: c.org, field_id: c.field_id }], value: {} };
  },
});

export const reorderProfileFields = command({
  type: 'REORDER_PROFILE_FIELDS',
  actor: 'org',
  decide(ctx: OrgContext, c: ReorderProfileFields): Decision<Record<string, never>, ProfileFieldsReordered> {
    requireAdmin(ctx, c.actor_id);
    const given = new Set(c.order);
    for (const id of ctx.profileFields.keys()) if (!given.has(id)) throw badRequest('Invalid order mapping.');
    return { facts: [{ type: 'ProfileFieldsReordered', org: c.org, order: c.order.filter((id) => ctx.profileFields.has(id)) }], value: {} };
  },
});

/** Checks a value against its field (`validate_user_custom_profile_field`); returns it as stored. */
function checkValue(ctx: OrgContext, field: ProfileFieldRecord, value: unknown): ProfileValue {
  const name = field.name;
  const text = (max: number): string => {
    if (typeof value !== 'string') throw badRequest(`${name} is not a string`);
    if (codePointLength(value) > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
    return value;
  };
  switch (field.type) {
    case T.SHORT_TEXT:
    case T.LONG_TEXT: {
      const v = text(field.type === T.SHORT_TEXT ? 50 : 500);
      return { value: v, rendered_value: renderMarkdown(v, mentionResolver(ctx)).html };
    }
    case T.EXTERNAL_ACCOUNT:
    case T.PRONOUNS:
      return { value: text(50) };
    case T.DATE: {
      const v = text(50);
      const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
      const date = d ? new Date(Date.UTC(+d[1], +d[2] - 1, +d[3])) : null;
      if (!d || !date || date.getUTCFullYear() !== +d[1] || date.getUTCMonth() !== +d[2] - 1 || date.getUTCDate() !== +d[3]) throw badRequest(`${name} is not a date`);
      return { value: v };
    }
    case T.URL: {
      const v = text(2048);
      if (!isUrl(v)) throw badRequest(`${name} is not a URL`);
      return { value: v };
    }
    case T.SELECT: {
      const v = text(1000);
      if (!(v in JSON.parse(field.field_data || '{}'))) throw badRequest(`'${v}' is not a valid choice for '${name}'.`);
      return { value: v };
    }
    case T.USER: {
      if (!Array.isArray(value) || !value.every((x) => Number.isInteger(x))) throw badRequest(`${name} is not a list`);
      for (const id of value as number[]) {
        const user = ctx.users.get(id);
        if (!user) throw badRequest(`Invalid user ID: ${id}`);
        if (!user.is_active) throw badRequest(`User with ID ${id} is deactivated`);
        if (user.is_bot) throw badRequest(`User with ID ${id} is a bot`);
      }
      return { value: JSON.stringify(value) };
    }
    default:
      throw badRequest('Invalid field type.');
  }
}

/** Whether `actor` may change `target`'s value of `field`: administrators always; users their own, where the field allows. */
function checkMayEdit(ctx: OrgContext, actorId: number, targetId: number, field: ProfileFieldRecord | null): UserRecord {
  const actor = ctx.users.get(actorId);
  if (!actor || !actor.is_active) throw badRequest('Invalid user');
  if (actor.role <= Role.ADMIN) return actor;
  if (actorId !== targetId) throw adminRequired();
  if (actor.is_bot) throw badRequest('This endpoint does not accept bot requests.');
  if (field && !field.editable_by_user) throw badRequest('You are not allowed to change this field. Contact an administrator to update it.');
  return actor;
}

/**
 * The change `data` makes to `user_id`'s values (a `null` value removes one), checked
 * for `actor_id`; null when nothing changes.
 */
export function profileDataChange(ctx: OrgContext, actorId: number, userId: number, data: Array<{ id: number; value: unknown }>): ProfileDataChanged | null {
  const target = ctx.users.get(userId);
  if (!target) throw badRequest('No such user');
  const changes: ProfileDataChanged['changes'] = [];
  for (const item of data) {
    const field = fieldOf(ctx, item.id);
    checkMayEdit(ctx, actorId, userId, field);
    if (item.value === null) {
      if (target.profile_data?.[field.id] !== undefined) changes.push({ id: field.id, value: null });
      continue;
    }
    const value = checkValue(ctx, field, item.value);
    if (target.profile_data?.[field.id]?.value === value.value) continue;
    changes.push({ id: field.id, value });
  }
  return changes.length === 0 ? null : { type: 'ProfileDataChanged', org: ctx.org.id, user_id: userId, changes };
}

export const setProfileData = command({
  type: 'SET_PROFILE_DATA',
  actor: 'org',
  decide(ctx: OrgContext, c: SetProfileData): Decision<Record<string, never>, ProfileDataChanged> {
    const fact = profileDataChange(ctx, c.actor_id, c.user_id, c.data);
    return { facts: fact ? [fact] : [], value: {} };
  },
});

export const removeProfileData = command({
  type: 'REMOVE_PROFILE_DATA',
  actor: 'org',
  decide(ctx: OrgContext, c: RemoveProfileData): Decision<Record<string, never>, ProfileDataChanged> {
    const target = ctx.users.get(c.user_id);
    if (!target) throw badRequest('No such user');
    const changes: ProfileDataChanged['changes'] = [];
    for (const id of c.field_ids) {
      const field = fieldOf(ctx, id);
      checkMayEdit(ctx, c.actor_id, c.user_id, field);
      if (target.profile_data?.[id] !== undefined) changes.push({ id, value: null });
    }
    return { facts: changes.length === 0 ? [] : [{ type: 'ProfileDataChanged', org: c.org, user_id: c.user_id, changes }], value: {} };
  },
});

/** A user record with some values replaced or removed (records are replaced, never changed). */
function withValues(user: UserRecord, change: (data: Record<number, ProfileValue>) => void): UserRecord {
  const data = { ...(user.profile_data ?? {}) };
  change(data);
  return { ...user, profile_data: data };
}

/** The ids of the organization's custom profile fields, in their order (none for no such organization). */
export function profileFieldIds(view: StateView, org: number): number[] {
  const ctx = view.org(org);
  return ctx ? [...ctx.profileFields.values()].sort((a, b) => a.order - b.order || a.id - b.id).map((f) => f.id) : [];
}

/** The fields in order, as `custom_profile_fields` shows them (Zulip's `as_dict`). */
export function listProfileFields(ctx: OrgContext): Record<string, unknown>[] {
  return [...ctx.profileFields.values()]
    .sort((a, b) => a.order - b.order || a.id - b.id)
    .map((f) => {
      const view: Record<string, unknown> = { id: f.id, name: f.name, type: f.type, hint: f.hint, field_data: f.field_data, order: f.order, required: f.required, editable_by_user: f.editable_by_user };
      if (f.display_in_profile_summary) view.display_in_profile_summary = true;
      return view;
    });
}


const fieldsEvent = (view: StateView, org: number, seq: number) => [{
  org, seq, type: 'custom_profile_fields', user_ids: activeUsersWhere(view, org), event: eventJson('custom_profile_fields', { fields: listProfileFields(view.org(org)!) }),
}];

const profileFieldSaved = orgFact<ProfileFieldSaved>({
  type: 'ProfileFieldSaved',
  apply(ctx, f) {
    ctx.profileFields.set(f.field.id, { ...f.field });
    if (f.field.id > ctx.lastProfileFieldId) ctx.lastProfileFieldId = f.field.id;
    if (!f.dropped_values) return;
    const dropped = new Set(f.dropped_values);
    for (const user of ctx.users.values()) {
      const v = user.profile_data?.[f.field.id];
      if (v && dropped.has(v.value)) ctx.users.set(user.user_id, withValues(user, (d) => delete d[f.field.id]));
    }
  },
  notify: (f, seq, view) => fieldsEvent(view, f.org, seq),
});

const profileFieldDeleted = orgFact<ProfileFieldDeleted>({
  type: 'ProfileFieldDeleted',
  apply(ctx, f) {
    ctx.profileFields.delete(f.field_id);
    for (const user of ctx.users.values()) {
      if (user.profile_data?.[f.field_id] !== undefined) ctx.users.set(user.user_id, withValues(user, (d) => delete d[f.field_id]));
    }
  },
  notify: (f, seq, view) => fieldsEvent(view, f.org, seq),
});

const profileFieldsReordered = orgFact<ProfileFieldsReordered>({
  type: 'ProfileFieldsReordered',
  apply(ctx, f) {
    f.order.forEach((id, i) => {
      const field = ctx.profileFields.get(id);
      if (field) ctx.profileFields.set(id, { ...field, order: i });
    });
  },
  notify: (f, seq, view) => fieldsEvent(view, f.org, seq),
});

const profileDataChanged = orgFact<ProfileDataChanged>({
  type: 'ProfileDataChanged',
  apply(ctx, f) {
    const user = ctx.users.get(f.user_id);
    if (!user) return;
    ctx.users.set(f.user_id, withValues(user, (d) => {
      for (const change of f.changes) {
        if (change.value === null) delete d[change.id];
        else d[change.id] = { ...change.value };
      }
    }));
  },
  notify(f, seq, view) {
    // Zulip's notify_user_update_custom_profile_data: those who may access the user.
    const target = view.org(f.org)?.users.get(f.user_id);
    const users = target ? usersWhoCanAccess(view, f.org, target) : [];
    return f.changes.map((change) => {
      const data: Record<string, unknown> = { id: change.id, value: change.value?.value ?? null };
      if (change.value?.rendered_value) data.rendered_value = change.value.rendered_value;
      return { org: f.org, seq, type: 'realm_user', user_ids: users, event: eventJson('realm_user', { op: 'update', person: { user_id: f.user_id, custom_profile_field: data } }) };
    });
  },
});

export const profileFields = area({
  name: 'profile fields',
  commands: [createProfileField, updateProfileField, deleteProfileField, reorderProfileFields, setProfileData, removeProfileData],
  facts: [profileFieldSaved, profileFieldDeleted, profileFieldsReordered, profileDataChanged],
  register: [
    {
      types: ['custom_profile_fields'],
      fill(state, r, view) {
        state.custom_profile_fields = listProfileFields(view.org(r.org.id)!);
        state.custom_profile_field_types = FIELD_TYPES;
      },
    },
  ],
});
