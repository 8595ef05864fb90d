/**
 * A read-only view across actors, for decisions, event derivation and queries that
 * must look at state another actor owns (a sender's role, a channel's subscribers).
 * Reads are synchronous snapshots; only the owning actor ever changes what they return.
 */

/**
 * The context of each kind of domain actor, by kind. Each kind's module adds its own
 * entry (`declare module '../core/state_view.js' { interface Contexts { … } }`), as
 * Fastify's plugins extend its types: `core/` names no kind, and stays below them.
 */
export interface Contexts {}
export type ActorKind = keyof Contexts;

export interface StateView {
  server(): Contexts['server'];
  org(orgId: number): Contexts['org'] | undefined;
  channel(orgId: number, streamId: number): Contexts['channel'] | undefined;
  user(orgId: number, userId: number): Contexts['user'] | undefined;
  board(): Contexts['board'];
  /** Ids of every channel of an organization. */
  channelIdsOf(orgId: number): number[];
}
