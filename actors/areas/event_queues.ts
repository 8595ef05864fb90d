/**
 * Event queues as facts: registration, drops, heartbeats and restarts. The queue
 * module (`actors/queues.ts`) applies them, so a queue's contents are a function of
 * the fact sequence and survive a crash; heartbeats and restarts are events for
 * named queues, or for all of them.
 */
import { area, fact } from '../core/area.js';
import type { HeartbeatsDue, QueueRegistered, QueuesDropped, ServerRestarted } from '../shared/queue_facts.js';
import { versionFields } from '../render/register_payloads.js';

const HEARTBEAT_JSON = '"type":"heartbeat"';

const queueRegistered = fact<QueueRegistered>({
  type: 'QueueRegistered',
  apply: {},
  route: (f, to) => to.queues.applyRegistered(f, to.seq),
});

const queuesDropped = fact<QueuesDropped>({
  type: 'QueuesDropped',
  apply: {},
  route: (f, to) => to.queues.applyDropped(f),
});

const heartbeatsDue = fact<HeartbeatsDue>({
  type: 'HeartbeatsDue',
  apply: {},
  route: () => {},
  notify: (f, seq) => [{ seq, type: 'heartbeat', queue_ids: f.queue_ids, event: { type: 'heartbeat', json: HEARTBEAT_JSON } }],
});

const serverRestarted = fact<ServerRestarted>({
  type: 'ServerRestarted',
  apply: {},
  route: () => {},
  notify(_f, seq) {
    // No `immediate`: Zulip dropped it at feature level 240 (`web_reload_client` says that now).
    const json = JSON.stringify({ type: 'restart', ...versionFields(), server_generation: seq }).slice(1, -1);
    return [{ seq, type: 'restart', queue_ids: 'all', event: { type: 'restart', json } }];
  },
});

export const eventQueues = area({
  name: 'event queues',
  commands: [],
  facts: [queueRegistered, queuesDropped, heartbeatsDue, serverRestarted],
});
