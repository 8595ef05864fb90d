/**
 * Which stored files are still needed, and deleting the rest. A file is kept while an
 * attachment of the live state names it, or any snapshot still on disk does (so that
 * restoring that snapshot finds its files, as its log segments are kept for it).
 */
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { AttachmentRecord } from '../../actors/areas/attachments.js';
import type { RealmEmojiRecord } from '../../actors/areas/realm_emoji.js';
import type { RealmExportRecord } from '../../actors/areas/realm_exports.js';
import { runSlicesAsync } from '../../snapshots/log.js';
import { listSnapshots, walkSnapshotFile } from '../../snapshots/snapshot.js';
import { namedFiles, type NamedFile } from './check.js';
import { uploadStore } from './store.js';

/** The files one snapshot chunk names: an organization's attachments, custom emoji images and data export archives. */
export function chunkAttachments(chunk: unknown): NamedFile[] {
  const c = chunk as { k?: string; org?: { id: number }; attachments?: AttachmentRecord[]; realmEmoji?: RealmEmojiRecord[]; exports?: RealmExportRecord[] };
  if (c.k !== 'org') return [];
  return namedFiles(c.org!.id, c.attachments ?? [], c.realmEmoji ?? [], c.exports ?? []);
}

/**
 * The files a snapshot file names (files of the same store), read chunk by chunk with
 * the event loop let run between slices: the whole file is read (its message chunks
 * too), which held the loop 0.27 s at 2 M messages and about 3 s at 20 M when read in
 * one go, the longest stall of a start. A string says why it cannot be read.
 */
export async function snapshotAttachments(path: string): Promise<NamedFile[] | string> {
  const out: NamedFile[] = [];
  try {
    const read = await runSlicesAsync(walkSnapshotFile(path, (chunk) => out.push(...chunkAttachments(chunk))));
    return typeof read === 'string' ? read : out;
  } catch (err) {
    return `cannot be read: ${(err as Error).message}`;
  }
}

/** Files named by each snapshot, by snapshot name (a snapshot never changes once written). */
const named = new Map<string, string[]>();

async function pinnedBySnapshots(dataDir: string): Promise<Set<string>> {
  const keep = new Set<string>();
  for (const s of listSnapshots(dataDir)) {
    let files = named.get(s.path);
    if (!files) {
      const read = await snapshotAttachments(s.path);
      files = typeof read === 'string' ? [] : read.map((x) => `${x.org}/${x.file.sha256}`);
      named.set(s.path, files);
    }
    for (const f of files) keep.add(f);
  }
  return keep;
}

/** Deletes stored files that nothing names any more; returns how many went. */
export async function collectUploads(runtime: Runtime, dataDir: string): Promise<number> {
  const keep = await pinnedBySnapshots(dataDir);
  for (const orgId of runtime.server().orgs.keys()) {
    for (const a of runtime.org(orgId)?.attachments.values() ?? []) keep.add(`${orgId}/${a.sha256}`);
    for (const e of runtime.org(orgId)?.realmEmoji.values() ?? []) keep.add(`${orgId}/${e.sha256}`);
    for (const x of runtime.org(orgId)?.exports.values() ?? []) if (x.file) keep.add(`${orgId}/${x.file.sha256}`);
  }
  return uploadStore(dataDir).collect(keep);
}
