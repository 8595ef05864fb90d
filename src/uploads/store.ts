/**
 * The upload store: uploaded files under `<data dir>/uploads`, one directory per
 * organization, each file named by the SHA-256 of its bytes. Bytes arrive in a temp
 * file (`uploads/tmp`), which is synced, renamed into place, and its directory synced
 * before the fact recording the upload is committed: an acknowledged upload survives
 * a crash. A file no attachment and no kept snapshot names is garbage (`collect`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A file received into the temp directory, not yet in place. */
export interface Received {
  tmpPath: string;
  size: number;
  sha256: string;
}

/** Thrown when a file grows past the limit while it is received. */
export class TooLarge extends Error {}

/**
 * Thrown when the server could not write what it received (a full disk, a quota, an
 * I/O error): the server's failure, never the client's (`refuseWrite`).
 */
export class WriteFailed extends Error {
  constructor(override readonly cause: NodeJS.ErrnoException) {
    super(cause.message);
  }
}

/** Opens the file a stream of bytes is written to: the seam where tests make writes fail (ENOSPC). */
export type OpenSink = (path: string, flags: 'w' | 'a') => Writable;

/** The real sink: a file write stream. */
export const fileSink: OpenSink = (path, flags) => createWriteStream(path, { flags });

/**
 * Writes `source` through `meter` into `sink`, and tells a failure of the write (the
 * sink's error) from a failure of the source (the client went away, a limit): the
 * first is thrown as `WriteFailed`.
 */
export async function writeThrough(source: Readable, meter: Transform, sink: Writable): Promise<void> {
  let sinkError: unknown;
  sink.once('error', (err) => {
    sinkError = err;
  });
  try {
    await pipeline(source, meter, sink);
  } catch (err) {
    throw err === sinkError ? new WriteFailed(err as NodeJS.ErrnoException) : err;
  }
}

/** Syncs a file or directory to disk. */
async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class UploadStore {
  readonly root: string;
  private readonly tmp: string;
  /** How received bytes are written (replaced by tests to make writes fail). */
  openSink: OpenSink = fileSink;

  constructor(dataDir: string) {
    this.root = join(dataDir, 'uploads');
    this.tmp = join(this.root, 'tmp');
  }

  /** Where an organization's file with this digest lives. */
  pathOf(orgId: number, sha256: string): string {
    return join(this.root, String(orgId), sha256);
  }

  /**
   * Writes `source` to a temp file as it arrives, hashing it; past `maxBytes` it stops
   * with `TooLarge`; a failed write is `WriteFailed`. On any failure (the client went
   * away, the limit, a full disk) nothing is left.
   */
  async receive(source: Readable, maxBytes: number): Promise<Received> {
    try {
      mkdirSync(this.tmp, { recursive: true });
    } catch (err) {
      throw new WriteFailed(err as NodeJS.ErrnoException);
    }
    const tmpPath = join(this.tmp, randomBytes(12).toString('hex'));
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes) {
          done(new TooLarge());
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await writeThrough(source, meter, this.openSink(tmpPath, 'w'));
    } catch (err) {
      await unlink(tmpPath).catch(() => {});
      throw err;
    }
    return { tmpPath, size, sha256: hash.digest('hex') };
  }

  /** Syncs a received file and moves it into place, its directory synced too. */
  async commit(orgId: number, r: Received): Promise<void> {
    await fsyncPath(r.tmpPath);
    const dir = join(this.root, String(orgId));
    if (!existsSync(dir)) {
      mkdirSync(dir, { recursive: true });
      await fsyncPath(this.root);
    }
    await rename(r.tmpPath, join(dir, r.sha256));
    await fsyncPath(dir);
  }

  /** Drops a received file that will not be kept. */
  async discard(r: Received): Promise<void> {
    await unlink(r.tmpPath).catch(() => {});
  }

  /** Removes temp files a crash left behind (at start, before any upload). */
  clearTemp(): void {
    rmSync(this.tmp, { recursive: true, force: true });
  }

  /** Every stored file: organization, digest and size. */
  list(): Array<{ org: number; sha256: string; size: number }> {
    if (!existsSync(this.root)) return [];
    const out: Array<{ org: number; sha256: string; size: number }> = [];
    for (const dir of readdirSync(this.root)) {
      if (!/^\d+$/.test(dir)) continue;
      for (const name of readdirSync(join(this.root, dir))) out.push({ org: Number(dir), sha256: name, size: statSync(join(this.root, dir, name)).size });
    }
    return out;
  }

  /** Deletes the files `keep` does not name (by `<org>/<sha256>`); returns how many went. */
  async collect(keep: Set<string>): Promise<number> {
    let removed = 0;
    for (const f of this.list()) {
      if (keep.has(`${f.org}/${f.sha256}`)) continue;
      await unlink(this.pathOf(f.org, f.sha256)).catch(() => {});
      removed++;
    }
    return removed;
  }
}

const stores = new Map<string, UploadStore>();

/** The upload store of a data directory (one per directory per process). */
export function uploadStore(dataDir: string): UploadStore {
  let s = stores.get(dataDir);
  if (!s) stores.set(dataDir, (s = new UploadStore(dataDir)));
  return s;
}
