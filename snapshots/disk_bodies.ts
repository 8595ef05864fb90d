/**
 * The data directory's body store (`body_store.ts`) as the runtime's `Bodies`: message
 * bodies on disk behind a bounded cache, locators that outlive the process.
 *
 * A damaged record found while serving does not stop the server or fail the request: the
 * message reads as a notice that its body is damaged, the damage is logged once per
 * record, and `parley verify` names the file and offset. (At start, damage where a torn
 * tail may be is repaired or refused, as for the log.)
 */
import type { Bodies } from '../actors/core/bodies.js';
import type { Logger } from '../actors/core/logger.js';
import type { MessageBody } from '../actors/shared/types.js';
import { BodyCorrupt, type BodyStore } from './body_store.js';

/** What a message whose body is damaged on disk reads as. */
export const DAMAGED_BODY: MessageBody = Object.freeze({
  content: '(This message could not be read: its body is damaged on disk.)',
  rendered: '<p>(This message could not be read: its body is damaged on disk.)</p>',
});

export class DiskBodies implements Bodies {
  readonly persistent = true;
  private readonly told = new Set<number>();

  constructor(
    readonly store: BodyStore,
    private readonly log: Logger,
  ) {}

  append(id: number, body: MessageBody): number {
    return this.store.append(id, body);
  }

  read(loc: number): MessageBody | undefined {
    try {
      return this.store.read(loc) as MessageBody;
    } catch (err) {
      if (err instanceof BodyCorrupt) return this.damaged(loc, err);
      throw err;
    }
  }

  async readMany(locs: number[]): Promise<Map<number, MessageBody>> {
    const damaged: number[] = [];
    const out = (await this.store.readMany(locs, {
      onCorrupt: (loc, err) => {
        this.damaged(loc, err);
        damaged.push(loc);
      },
    })) as Map<number, MessageBody>;
    for (const loc of damaged) out.set(loc, DAMAGED_BODY);
    return out;
  }

  /** Versions are dropped by the store's compaction, which keeps only what messages hold then. */
  release(_loc: number): void {}

  private damaged(loc: number, err: BodyCorrupt): MessageBody {
    if (!this.told.has(loc)) {
      this.told.add(loc);
      this.log.error({ event: 'bodies.damaged', file: err.file, offset: err.offset }, `bodies: ${err.message}; the message reads as damaged (parley verify lists every damaged record)`);
    }
    return DAMAGED_BODY;
  }
}
