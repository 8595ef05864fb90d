/**
 * The event-queue actor: one per registered client. It holds the client's event-type
 * filter and a bounded buffer of events, each with an increasing id. Events are kept
 * pre-serialized (the JSON of everything but `id`), so that completing a long-poll
 * is string concatenation and fan-out serializes a shared event only once.
 */
import { fromTransition } from 'xstate';
import type { NarrowTerm } from './narrow.js';

/** An event as it sits in a queue. */
export interface QueuedEvent {
  id: number;
  type: string;
  /** JSON members of the event without braces and without `id`. */
  json: string;
}

/** An event on its way into a queue, before it has an id. */
export interface OutgoingEvent {
  type: string;
  json: string;
}


/** Plain-data state of one event queue. */
export interface QueueContext {
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
  /** Unix ms of the last time a request touched this queue. */
  last_active: number;
  lifespan_ms: number;
  /** Set when the buffer went over its cap; the queue is then collected. */
  overflowed: boolean;
}

/** Messages a queue actor processes. */
export type QueueEvent =
  | { type: 'push'; events: OutgoingEvent[]; cap: number }
  | { type: 'ack'; last_event_id: number; now: number; reply: (error: string | null) => void }
  | { type: 'touch'; now: number };

/** Drops every event with an id at or below `last`, or says why it cannot. */
function prune(ctx: QueueContext, last: number): string | null {
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

/** XState logic of an event queue. */
export const queueLogic = fromTransition<QueueContext, QueueEvent, any, QueueContext>((ctx, event, scope) => {
  switch (event.type) {
    case 'push':
      for (const e of event.events) ctx.events.push({ id: ctx.next_id++, type: e.type, json: e.json });
      if (ctx.events.length > event.cap) {
        ctx.overflowed = true;
        ctx.events = [];
      }
      return ctx;
    case 'ack': {
      const error = prune(ctx, event.last_event_id);
      ctx.last_active = event.now;
      const reply = event.reply;
      scope.defer(() => reply(error));
      return ctx;
    }
    case 'touch':
      ctx.last_active = event.now;
      return ctx;
    default:
      return ctx;
  }
}, ({ input }) => input);

/** The body of a successful `GET /events` reply carrying `events`. */
export function renderEvents(queueId: string, events: QueuedEvent[]): string {
  let out = '{"result":"success","msg":"","events":[';
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    out += (i === 0 ? '{"id":' : ',{"id":') + e.id + ',' + e.json + '}';
  }
  return out + '],"queue_id":' + JSON.stringify(queueId) + '}';
}
