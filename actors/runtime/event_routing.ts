/**
 * From facts to queues: the deliveries a fact's declaration derives (`FactDef.notify`)
 * resolved to the event queues that get them, filtered by each queue's event types
 * and narrow, with each user's event built once however many queues they have.
 */
import { FACTS, type Stamped } from '../areas/index.js';
import type { Delivery, NamedQueuesDelivery, UserDelivery } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import { narrowPredicate } from '../narrow.js';
import type { Cell, OutgoingEvent, QueueDelivery, SequencedEvent } from '../event_queues/index.js';

/** Events resolved to the queues that get them: `cells[i]` gets `events[i]` (no tuple per pair). */
export class Routed {
  readonly cells: Cell[] = [];
  readonly events: SequencedEvent[] = [];
  /** Deliveries resolved into this: with more than one, a queue may get several events. */
  deliveries = 0;
  add(cell: Cell, event: SequencedEvent): void {
    this.cells.push(cell);
    this.events.push(event);
  }
}

/** Request details that shape events but are not facts: the sender's local echo. */
export interface DeliveryHints {
  /** The sending client's queue gets `local_message_id` on its copy of the message event. */
  localEcho?: { queue_id: string; local_id: string };
}

export class EventRouting {
  constructor(
    private readonly view: StateView,
    private readonly queues: QueueDelivery,
  ) {}

  /** The events a fact causes, resolved to the queues that get them. */
  derive(s: Stamped, out: Routed): void {
    const notify = FACTS.get(s.fact.type)?.notify;
    if (!notify) return;
    for (const d of notify(s.fact, s.seq, this.view)) this.resolve(d, out);
  }

  /** Adds the sender's `local_message_id` to its own queue's copy of a message event. */
  localEcho(routed: Routed, echo: NonNullable<DeliveryHints['localEcho']>): void {
    for (let i = 0; i < routed.cells.length; i++) {
      const event = routed.events[i];
      if (routed.cells[i].ctx.id === echo.queue_id && event.type === 'message') {
        routed.events[i] = { ...event, json: `${event.json},"local_message_id":${JSON.stringify(echo.local_id)}` };
      }
    }
  }

  private resolve(d: Delivery, out: Routed): void {
    if ('queue_ids' in d) this.resolveQueues(d, out);
    else this.resolveUsers(d, out);
  }

  private resolveQueues(d: NamedQueuesDelivery, out: Routed): void {
    out.deliveries++;
    const event: SequencedEvent = { seq: d.seq, type: d.event.type, json: d.event.json };
    const cells = d.queue_ids === 'all' ? this.queues.allCells() : this.queues.cellsOf(d.queue_ids);
    for (const cell of cells) out.add(cell, event);
  }

  /**
   * Resolves a delivery to the queues that should get it. An event the same for everyone
   * is one object for all its queues; a per-user one is built at most once per user and
   * variant, and queues handed the same built event share one sequenced copy of it.
   */
  private resolveUsers(d: UserDelivery, out: Routed): void {
    out.deliveries++;
    const org = d.message ? this.view.org(d.org) : undefined;
    const build = typeof d.event === 'function' ? d.event : undefined;
    const shared: SequencedEvent | undefined = build ? undefined : { seq: d.seq, type: (d.event as OutgoingEvent).type, json: (d.event as OutgoingEvent).json };
    const sequenced = build ? new Map<OutgoingEvent, SequencedEvent>() : undefined;
    for (const userId of d.user_ids) {
      let built: SequencedEvent[] | undefined;
      for (const cell of this.queues.queuesOf(d.org, userId)) {
        const q = cell.ctx;
        if (q.event_types !== null && !q.event_types.includes(d.type)) continue;
        if (d.message && q.narrow.length > 0 && !narrowPredicate(org!, q.narrow, this.view.user(d.org, userId), false)(d.message)) continue;
        if (shared) {
          out.add(cell, shared);
          continue;
        }
        const variant = (q.empty_topic_name ? 1 : 0) + (q.bulk_message_deletion ? 2 : 0) + (q.client_gravatar ? 4 : 0) + (q.include_deactivated_groups ? 8 : 0) + (q.slim_presence ? 16 : 0) + (q.simplified_presence_events ? 32 : 0);
        let event = built?.[variant];
        if (!event) {
          const e = build!(userId, q);
          event = sequenced!.get(e);
          if (!event) sequenced!.set(e, (event = { seq: d.seq, type: e.type, json: e.json }));
          (built ??= [])[variant] = event;
        }
        out.add(cell, event);
      }
    }
  }

  /** Pushes routed events at once, one push per queue, in the order they were routed (replay). */
  pushNow(routed: Routed): void {
    const { cells, events } = routed;
    // One delivery gives a queue at most one event (messages, heartbeats): push directly.
    if (routed.deliveries <= 1) {
      for (let i = 0; i < cells.length; i++) this.queues.pushNow(cells[i], [events[i]]);
      return;
    }
    let repeats: Map<Cell, SequencedEvent[]> | undefined;
    const seen = new Set<Cell>();
    for (let i = 0; i < cells.length; i++) {
      if (!seen.has(cells[i])) seen.add(cells[i]);
      else (repeats ??= new Map()).set(cells[i], []);
    }
    if (!repeats) {
      for (let i = 0; i < cells.length; i++) this.queues.pushNow(cells[i], [events[i]]);
      return;
    }
    for (let i = 0; i < cells.length; i++) {
      const group = repeats.get(cells[i]);
      if (!group) this.queues.pushNow(cells[i], [events[i]]);
      else group.push(events[i]);
    }
    for (const [cell, group] of repeats) this.queues.pushNow(cell, group);
  }
}
