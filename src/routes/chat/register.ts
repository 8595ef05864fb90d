/**
 * `POST /register`: create an event queue and return the initial state. The queue is
 * created first and the state gathered in the same synchronous step, so every fact
 * is either already in the state or on its way to the queue: never both, never neither.
 */
import { requestedCapabilities } from '../../../actors/core/capabilities.js';
import { checkEventNarrow, checkNarrow, narrowPredicate } from '../../../actors/engines/narrow.js';
import { fetchInitialState } from '../../../actors/areas/index.js';
import { versionFields } from '../../../actors/render/register_payloads.js';
import type { Runtime } from '../../../actors/runtime/runtime.js';
import type { OrgRecord, UserRecord } from '../../../actors/shared/types.js';
import { Nullable, route, S, OneOf, Enum, type ParamMap, type ParamsOf } from '../../http/route.js';
import { realmUrl } from './server.js';
import type { Config } from '../../config.js';
import { callRegisterFields } from '../../calls/providers.js';

const nullableStrings = Nullable(S.strArray);

/** Parameters shared by `POST /register` and queue-creating `GET /events`. */
export const REGISTER_PARAMS = {
  apply_markdown: { schema: S.bool },
  client_gravatar: { schema: S.bool },
  include_subscribers: { schema: OneOf(S.bool, Enum(['partial'])) },
  slim_presence: { schema: S.bool },
  presence_history_limit_days: { schema: S.int },
  event_types: { schema: nullableStrings },
  fetch_event_types: { schema: nullableStrings },
  all_public_streams: { schema: S.bool },
  client_capabilities: { schema: S.obj },
  narrow: { schema: S.list },
  queue_lifespan_secs: { schema: S.nonNegInt },
} satisfies ParamMap;

/** The checked parameters of `POST /register`. */
export type RegisterParams = ParamsOf<typeof REGISTER_PARAMS>;

/**
 * Creates a queue for `user` with the register parameters. The queue exists on return;
 * `durable` resolves once its registration is in the log.
 */
export function createQueue(runtime: Runtime, org: OrgRecord, user: UserRecord, params: RegisterParams, client: string): { queueId: string; durable: Promise<void> } {
  const narrow = checkNarrow(params.narrow ?? []);
  checkEventNarrow(narrow);
  // Operands naming nobody in this organization are refused here, as GET /messages refuses them.
  narrowPredicate(runtime.org(org.id)!, narrow, undefined, true);
  return runtime.queues.register({
    org: org.id,
    user_id: user.user_id,
    event_types: params.event_types ?? null,
    narrow,
    client,
    lifespan_secs: params.queue_lifespan_secs ?? null,
    ...requestedCapabilities(params),
  });
}

/** Builds a full register response for a freshly created queue. */
export function registerResponse(runtime: Runtime, config: Config, org: OrgRecord, user: UserRecord, params: RegisterParams, host: string | undefined, queueId: string): Record<string, unknown> {
  const fetchTypes = params.fetch_event_types !== undefined ? params.fetch_event_types : params.event_types;
  const caps = requestedCapabilities(params);
  const request = {
    org,
    user,
    realmUrl: realmUrl(host),
    heartbeatMaxMs: config.heartbeatMaxMs,
    includeSubscribers: params.include_subscribers !== false,
    caps,
    now: runtime.nowSeconds(),
    userListIncomplete: params.client_capabilities?.user_list_incomplete === true,
    nowPrecise: runtime.nowMs() / 1000,
    presence: {
      // As in Zulip, the capability implies the modern format for the initial state too.
      slim: caps.slim_presence || caps.simplified_presence_events,
      historyLimitDays: params.presence_history_limit_days ?? null,
      limited: config.canAccessAllUsersGroupLimitsPresence,
    },
  };
  const state = fetchInitialState(runtime, request, fetchTypes ? new Set(fetchTypes) : null);
  // A server setting, where the other limits are constants.
  if ('max_file_upload_size_mib' in state) state.max_file_upload_size_mib = config.maxFileUploadSizeMib;
  // Which call providers exist is a server setting too.
  if ('realm_available_video_chat_providers' in state) Object.assign(state, callRegisterFields(config));
  return { queue_id: queueId, last_event_id: -1, ...versionFields(), ...state };
}

export const register = route({
  method: 'POST',
  path: '/api/v1/register',
  operationId: 'registerQueue',
  auth: 'user',
  summary: 'Register an event queue and fetch the initial state',
  params: REGISTER_PARAMS,
  async handler({ params, org, user, runtime, config, request, client }) {
    const { queueId, durable } = createQueue(runtime, org, user, params, client);
    // The state is gathered now, in the same step that created the queue; the reply waits for the log.
    const response = registerResponse(runtime, config, org, user, params, request.headers.host, queueId);
    await durable;
    return { json: response };
  },
});
