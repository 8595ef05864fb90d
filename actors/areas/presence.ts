/**
 * Presence (Zulip's `zerver/actions/presence.py`): each client reports its user
 * `active` or `idle` about once a minute, and polls everyone else's presence.
 *
 * Where it lives, and why. Presence is a third of all requests, so a report is kept
 * as cheap as an in-memory update can be: the organization actor keeps one compact
 * table (`OrgContext.presence`, a row of three numbers per user) and the
 * organization's update counter (Zulip's per-realm `PresenceSequence`, which needs
 * one owner to number updates). A report is a command to that actor, decided one at a
 * time like any other, but what it changes is a *volatile* fact (`PresenceUpdated`,
 * see `Decision.volatile`): applied in memory, never logged, never fsync'd. A poll
 * reads the one table instead of visiting 10,000 user actors.
 *
 * Durability. The table goes into every snapshot (in the organization's head chunk)
 * and comes back with it; replay never touches it, because no logged fact does.
 * After a crash, presence is what the newest snapshot held: reports made after that
 * snapshot's organization chunk was taken are lost. Clients report again within a
 * minute, so the loss heals itself.
 *
 * Events. As in Zulip, only a user's first report and a user coming back online
 * (reporting `active` after more than 130 s without) are announced, and only in
 * organizations of at most 100 active users. That announcement is a logged fact
 * (`PresenceNotified`), as typing notifications are: a queue's events must be a
 * function of the log, or a queue rebuilt after a crash would number events
 * differently from what its client already saw. Routine reports write nothing.
 */
