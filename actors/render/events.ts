/**
 * Building client events: pre-serialized JSON members (see `OutgoingEvent`), and the
 * audiences most events go to.
 */
import type { StateView } from '../core/state_view.js';
import type { OutgoingEvent } from '../core/area.js';
import { Role, type UserRecord } from '../shared/types.js';
import type { Delivery } from '../core/area.js';
import { deliveryEmailFor } from './views.js';
import { usersWhoCanAccess } from '../rules/user_access.js';

/** An event with the given type and body, serialized once. */
export function eventJson(type: string, body: Record<string, unknown>): OutgoingEvent {
  const text = JSON.stringify({ type, ...body });
  return { type, json: text.slice(1, -1) };
}

/** One event of `type` to the user a fact is about, and to nobody else. */
export function toOwner(f: { org: number; user_id: number }, seq: number, type: string, body: Record<string, unknown>): Delivery[] {
  return [{ org: f.org, seq, type, user_ids: [f.user_id], event: eventJson(type, body) }];
}

/** An event whose one list member (`streams`, `subscriptions`) is given as serialized items. */
export function listEvent(type: string, op: string, key: string, items: string[]): OutgoingEvent {
  return { type, json: `"type":${JSON.stringify(type)},"op":${JSON.stringify(op)},${JSON.stringify(key)}:[${items.join(',')}]` };
}

/** Ids of the active users of an organization that `keep` accepts. */
export function activeUsersWhere(view: StateView, org: number, keep: (user: UserRecord) => boolean = () => true): number[] {
  const ctx = view.org(org);
  if (!ctx) return [];
  const ids: number[] = [];
  for (const u of ctx.users.values()) if (u.is_active && keep(u)) ids.push(u.user_id);
  return ids;
}

/** Who is told of a new channel: everyone but guests for a public one, administrators for a private one. */
export function seesNewChannel(inviteOnly: boolean): (user: UserRecord) => boolean {
  return inviteOnly ? (u) => u.role <= Role.ADMIN : (u) => u.role !== Role.GUEST;
}

/**
 * `realm_user` `update` with a user's `delivery_email` as each active user may see it
 * (null where its owner's `email_address_visibility` hides it): after the address or
 * the setting changed.
 */
export function deliveryEmailDelivery(view: StateView, org: number, seq: number, user: UserRecord): Delivery {
  const directory = view.org(org)!.users;
  const built: OutgoingEvent[] = [];
  return {
    // Zulip's get_users_with_access_to_real_email: only those who may access the user.
    org, seq, type: 'realm_user', user_ids: usersWhoCanAccess(view, org, user),
    event: (viewerId) => {
      const email = deliveryEmailFor(user, directory.get(viewerId)!);
      return (built[email === null ? 0 : 1] ??= eventJson('realm_user', { op: 'update', person: { user_id: user.user_id, delivery_email: email } }));
    },
  };
}

/**
 * What a role change shows its user of others' delivery emails: a `realm_user`
 * `update` for each user whose address the new role sees and the old one did not, or
 * the other way round.
 */
export function deliveryEmailsForRole(view: StateView, org: number, seq: number, user: UserRecord, fromRole: UserRecord['role']): Delivery[] {
  const before = { ...user, role: fromRole };
  const out: Delivery[] = [];
  for (const other of view.org(org)!.users.values()) {
    if (other.user_id === user.user_id) continue;
    const email = deliveryEmailFor(other, user);
    if (email === deliveryEmailFor(other, before)) continue;
    out.push({ org, seq, type: 'realm_user', user_ids: [user.user_id], event: eventJson('realm_user', { op: 'update', person: { user_id: other.user_id, delivery_email: email } }) });
  }
  return out;
}
