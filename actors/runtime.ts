/**
 * The actor system: creates the server, organization, channel and user actors,
 * routes commands to the actor that owns them and facts to every actor they concern,
 * hands facts to the log, and delivers the derived events once the facts are durable.
 *
 * The HTTP layer talks only to this class: it sends commands (`execute`) and asks
 * read-only questions through the query modules, which read actor snapshots.
 */
import { randomBytes } from 'node:crypto';
import { boardLogic, emptyBoard, type BoardCommand, type BoardContext } from './board.js';
import { channelLogic, emptyChannel, type ChannelCommand, type ChannelContext } from './channel.js';
import { EventQueues, type Cell, type OutgoingEvent, type QueueContext, type QueueDelivery, type QueueOptions, type QueueService, type SequencedEvent } from './event_queues/index.js';
import { subscriptionIndex, type Fact, type Stamped } from './facts.js';
import { contextOf, startActor, type DecideEnv, type DomainActor, type Outcome } from './logic.js';
import { narrowPredicate } from './narrow.js';
import { notify, type Delivery } from './notify.js';
import { emptyOrg, orgLogic, type OrgCommand, type OrgContext } from './organization.js';
import { versionFields } from './register_state.js';
import { ActorSystem } from './system.js';
import { emptyServer, serverLogic, type ServerCommand, type ServerContext } from './server.js';
import { emptyUser, userLogic, type UserCommand, type UserContext } from './user.js';
import type { World } from './world.js';

/** Where facts go to become durable. The persistence layer implements it. */
export interface FactSink {
  /** Appends records; `onDurable` runs once they are durable, in append order. */
  append(records: Stamped[], onDurable: () => void): void;
}

/** A sink that keeps nothing: facts are "durable" on the next microtask. For tests and tools. */
export const volatileSink: FactSink = {
  append(_records, onDurable) {
    queueMicrotask(onDurable);
  },
};

/** Injected sources of time and randomness, so tests are deterministic. */
export interface RuntimeOptions {
  /** Milliseconds since the epoch. */
  now(): number;
  randomBytes(n: number): Buffer;
  sink: FactSink;
  queues: Omit<QueueOptions, 'now' | 'token' | 'random' | 'commit'>;
  random(): number;
}

/** Which actor a command is for. */
export type Target =
  | { kind: 'server'; command: ServerCommand }
  | { kind: 'org'; org: number; command: OrgCommand }
  | { kind: 'channel'; org: number; stream_id: number; command: ChannelCommand }
  | { kind: 'user'; org: number; user_id: number; command: UserCommand }
  | { kind: 'board'; command: BoardCommand };

/** The actors of one organization. */
interface Shard {
  org: DomainActor<OrgContext, OrgCommand>;
  channels: Map<number, DomainActor<ChannelContext, ChannelCommand>>;
  users: Map<number, DomainActor<UserContext, UserCommand>>;
}

type AnyDomainActor = DomainActor<any, any>;

/** Request details that shape events but are not facts: the sender's local echo. */
export interface DeliveryHints {
  /** The sending client's queue gets `local_message_id` on its copy of the message event. */
  localEcho?: { queue_id: string; local_id: string };
}

/** A queue and the event it gets, resolved when the fact was applied. */
/** Events resolved to the queues that get them: `cells[i]` gets `events[i]` (no tuple per pair). */
class Routed {
  readonly cells: Cell[] = [];
  readonly events: SequencedEvent[] = [];
  /** Deliveries resolved into this: with more than one, a queue may get several events. */
  deliveries = 0;
  add(cell: Cell, event: SequencedEvent): void {
    this.cells.push(cell);
    this.events.push(event);
  }
}

const HEARTBEAT_JSON = '"type":"heartbeat"';

export const defaultRuntimeOptions = (sink: FactSink): RuntimeOptions => ({
  now: () => Date.now(),
  randomBytes: (n) => randomBytes(n),
  random: () => Math.random(),
  sink,
  queues: {
    heartbeatMinMs: 45000,
    heartbeatMaxMs: 55000,
    defaultLifespanMs: 600000,
    maxLifespanMs: 7 * 24 * 3600 * 1000,
    maxEvents: 20000,
    passivateAfterMs: 60000,
  },
});

