/**
 * From facts to queues: the deliveries a fact's declaration derives (`FactDef.notify`)
 * resolved to the event queues that get them, filtered by each queue's event types
 * and narrow, with each user's event built once however many queues they have.
 *
 * A live commit's last fact has its events derived late (`defer`): by the delivery pass
 * that follows the fact's durability, as it walks them, so that the first parked poll is
 * answered after one queue has been resolved rather than all of them; or, when another
 * state change comes first, right before it (`settle`). Either way they are derived
 * against the very state the fact was applied to, as `FactDef.notify` requires.
 */
import { FACTS, type Stamped } from '../areas/index.js';
import type { Delivery, NamedQueuesDelivery, UserDelivery } from '../core/area.js';
import type { StateView } from '../core/state_view.js';
import { narrowPredicate } from '../engines/narrow.js';
import type { OutgoingEvent } from '../core/area.js';
import { capabilityVariant } from '../core/capabilities.js';
import type { Cell, QueueDelivery, Routing, SequencedEvent } from '../event_queues/index.js';

/** Where resolved events go, one queue and event at a time. */
type Visit = (cell: Cell, event: SequencedEvent) => void;

/** Events resolved to the queues that get them: `cells[i]` gets `events[i]` (no tuple per pair). */
export class Routed {
  readonly cells: Cell[] = [];
  readonly events: SequencedEvent[] = [];
  /** Deliveries resolved into this: with more than one, a queue may get several events. */
  deliveries = 0;
  readonly add: Visit = (cell, event) => {
    this.cells.push(cell);
    this.events.push(event);
  };
}

/** Request details that shape events but are not facts: the sender's local echo. */
export interface DeliveryHints {
  /** The sending client's queue gets `local_message_id` on its copy of the message event. */
  localEcho?: { queue_id: string; local_id: string };
}

/**
 * The events of one commit, not all derived yet: those of its facts before the last,
 * derived as each was applied (as replay derives them), and those of its last fact,
 * derived when first needed, by `walk` in the delivery pass or by `derive` when state
 * is about to change first (`EventRouting.settle`).
 */
class Derivation implements Routing {
  /** Whether the last fact's events are in `routed` too. */
  private derived = false;
  private walked = false;

  constructor(
    private readonly routing: EventRouting,
    private readonly routed: Routed,
    private readonly last: Stamped,
    private readonly hints: DeliveryHints | undefined,
  ) {}

  /** Derives the last fact's events now: the state is still the one it was applied to. */
  derive(): void {
    if (this.derived || this.walked) return;
    this.derived = true;
    this.routing.derive(this.last, this.routed);
  }

  walk(visit: (cell: Cell, event: SequencedEvent, once: boolean) => void): void {
    if (this.walked) throw new Error('a routing is delivered once');
    this.walked = true;
    let deliveries: Delivery[] = NO_DELIVERIES;
    if (!this.derived) {
      // Nothing has changed state since the fact was applied (`settle` would have derived it): resolve as we go.
      this.routing.forget(this);
      deliveries = this.routing.notify(this.last);
    }
    const { cells, events } = this.routed;
    const once = this.routed.deliveries + deliveries.length <= 1;
    const echo = this.hints?.localEcho;
    const add: Visit = echo
      ? (cell, event) => visit(cell, cell.ctx.id === echo.queue_id && event.type === 'message' ? withLocalEcho(event, echo.local_id) : event, once)
      : (cell, event) => visit(cell, event, once);
    for (let i = 0; i < cells.length; i++) add(cells[i], events[i]);
    for (const d of deliveries) this.routing.resolve(d, add);
  }
}

const NO_DELIVERIES: Delivery[] = [];

export class EventRouting {
  /** The newest commit's routing while its last fact's events are not derived; `settle` derives them. */
  private open: Derivation | undefined;

  constructor(
    private readonly view: StateView,
    private readonly queues: QueueDelivery,
  ) {}

