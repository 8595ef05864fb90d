/**
 * Full members (Zulip's `role:fullmembers` and `promote_new_full_members`): a member
 * joins the group once the organization's `waiting_period_threshold` (in days) has
 * passed since they joined. A new member starts on probation when the threshold is
 * above zero; an hourly check promotes those whose time has come, and changing the
 * threshold moves members in or out of the group at once, as Zulip's
 * `update_users_in_full_members_system_group` does. Each move is a `user_group`
 * `add_members` or `remove_members` event.
 */
import { area, command, orgFact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import { SYSTEM_GROUPS } from '../rules/group_settings.js';
import type { OrgContext } from '../kinds/organization.js';
import { realmSettings } from '../rules/realm_settings.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role, type UserRecord } from '../shared/types.js';
import { onProbation } from '../rules/users.js';

/** Members joined or left `role:fullmembers` (the waiting period passed, or its length changed). */
export interface FullMembersChanged { type: 'FullMembersChanged'; org: number; promoted: number[]; demoted: number[] }

export interface PromoteFullMembers { type: 'PROMOTE_FULL_MEMBERS'; org: number }

/** The moves into and out of `role:fullmembers` that a waiting period of `thresholdDays` makes at `now`; null when none. */
export function fullMemberChanges(ctx: OrgContext, thresholdDays: number, now: number): FullMembersChanged | null {
  const promoted: number[] = [];
  const demoted: number[] = [];
  for (const user of ctx.users.values()) {
    if (user.role !== Role.MEMBER) continue;
    const waiting = onProbation(user, thresholdDays, now);
    if (user.probation === true && !waiting) promoted.push(user.user_id);
    if (user.probation !== true && waiting) demoted.push(user.user_id);
  }
  return promoted.length + demoted.length === 0 ? null : { type: 'FullMembersChanged', org: ctx.org.id, promoted, demoted };
}

export const promoteFullMembers = command({
  type: 'PROMOTE_FULL_MEMBERS',
  actor: 'org',
  decide(ctx: OrgContext, c: PromoteFullMembers, env: DecideEnv): Decision<{ promoted: number }, FullMembersChanged> {
    const change = fullMemberChanges(ctx, realmSettings(ctx).waiting_period_threshold, env.now());
    return { facts: change ? [change] : [], value: { promoted: change?.promoted.length ?? 0 } };
  },
});

const fullMembersChanged = orgFact<FullMembersChanged>({
  type: 'FullMembersChanged',
  apply(ctx, f) {
    for (const [ids, probation] of [[f.promoted, false], [f.demoted, true]] as const) {
      for (const id of ids) {
        const user = ctx.users.get(id);
        if (!user) continue;
        const next: UserRecord = { ...user };
        if (probation) next.probation = true;
        else delete next.probation;
        ctx.users.set(id, next);
      }
    }
  },
  notify(f, seq, view) {
    const org = view.org(f.org)!;
    const everyone = activeUsersWhere(view, f.org);
    const active = (ids: number[]): number[] => ids.filter((id) => org.users.get(id)?.is_active === true);
    const out: Delivery[] = [];
    const push = (op: string, ids: number[]): void => {
      if (ids.length > 0) out.push({ org: f.org, seq, type: 'user_group', user_ids: everyone, event: eventJson('user_group', { op, group_id: SYSTEM_GROUPS.full_members, user_ids: ids }) });
    };
    push('add_members', active(f.promoted));
    push('remove_members', active(f.demoted));
    return out;
  },
});

export const fullMembers = area({
  name: 'full members',
  commands: [promoteFullMembers],
  facts: [fullMembersChanged],
});