import { area, command, fact, orgFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import type { OrgContext } from '../kinds/organization.js';
import { effectiveSettings } from '../rules/user_settings.js';
import type { UserRecord } from '../shared/types.js';
import { BACK_ONLINE_AFTER_SECS, OFFLINE_THRESHOLD_SECS, fetchPresences, legacyClientInfoOf, presenceAudience, PRESENCE_UPDATE_MIN_FREQ_SECONDS, timestampsOf, USER_LIMIT_FOR_PRESENCE_EVENTS, type PresenceRow } from '../rules/presence.js';
import { eventJson } from '../render/events.js';
import { orgState } from '../core/state_slices.js';

declare module '../kinds/organization.js' {
  interface OrgContext {
    /** Presence, by user id (Zulip's `UserPresence`): in memory and in snapshots, never in the log (above). */
    presence: Map<number, PresenceRow>;
    /** The organization's newest presence update id (Zulip's `PresenceSequence`); 0: none yet. */
    presenceLastUpdateId: number;
  }
}

// A snapshot holds presence as it is when its head is taken: what changes after it is what a crash loses.
orgState({
  presence: { empty: () => new Map(), save: flattenPresence, load: unflattenPresence },
  presenceLastUpdateId: { empty: () => 0 },
});

/** Presence rows as four numbers each: user id, active (-1: null), connected, update id; compact in a snapshot of 10,000s of users. */
function flattenPresence(rows: Map<number, PresenceRow>): number[] {
  const out: number[] = [];
  for (const [id, r] of rows) out.push(id, r.active ?? -1, r.connected, r.update_id);
  return out;
}

function unflattenPresence(flat: number[]): Map<number, PresenceRow> {
  const rows = new Map<number, PresenceRow>();
  for (let i = 0; i + 3 < flat.length; i += 4) rows.set(flat[i], { active: flat[i + 1] < 0 ? null : flat[i + 1], connected: flat[i + 2], update_id: flat[i + 3] });
  return rows;
}

/** A user's presence row changed (volatile: applied in memory, never logged). */
export interface PresenceUpdated {
  type: 'PresenceUpdated';
  org: number;
  user_id: number;
  active: number | null;
  connected: number;
  update_id: number;
}

/** A user reported in for the first time or came back online: clients are told. */
export interface PresenceNotified {
  type: 'PresenceNotified';
  org: number;
  user_id: number;
  email: string;
  active_timestamp: number;
  idle_timestamp: number;
  /** Unix seconds, with fractions, when the report arrived. */
  server_timestamp: number;
  /** Only users who may access this one are told (`CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE`). */
  limited: boolean;
}

/** The caller (a human user) reports `status`. */
export interface UpdatePresence {
  type: 'UPDATE_PRESENCE';
  org: number;
  user_id: number;
  status: 'active' | 'idle';
  /** Unix seconds with fractions, for `server_timestamp`. */
  now_precise: number;
  limited: boolean;
}

/** Whether the report changed the row (and so the organization's update id). */
export interface PresenceReport {
  changed: boolean;
  notified: boolean;
}

export const updatePresence = command({
  type: 'UPDATE_PRESENCE',
  actor: 'org',
  decide(ctx: OrgContext, c: UpdatePresence, env: DecideEnv, view: StateView): Decision<PresenceReport, PresenceNotified> {
    const user = ctx.users.get(c.user_id);
    if (!user || !user.is_active) throw badRequest('Invalid user');
    if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
    // A user who turned presence off reports nothing, as in Zulip.
    if (effectiveSettings(user.settings).presence_enabled === false) return { facts: [], value: { changed: false, notified: false } };
    const now = env.now();
    const active = c.status === 'active';
    const row = ctx.presence.get(user.user_id);
    // As in Zulip, a user never seen counts as a day away.
    const sinceActive = row?.active != null ? now - row.active : 86400;
    const sinceConnected = row ? now - row.connected : 86400;
    let next: { active: number | null; connected: number };
    if (!row) next = { active: active ? now : null, connected: now };
    else {
      next = { active: row.active, connected: row.connected };
      if (sinceConnected > PRESENCE_UPDATE_MIN_FREQ_SECONDS) next.connected = now;
      if (active && sinceActive > PRESENCE_UPDATE_MIN_FREQ_SECONDS) {
        next.active = now;
        if (now > next.connected) next.connected = now;
      }
    }
    const changed = !row || next.active !== row.active || next.connected !== row.connected;
    if (!changed) return { facts: [], value: { changed: false, notified: false } };
    const updated: PresenceUpdated = { type: 'PresenceUpdated', org: c.org, user_id: user.user_id, ...next, update_id: ctx.presenceLastUpdateId + 1 };
    const facts: PresenceNotified[] = [];
    const cameOnline = !row || (active && sinceActive > BACK_ONLINE_AFTER_SECS);
    if (cameOnline && presenceAudience(view, c.org, user.user_id, c.limited).length <= USER_LIMIT_FOR_PRESENCE_EVENTS) {
      const ts = timestampsOf({ ...next, update_id: updated.update_id }, user);
      facts.push({ type: 'PresenceNotified', org: c.org, user_id: user.user_id, email: user.email, ...ts, server_timestamp: c.now_precise, limited: c.limited });
    }
    return { facts, volatile: [updated], value: { changed: true, notified: facts.length > 0 } };
  },
});

/**
 * The forced presence update when a user turns `presence_enabled` on or off (Zulip's
 * `do_change_user_setting`): on, active now; off, a row last active and connected
 * `OFFLINE_THRESHOLD_SECS` + 120 s ago, so that the user shows offline for as long as
 * it stays off. Everyone who may see the user is told, however large the organization.
 */
export function presenceToggled(ctx: OrgContext, user: UserRecord, enabled: boolean, now: number, limited: boolean): { volatile: PresenceUpdated; fact: PresenceNotified } {
  // Off: last active and connected a few minutes ago (not "never active", which would show the join date).
  const away = now - OFFLINE_THRESHOLD_SECS - 120;
  const row = enabled ? { active: now, connected: now } : { active: away, connected: away };
  const updated: PresenceUpdated = { type: 'PresenceUpdated', org: ctx.org.id, user_id: user.user_id, ...row, update_id: ctx.presenceLastUpdateId + 1 };
  const ts = timestampsOf({ ...row, update_id: updated.update_id }, user);
  return { volatile: updated, fact: { type: 'PresenceNotified', org: ctx.org.id, user_id: user.user_id, email: user.email, ...ts, server_timestamp: now, limited } };
}

const presenceUpdated = orgFact<PresenceUpdated>({
  type: 'PresenceUpdated',
  apply(ctx, f) {
    const row = ctx.presence.get(f.user_id);
    // Rows change in place: the snapshot takes the whole table in one step.
    if (row) {
      row.active = f.active;
      row.connected = f.connected;
      row.update_id = f.update_id;
    } else ctx.presence.set(f.user_id, { active: f.active, connected: f.connected, update_id: f.update_id });
    if (f.update_id > ctx.presenceLastUpdateId) ctx.presenceLastUpdateId = f.update_id;
  },
});

/** The `presence` event in the form a queue asked for (Zulip's `process_presence_event`). */
function presenceEvent(f: PresenceNotified, modern: boolean, slim: boolean) {
  if (modern) return eventJson('presence', { presences: { [f.user_id]: { active_timestamp: f.active_timestamp, idle_timestamp: f.idle_timestamp } } });
  const website = legacyClientInfoOf(f.active_timestamp, f.idle_timestamp);
  const email = slim ? {} : { email: f.email };
  return eventJson('presence', { user_id: f.user_id, ...email, server_timestamp: f.server_timestamp, presence: { website } });
}

const presenceNotified = fact<PresenceNotified>({
  type: 'PresenceNotified',
  apply: {},
  route: () => undefined,
  notify: (f, seq, view) => [{
    org: f.org,
    seq,
    type: 'presence',
    user_ids: presenceAudience(view, f.org, f.user_id, f.limited),
    event: (_userId, caps) => presenceEvent(f, caps.simplified_presence_events, caps.slim_presence),
  }],
});

export const presence = area({
  name: 'presence',
  commands: [updatePresence],
  facts: [presenceUpdated, presenceNotified],
  register: [{
    types: ['presence'],
    fill(state, r, view) {
      const { presences, lastUpdateId } = fetchPresences(view, r.org.id, r.user, { slim: r.presence.slim, lastUpdateId: null, historyLimitDays: r.presence.historyLimitDays, limited: r.presence.limited, now: r.now });
      state.presences = presences;
      state.presence_last_update_id = lastUpdateId;
      state.server_timestamp = r.nowPrecise;
    },
  }],
});
