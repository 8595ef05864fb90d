/**
 * The runtime: the one object the HTTP layer and the tools talk to. It sends
 * commands to the actor that decides them (`execute`), hands the facts decided to
 * the actors they concern (through the actor directory) and to the log, and delivers
 * the events the facts cause once they are durable. Replay after a restart runs the
 * very same path, without deciding anything.
 *
 *   request -> route handler -> runtime.execute(command)
 *     -> the command finds the actor that decides it (areas' CommandDef.address)
 *     -> that actor decides (CommandDef.decide, by its kind) and applies its facts
 *     -> the other actors concerned apply them (FactDef.route / FactDef.apply)
 *     -> the log makes the facts durable -> the reply is sent
 *     -> one delivery pass derives the events (FactDef.notify), resolves them to queues
 *        and answers each parked poll as soon as its queue is resolved, in one batch
 *        (derived at once instead if state is about to change first)
 */
import { randomBytes } from 'node:crypto';
import type { Command, Fact, ResultOf, Stamped } from '../areas/index.js';
import { deciderFor, type ActorKind, type Contexts, type Decide } from '../core/area.js';
import { quietLogger, type Logger } from '../core/logger.js';
import { factOrg, type AnyFact, type DecideEnv, type DomainActor, type Outcome } from '../core/domain_logic.js';
import type { Chunk, ChunkThunk } from '../core/persistence.js';
import type { StateView } from '../core/state_view.js';
import { COMMANDS as COMMAND_DEFS } from '../areas/index.js';
import { EventQueues, QUEUE_CHUNK_TAGS, type DeliveryObserver, type QueueDelivery, type QueueOptions, type QueueService } from '../event_queues/index.js';
import { ActorDirectory, chunkOrg } from './actor_directory.js';
import { DeliverySchedule } from './delivery_schedule.js';
import { DeletionJobs } from './deletion_jobs.js';
import { EventRouting, Routed, type DeliveryHints } from './event_routing.js';
import { MemoryBodies, type Bodies } from '../core/bodies.js';

export type { DeliveryHints } from './event_routing.js';


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

/**
 * The snapshot chunk of the organizations' own sequences: written last, so that each number
 * it holds is at least the last one a fact the snapshot reflects was given. (Replay takes
 * the numbers of the facts after it; an organization with none after it goes on from here.)
 */
const ORG_SEQS_CHUNK = 'orgseqs';
interface OrgSeqsChunk {
  k: typeof ORG_SEQS_CHUNK;
  seqs: Array<[number, number]>;
}

/** Injected sources of time and randomness, so tests are deterministic. */
export interface RuntimeOptions {
  /** Milliseconds since the epoch. */
  now(): number;
  randomBytes(n: number): Buffer;
  sink: FactSink;
  queues: Omit<QueueOptions, 'now' | 'token' | 'random' | 'commit' | 'observer'>;
  random(): number;
  /** Where the runtime's own failures are told (a scheduled delivery that failed); nowhere when absent. */
  log?: Logger;
  /** Told of every delivery pass to the event queues (metrics); nothing by default. */
  delivery?: DeliveryObserver;
  /** Where message bodies are kept: the data directory's body store; in the heap when absent. */
  bodies?: Bodies;
  /** The store whose locators the snapshot to restore holds, when it is not `bodies` (a restore into a fresh directory). */
  restoreBodiesFrom?: Bodies;
  /**
   * Holds this organization alone, with the server-wide state: snapshot chunks and facts of
   * other organizations (and the event queues) are passed over. For the operator's restore
   * of one organization, whose copy of the past then takes that organization's memory only.
   */
  onlyOrg?: number;
}

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

/** The parts of the runtime that hold state, made together (and made again by `reset`). */
interface Parts {
  directory: ActorDirectory;
  /** The same object as `queueDelivery`, seen as what others may do with it. */
  queues: QueueService;
  queueDelivery: QueueDelivery;
  events: EventRouting;
  scheduled: DeliverySchedule;
  deletionJobs: DeletionJobs;
}

export class Runtime implements StateView {
  /** The seq of the newest fact applied to state. */
  lastSeq = 0;
  /** Every fact up to this seq is durable and its events are in their queues (not merely staged). */
  deliveredSeq = 0;
  private parts: Parts;
  /** Where the messages' bodies are kept. */
  bodies!: Bodies;
  private messageIdCounter = 0;
  private submessageIdCounter = 0;
  /** Each organization's own sequence (0: the server-wide facts'): the last number given. */
  private orgSeqs = new Map<number, number>();
  private readonly env: DecideEnv;

