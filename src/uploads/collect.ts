/**
 * Which stored files are still needed, and deleting the rest. A file is kept while an
 * attachment of the live state names it, or any snapshot still on disk does (so that
 * restoring that snapshot finds its files, as its log segments are kept for it).
 */
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { AttachmentRecord, RealmEmojiRecord } from '../../actors/kinds/organization.js';
import { listSnapshots, readSnapshot } from '../../snapshots/snapshot.js';
import { uploadStore } from './store.js';

/** A stored file some state names: its organization, digest and size. */
export interface NamedFile { org: number; sha256: string; size: number }

/**
 * The files a snapshot names: its organizations' attachments, and their custom emoji
 * images (which are files of the same store, kept as long as an emoji names them).
 */
export function snapshotAttachments(path: string): Array<{ org: number; attachment: NamedFile }> | string {
  const v = readSnapshot(path);
  if (typeof v === 'string') return v;
  const out: Array<{ org: number; attachment: NamedFile }> = [];
  for (const chunk of v.chunks as Array<{ k?: string; org?: { id: number }; attachments?: AttachmentRecord[]; realmEmoji?: RealmEmojiRecord[] }>) {
    if (chunk.k !== 'org') continue;
    for (const a of [...(chunk.attachments ?? []), ...(chunk.realmEmoji ?? [])]) out.push({ org: chunk.org!.id, attachment: { org: chunk.org!.id, sha256: a.sha256, size: a.size } });
  }
  return out;
}

/** Files named by each snapshot, by snapshot name (a snapshot never changes once written). */
const named = new Map<string, string[]>();

function pinnedBySnapshots(dataDir: string): Set<string> {
  const keep = new Set<string>();
  for (const s of listSnapshots(dataDir)) {
    let files = named.get(s.path);
    if (!files) {
      const read = snapshotAttachments(s.path);
      files = typeof read === 'string' ? [] : read.map((x) => `${x.org}/${x.attachment.sha256}`);
      named.set(s.path, files);
    }
    for (const f of files) keep.add(f);
  }
  return keep;
}

/** Deletes stored files that nothing names any more; returns how many went. */
export async function collectUploads(runtime: Runtime, dataDir: string): Promise<number> {
  const keep = pinnedBySnapshots(dataDir);
  for (const orgId of runtime.server().orgs.keys()) {
    for (const a of runtime.org(orgId)?.attachments.values() ?? []) keep.add(`${orgId}/${a.sha256}`);
    for (const e of runtime.org(orgId)?.realmEmoji.values() ?? []) keep.add(`${orgId}/${e.sha256}`);
  }
  return uploadStore(dataDir).collect(keep);
}
