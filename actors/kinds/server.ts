/**
 * The server actor: the organizations, by id and by subdomain, and the highest
 * message id and submessage id ever assigned (both are server-wide, as in Zulip).
 */
import type { Persistence } from '../core/persistence.js';
import type { OrgRecord } from '../shared/types.js';

/** State of the server actor. */
export interface ServerContext {
  seq: number;
  orgs: Map<number, OrgRecord>;
  bySubdomain: Map<string, number>;
  /** The highest message id ever assigned; the next one is this plus one. */
  maxMessageId: number;
  /** The highest submessage id ever assigned (widgets: `actors/areas/submessages.ts`). */
  maxSubmessageId: number;
}

export function emptyServer(): ServerContext {
  return { seq: 0, orgs: new Map(), bySubdomain: new Map(), maxMessageId: 0, maxSubmessageId: 0 };
}

interface ServerChunk {
  k: 'server';
  seq: number;
  orgs: OrgRecord[];
  maxMessageId: number;
  /** Absent in chunks written before submessages existed: none had been assigned. */
  maxSubmessageId?: number;
}

/** Where a restored server context goes. */
export interface ServerRestoreScope {
  installServer(ctx: ServerContext): void;
}

export const serverPersistence: Persistence<ServerContext, ServerRestoreScope> = {
  tags: ['server'],
  *chunks(ctx) {
    yield (): ServerChunk => ({ k: 'server', seq: ctx.seq, orgs: [...ctx.orgs.values()], maxMessageId: ctx.maxMessageId, maxSubmessageId: ctx.maxSubmessageId });
  },
  restore(chunk, scope) {
    const c = chunk as ServerChunk;
    scope.installServer({
      seq: c.seq,
      orgs: new Map(c.orgs.map((o) => [o.id, o])),
      bySubdomain: new Map(c.orgs.map((o) => [o.subdomain, o.id])),
      maxMessageId: c.maxMessageId,
      maxSubmessageId: c.maxSubmessageId ?? 0,
    });
  },
};

declare module '../core/state_view.js' {
  interface Contexts {
    server: ServerContext;
  }
}
