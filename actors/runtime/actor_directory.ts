/**
 * The actor directory: every domain actor of one runtime, by address, under one
 * supervisor. It creates actors as facts bring them into being, hands each fact to
 * the actors its declaration names (`FactDef.route`), answers the read-only
 * `StateView`, and takes actor state to and from snapshots through each kind's
 * `Persistence`.
 */
import { FACTS } from '../areas/index.js';
import type { ActorKind, Address, Contexts, FactDef, FactRecipients } from '../core/area.js';
import { contextOf, domainLogic, orgIdOf, startActor, type AnyFact, type DomainActor, type Reduce, type Stamped } from '../core/domain_logic.js';
import type { InPlaceLogic } from '../core/in_place_transition.js';
import type { Chunk, ChunkThunk, Persistence, RestoreContext } from '../core/persistence.js';
import type { StateView } from '../core/state_view.js';
import { Supervisor } from '../core/supervisor.js';
import { boardPersistence, emptyBoard, type BoardContext, type BoardRestoreScope } from '../kinds/board.js';
import { channelPersistence, channelRestore, emptyChannel, type ChannelContext, type ChannelRestoreScope } from '../kinds/channel.js';
import { emptyOrg, orgPersistence, type OrgContext, type OrgRestoreScope } from '../kinds/organization.js';
import { emptyServer, serverPersistence, type ServerContext, type ServerRestoreScope } from '../kinds/server.js';
import { emptyUser, userPersistence, userRestore, type UserContext, type UserRestoreScope } from '../kinds/user.js';
import type { QueueFactTarget } from '../shared/queue_facts.js';
import type { Bodies } from '../core/bodies.js';
import type { MessageTable } from '../shared/message_table.js';

/** The actors of one organization. */
interface Shard {
  org: DomainActor<OrgContext>;
  channels: Map<number, DomainActor<ChannelContext>>;
  users: Map<number, DomainActor<UserContext>>;
}

type AnyDomainActor = DomainActor<any>;

/** The reducer of one actor kind: a lookup of the fact's declaration. */
function reducerOf<K extends ActorKind>(kind: K): Reduce<Contexts[K]> {
  const byType = new Map<string, (ctx: Contexts[K], fact: AnyFact) => void>();
  for (const [type, def] of FACTS) {
    const apply = def.apply[kind] as ((ctx: Contexts[K], fact: AnyFact) => void) | undefined;
    if (apply) byType.set(type, apply);
  }
  return (ctx, fact) => byType.get(fact.type)?.(ctx, fact);
}

const LOGIC = {
  server: domainLogic(reducerOf('server')),
  board: domainLogic(reducerOf('board')),
  org: domainLogic(reducerOf('org')),
  channel: domainLogic(reducerOf('channel')),
  user: domainLogic(reducerOf('user')),
} satisfies { [K in ActorKind]: InPlaceLogic<Contexts[K], any> };

/** Everything any kind's restore needs: where contexts are installed and found. */
type RestoreScope = ServerRestoreScope & BoardRestoreScope & OrgRestoreScope & ChannelRestoreScope & UserRestoreScope & RestoreContext;

/** Restores chunks by tag, each through the kind that wrote it. */
const RESTORERS = new Map<string, Pick<Persistence<unknown, RestoreScope>, 'restore'>>();
for (const p of [serverPersistence, boardPersistence, orgPersistence, channelRestore, userRestore]) for (const tag of p.tags) RESTORERS.set(tag, p as Pick<Persistence<unknown, RestoreScope>, 'restore'>);

/** The organization a snapshot chunk of an actor belongs to; undefined for the server's and the board's. */
export function chunkOrg(chunk: { org?: unknown }): number | undefined {
  return orgIdOf(chunk.org);
}

export class ActorDirectory implements StateView {
  readonly supervisor = new Supervisor();
  private serverActor: DomainActor<ServerContext> = startActor(this.supervisor, LOGIC.server, emptyServer());
  private boardActor: DomainActor<BoardContext> = startActor(this.supervisor, LOGIC.board, emptyBoard());
  private readonly shards = new Map<number, Shard>();
  private readonly recipients: Recipients;

