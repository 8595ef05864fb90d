/**
 * The shape every domain actor shares: XState v5 transition logic over a plain-data
 * context, fed two kinds of message through its mailbox, one at a time:
 *
 * - `command`: the actor decides. It checks permissions and state, chooses ids and
 *   timestamps from the injected `DecideEnv`, and produces facts (or an error). The
 *   facts are stamped with their log order and applied to its own context at once,
 *   in the same step, so no later command can decide on stale state.
 * - `apply`: a fact decided elsewhere (or replayed from the log) that concerns this
 *   actor. Applying is a pure reducer: replay runs the very same code.
 *
 * What a command decides and how a fact is applied are declared by the areas
 * (`actors/areas/`); this module only runs them.
 */
import type { Actor } from 'xstate';
import { fromInPlaceTransition, type InPlaceLogic } from './in_place_transition.js';
import type { Supervisor } from './supervisor.js';

/** What every fact has: its type, by which the areas' declarations are looked up. */
export interface AnyFact {
  type: string;
}

/** A fact stamped with its place in the server-wide log order. */
export interface Stamped<F extends AnyFact = AnyFact> {
  seq: number;
  fact: F;
  /**
   * When it was committed, ms since the epoch (the runtime's clock as it stamped it): what
   * a point-in-time restore finds seqs by. Absent in records of log format 1.
   */
  at?: number;
  /** The organization the fact belongs to (`factOrg`), 0 for server-wide ones. Absent in log format 1. */
  org?: number;
  /** Its place in that organization's own sequence (1, 2, ... with no gap). Absent in log format 1. */
  oseq?: number;
}

/**
 * The organization an `org` field names: an id, or an organization's record (its
 * creation's fact and its own snapshot chunk hold the record); undefined for anything else.
 */
export function orgIdOf(org: unknown): number | undefined {
  if (typeof org === 'number') return org;
  if (org && typeof org === 'object' && typeof (org as { id?: unknown }).id === 'number') return (org as { id: number }).id;
  return undefined;
}

/** The organization a fact belongs to: the one it names, else 0, server-wide. */
export function factOrg(fact: AnyFact): number {
  return orgIdOf((fact as { org?: unknown }).org) ?? 0;
}

/** Everything non-deterministic a decision may use. Reducers never see it. */
export interface DecideEnv {
  /** Wall clock, Unix seconds. */
  now(): number;
  /** Random url-safe token of `bytes` bytes of entropy. */
  token(bytes: number): string;
  /** The next server-wide message id. */
  nextMessageId(): number;
  /** The next server-wide submessage id. */
  nextSubmessageId(): number;
  /** Stamps facts with their seq in the server-wide log order. */
  stamp(facts: AnyFact[]): Stamped[];
}

/** What a decision produced: facts to commit and the value the caller gets back. */
export interface Decision<R = unknown, F extends AnyFact = AnyFact> {
  facts: F[];
  value: R;
  /**
   * Facts applied to the deciding actor's own context only, in memory: never stamped,
   * logged or sent to another actor, so they cost no write and no fsync. State they
   * change survives a restart only through a snapshot (presence: see
   * `actors/areas/presence.ts`); replay never needs them.
   */
  volatile?: AnyFact[];
}

/** The result of a command, handed back through the command's `done` callback. */
export type Outcome = { ok: true; stamped: Stamped[]; value: unknown } | { ok: false; error: unknown };

/** A command addressed to one actor: its decision, bound to its input, and the way its outcome returns. */
export interface CommandEvent<Ctx> {
  type: 'command';
  decide: (ctx: Ctx, env: DecideEnv) => Decision;
  env: DecideEnv;
  done: (outcome: Outcome) => void;
}
/** A fact to fold into the actor's context. */
export interface ApplyEvent {
  type: 'apply';
  stamped: Stamped;
}
export type DomainEvent<Ctx> = CommandEvent<Ctx> | ApplyEvent;

/** Context fields every domain actor carries: the newest seq it reflects. */
export interface Versioned {
  seq: number;
}

/** Applies one fact to a context of one actor kind (a lookup over the areas' reducers). */
export type Reduce<Ctx> = (ctx: Ctx, fact: AnyFact) => void;

/**
 * Builds XState transition logic from a reducer. The context is updated in place:
 * actor contexts hold millions of messages, and copying them per event would be
 * ruinous. Only the actor itself ever holds a reference that writes.
 */
export function domainLogic<Ctx extends Versioned>(reduce: Reduce<Ctx>): InPlaceLogic<Ctx, DomainEvent<Ctx>> {
  return fromInPlaceTransition<Ctx, DomainEvent<Ctx>>((ctx, event, scope) => {
    if (event.type === 'apply') {
      // An actor restored from a snapshot already reflects facts up to its own seq.
      if (event.stamped.seq <= ctx.seq) return;
      reduce(ctx, event.stamped.fact);
      ctx.seq = event.stamped.seq;
      return;
    }
    // XState's own lifecycle events (such as stop) pass through unchanged.
    if (event.type !== 'command') return;
    let outcome: Outcome;
    try {
      const decision = event.decide(ctx, event.env);
      // Volatile facts leave the actor's seq alone: a snapshot's head still names the last logged fact it reflects.
      if (decision.volatile) for (const f of decision.volatile) reduce(ctx, f);
      const stamped = event.env.stamp(decision.facts);
      for (const s of stamped) {
        reduce(ctx, s.fact);
        ctx.seq = s.seq;
      }
      outcome = { ok: true, stamped, value: decision.value };
    } catch (error) {
      outcome = { ok: false, error };
    }
    const done = event.done;
    scope.defer(() => done(outcome));
  });
}

/** A running domain actor. */
export type DomainActor<Ctx> = Actor<InPlaceLogic<Ctx, DomainEvent<Ctx>>>;

/** Creates and starts an actor under `supervisor` from domain logic and its initial context. */
export function startActor<Ctx extends Versioned>(supervisor: Supervisor, logic: InPlaceLogic<Ctx, DomainEvent<Ctx>>, context: Ctx): DomainActor<Ctx> {
  return supervisor.spawn(logic, context);
}

/** Reads an actor's current context. Reads are synchronous and never queue. */
export function contextOf<Ctx>(actor: { getSnapshot(): { context: Ctx } }): Ctx {
  return actor.getSnapshot().context;
}
