/**
 * The event-queue actor: one per registered client. It holds the client's event-type
 * filter and a bounded buffer of events, each with an increasing id. Events are kept
 * pre-serialized (the JSON of everything but `id`), so that completing a long-poll
 * is string concatenation and fan-out serializes a shared event only once.
 *
 * A queue's events are a function of the fact sequence: each push carries the seq of
 * the fact it came from, and a queue ignores facts it already reflects. Replaying the
 * log into a queue restored from a snapshot therefore rebuilds it exactly, ids included.
 */
import type { Actor } from 'xstate';
import type { OutgoingEvent } from '../core/area.js';
import type { ClientCapabilities } from '../core/capabilities.js';
import { fromInPlaceTransition } from '../core/in_place_transition.js';
import type { NarrowTerm } from '../engines/narrow.js';

/** An event as it sits in a queue. */
export interface QueuedEvent {
  id: number;
  type: string;
  /** JSON members of the event without braces and without `id`. */
  json: string;
}

/** An outgoing event with the seq of the fact it derives from. */
export interface SequencedEvent extends OutgoingEvent {
  seq: number;
}

/** Plain-data state of one event queue, with its client's capabilities (`core/capabilities.ts`). */
export interface QueueContext extends ClientCapabilities {
  id: string;
  org: number;
  user_id: number;
  /** Event types the client asked for, or null for all. */
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  events: QueuedEvent[];
  next_id: number;
  newest_pruned_id: number;
  /** Idle lifetime: the queue is collected once no request has touched it for this long. */
  lifespan_ms: number;
  /** The seq of the newest fact this queue reflects. */
  seq: number;
}

/**
 * Messages a queue actor processes: batches of events, the only change to a queue that
 * comes from facts. When a request last touched the queue is not the actor's business:
 * that idle clock is bookkeeping beside the queue (see `idle.ts`). Neither is an
 * acknowledgement (see `acknowledge`).
 */
export type QueueEvent =
  /** `numbered`: `numberEvents(ctx, events)`, when the sender computed it earlier in the same synchronous pass. */
  { type: 'push'; events: SequencedEvent[]; numbered?: QueuedEvent[] };

/**
 * Drops every event with an id at or below `last` (the client's `last_event_id`), or
 * says why it cannot. Not a message to the actor: a poll must know at once whether its
 * acknowledgement holds, it is the one change no fact carries (the client re-sends it on
 * every poll), and a parked poll's queue stays passivated, so acknowledging must not
 * start its actor. It runs between messages, never while the actor processes one: pushes
 * are delivered in a synchronous pass of their own, and requests in handlers of their own.
 */
export function acknowledge(ctx: QueueContext, last: number): string | null {
  if (last < ctx.newest_pruned_id) return `An event newer than ${last} has already been pruned!`;
  if (last > ctx.newest_pruned_id && last >= ctx.next_id) return `Event ${last} was not in this queue`;
  if (last > ctx.newest_pruned_id) {
    let keep = 0;
    while (keep < ctx.events.length && ctx.events[keep].id <= last) keep++;
    if (keep > 0) ctx.events.splice(0, keep);
    ctx.newest_pruned_id = last;
  }
  return null;
}

/**
 * What a push of `events` appends to the queue: the events from facts newer than the
 * queue (older ones are already in it), numbered on from `next_id`. Pure, so that the
 * fan-out can render a parked poll's reply from it before the push is processed; the
 * push itself applies exactly this.
 */
export function numberEvents(ctx: QueueContext, events: SequencedEvent[]): QueuedEvent[] {
  const out: QueuedEvent[] = [];
  let next = ctx.next_id;
  for (const e of events) if (e.seq > ctx.seq) out.push({ id: next++, type: e.type, json: e.json });
  return out;
}

/** Appends what `numberEvents` says, and moves the queue's seq and next id past it. */
function push(ctx: QueueContext, events: SequencedEvent[], added = numberEvents(ctx, events)): void {
  for (const e of events) if (e.seq > ctx.seq) ctx.seq = e.seq;
  for (const e of added) ctx.events.push(e);
  ctx.next_id += added.length;
}

/** XState logic of an event queue: applying batches of events (acknowledgements aside, see `acknowledge`). */
export const queueLogic = fromInPlaceTransition<QueueContext, QueueEvent>((ctx, event) => {
  if (event.type === 'push') push(ctx, event.events, event.numbered);
});

/** A running queue actor. */
export type QueueActor = Actor<typeof queueLogic>;

/** The body of a successful `GET /events` reply carrying `events`. */
export function renderEvents(queueId: string, events: QueuedEvent[], more: QueuedEvent[] = NO_EVENTS): string {
  let out = '{"result":"success","msg":"","events":[';
  let open = '{"id":';
  for (let i = 0; i < events.length; i++) {
    out += open + events[i].id + ',' + events[i].json + '}';
    open = ',{"id":';
  }
  for (let i = 0; i < more.length; i++) {
    out += open + more[i].id + ',' + more[i].json + '}';
    open = ',{"id":';
  }
  // Queue ids are url-safe base64 (see `EventQueues.register` in `index.ts`): no escaping is needed.
  return out + '],"queue_id":"' + queueId + '"}';
}

const NO_EVENTS: QueuedEvent[] = [];