export class Runtime implements World {
  readonly queues: QueueService;
  /** The queues' delivery side: facts about queues, events to deliver, snapshots. Only this class holds it. */
  private readonly queueDelivery: QueueDelivery;
  /** The seq of the newest fact applied to state. */
  lastSeq = 0;
  /** Every fact up to this seq is durable and its events are in their queues (not merely staged). */
  deliveredSeq = 0;
  private serverActor: DomainActor<ServerContext, ServerCommand>;
  /** One XState system for every actor of this runtime. */
  private readonly system = new ActorSystem();
  private boardActor: DomainActor<BoardContext, BoardCommand> = startActor(this.system, boardLogic, emptyBoard());
  private readonly shards = new Map<number, Shard>();
  private readonly orgLogic = orgLogic(this);
  private readonly channelLogic = channelLogic(this);
  private messageIdCounter = 0;
  private readonly env: DecideEnv;

  constructor(private readonly opts: RuntimeOptions) {
    this.serverActor = startActor(this.system, serverLogic, emptyServer());
    this.queues = this.queueDelivery = new EventQueues(this.system, {
      ...opts.queues,
      now: opts.now,
      random: opts.random,
      token: () => opts.randomBytes(15).toString('base64url'),
      commit: (facts) => this.commitFacts(facts),
    });
    this.env = {
      now: () => Math.floor(opts.now() / 1000),
      token: (bytes) => opts.randomBytes(bytes).toString('base64url'),
      nextMessageId: () => ++this.messageIdCounter,
      stamp: (facts: Fact[]) => facts.map((fact) => ({ seq: ++this.lastSeq, fact })),
    };
  }

  // World: synchronous, read-only views of actor state.
  server(): ServerContext {
    return contextOf(this.serverActor);
  }
  org(orgId: number): OrgContext | undefined {
    const shard = this.shards.get(orgId);
    return shard && contextOf(shard.org);
  }
  channel(orgId: number, streamId: number): ChannelContext | undefined {
    const actor = this.shards.get(orgId)?.channels.get(streamId);
    return actor && contextOf(actor);
  }
  user(orgId: number, userId: number): UserContext | undefined {
    const actor = this.shards.get(orgId)?.users.get(userId);
    return actor && contextOf(actor);
  }
  /** The public message board's state. */
  board(): BoardContext {
    return contextOf(this.boardActor);
  }
  channelIdsOf(orgId: number): number[] {
    return [...(this.shards.get(orgId)?.channels.keys() ?? [])];
  }
  /** Milliseconds now, by the injected clock. */
  nowMs(): number {
    return this.opts.now();
  }

  /** Unix seconds now, by the injected clock. */
  nowSeconds(): number {
    return Math.floor(this.opts.now() / 1000);
  }

  /**
   * Sends a command to the actor that owns it. Resolves with the decision's value
   * once its facts are durable; rejects with the decision's error.
   */
  execute(target: Target, hints?: DeliveryHints): Promise<unknown> {
    const actor = this.actorFor(target);
    return new Promise((resolve, reject) => {
      const done = (outcome: Outcome): void => {
        if (!outcome.ok) reject(outcome.error);
        else this.commit(actor, outcome.stamped, () => resolve(outcome.value), hints);
      };
      actor.send({ type: 'command', command: target.command, env: this.env, done });
    });
  }

  /**
   * Applies a fact read back from the log, through the same reducers as live traffic,
   * and puts its events in their queues. A queue gets all of one fact's events in one
   * push, as live delivery gives them (a queue ignores events of a fact it already
   * reflects, so pushing them one by one would keep only the first).
   */
  replay(stamped: Stamped): void {
    this.route(stamped, null);
    const routed = new Routed();
    this.derive(stamped, routed);
    if (routed.cells.length > 0) this.pushRouted(routed);
    if (stamped.seq > this.lastSeq) this.lastSeq = stamped.seq;
    this.deliveredSeq = this.lastSeq;
    if (stamped.fact.type === 'MessageSent' && stamped.fact.message.id > this.messageIdCounter) this.messageIdCounter = stamped.fact.message.id;
  }