  constructor(
    queues: QueueFactTarget,
    /** Where the messages' bodies are kept. */
    readonly bodies: Bodies,
    /** The store a restored snapshot's locators are of, when not `bodies` (a restore into a fresh directory). */
    private readonly bodySource: Bodies = bodies,
  ) {
    this.recipients = new Recipients(this, queues);
  }

  // StateView: synchronous, read-only views of actor state.
  server(): ServerContext {
    return contextOf(this.serverActor);
  }
  board(): BoardContext {
    return contextOf(this.boardActor);
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
  channelIdsOf(orgId: number): number[] {
    return [...(this.shards.get(orgId)?.channels.keys() ?? [])];
  }

  /** The actor at an address; throws if there is none (the caller checked the address). */
  actorAt(address: Address): AnyDomainActor {
    const t = address as { kind: ActorKind; org?: number; stream_id?: number; user_id?: number };
    const shard = t.org === undefined ? undefined : this.shards.get(t.org);
    const actor: AnyDomainActor | undefined =
      t.kind === 'server' ? this.serverActor
      : t.kind === 'board' ? this.boardActor
      : t.kind === 'org' ? shard?.org
      : t.kind === 'channel' ? shard?.channels.get(t.stream_id!)
      : shard?.users.get(t.user_id!);
    if (!actor) throw new Error(`No ${t.kind} actor at ${JSON.stringify(address)}`);
    return actor;
  }

  /** Applies a fact to every actor its declaration names except `origin` (which decided it). */
  route(s: Stamped, origin: AnyDomainActor | null): void {
    const def = FACTS.get(s.fact.type);
    if (!def) throw new Error(`Unknown fact type ${s.fact.type} at seq ${s.seq}`);
    this.recipients.begin(s, def, origin);
    def.route(s.fact, this.recipients);
  }

  /** @internal Used by `Recipients`. */
  serverActorRef(): AnyDomainActor {
    return this.serverActor;
  }
  /** @internal */
  boardActorRef(): AnyDomainActor {
    return this.boardActor;
  }
  /** @internal The organization's actor, created if asked. */
  orgActor(orgId: number, create: boolean): AnyDomainActor | undefined {
    return (create ? this.ensureShard(orgId) : this.shards.get(orgId))?.org;
  }
  /** @internal */
  channelActor(orgId: number, streamId: number, create: boolean): AnyDomainActor | undefined {
    const shard = this.shardOf(orgId);
    let actor = shard.channels.get(streamId);
    if (!actor && create) shard.channels.set(streamId, (actor = startActor(this.supervisor, LOGIC.channel, emptyChannel(streamId, this.bodies))));
    return actor;
  }
  /** @internal */
  userActor(orgId: number, userId: number, create: boolean): AnyDomainActor | undefined {
    const shard = this.shardOf(orgId);
    let actor = shard.users.get(userId);
    if (!actor && create) shard.users.set(userId, (actor = startActor(this.supervisor, LOGIC.user, emptyUser(userId))));
    return actor;
  }

  private shardOf(orgId: number): Shard {
    const shard = this.shards.get(orgId);
    if (!shard) throw new Error(`Fact for unknown organization ${orgId}`);
    return shard;
  }

  private ensureShard(orgId: number): Shard {
    let shard = this.shards.get(orgId);
    if (!shard) {
      shard = { org: startActor(this.supervisor, LOGIC.org, emptyOrg(orgId, this.bodies)), channels: new Map(), users: new Map() };
      this.shards.set(orgId, shard);
    }
    return shard;
  }

  /** Live references to every context, grouped by organization (for tests and tools). */
  contexts(): { server: ServerContext; board: BoardContext; orgs: Array<{ org: OrgContext; channels: ChannelContext[]; users: UserContext[] }> } {
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

  // Snapshots.

  /**
   * Every actor's chunks, lazily, each kind through its own `Persistence`. The actors
   * are listed when this starts; each chunk is taken when the writer calls it.
   */
  *persisted(sliceSize: number): Generator<ChunkThunk> {
    const { server, board, orgs } = this.contexts();
    yield* serverPersistence.chunks(server, sliceSize);
    yield* boardPersistence.chunks(board, sliceSize);
    for (const shard of orgs) yield* this.shardChunks(shard, sliceSize);
  }

  /** One organization's chunks, lazily: its own actor's, then its channels' and its users'. */
  *orgChunks(orgId: number, sliceSize: number): Generator<ChunkThunk> {
    const shard = this.contexts().orgs.find((o) => o.org.org.id === orgId);
    if (shard) yield* this.shardChunks(shard, sliceSize);
  }

  private *shardChunks({ org, channels, users }: { org: OrgContext; channels: ChannelContext[]; users: UserContext[] }, sliceSize: number): Generator<ChunkThunk> {
    yield* orgPersistence.chunks(org, sliceSize);
    const channelChunks = channelPersistence(org.org.id);
    for (const ch of channels) yield* channelChunks.chunks(ch, sliceSize);
    const userChunks = userPersistence(org.org.id);
    for (const u of users) yield* userChunks.chunks(u, sliceSize);
  }

  /**
   * Replaces one organization's actors with those `chunks` hold (its chunks from another
   * runtime over the same data directory: an organization restored to an earlier point),
   * for the operator's restore of one organization, on a stopped server. Every message
   * body is copied into the store again, so that none points into body segments a
   * compaction has retired. The server's record of the organization becomes the one the
   * chunks hold; the server's id counters stay as they are, so no id is ever given twice.
   */
  replaceOrg(orgId: number, chunks: Chunk[], version: number): void {
    const shard = this.shards.get(orgId);
    if (shard) {
      this.supervisor.stop(shard.org);
      for (const a of shard.channels.values()) this.supervisor.stop(a);
      for (const a of shard.users.values()) this.supervisor.stop(a);
      this.shards.delete(orgId);
    }
    // The same store under another name: `restoredMessage` copies what it reads from it.
    const bodies = this.bodies;
    const copyFrom: Bodies = { persistent: bodies.persistent, append: (id, b) => bodies.append(id, b), read: (loc) => bodies.read(loc), readMany: (locs) => bodies.readMany(locs), release: () => {} };
    const scope = { ...this.scope(version), bodySource: copyFrom };
    for (const chunk of chunks) {
      const restorer = RESTORERS.get(chunk.k);
      if (!restorer || chunk.k === 'server' || chunk.k === 'board') throw new Error(`an organization's state holds no '${chunk.k}' chunk`);
      restorer.restore(chunk, scope);
    }
    const restored = this.org(orgId);
    if (!restored) throw new Error(`the state to restore holds no organization ${orgId}`);
    const server = this.server();
    const record = restored.org;
    const current = server.orgs.get(orgId);
    if (current && server.bySubdomain.get(current.subdomain) === orgId) server.bySubdomain.delete(current.subdomain);
    server.orgs.set(orgId, { ...record });
    server.bySubdomain.set(record.subdomain, orgId);
  }

  /** Every body locator a message holds now, channel and direct: the body store's live set when it compacts. */
  *bodyLocators(): Generator<number> {
    for (const shard of this.shards.values()) {
      for (const actor of shard.channels.values()) yield* contextOf(actor).messages.bodyLocators();
      yield* contextOf(shard.org).directMessages.bodyLocators();
    }
  }

  /**
   * Points messages at their bodies' new places after the body store compacted:
   * `from` ascending, `to` beside it, `count` pairs. A message whose locator is not
   * among them (sent or edited meanwhile) keeps its own. Records are replaced, never
   * changed, as a snapshot being written expects; the body is the same, so no fact is
   * needed. Yields every `slice` messages, so that requests are served in between.
   */
  *moveBodies(from: Float64Array, to: Float64Array, count: number, slice = 5000): Generator<void> {
    let seen = 0;
    const moved = (loc: number): number | undefined => {
      let lo = 0;
      let hi = count;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (from[mid] < loc) lo = mid + 1;
        else hi = mid;
      }
      return lo < count && from[lo] === loc ? to[lo] : undefined;
    };
    function* move(table: MessageTable): Generator<void> {
      // The ids as they are now: a view that later removals and insertions leave as it is.
      for (const id of table.ids) {
        const loc = table.bodyOf(id);
        const next = loc === undefined ? undefined : moved(loc);
        if (next !== undefined) table.setBody(id, next);
        if (++seen % slice === 0) yield;
      }
    }
    for (const shard of [...this.shards.values()]) {
      for (const actor of [...shard.channels.values()]) yield* move(contextOf(actor).messages);
      yield* move(contextOf(shard.org).directMessages);
    }
  }

  /** Restores one chunk of a domain actor. Heads come before their slices, orgs before their channels. */
  restoreChunk(chunk: Chunk, version: number): void {
    const restorer = RESTORERS.get(chunk.k);
    if (!restorer) throw new Error(`Snapshot chunk of unknown kind '${chunk.k}'`);
    restorer.restore(chunk, this.scope(version));
  }

  private scope(version: number): RestoreScope {
    return {
      version,
      bodies: this.bodies,
      bodySource: this.bodySource,
      installServer: (ctx) => {
        this.supervisor.stop(this.serverActor);
        this.serverActor = startActor(this.supervisor, LOGIC.server, ctx);
      },
      installBoard: (ctx) => {
        this.supervisor.stop(this.boardActor);
        this.boardActor = startActor(this.supervisor, LOGIC.board, ctx);
      },
      installOrg: (ctx) => {
        this.shards.set(ctx.org.id, { org: startActor(this.supervisor, LOGIC.org, ctx), channels: new Map(), users: new Map() });
      },
      installChannel: (orgId, ctx) => {
        this.shardOf(orgId).channels.set(ctx.channel.stream_id, startActor(this.supervisor, LOGIC.channel, ctx));
      },
      installUser: (orgId, ctx) => {
        this.shardOf(orgId).users.set(ctx.user_id, startActor(this.supervisor, LOGIC.user, ctx));
      },
      org: (orgId) => this.org(orgId),
      channel: (orgId, streamId) => this.channel(orgId, streamId),
      board: () => this.board(),
    };
  }

  /** Stops every actor. */
  stop(): void {
    for (const shard of this.shards.values()) {
      this.supervisor.stop(shard.org);
      for (const a of shard.channels.values()) this.supervisor.stop(a);
      for (const a of shard.users.values()) this.supervisor.stop(a);
    }
    this.supervisor.stop(this.serverActor);
    this.supervisor.stop(this.boardActor);
  }
}

/**
 * The `FactRecipients` a fact's `route` talks to: it sends the fact to each named
 * actor whose kind has a reducer for it (creating actors where asked), skipping the
 * actor that decided it. One instance per directory, reset per fact.
 */
class Recipients implements FactRecipients {
  seq = 0;
  /** The one event every actor a fact reaches is sent (actors only read their events). */
  private event!: { type: 'apply'; stamped: Stamped };
  private def!: FactDef;
  private origin: AnyDomainActor | null = null;

