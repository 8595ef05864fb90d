/** What `parley compact` prints of a body store compaction, whether the server or the command ran it. */
import type { BodyCompaction } from '../../snapshots/store.js';

export function compactionReport(c: BodyCompaction): Record<string, unknown> {
  return {
    snapshot: c.snapshot.path,
    bodies_kept: c.copied,
    body_bytes_before: c.bytesBefore,
    body_bytes_after: c.bytesAfter,
    body_segments_deleted: c.deleted.length,
    body_segments_pending: c.pending.length,
  };
}
