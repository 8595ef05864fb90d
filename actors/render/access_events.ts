/**
 * The `realm_user` events that bring a guest's user list in line when their access to
 * users changes as a whole: their role changes to or from guest, or
 * `can_access_all_users_group` changes. Zulip sends none of these (`do_change_user_role`
 * sends the role update, `do_change_realm_permission_group_setting` the realm update),
 * so its clients hold a stale list until they reload. Parley sends, for each user the
 * guest shares nothing with, a `remove` when the guest becomes limited (the user turns
 * into "Unknown user"), or an `add` with the real user when the guest no longer is, so
 * that the state of a register plus its events equals a fresh register.
 */
import type { Delivery } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import { accessibleUserIds } from '../rules/presence.js';
import type { UserRecord } from '../shared/types.js';
import { INACCESSIBLE_USER_NAME } from '../rules/user_access.js';
import { eventJson } from './events.js';
import { userView } from './views.js';

/** The events for one guest whose access became `limited` (true) or unlimited (false). */
export function accessChangeDeliveries(view: StateView, orgId: number, seq: number, guest: UserRecord, limited: boolean): Delivery[] {
  const org = view.org(orgId);
  if (!org || !guest.is_active) return [];
  const shared = accessibleUserIds(view, orgId, guest);
  const out: Delivery[] = [];
  for (const u of org.users.values()) {
    if (u.is_bot || shared.has(u.user_id)) continue;
    out.push(limited
      ? { org: orgId, seq, type: 'realm_user', user_ids: [guest.user_id], event: eventJson('realm_user', { op: 'remove', person: { user_id: u.user_id, full_name: INACCESSIBLE_USER_NAME } }) }
      : { org: orgId, seq, type: 'realm_user', user_ids: [guest.user_id], event: (_id, { client_gravatar: clientGravatar }) => eventJson('realm_user', { op: 'add', person: userView(u, { profileData: true, clientGravatar, viewer: guest }) }) });
  }
  return out;
}
