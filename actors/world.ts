/**
 * A read-only view across actors, for decisions and queries that must look at state
 * another actor owns (a sender's role, a channel's subscribers). Reads are synchronous
 * snapshots; only the owning actor ever changes what they return.
 */
import type { ChannelContext } from './channel.js';
import type { OrgContext } from './organization.js';
import type { ServerContext } from './server.js';
import type { UserContext } from './user.js';

export interface World {
  server(): ServerContext;
  org(orgId: number): OrgContext | undefined;
  channel(orgId: number, streamId: number): ChannelContext | undefined;
  user(orgId: number, userId: number): UserContext | undefined;
  /** Ids of every channel of an organization. */
  channelIdsOf(orgId: number): number[];
}