  constructor(private readonly opts: RuntimeOptions) {
    this.parts = this.makeParts();
    this.env = {
      now: () => Math.floor(opts.now() / 1000),
      token: (bytes) => opts.randomBytes(bytes).toString('base64url'),
      nextMessageId: () => ++this.messageIdCounter,
      nextSubmessageId: () => ++this.submessageIdCounter,
      stamp: (facts) => {
        const at = opts.now();
        return facts.map((fact) => {
          const org = factOrg(fact);
          const oseq = (this.orgSeqs.get(org) ?? 0) + 1;
          this.orgSeqs.set(org, oseq);
          return { seq: ++this.lastSeq, fact, at, org, oseq };
        });
      },
    };
  }

  private makeParts(): Parts {
    const opts = this.opts;
    // A reset starts from an empty state: a body store in the heap starts empty too.
    this.bodies = opts.bodies ?? new MemoryBodies();
    let queues: EventQueues | undefined;
    const directory = new ActorDirectory(
      {
        applyRegistered: (fact, seq) => queues!.applyRegistered(fact, seq),
        applyDropped: (fact) => queues!.applyDropped(fact),
      },
      this.bodies,
      opts.restoreBodiesFrom ?? this.bodies,
    );
    queues = new EventQueues(directory.supervisor, {
      ...opts.queues,
      now: opts.now,
      random: opts.random,
      token: () => opts.randomBytes(15).toString('base64url'),
      commit: (facts) => this.commitFacts(facts),
      observer: opts.delivery,
    });
    const scheduled = new DeliverySchedule({
      nowMs: () => opts.now(),
      user: (org, userId) => directory.user(org, userId),
      users: () => directory.contexts().orgs.flatMap(({ org, users }) => users.map((user) => ({ org: org.org.id, user }))),
      deliver: (org, userId, id) => this.execute({ type: 'DELIVER_SCHEDULED', org, user_id: userId, id }),
      log: opts.log ?? quietLogger,
    });
    const deletionJobs = new DeletionJobs({
      orgIds: () => directory.server().orgs.keys(),
      org: (org) => directory.org(org),
      stepChannel: (org, streamId, jobId) => this.execute({ type: 'DELETE_MESSAGES_BY_SENDERS', org, stream_id: streamId, job_id: jobId }),
      finish: (org, jobId) => this.execute({ type: 'DELETE_DIRECT_MESSAGES_BY_SENDERS', org, job_id: jobId }),
      log: opts.log ?? quietLogger,
    });
    return { directory, queues, queueDelivery: queues, events: new EventRouting(directory, queues), scheduled, deletionJobs };
  }

  /** What route handlers, the server and tools may do with event queues. */
  get queues(): QueueService {
    return this.parts.queues;
  }
  /** When scheduled messages and reminders are due; `sweep` delivers what is due now. */
  get scheduled(): DeliverySchedule {
    return this.parts.scheduled;
  }
  /** The organizations' message deletion jobs: `start` runs them (and resumes those recovered), `settled` waits for one. */
  get deletionJobs(): DeletionJobs {
    return this.parts.deletionJobs;
  }
  /** Applying queue facts and delivering events: the runtime's alone. */
  private get queueDelivery(): QueueDelivery {
    return this.parts.queueDelivery;
  }
  private get directory(): ActorDirectory {
    return this.parts.directory;
  }
  private get events(): EventRouting {
    return this.parts.events;
  }

  /**
   * Empties the state, as it was when made: for recovery, after a snapshot failed part
   * way through being restored. Only before serving (nothing may be in flight).
   */
  reset(): void {
    this.stop();
    this.parts = this.makeParts();
    this.lastSeq = 0;
    this.deliveredSeq = 0;
    this.messageIdCounter = 0;
    this.submessageIdCounter = 0;
    this.orgSeqs = new Map();
  }

  // StateView: synchronous, read-only views of actor state.
  server(): Contexts['server'] {
    return this.directory.server();
  }
  org(orgId: number): Contexts['org'] | undefined {
    return this.directory.org(orgId);
  }
  channel(orgId: number, streamId: number): Contexts['channel'] | undefined {
    return this.directory.channel(orgId, streamId);
  }
  user(orgId: number, userId: number): Contexts['user'] | undefined {
    return this.directory.user(orgId, userId);
  }
  /** The public message board's state. */
  board(): Contexts['board'] {
    return this.directory.board();
  }
  channelIdsOf(orgId: number): number[] {
    return this.directory.channelIdsOf(orgId);
  }
  /** Live references to every actor's context, grouped by organization (for tests and tools). */
  contexts(): ReturnType<ActorDirectory['contexts']> {
    return this.directory.contexts();
  }

