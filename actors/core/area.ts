/**
 * The declarations an area (`actors/areas/*.ts`) is made of, in the manner of Zulip's
 * `zerver/actions/` modules: its commands, with typed input and result; its facts,
 * with the actors that apply each one, the reducers, and the client events each
 * yields; and its sections of the `/register` response. The runtime, the snapshot
 * code and `/register` are lookups over these declarations; none of them switches
 * on a command or fact type.
 */
import type { MessageRecord, OrgRecord, UserRecord } from '../types.js';
import type { AnyFact, DecideEnv, Decision } from './domain_logic.js';
import type { ClientCapabilities } from './capabilities.js';
import type { ActorKind, Contexts, StateView } from './state_view.js';

export type { ActorKind, Contexts } from './state_view.js';

/** How a command names the one actor that decides it. */
export interface Addresses {
  server: object;
  board: object;
  org: { org: number };
  channel: { org: number; stream_id: number };
  user: { org: number; user_id: number };
}

/** A command: which kind of actor decides it, and how. `C` is its input, tagged with its type. */
export interface CommandDef<K extends ActorKind = ActorKind, C extends { type: string } = any, R = unknown, F extends AnyFact = AnyFact> {
  type: C['type'];
  actor: K;
  decide(ctx: Contexts[K], command: C, env: DecideEnv, view: StateView): Decision<R, F>;
}

/** Declares a command; its input, result and facts are inferred from `decide`. */
export function command<K extends ActorKind, C extends { type: string }, R, F extends AnyFact>(def: CommandDef<K, C, R, F>): CommandDef<K, C, R, F> {
  return def;
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
