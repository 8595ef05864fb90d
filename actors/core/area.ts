/**
 * The declarations an area (`actors/areas/*.ts`) is made of, in the manner of Zulip's
 * `zerver/actions/` modules: its commands, with typed input and result; its facts,
 * with the actors that apply each one, the reducers, and the client events each
 * yields; and its sections of the `/register` response. The runtime, the snapshot
 * code and `/register` are lookups over these declarations; none of them switches
 * on a command or fact type.
 */
import type { MessageRecord, OrgRecord, UserRecord } from '../shared/types.js';
import type { AnyFact, DecideEnv, Decision } from './domain_logic.js';
import type { ClientCapabilities } from './capabilities.js';
import type { ActorKind, Contexts, StateView } from './state_view.js';

export type { ActorKind, Contexts } from './state_view.js';

/** The address of one actor of each kind. */
export interface Addresses {
  server: object;
  board: object;
  org: { org: number };
  channel: { org: number; stream_id: number };
  user: { org: number; user_id: number };
}

/** One actor: its kind and its address. */
export type Address<K extends ActorKind = ActorKind> = K extends ActorKind ? { kind: K } & Addresses[K] : never;

/** How an actor of kind `K` decides a command `C`. */
export type Decide<K extends ActorKind, C, R, F extends AnyFact> = (ctx: Contexts[K], command: C, env: DecideEnv, view: StateView) => Decision<R, F>;

/**
 * A command: the one actor that decides it, and how. `C` is its input, tagged with its
 * type. A caller sends the input alone (`runtime.execute(command)`): `address` finds the
 * actor from it. Most commands are decided by one kind of actor, named by their input's
 * fields (`command` below); a command on a message is decided by the message's channel,
 * or by the organization for a direct message, each with its decider (`messageCommand`).
 */
export interface CommandDef<K extends ActorKind = ActorKind, C extends { type: string } = any, R = unknown, F extends AnyFact = AnyFact> {
  type: C['type'];
  /** The actor that decides `command`, as the state is now; throws an ApiError when there is none (an unknown message). */
  address: (view: StateView, command: C) => Address<K>;
  /** The decision: one decider, or one for each kind of actor `address` may name. */
  decide: Decide<K, C, R, F> | { [k in K]: Decide<k, C, R, F> };
  /**
   * The message bodies the decision will read (their locators), as the state is now, for
   * a decision that reads many (a batch of deletions, a topic moved): the runtime reads
   * them into the body store's cache first, in the background, so that the decision does
   * not hold the event loop on the disk. One changed meanwhile is read when decided.
   * Such a command reaches its actor after the read, so a command sent after it without
   * waiting for its answer may be decided first, as with two concurrent requests.
   */
  bodies?: (view: StateView, command: C, env: DecideEnv) => Iterable<number>;
}

/** The decider of `def` for an actor of `kind`. */
export function deciderFor(def: CommandDef, kind: ActorKind): Decide<ActorKind, { type: string }, unknown, AnyFact> {
  return (typeof def.decide === 'function' ? def.decide : def.decide[kind]) as Decide<ActorKind, { type: string }, unknown, AnyFact>;
}

/** The actor a command's own fields name: `org`, and `stream_id` or `user_id` as its kind needs. */
function fieldAddress<K extends ActorKind>(kind: K, command: Addresses[K]): Address<K> {
  const c = command as { org?: number; stream_id?: number; user_id?: number };
  if (kind === 'org') return { kind, org: c.org! } as Address<K>;
  if (kind === 'channel') return { kind, org: c.org!, stream_id: c.stream_id! } as Address<K>;
  if (kind === 'user') return { kind, org: c.org!, user_id: c.user_id! } as Address<K>;
  return { kind } as Address<K>;
}

/** A command decided by one kind of actor: its decider can be called by another command's (`setUserActive.decide(...)`). */
export interface OneKindCommandDef<K extends ActorKind, C extends { type: string }, R, F extends AnyFact> extends CommandDef<K, C, R, F> {
  decide: Decide<K, C, R, F>;
}