  /** Pushes routed events at once, one push per queue, in the order they were routed. */
  private pushRouted(routed: Routed): void {
    const { cells, events } = routed;
    // One delivery gives a queue at most one event (messages, heartbeats): push directly.
    if (routed.deliveries <= 1) {
      for (let i = 0; i < cells.length; i++) this.queueDelivery.pushNow(cells[i], [events[i]]);
      return;
    }
    let repeats: Map<Cell, SequencedEvent[]> | undefined;
    const seen = new Set<Cell>();
    for (let i = 0; i < cells.length; i++) {
      if (!seen.has(cells[i])) seen.add(cells[i]);
      else (repeats ??= new Map()).set(cells[i], []);
    }
    if (!repeats) {
      for (let i = 0; i < cells.length; i++) this.queueDelivery.pushNow(cells[i], [events[i]]);
      return;
    }
    for (let i = 0; i < cells.length; i++) {
      const group = repeats.get(cells[i]);
      if (!group) this.queueDelivery.pushNow(cells[i], [events[i]]);
      else group.push(events[i]);
    }
    for (const [cell, group] of repeats) this.queueDelivery.pushNow(cell, group);
  }

  private actorFor(target: Target): AnyDomainActor {
    if (target.kind === 'server') return this.serverActor;
    if (target.kind === 'board') return this.boardActor;
    const shard = this.shards.get(target.org);
    const actor = !shard ? undefined
      : target.kind === 'org' ? shard.org
      : target.kind === 'channel' ? shard.channels.get(target.stream_id)
      : shard.users.get(target.user_id);
    if (!actor) throw new Error(`No actor for ${target.kind} command ${target.command.type}`);
    return actor;
  }

  /** Routes freshly decided facts, resolves their events to queues, and logs them. */
  private commit(origin: AnyDomainActor | null, stamped: Stamped[], reply: () => void, hints?: DeliveryHints): void {
    if (stamped.length === 0) {
      reply();
      return;
    }
    const routed = new Routed();
    for (const s of stamped) {
      this.route(s, origin);
      this.derive(s, routed);
    }
    const echo = hints?.localEcho;
    if (echo) {
      for (let i = 0; i < routed.cells.length; i++) {
        const event = routed.events[i];
        if (routed.cells[i].ctx.id === echo.queue_id && event.type === 'message') {
          routed.events[i] = { ...event, json: `${event.json},"local_message_id":${JSON.stringify(echo.local_id)}` };
        }
      }
    }
    const last = stamped[stamped.length - 1].seq;
    this.opts.sink.append(stamped, () => {
      for (let i = 0; i < routed.cells.length; i++) this.queueDelivery.stage(routed.cells[i], routed.events[i]);
      // deliveredSeq moves only once the events are in their queues (snapshots rely on it).
      this.queueDelivery.scheduleFlush(() => {
        if (last > this.deliveredSeq) this.deliveredSeq = last;
      });
      reply();
    });
  }

  /**
   * Commits facts decided outside the domain actors (the queue system's); resolves once
   * they are durable and the events they cause are in their queues.
   */
  commitFacts(facts: Fact[]): Promise<void> {
    const stamped = this.env.stamp(facts);
    return new Promise((resolve) => this.commit(null, stamped, () => this.queueDelivery.scheduleFlush(resolve)));
  }

  /** The events a fact causes, resolved to the queues that get them. */
  private derive(s: Stamped, out: Routed): void {
    const fact = s.fact;
    switch (fact.type) {
      case 'HeartbeatsDue':
      {
        const heartbeat: SequencedEvent = { seq: s.seq, type: 'heartbeat', json: HEARTBEAT_JSON };
        for (const cell of this.queueDelivery.cellsOf(fact.queue_ids)) out.add(cell, heartbeat);
        return;
      }
      case 'ServerRestarted': {
        const json = JSON.stringify({ type: 'restart', ...versionFields(), server_generation: s.seq, immediate: false }).slice(1, -1);
        const restart: SequencedEvent = { seq: s.seq, type: 'restart', json };
        for (const cell of this.queueDelivery.allCells()) out.add(cell, restart);
        return;
      }
      case 'QueueRegistered':
      case 'QueuesDropped':
      case 'BoardMessagePosted':
      case 'GuestbookEntryPosted':
      case 'BoardSwitchChanged':
      case 'NonceIssued':
        return;
      default:
        for (const d of notify(this, s)) this.resolve(d, out);
    }
  }

