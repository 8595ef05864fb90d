/**
 * Presence: `POST /users/me/presence` (report and poll), `GET /realm/presence` and
 * `GET /users/{user_id_or_email}/presence` (Zulip's `zerver/views/presence.py`).
 */
import { fetchPresences, OFFLINE_THRESHOLD_SECS, accessibleUserIds, canAccessAllUsers, legacyInfo, timestampsOf } from '../../../actors/rules/presence.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { userByEmail } from '../../../actors/kinds/organization.js';
import { route, S } from '../../http/route.js';

export const updatePresence = route({
  method: 'POST',
  path: '/api/v1/users/me/presence',
  // Overwrites the user's one presence record, and answers everyone's: clients ping it every minute.
  grows: false,
  operationId: 'updatePresence',
  auth: 'user',
  summary: "Report the caller's presence and fetch everyone's",
  params: {
    status: { schema: S.str, required: true },
    ping_only: { schema: S.bool },
    new_user_input: { schema: S.bool },
    last_update_id: { schema: S.int },
    history_limit_days: { schema: S.int },
    slim_presence: { schema: S.bool },
  },
  async handler({ params, org, user, runtime, config }) {
    // Zulip's `human_users_only`, before anything else.
    if (user.is_bot) throw badRequest('This endpoint does not accept bot requests.');
    const status = params.status;
    if (status !== 'active' && status !== 'idle') throw badRequest(`Invalid status: ${status}`);
    const limited = config.canAccessAllUsersGroupLimitsPresence;
    await runtime.execute({ type: 'UPDATE_PRESENCE', org: org.id, user_id: user.user_id, status, now_precise: runtime.nowMs() / 1000, limited });
    if (params.ping_only) return { json: {} };
    // Passing last_update_id asks for the modern format.
    const slim = params.last_update_id !== undefined || params.slim_presence === true;
    const { presences, lastUpdateId } = fetchPresences(runtime, org.id, user, {
      slim, lastUpdateId: params.last_update_id ?? null, historyLimitDays: params.history_limit_days ?? null, limited, now: runtime.nowSeconds(),
    });
    return { json: { presences, server_timestamp: runtime.nowMs() / 1000, presence_last_update_id: lastUpdateId } };
  },
});

export const getRealmPresence = route({
  method: 'GET',
  path: '/api/v1/realm/presence',
  operationId: 'getPresence',
  auth: 'user',
  summary: "Everyone's presence, in the legacy format",
  params: {},
  handler({ org, user, runtime, config }) {
    const { presences } = fetchPresences(runtime, org.id, user, { slim: false, lastUpdateId: null, historyLimitDays: null, limited: config.canAccessAllUsersGroupLimitsPresence, now: runtime.nowSeconds() });
    return { json: { presences, server_timestamp: runtime.nowMs() / 1000 } };
  },
});

/** Python's `int()` of a path segment: optional sign and digits, surrounding spaces allowed. */
const INTEGER = /^\s*[+-]?\d+\s*$/;

export const getUserPresence = route({
  method: 'GET',
  path: '/api/v1/users/{user_id_or_email}/presence',
  operationId: 'getUserPresence',
  auth: 'user',
  summary: "One user's presence",
  params: { user_id_or_email: { schema: S.str, in: 'path', required: true }, slim_presence: { schema: S.bool } },
  handler({ params, org, user, runtime, config }) {
    const ctx = runtime.org(org.id)!;
    const key = params.user_id_or_email;
    const target = INTEGER.test(key) ? ctx.users.get(Number(key)) : userByEmail(ctx, key);
    if (!target || !target.is_active) throw badRequest('No such user');
    if (target.bot_type !== null || target.is_bot) throw badRequest('Presence is not supported for bot users.');
    if (config.canAccessAllUsersGroupLimitsPresence && !canAccessAllUsers(ctx, user) && !accessibleUserIds(runtime, org.id, user).has(target.user_id)) {
      throw badRequest('Insufficient permission');
    }
    const row = ctx.presence.get(target.user_id);
    if (!row) throw badRequest(`No presence data for ${key}`);
    if (params.slim_presence) return { json: { presence: timestampsOf(row, target) } };
    const { aggregated, website } = legacyInfo(row, target);
    const status = runtime.nowSeconds() - (aggregated.timestamp as number) > OFFLINE_THRESHOLD_SECS ? 'offline' : aggregated.status;
    return { json: { presence: { aggregated: { status, timestamp: aggregated.timestamp }, website: { status: website.status, timestamp: website.timestamp } } } };
  },
});
