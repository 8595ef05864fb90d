/**
 * A read-only view across actors, for decisions, event derivation and queries that
 * must look at state another actor owns (a sender's role, a channel's subscribers).
 * Reads are synchronous snapshots; only the owning actor ever changes what they return.
 */
import type { BoardContext } from '../kinds/board.js';
import type { ChannelContext } from '../kinds/channel.js';
import type { OrgContext } from '../kinds/organization.js';
import type { ServerContext } from '../kinds/server.js';
import type { UserContext } from '../kinds/user.js';

export interface StateView {
  server(): ServerContext;
  org(orgId: number): OrgContext | undefined;
  channel(orgId: number, streamId: number): ChannelContext | undefined;
  user(orgId: number, userId: number): UserContext | undefined;
  board(): BoardContext;
  /** Ids of every channel of an organization. */
  channelIdsOf(orgId: number): number[];
}
