/**
 * The record of organizations restored to an earlier point (`parley restore-org`).
 *
 * Such a restore is not a fact in the log: it replaces one organization's state as a
 * whole, and the snapshot written at once after it (at seq `seq`, the end of the log
 * then) is where the result lives. The log before that seq still holds the facts the
 * restore undid, so recovery must never replay across it: a snapshot older than a
 * restore serves only a recovery to a seq before it (an operator's `restore --to-seq`
 * into another directory, or the next `restore-org` to a point before it), and a
 * recovery that would cross one without a newer snapshot is refused.
 *
 * The file is small and rewritten whole (temporary name, fsync, rename, directory
 * fsync), after the snapshot is in place: a crash between the two leaves the newest
 * snapshot the restore's, and the older ones a consistent state from before it.
 */
import { existsSync, readFileSync, renameSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir } from './log.js';

/** One organization restored. */
export interface OrgRestore {
  /** The seq the restore's snapshot covers: the log's end when it was made. */
  seq: number;
  /** The organization restored. */
  org: number;
  /** The seq it was restored to: its state is what it was once the log reached this seq. */
  to_seq: number;
  /** When the restore was made (ISO 8601). */
  made_at: string;
}

export const ORG_RESTORES_FILE = 'org-restores.json';

/** The restores made in a data directory, oldest first (none when the file is absent). A damaged file is an error: recovery must not guess. */
export function readOrgRestores(dataDir: string): OrgRestore[] {
  const path = join(dataDir, ORG_RESTORES_FILE);
  if (!existsSync(path)) return [];
  let list: unknown;
  try {
    list = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`${path} is damaged (${(err as Error).message}); it records which snapshots an organization restore made unusable`);
  }
  if (!Array.isArray(list) || !list.every((r) => r && Number.isSafeInteger(r.seq) && Number.isSafeInteger(r.org) && Number.isSafeInteger(r.to_seq))) {
    throw new Error(`${path} is damaged (not a list of restores); it records which snapshots an organization restore made unusable`);
  }
  return list as OrgRestore[];
}

/** Adds a restore to the record, durably. */
export function recordOrgRestore(dataDir: string, restore: OrgRestore): void {
  const path = join(dataDir, ORG_RESTORES_FILE);
  const list = [...readOrgRestores(dataDir), restore];
  const temp = `${path}.tmp`;
  writeFileSync(temp, `${JSON.stringify(list, null, 2)}\n`);
  const fd = openSync(temp, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  fsyncDir(dataDir);
}

/**
 * The restore a recovery from a snapshot at `startSeq` (0: from the log alone) to
 * `toSeq` (the log's end when undefined) would replay across, if any: one whose seq is
 * after the start and at or before the end.
 */
export function restoreCrossed(restores: readonly OrgRestore[], startSeq: number, toSeq: number | undefined): OrgRestore | undefined {
  return restores.find((r) => r.seq > startSeq && (toSeq === undefined || r.seq <= toSeq));
}