  /**
   * Grows whenever state that is never logged (presence) changes: a snapshot is then
   * due by time even when no fact was logged, since only a snapshot keeps that state.
   */
  volatileVersion(): number {
    let v = 0;
    for (const id of this.server().orgs.keys()) v += this.org(id)?.presenceLastUpdateId ?? 0;
    return v;
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
   * Sends a command to the actor that decides it (the one its `address` finds). Resolves
   * with the decision's value once its facts are durable; rejects with the decision's
   * error, or the address's (an unknown message).
   */
  execute<C extends Command>(command: C, hints?: DeliveryHints): Promise<ResultOf<C>> {
    const input: Command = command;
    const def = COMMAND_DEFS.get(input.type);
    if (!def) return Promise.reject(new Error(`Unknown command ${input.type}`));
    let actor: DomainActor<unknown>;
    let decide: Decide<ActorKind, { type: string }, unknown, AnyFact>;
    try {
      const address = def.address(this, input);
      actor = this.directory.actorAt(address);
      decide = deciderFor(def, address.kind);
    } catch (e) {
      return Promise.reject(e);
    }
    const bodies = def.bodies && this.bodies.persistent ? [...def.bodies(this, input, this.env)] : [];
    if (bodies.length > 0) {
      // Read into the body store's cache first; a body that fails to read is read (and
      // reported) again when decided.
      return this.bodies.readMany(bodies).catch(() => undefined).then(() => this.decideAt(actor, decide, input, hints));
    }
    return this.decideAt(actor, decide, input, hints);
  }

  /** Sends a decision to its actor, and commits its facts. */
  private decideAt<C extends Command>(actor: DomainActor<unknown>, decide: Decide<ActorKind, { type: string }, unknown, AnyFact>, input: Command, hints?: DeliveryHints): Promise<ResultOf<C>> {
    // The decision changes state: the events of facts applied before it are derived first.
    this.events.settle();
    return new Promise((resolve, reject) => {
      const done = (outcome: Outcome): void => {
        if (!outcome.ok) reject(outcome.error);
        else this.commit(actor, outcome.stamped as Stamped[], () => resolve(outcome.value as ResultOf<C>), hints);
      };
      actor.send({ type: 'command', decide: (ctx, env) => decide(ctx as never, input, env, this), env: this.env, done });
    });
  }

  /**
   * Applies a fact read back from the log, through the same reducers as live traffic,
   * and puts its events in their queues. A queue gets all of one fact's events in one
   * push, as live delivery gives them (a queue ignores events of a fact it already
   * reflects, so pushing them one by one would keep only the first).
   */
  replay(stamped: Stamped): void {
    if (this.opts.onlyOrg !== undefined) {
      const org = stamped.org ?? factOrg(stamped.fact);
      if (org !== 0 && org !== this.opts.onlyOrg) {
        if (stamped.seq > this.lastSeq) this.lastSeq = stamped.seq;
        this.deliveredSeq = this.lastSeq;
        return;
      }
    }
    this.events.settle();
    this.directory.route(stamped, null);
    this.scheduled.observe(stamped.fact);
    const routed = new Routed();
    this.events.derive(stamped, routed);
    if (routed.cells.length > 0) this.events.pushNow(routed);
    if (stamped.seq > this.lastSeq) this.lastSeq = stamped.seq;
    this.deliveredSeq = this.lastSeq;
    this.syncIdCounters();
    if (stamped.oseq !== undefined) this.noteOrgSeq(stamped.org ?? 0, stamped.oseq);
  }

  /** An organization's sequence goes on after `oseq` (a number a fact read back was given). */
  private noteOrgSeq(org: number, oseq: number): void {
    if (oseq > (this.orgSeqs.get(org) ?? 0)) this.orgSeqs.set(org, oseq);
  }

  /**
   * Routes freshly decided facts and logs them; once they are durable, hands their events
   * to the delivery pass. The events of all facts but the last are derived as each is
   * applied; the last one's are left to the delivery pass, which resolves them as it
   * answers parked polls, unless state changes first (`EventRouting.settle`).
   */
  private commit(origin: DomainActor<unknown> | null, stamped: Stamped[], reply: () => void, hints?: DeliveryHints): void {
    if (stamped.length === 0) {
      reply();
      return;
    }
    this.events.settle();
    const before = new Routed();
    const last = stamped.length - 1;
    for (let i = 0; i <= last; i++) {
      const s = stamped[i];
      this.directory.route(s, origin);
      this.scheduled.observe(s.fact);
      this.deletionJobs.observe(s.fact);
      if (i < last) this.events.derive(s, before);
    }
    const routing = this.events.defer(before, stamped[last], hints);
    const lastSeq = stamped[last].seq;
    this.opts.sink.append(stamped, () => {
      this.queueDelivery.deliver(routing);
      // deliveredSeq moves only once the events are in their queues (snapshots rely on it).
      this.queueDelivery.scheduleFlush(() => {
        if (lastSeq > this.deliveredSeq) this.deliveredSeq = lastSeq;
      });
      reply();
    });
  }

  /**
   * Commits facts decided outside the domain actors (the queue system's); resolves once
   * they are durable and the events they cause are in their queues.
   */
  commitFacts(facts: Fact[]): Promise<void> {
    const stamped = this.env.stamp(facts) as Stamped[];
    return new Promise((resolve) => this.commit(null, stamped, () => this.queueDelivery.scheduleFlush(resolve)));
  }

  // Snapshots: each actor kind's chunks out, restored chunks in.

  /** Every actor's chunks and the event queues', lazily, for the snapshot writer. */
  *persisted(sliceSize: number): Generator<ChunkThunk> {
    yield* this.directory.persisted(sliceSize);
    yield* this.queueDelivery.chunks(sliceSize);
    // Last, so that it holds at least every number a fact the chunks reflect was given.
    yield (): OrgSeqsChunk => ({ k: ORG_SEQS_CHUNK, seqs: [...this.orgSeqs] });
  }

  /** The last number of each organization's own sequence (0: the server-wide facts'). */
  orgSeq(org: number): number {
    return this.orgSeqs.get(org) ?? 0;
  }

  /** One organization's actors' chunks, lazily (its event queues are not among them). */
  orgChunks(orgId: number, sliceSize: number): Generator<ChunkThunk> {
    return this.directory.orgChunks(orgId, sliceSize);
  }

  /**
   * Replaces one organization's state with `chunks` (`orgChunks` of another runtime over
   * this data directory, taken back through the snapshot codec), on a stopped server:
   * the operator's restore of one organization. Its event queues are dropped, since
   * they hold events of the state replaced; their clients register again, as after a
   * queue expires. Nothing is logged: the caller takes a snapshot, which covers it.
   * Returns the number of queues dropped.
   */
  replaceOrg(orgId: number, chunks: Chunk[], version: number): number {
    this.events.settle();
    const queueIds = this.queues.exportQueues().filter((q) => q.org === orgId).map((q) => q.id);
    if (queueIds.length > 0) this.queueDelivery.applyDropped({ type: 'QueuesDropped', queue_ids: queueIds, reason: 'the organization was restored to an earlier point' });
    this.directory.replaceOrg(orgId, chunks, version);
    this.scheduled.invalidate();
    return queueIds.length;
  }

  /** Every body locator a message holds now: the body store's live set when it compacts. */
  bodyLocators(): Iterable<number> {
    return this.directory.bodyLocators();
  }

  /** Points messages at their bodies' new places after a compaction (see `ActorDirectory.moveBodies`). */
  moveBodies(from: Float64Array, to: Float64Array, count: number): Generator<void> {
    return this.directory.moveBodies(from, to, count);
  }

  /** Restores one snapshot chunk, written in snapshot format `version`. */
  restoreChunk(chunk: Chunk, version: number): void {
    if (this.opts.onlyOrg !== undefined) {
      if (QUEUE_CHUNK_TAGS.includes(chunk.k) || chunk.k === ORG_SEQS_CHUNK) return;
      const org = chunkOrg(chunk as { org?: unknown });
      if (org !== undefined && org !== this.opts.onlyOrg) return;
    }
    this.events.settle();
    if (QUEUE_CHUNK_TAGS.includes(chunk.k)) {
      this.queueDelivery.restoreChunk(chunk);
      return;
    }
    if (chunk.k === ORG_SEQS_CHUNK) {
      for (const [org, oseq] of (chunk as OrgSeqsChunk).seqs) this.noteOrgSeq(org, oseq);
      return;
    }
    this.directory.restoreChunk(chunk, version);
    this.scheduled.invalidate();
    if (chunk.k === 'server') this.syncIdCounters();
  }

  /** Server-wide ids continue after the highest the server actor has seen assigned. */
  private syncIdCounters(): void {
    this.messageIdCounter = Math.max(this.messageIdCounter, this.server().maxMessageId);
    this.submessageIdCounter = Math.max(this.submessageIdCounter, this.server().maxSubmessageId);
  }

  /** After a restore, log order continues after everything the snapshot covered. */
  restoredThrough(seq: number): void {
    if (seq > this.lastSeq) this.lastSeq = seq;
    this.deliveredSeq = this.lastSeq;
  }

  /** Stops every actor and timer. */
  stop(): void {
    this.scheduled.stop();
    this.deletionJobs.stop();
    this.queues.stop();
    this.directory.stop();
    this.directory.supervisor.shutdown();
  }
}

/** Runs a command's declared decision against its actor's context. */
