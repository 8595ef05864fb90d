/**
 * Facts about event queues. A queue's contents are a function of the fact sequence,
 * so queues survive crashes; these facts are applied by the event-queue module, not
 * by a domain actor.
 */
import type { StoredCapabilities } from '../core/capabilities.js';
import type { NarrowTerm } from '../engines/narrow.js';

/** A client registered an event queue, with its capabilities (each one a field; facts written before one existed lack it: off). */
export interface QueueRegistered extends StoredCapabilities {
  type: 'QueueRegistered';
  org: number;
  user_id: number;
  queue_id: string;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_ms: number;
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

declare module '../core/area.js' {
  interface FactRecipients {
    /** Facts about event queues are applied by the queue module. */
    readonly queues: QueueFactTarget;
  }
}