  /** The events a fact causes, resolved to the queues that get them. */
  derive(s: Stamped, out: Routed): void {
    for (const d of this.notify(s)) {
      out.deliveries++;
      this.resolve(d, out.add);
    }
  }

  /** The deliveries a fact's declaration derives from the current state. */
  notify(s: Stamped): Delivery[] {
    const notify = FACTS.get(s.fact.type)?.notify;
    return notify ? notify(s.fact, s.seq, this.view) : NO_DELIVERIES;
  }

  /**
   * A commit's routing, for the delivery pass once its facts are durable: `before`
   * holds the events of its facts before the last, derived as each was applied; the
   * last fact, just applied, has its events derived when first needed. The caller
   * settles before every state change, so only the newest commit is ever open.
   */
  defer(before: Routed, last: Stamped, hints: DeliveryHints | undefined): Routing {
    this.settle();
    return (this.open = new Derivation(this, before, last, hints));
  }

  /**
   * Derives what is not derived yet, against the current state. The runtime calls it
   * before anything changes state, so events always reflect the state their fact was
   * applied to, however late the delivery pass walks them.
   */
  settle(): void {
    const open = this.open;
    if (open === undefined) return;
    this.open = undefined;
    open.derive();
  }

  /** A routing is being walked: `settle` no longer needs to derive it. */
  forget(d: Derivation): void {
    if (this.open === d) this.open = undefined;
  }

  /** Resolves one delivery to its queues, handing each queue and event to `visit`. */
  resolve(d: Delivery, visit: Visit): void {
    if ('queue_ids' in d) this.resolveQueues(d, visit);
    else this.resolveUsers(d, visit);
  }

  private resolveQueues(d: NamedQueuesDelivery, visit: Visit): void {
    const event: SequencedEvent = { seq: d.seq, type: d.event.type, json: d.event.json };
    const cells = d.queue_ids === 'all' ? this.queues.allCells() : this.queues.cellsOf(d.queue_ids);
    for (const cell of cells) visit(cell, event);
  }

  /**
   * Resolves a delivery to the queues that should get it. An event the same for everyone
   * is one object for all its queues; a per-user one is built at most once per user and
   * variant, and queues handed the same built event share one sequenced copy of it.
   */
  private resolveUsers(d: UserDelivery, visit: Visit): void {
    const org = d.message ? this.view.org(d.org) : undefined;
    const build = typeof d.event === 'function' ? d.event : undefined;
    const shared: SequencedEvent | undefined = build ? undefined : { seq: d.seq, type: (d.event as OutgoingEvent).type, json: (d.event as OutgoingEvent).json };
    const sequenced = build ? new Map<OutgoingEvent, SequencedEvent>() : undefined;
    for (const userId of d.user_ids) {
      // Per variant: the event built, or null when that variant gets none.
      let built: Array<SequencedEvent | null> | undefined;
      for (const cell of this.queues.queuesOf(d.org, userId)) {
        const q = cell.ctx;
        if (q.event_types !== null && !q.event_types.includes(d.type)) continue;
        if (d.message && q.narrow.length > 0 && !narrowPredicate(org!, q.narrow, this.view.user(d.org, userId), false)(d.message)) continue;
        if (shared) {
          visit(cell, shared);
          continue;
        }
        const variant = capabilityVariant(q);
        let event = built?.[variant];
        if (event === undefined) {
          const e = build!(userId, q);
          if (e === null) event = null;
          else {
            event = sequenced!.get(e);
            if (!event) sequenced!.set(e, (event = { seq: d.seq, type: e.type, json: e.json }));
          }
          (built ??= [])[variant] = event;
        }
        if (event !== null) visit(cell, event);
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

/** The sender's own copy of a message event, with the client's `local_message_id`. */
function withLocalEcho(event: SequencedEvent, localId: string): SequencedEvent {
  return { ...event, json: `${event.json},"local_message_id":${JSON.stringify(localId)}` };
}
