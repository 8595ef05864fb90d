/**
 * Building client events: pre-serialized JSON members (see `OutgoingEvent`), and the
 * audiences most events go to.
 */
import type { StateView } from '../core/state_view.js';
import type { OutgoingEvent } from '../event_queues/queue_actor.js';
import { Role, type UserRecord } from '../types.js';

/** An event with the given type and body, serialized once. */
export function eventJson(type: string, body: Record<string, unknown>): OutgoingEvent {
  const text = JSON.stringify({ type, ...body });
  return { type, json: text.slice(1, -1) };
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
