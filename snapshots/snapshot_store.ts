/**
 * Where snapshots are kept: the seam between the snapshot code (framing, writing in
 * slices, recovery, pruning) and the storage under it. A snapshot is a named, immutable
 * byte string: written once, in pieces, and visible only once committed whole; read by
 * position, never whole; listed newest first by the seq it starts at; removed when
 * pruned. Here it is a directory of files; the cluster keeps them in an object store.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir } from './log.js';
import type { ByteSource } from './snapshot_format.js';

/** One stored snapshot. */
export interface SnapshotEntry {
  name: string;
  /** The seq every actor it holds reflects (from its name). */
  startSeq: number;
  size: number;
  mtimeMs: number;
  /** Where it is, for messages, logs and tools (a file's path here). */
  path: string;
}

/** A stored snapshot open for reading by position. */
export interface SnapshotReader extends ByteSource {
  close(): void;
}

/** A snapshot being written: nothing of it is listed until `commit`. */
export interface SnapshotUpload {
  /** Appends bytes (awaited one write at a time). */
  write(buf: Buffer): Promise<void>;
  /** Makes it durable and visible whole; answers where it is. */
  commit(): Promise<string>;
  /** Drops what was written. */
  abort(): Promise<void>;
}

export interface SnapshotStore {
  /** Every committed snapshot, newest (highest start seq) first. */
  list(): SnapshotEntry[];
  /** Starts writing snapshot `name` (replacing one of that name when committed). */
  create(name: string): Promise<SnapshotUpload>;
  /** Opens a snapshot for reading, or says why it cannot be. */
  open(name: string): SnapshotReader | string;
  /** Removes a snapshot. */
  remove(name: string): Promise<void>;
}

const SNAPSHOT = /^snap-(\d{16})\.psnap$/;

/** The name of a snapshot that starts at `startSeq`. */
export function snapshotName(startSeq: number): string {
  return `snap-${String(startSeq).padStart(16, '0')}.psnap`;
}

/**
 * Snapshots as files of a directory (the data directory). A snapshot is written to a
 * temporary name, fsync'd, renamed into place and the directory fsync'd, so a file
 * with a snapshot's name is always complete.
 */
export class DirectorySnapshots implements SnapshotStore {
  constructor(readonly dir: string) {}

  list(): SnapshotEntry[] {
    return readdirSync(this.dir)
      .map((name) => ({ name, m: SNAPSHOT.exec(name) }))
      .filter((x) => x.m !== null)
      .map((x) => {
        const path = join(this.dir, x.name);
        const st = statSync(path);
        return { name: x.name, path, startSeq: Number(x.m![1]), size: st.size, mtimeMs: st.mtimeMs };
      })
      .sort((a, b) => b.startSeq - a.startSeq);
  }

  async create(name: string): Promise<SnapshotUpload> {
    const final = join(this.dir, name);
    const temp = `${final}.${process.pid}.tmp`;
    const file = await open(temp, 'w');
    const dir = this.dir;
    return {
      async write(buf) {
        for (let off = 0; off < buf.length; ) off += (await file.write(buf, off, buf.length - off)).bytesWritten;
      },
      async commit() {
        await file.sync();
        await file.close();
        renameSync(temp, final);
        fsyncDir(dir);
        return final;
      },
      async abort() {
        await file.close().catch(() => undefined);
        rmSync(temp, { force: true });
      },
    };
  }

  open(name: string): SnapshotReader | string {
    return openSnapshotFile(join(this.dir, name));
  }

  async remove(name: string): Promise<void> {
    // Unlinking a file of hundreds of MB can take a while: off the event loop.
    await rm(join(this.dir, name));
  }
}

/**
 * Opens a snapshot file for reading by position, or says why it cannot be. Never read
 * whole: a snapshot may be larger than a buffer can be (2 GiB for one read) or than the
 * heap can spare.
 */
export function openSnapshotFile(path: string): SnapshotReader | string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return `cannot be read: ${(err as Error).message}`;
  }
  const size = fstatSync(fd).size;
  return {
    size,
    read(position, length, scratch) {
      const into = scratch && scratch.length >= length ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
      for (let done = 0; done < length; ) {
        const n = readSync(fd, into, done, length - done, position + done);
        if (n === 0) throw new Error(`${path} ended at ${position + done} bytes while reading ${length} at ${position} (changed while read?)`);
        done += n;
      }
      return into;
    },
    close: () => closeSync(fd),
  };
}