  /** Resolves a delivery to the queues that should get it, and builds each user's event once. */
  private resolve(d: Delivery, out: Routed): void {
    out.deliveries++;
    const org = d.message ? this.org(d.org) : undefined;
    for (const userId of d.user_ids) {
      // Built at most once per user and variant, however many queues the user has.
      const built: SequencedEvent[] = [];
      for (const cell of this.queueDelivery.queuesOf(d.org, userId)) {
        const q = cell.ctx;
        if (q.event_types !== null && !q.event_types.includes(d.type)) continue;
        if (d.message && q.narrow.length > 0 && !narrowPredicate(org!, q.narrow, this.user(d.org, userId), false)(d.message)) continue;
        const variant = q.empty_topic_name ? 1 : 0;
        let event = built[variant];
        if (!event) {
          const e: OutgoingEvent = typeof d.event === 'function' ? d.event(userId, q.empty_topic_name) : d.event;
          event = built[variant] = { seq: d.seq, type: e.type, json: e.json };
        }
        out.add(cell, event);
      }
    }
  }

  /** Applies a fact to every actor it concerns except `origin`, creating actors it brings into being. */
  private route(s: Stamped, origin: AnyDomainActor | null): void {
    const apply = (actor: AnyDomainActor | undefined): void => {
      if (actor && actor !== origin) actor.send({ type: 'apply', stamped: s });
    };
    const fact = s.fact;
    switch (fact.type) {
      case 'QueueRegistered':
        this.queueDelivery.applyRegistered(fact, s.seq);
        return;
      case 'QueuesDropped':
        this.queueDelivery.applyDropped(fact);
        return;
      case 'HeartbeatsDue':
      case 'ServerRestarted':
        return;
      case 'BoardMessagePosted':
      case 'GuestbookEntryPosted':
      case 'BoardSwitchChanged':
      case 'NonceIssued':
        apply(this.boardActor);
        return;
      case 'OrgCreated': {
        apply(this.serverActor);
        const shard = this.ensureShard(fact.org.id);
        apply(shard.org);
        this.ensureUser(shard, fact.owner.user_id);
        return;
      }
    }
    const shard = this.shards.get(fact.org);
    if (!shard) throw new Error(`Fact ${fact.type} for unknown organization ${fact.org} at seq ${s.seq}`);
    switch (fact.type) {
      case 'OrgActivationChanged':
        apply(this.serverActor);
        apply(shard.org);
        break;
      case 'UserActivationChanged':
        apply(shard.org);
        break;
      case 'UserCreated':
        apply(shard.org);
        this.ensureUser(shard, fact.user.user_id);
        break;
      case 'ChannelCreated':
        apply(shard.org);
        apply(this.ensureChannel(shard, fact.channel.stream_id));
        break;
      case 'Subscribed':
      case 'Unsubscribed':
        apply(shard.channels.get(fact.stream_id));
        for (const id of fact.user_ids) apply(shard.users.get(id));
        break;
      case 'SubscriptionsAdded':
      case 'SubscriptionsRemoved': {
        // Each actor reads its own part from the fact's index, and gets the fact once.
        const index = subscriptionIndex(fact);
        if (fact.type === 'SubscriptionsAdded') {
          apply(shard.org);
          for (const channel of fact.created) this.ensureChannel(shard, channel.stream_id);
        }
        for (const streamId of index.byChannel.keys()) apply(shard.channels.get(streamId));
        for (const channel of index.created.values()) if (!index.byChannel.has(channel.stream_id)) apply(shard.channels.get(channel.stream_id));
        for (const id of index.byUser.keys()) apply(shard.users.get(id));
        break;
      }
      case 'MessageSent': {
        apply(this.serverActor);
        apply(shard.org);
        const m = fact.message;
        if (m.stream_id !== null) {
          const channel = shard.channels.get(m.stream_id);
          apply(channel);
          for (const id of contextOf(channel!).subscribers) apply(shard.users.get(id));
        } else {
          for (const id of m.dm_user_ids ?? []) apply(shard.users.get(id));
        }
        break;
      }
      case 'FlagsUpdated':
        apply(shard.users.get(fact.user_id));
        break;
    }
  }

