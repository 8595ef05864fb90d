/**
 * Facts about event queues. A queue's contents are a function of the fact sequence,
 * so queues survive crashes; these facts are applied by the event-queue module, not
 * by a domain actor.
 */
import type { NarrowTerm } from './narrow.js';

/** A client registered an event queue. */
export interface QueueRegistered {
  type: 'QueueRegistered';
  org: number;
  user_id: number;
  queue_id: string;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_ms: number;
  empty_topic_name: boolean;
  /** Capability `bulk_message_deletion` (absent in facts written before it existed: false). */
  bulk_message_deletion?: boolean;
  /** The client computes Gravatar URLs itself (`client_gravatar`; absent in older facts: false). */
  client_gravatar?: boolean;
  /** Capability `include_deactivated_groups` (absent in older facts: false). */
  include_deactivated_groups?: boolean;
  /** Capability `archived_channels` (absent in older facts: false). */
  archived_channels?: boolean;
  /** `slim_presence` and capability `simplified_presence_events` (absent in older facts: false). */
  slim_presence?: boolean;
  simplified_presence_events?: boolean;
}
/** The `QueuesDropped` reason of a queue its client deleted (`DELETE /events`). */
export const DELETED_BY_CLIENT = 'deleted by its client';

/** Event queues went away: deleted by their client, idle too long, or overflowed. */
export interface QueuesDropped { type: 'QueuesDropped'; queue_ids: string[]; reason: string }
/** Parked polls of these queues were due a heartbeat event. */
export interface HeartbeatsDue { type: 'HeartbeatsDue'; queue_ids: string[] }
/** The server started again; every queue gets a `restart` event. */
export interface ServerRestarted { type: 'ServerRestarted' }

export type QueueFact = QueueRegistered | QueuesDropped | HeartbeatsDue | ServerRestarted;

/** What applying queue facts needs from the event-queue module. */
export interface QueueFactTarget {
  applyRegistered(fact: QueueRegistered, seq: number): void;
  applyDropped(fact: QueuesDropped): void;
}

declare module './core/area.js' {
  interface FactRecipients {
    /** Facts about event queues are applied by the queue module. */
    readonly queues: QueueFactTarget;
  }
}
