/**
 * Topic visibility: `POST /user_topics` (mute, unmute, follow, or back to the
 * default) and the legacy `PATCH /users/me/subscriptions/muted_topics`.
 */
import { VisibilityPolicy } from '../../../actors/areas/user_topics.js';
import { channelIdByName } from '../../../actors/areas/channels.js';
import { badRequest } from '../../../actors/shared/errors.js';
import { Enum, route, S } from '../../http/route.js';

export const updateUserTopic = route({
  method: 'POST',
  path: '/api/v1/user_topics',
  operationId: 'updateUserTopic',
  auth: 'user',
  summary: 'Mute, unmute or follow a topic, or return it to the channel default',
  params: { stream_id: { schema: S.int, required: true }, topic: { schema: S.str, required: true }, visibility_policy: { schema: S.int, required: true } },
  async handler({ params, org, user, runtime }) {
    await runtime.execute({ type: 'SET_USER_TOPIC', user_id: user.user_id, org: org.id, stream_id: params.stream_id, topic: params.topic, visibility_policy: params.visibility_policy });
    return { json: {} };
  },
});

export const updateMutedTopic = route({
  method: 'PATCH',
  path: '/api/v1/users/me/subscriptions/muted_topics',
  operationId: 'muteTopic',
  auth: 'user',
  summary: 'Mute or unmute a topic (deprecated in Zulip for POST /user_topics)',
  params: { stream_id: { schema: S.int }, stream: { schema: S.str }, topic: { schema: S.str, required: true }, op: { schema: Enum(['add', 'remove']), required: true } },
  async handler({ params, org, user, runtime }) {
    if (params.stream_id === undefined && params.stream === undefined) throw badRequest("Please supply 'stream'.");
    if (params.stream_id !== undefined && params.stream !== undefined) throw badRequest("Please choose one: 'stream' or 'stream_id'.");
    const streamId = params.stream_id ?? channelIdByName(runtime, org.id, params.stream!);
    const mute = params.op === 'add';
    await runtime.execute({ type: 'SET_USER_TOPIC', user_id: user.user_id, org: org.id, stream_id: streamId, topic: params.topic, visibility_policy: mute ? VisibilityPolicy.MUTED : VisibilityPolicy.INHERIT, legacy: mute ? 'mute' : 'unmute' });
    return { json: {} };
  },
});