  private ensureShard(orgId: number): Shard {
    let shard = this.shards.get(orgId);
    if (!shard) {
      shard = { org: startActor(this.system, this.orgLogic, emptyOrg(orgId)), channels: new Map(), users: new Map() };
      this.shards.set(orgId, shard);
    }
    return shard;
  }

  private ensureUser(shard: Shard, userId: number): AnyDomainActor {
    let actor = shard.users.get(userId);
    if (!actor) shard.users.set(userId, (actor = startActor(this.system, userLogic, emptyUser(userId))));
    return actor;
  }

  private ensureChannel(shard: Shard, streamId: number): AnyDomainActor {
    let actor = shard.channels.get(streamId);
    if (!actor) shard.channels.set(streamId, (actor = startActor(this.system, this.channelLogic, emptyChannel(streamId))));
    return actor;
  }

  // Snapshots: live contexts out, restored contexts in.

  /**
   * Live references to every actor's context, for the snapshot writer. The writer
   * encodes them one by one across event-loop turns; each records the seq it reflects.
   */
  snapshotSources(): { server: ServerContext; board: BoardContext; orgs: Array<{ org: OrgContext; channels: ChannelContext[]; users: UserContext[] }> } {
    return {
      server: this.server(),
      board: this.board(),
      orgs: [...this.shards.values()].map((shard) => ({
        org: contextOf(shard.org),
        channels: [...shard.channels.values()].map((a) => contextOf(a)),
        users: [...shard.users.values()].map((a) => contextOf(a)),
      })),
    };
  }

  /** Starts the server actor again from a restored context. Call before any other restore. */
  restoreServer(ctx: ServerContext): void {
    this.system.stop(this.serverActor);
    this.serverActor = startActor(this.system, serverLogic, ctx);
    this.messageIdCounter = Math.max(this.messageIdCounter, ctx.maxMessageId);
  }

  /** Starts the board actor again from a restored context. */
  restoreBoard(ctx: BoardContext): void {
    this.system.stop(this.boardActor);
    this.boardActor = startActor(this.system, boardLogic, ctx);
  }

  /** Starts an organization's actor from a restored context. */
  restoreOrg(ctx: OrgContext): void {
    this.shards.set(ctx.org.id, { org: startActor(this.system, this.orgLogic, ctx), channels: new Map(), users: new Map() });
  }

  /** Starts a channel's actor from a restored context. */
  restoreChannel(orgId: number, ctx: ChannelContext): void {
    this.shards.get(orgId)!.channels.set(ctx.channel.stream_id, startActor(this.system, this.channelLogic, ctx));
  }

  /** Starts a user's actor from a restored context. */
  restoreUser(orgId: number, ctx: UserContext): void {
    this.shards.get(orgId)!.users.set(ctx.user_id, startActor(this.system, userLogic, ctx));
  }

  /** Adopts an event queue restored from a snapshot. */
  restoreQueue(ctx: QueueContext): void {
    this.queueDelivery.restore(ctx);
  }

  /** After a restore, log order continues after everything the snapshot covered. */
  restoredThrough(seq: number): void {
    if (seq > this.lastSeq) this.lastSeq = seq;
    this.deliveredSeq = this.lastSeq;
  }

  /** Stops every actor and timer. */
  stop(): void {
    this.queues.stop();
    for (const shard of this.shards.values()) {
      this.system.stop(shard.org);
      for (const a of shard.channels.values()) this.system.stop(a);
      for (const a of shard.users.values()) this.system.stop(a);
    }
    this.system.stop(this.serverActor);
    this.system.stop(this.boardActor);
    this.system.shutdown();
  }
}