/** What `command` returns for an input that lacks the fields naming its actor, so that the area's list of commands does not compile. */
export interface UnaddressedCommand {
  error: "this command's input lacks the fields that name its actor (org, and stream_id or user_id): give it an address";
}

/**
 * Declares a command decided by one kind of actor: by default the one its input's fields
 * name (`org`, and `stream_id` for a channel's, `user_id` for a user's), else the one its
 * `address` finds. Its input, result and facts are inferred from `decide`.
 */
export function command<K extends ActorKind, C extends { type: string }, R, F extends AnyFact>(def: {
  type: C['type'];
  actor: K;
  decide(ctx: Contexts[K], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
  bodies?(view: StateView, command: C, env: DecideEnv): Iterable<number>;
}): [C] extends [Addresses[K]] ? OneKindCommandDef<K, C, R, F> : UnaddressedCommand;
export function command<K extends ActorKind, C extends { type: string }, R, F extends AnyFact>(def: {
  type: C['type'];
  actor: K;
  decide(ctx: Contexts[K], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
  address(view: StateView, command: NoInfer<C>): Address<K>;
  bodies?(view: StateView, command: NoInfer<C>, env: DecideEnv): Iterable<number>;
}): OneKindCommandDef<K, C, R, F>;
export function command<K extends ActorKind, C extends { type: string }, R, F extends AnyFact>(def: {
  type: C['type'];
  actor: K;
  decide(ctx: Contexts[K], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
  address?(view: StateView, command: C): Address<K>;
  bodies?(view: StateView, command: C, env: DecideEnv): Iterable<number>;
}): OneKindCommandDef<K, C, R, F> {
  const { type, actor, decide, bodies } = def;
  const address = def.address ?? ((_view: StateView, c: C) => fieldAddress(actor, c as unknown as Addresses[K]));
  return bodies ? { type, address, decide, bodies } : { type, address, decide };
}

/**
 * Declares a command on a message (or a send): decided by the message's channel, or by
 * the organization for a direct message, each with its own decider; `address` says which.
 */
export function messageCommand<C extends { type: string }, R, F extends AnyFact>(def: {
  type: C['type'];
  address(view: StateView, command: NoInfer<C>): Address<'channel' | 'org'>;
  bodies?(view: StateView, command: NoInfer<C>, env: DecideEnv): Iterable<number>;
  decide: {
    channel(ctx: Contexts['channel'], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
    org(ctx: Contexts['org'], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
  };
}): CommandDef<'channel' | 'org', C, R, F> {
  return def as CommandDef<'channel' | 'org', C, R, F>;
}

/** An event on its way into the queues, before it has an id: its type and its JSON members. */
export interface OutgoingEvent {
  type: string;
  json: string;
}

/** Sends a fact to the actors that apply it. Each actor gets it once; `create` brings an actor into being. */
export interface FactRecipients {
  readonly seq: number;
  readonly view: StateView;
  server(): void;
  board(): void;
  org(orgId: number, opts?: { create?: boolean }): void;
  channel(orgId: number, streamId: number, opts?: { create?: boolean }): void;
  user(orgId: number, userId: number, opts?: { create?: boolean }): void;
  // `queues`, where the queue module applies facts about event queues, is added by
  // queue_facts.ts, as the kinds add their contexts.
}

export type { ClientCapabilities } from './capabilities.js';

/** Events for some users of one organization, from one fact. */
export interface UserDelivery {
  org: number;
  seq: number;
  /** The event type, for queues that filter by type. */
  type: string;
  user_ids: Iterable<number>;
  /**
   * The same event for everyone, or one built per user and per the client's capabilities;
   * null when a queue of those capabilities gets nothing of this delivery (the two forms of
   * a batch deletion, one per `bulk_message_deletion`).
   */
  event: OutgoingEvent | ((userId: number, caps: ClientCapabilities) => OutgoingEvent | null);
  /** For message events: the message, so that queues with a narrow can filter. */
  message?: MessageRecord;
}
/** One event for named queues, or for every queue (heartbeats, restarts). */
export interface NamedQueuesDelivery {
  seq: number;
  type: string;
  queue_ids: string[] | 'all';
  event: OutgoingEvent;
}
export type Delivery = UserDelivery | NamedQueuesDelivery;

/** A fact: who applies it, how, and what clients are told. */
export interface FactDef<F extends AnyFact = AnyFact> {
  type: F['type'];
  /** The reducer of each actor kind that keeps part of this fact. */
  apply: { [K in ActorKind]?: (ctx: Contexts[K], fact: F) => void };
  /** Sends the fact to every actor that applies it (the kinds in `apply`). */
  route(fact: F, to: FactRecipients): void;
  /** The client events, derived right after the fact is applied, against that state. */
  notify?(fact: F, seq: number, view: StateView): Delivery[];
}

/** Declares a fact of type `F`. */
export function fact<F extends AnyFact>(def: FactDef<F>): FactDef<F> {
  return def;
}

/**
 * Declares a fact only its organization's actor applies: most organization-wide
 * settings and collections (invitations, linkifiers, custom emoji, user groups…). It
 * goes to that actor alone; `apply` is its reducer.
 */
export function orgFact<F extends AnyFact & { org: number }>(def: { type: F['type']; apply: (ctx: Contexts['org'], fact: F) => void; notify?: FactDef<F>['notify'] }): FactDef<F> {
  const out: FactDef<F> = { type: def.type, apply: { org: def.apply } as FactDef<F>['apply'], route: (f, to) => to.org(f.org) };
  if (def.notify) out.notify = def.notify;
  return out;
}

/**
 * Declares a fact about one user's own things (drafts, snippets, devices, topic
 * settings…): only that user's actor applies it, and it goes to that actor alone;
 * `apply` is its reducer. Its events, if any, usually go to that user alone (`toOwner`).
 */
export function userFact<F extends AnyFact & { org: number; user_id: number }>(def: { type: F['type']; apply: (ctx: Contexts['user'], fact: F) => void; notify?: FactDef<F>['notify'] }): FactDef<F> {
  const out: FactDef<F> = { type: def.type, apply: { user: def.apply } as FactDef<F>['apply'], route: (f, to) => to.user(f.org, f.user_id) };
  if (def.notify) out.notify = def.notify;
  return out;
}

/** What a `/register` section is built for. */
export interface InitialStateRequest {
  org: OrgRecord;
  user: UserRecord;
  realmUrl: string;
  heartbeatMaxMs: number;
  includeSubscribers: boolean;
  /** What the client declared it handles (`core/capabilities.ts`): the sections differ by it as the events do. */
  caps: ClientCapabilities;
  /** Unix seconds now. */
  now: number;
  /** The client copes with users missing from `realm_users` (capability `user_list_incomplete`): no "Unknown user" placeholders. */
  userListIncomplete: boolean;
  /** Unix seconds now, with fractions (`server_timestamp`). */
  nowPrecise: number;
  /** How the `presence` section is fetched. */
  presence: {
    /** Modern format keyed by user id (`slim_presence`, or the `simplified_presence_events` capability). */
    slim: boolean;
    /** `presence_history_limit_days`; null: 14. */
    historyLimitDays: number | null;
    /** `CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE`. */
    limited: boolean;
  };
}

/** A part of the `/register` response, included when `fetch_event_types` names one of `types`. */
export interface RegisterSection {
  types: readonly string[];
  fill(state: Record<string, unknown>, req: InitialStateRequest, view: StateView): void;
}

/** One area: everything about one part of the domain, declared in one place. */
export interface Area {
  name: string;
  commands: readonly CommandDef<any, any, any, any>[];
  facts: readonly FactDef<any>[];
  register?: readonly RegisterSection[];
}

/** Declares an area, keeping the exact types of its commands and facts. */
export function area<const A extends Area>(a: A): A {
  return a;
}
