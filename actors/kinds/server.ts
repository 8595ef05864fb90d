/**
 * The server actor: the organizations, by id and by subdomain, and the highest
 * message id ever assigned (server-wide, as in Zulip; so is the submessages' id,
 * a state slice of `actors/areas/submessages.ts`).
 */
import type { Persistence } from '../core/persistence.js';
import { savedSlices, withSlices } from '../core/state_slices.js';
import type { OrgRecord } from '../shared/types.js';

/** State of the server actor. */
export interface ServerContext {
  seq: number;
  orgs: Map<number, OrgRecord>;
  bySubdomain: Map<string, number>;
  /** The highest message id ever assigned; the next one is this plus one. */
  maxMessageId: number;
}

export function emptyServer(): ServerContext {
  return withSlices('server', { seq: 0, orgs: new Map(), bySubdomain: new Map(), maxMessageId: 0 });
}

interface ServerChunk {
  k: 'server';
  seq: number;
  orgs: OrgRecord[];
  maxMessageId: number;
  [slice: string]: unknown;
}

/** Where a restored server context goes. */
export interface ServerRestoreScope {
  installServer(ctx: ServerContext): void;
}

export const serverPersistence: Persistence<ServerContext, ServerRestoreScope> = {
  tags: ['server'],
  *chunks(ctx) {
    yield (): ServerChunk => ({ k: 'server', seq: ctx.seq, orgs: [...ctx.orgs.values()], maxMessageId: ctx.maxMessageId, ...savedSlices('server', ctx) });
  },
  restore(chunk, scope) {
    const c = chunk as ServerChunk;
    scope.installServer(withSlices('server', {
      seq: c.seq,
      orgs: new Map(c.orgs.map((o) => [o.id, o])),
      bySubdomain: new Map(c.orgs.map((o) => [o.subdomain, o.id])),
      maxMessageId: c.maxMessageId,
    }, c));
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    server: ServerContext;
  }
}
