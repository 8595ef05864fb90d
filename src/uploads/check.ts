/**
 * Offline checks and copies of stored files, for the operator CLI: whether a file a
 * snapshot or a state names is there with its size and SHA-256, and copying the files
 * a restored state names into a fresh data directory (synced before the snapshot that
 * names them is written, so a restored directory never names a file it lacks).
 */
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AttachmentRecord } from '../../actors/areas/attachments.js';
import type { RealmEmojiRecord } from '../../actors/areas/realm_emoji.js';
import type { RealmExportRecord } from '../../actors/areas/realm_exports.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import type { UploadStore } from './store.js';

/** A stored file some state names: by an attachment, or as a custom emoji's image. */
export interface NamedFile {
  org: number;
  file: { sha256: string; size: number };
  /** What names it, for reports: `attachment 3 "notes.txt"`, `custom emoji 2 "parrot"`. */
  what: string;
}

/** The files an organization's attachments, custom emoji and data export archives name. */
export function namedFiles(org: number, attachments: Iterable<AttachmentRecord>, emoji: Iterable<RealmEmojiRecord>, exports: Iterable<RealmExportRecord> = []): NamedFile[] {
  const out: NamedFile[] = [];
  for (const a of attachments) out.push({ org, file: a, what: `attachment ${a.id} "${a.name}"` });
  for (const e of emoji) out.push({ org, file: e, what: `custom emoji ${e.id} "${e.name}"` });
  for (const x of exports) if (x.file && x.status === 'succeeded') out.push({ org, file: x.file, what: `data export ${x.id} "${x.file.name}"` });
  return out;
}

/** What is wrong with a stored file: `missing`, or `corrupt` with why; undefined when it is sound. */
export type FileProblem = { kind: 'missing' } | { kind: 'corrupt'; why: string } | undefined;

/** The SHA-256 of a file, read piece by piece. */
function sha256Of(path: string): string {
  const hash = createHash('sha256');
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** Checks one stored file against its attachment: present, of its size, of its digest. */
export function checkFile(store: UploadStore, f: NamedFile): FileProblem {
  const path = store.pathOf(f.org, f.file.sha256);
  if (!existsSync(path)) return { kind: 'missing' };
  const size = statSync(path).size;
  if (size !== f.file.size) return { kind: 'corrupt', why: `${size} bytes, expected ${f.file.size}` };
  const digest = sha256Of(path);
  if (digest !== f.file.sha256) return { kind: 'corrupt', why: `SHA-256 ${digest}, expected ${f.file.sha256}` };
  return undefined;
}

/** The files a live state names: every attachment of every organization. */
export function stateAttachments(runtime: Runtime): NamedFile[] {
  const out: NamedFile[] = [];
  for (const org of runtime.server().orgs.keys()) {
    const ctx = runtime.org(org);
    if (ctx) out.push(...namedFiles(org, ctx.attachments.values(), ctx.realmEmoji.values(), ctx.exports.values()));
  }
  return out;
}

/** Syncs a file or directory. */
function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies the named files that are sound from `from` into `to` (each file once, synced,
 * with its directories); returns the files that could not be copied and why.
 */
export function copyFiles(from: UploadStore, to: UploadStore, files: NamedFile[]): Array<NamedFile & { problem: NonNullable<FileProblem> }> {
  const failed: Array<NamedFile & { problem: NonNullable<FileProblem> }> = [];
  const done = new Set<string>();
  const dirs = new Set<string>();
  for (const f of files) {
    const key = `${f.org}/${f.file.sha256}`;
    if (done.has(key)) continue;
    done.add(key);
    const problem = checkFile(from, f);
    if (problem) {
      failed.push({ ...f, problem });
      continue;
    }
    const dir = join(to.root, String(f.org));
    mkdirSync(dir, { recursive: true });
    const dest = to.pathOf(f.org, f.file.sha256);
    copyFileSync(from.pathOf(f.org, f.file.sha256), dest);
    syncPath(dest);
    dirs.add(dir);
  }
  for (const dir of dirs) syncPath(dir);
  if (dirs.size > 0) syncPath(to.root);
  return failed;
}