  constructor(
    private readonly dir: ActorDirectory,
    readonly queues: QueueFactTarget,
  ) {}

  get view(): StateView {
    return this.dir;
  }

  begin(stamped: Stamped, def: FactDef, origin: AnyDomainActor | null): void {
    this.event = { type: 'apply', stamped };
    this.seq = stamped.seq;
    this.def = def;
    this.origin = origin;
  }

  private send(kind: ActorKind, actor: AnyDomainActor | undefined): void {
    if (actor && actor !== this.origin && this.def.apply[kind]) actor.send(this.event);
  }

  server(): void {
    this.send('server', this.dir.serverActorRef());
  }
  board(): void {
    this.send('board', this.dir.boardActorRef());
  }
  org(orgId: number, opts?: { create?: boolean }): void {
    const actor = this.dir.orgActor(orgId, opts?.create ?? false);
    if (!actor) throw new Error(`Fact ${this.def.type} for unknown organization ${orgId} at seq ${this.seq}`);
    this.send('org', actor);
  }
  channel(orgId: number, streamId: number, opts?: { create?: boolean }): void {
    this.send('channel', this.dir.channelActor(orgId, streamId, opts?.create ?? false));
  }
  user(orgId: number, userId: number, opts?: { create?: boolean }): void {
    this.send('user', this.dir.userActor(orgId, userId, opts?.create ?? false));
  }
}
