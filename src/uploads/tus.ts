/**
 * The state of resumable (tus 1.0) uploads, kept under `<data dir>/uploads/tus/<org>/`
 * so that an upload resumes after a server restart: `<id>.json` says who uploads what
 * (its length and metadata, and once finished the attachment it became, or that it
 * was terminated), written to a temp file, synced and renamed; `<id>.part` holds the
 * bytes received so far, synced before each PATCH is acknowledged, so the offset a
 * client is told is never lost. On completion the part file is moved into the upload
 * store like any upload (`UploadStore.commit`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { open, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { once } from 'node:events';
import { fileSink, writeThrough, type OpenSink } from './store.js';

/** What is known of one resumable upload. */
export interface TusUpload {
  id: string;
  owner_id: number;
  /** `Upload-Length`: the size of the whole file. */
  length: number;
  /** `Upload-Metadata` as the client sent it (echoed by HEAD), and decoded. */
  rawMetadata: string;
  metadata: Record<string, string>;
  /** Set once the file is stored and its attachment recorded: what the final PATCH answered. */
  done?: { url: string; filename: string };
  /** Set by DELETE: the upload is gone for good (410). */
  terminated?: boolean;
}

/** Resumable uploads untouched this long are forgotten by the daily upload sweep. */
export const TUS_IDLE_MS = 24 * 3600 * 1000;

/** Thrown when a PATCH would carry the upload past its length. */
export class PastLength extends Error {}

/** Upload ids are 32 lowercase hex digits; nothing else names a file. */
const ID = /^[0-9a-f]{32}$/;

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Parses `Upload-Metadata`: comma-separated `key base64value` pairs (the value may be
 * absent); undefined when malformed (a bad key, bad base64, or a repeated key).
 */
export function parseMetadata(header: string | undefined): Record<string, string> | undefined {
  const out: Record<string, string> = Object.create(null);
  if (header === undefined || header.trim() === '') return out;
  for (const pair of header.split(',')) {
    const [key, value, extra] = pair.trim().split(' ');
    if (!key || extra !== undefined || !/^[\x21-\x7e]+$/.test(key) || key in out) return undefined;
    if (value !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
    out[key] = value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8');
  }
  return out;
}

export class TusStore {
  private readonly root: string;
  /** Uploads with a PATCH in flight (`<org>/<id>`): one writer at a time. */
  private readonly busy = new Set<string>();
  /** How received bytes are appended (replaced by tests to make writes fail). */
  openSink: OpenSink = fileSink;

  constructor(uploadsRoot: string) {
    this.root = join(uploadsRoot, 'tus');
  }

  private dir(org: number): string {
    return join(this.root, String(org));
  }

  /** Where the bytes received so far are. */
  partPath(org: number, id: string): string {
    return join(this.dir(org), `${id}.part`);
  }

  /** Starts an upload: its state is durable before its id is given out. */
  async create(org: number, upload: Omit<TusUpload, 'id'>): Promise<TusUpload> {
    const dir = this.dir(org);
    if (!existsSync(dir)) {
      mkdirSync(dir, { recursive: true });
      await syncPath(this.root);
    }
    const created = { ...upload, id: randomBytes(16).toString('hex') };
    await writeFile(this.partPath(org, created.id), '');
    await this.save(org, created);
    return created;
  }

  /** The upload `id` of `org` that `owner` started; undefined for any other. */
  get(org: number, owner: number, id: string): TusUpload | undefined {
    if (!ID.test(id)) return undefined;
    const path = join(this.dir(org), `${id}.json`);
    if (!existsSync(path)) return undefined;
    let upload: TusUpload;
    try {
      upload = JSON.parse(readFileSync(path, 'utf8')) as TusUpload;
    } catch {
      return undefined;
    }
    return upload.owner_id === owner ? upload : undefined;
  }

  /** Bytes received so far (the whole length once finished). */
  offset(org: number, u: TusUpload): number {
    if (u.done) return u.length;
    const path = this.partPath(org, u.id);
    return existsSync(path) ? statSync(path).size : 0;
  }

  /** Records an upload's state: temp file, sync, rename, sync the directory. */
  async save(org: number, u: TusUpload): Promise<void> {
    const path = join(this.dir(org), `${u.id}.json`);
    const tmp = `${path}.tmp`;
    await writeFile(tmp, JSON.stringify(u));
    await syncPath(tmp);
    await rename(tmp, path);
    await syncPath(this.dir(org));
  }

  /** Claims the upload for one PATCH; false while another is in flight. */
  lock(org: number, id: string): boolean {
    const key = `${org}/${id}`;
    if (this.busy.has(key)) return false;
    this.busy.add(key);
    return true;
  }

  unlock(org: number, id: string): void {
    this.busy.delete(`${org}/${id}`);
  }

  /**
   * Appends `source` to the part file, never past `room` bytes (`PastLength` then),
   * and syncs what arrived whatever happened (a client that went away keeps what it
   * sent, which is the point of resuming). Resolves with the error, if any: a failed
   * write (a full disk) is `WriteFailed`, and the offset is then what did land.
   */
  async append(org: number, id: string, source: Readable, room: number): Promise<unknown> {
    let taken = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, done) {
        if (taken + chunk.length > room) {
          done(new PastLength());
          return;
        }
        taken += chunk.length;
        done(null, chunk);
      },
    });
    const path = this.partPath(org, id);
    const sink = this.openSink(path, 'a');
    let failure: unknown;
    try {
      await writeThrough(source, limit, sink);
    } catch (err) {
      failure = err;
    }
    // The offset is the part file's size: only once every write has landed.
    if (!sink.closed) await once(sink, 'close').catch(() => {});
    if (existsSync(path)) await syncPath(path);
    return failure;
  }

  /** The SHA-256 of the finished part file. */
  async digest(org: number, id: string): Promise<string> {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(this.partPath(org, id))) hash.update(chunk as Buffer);
    return hash.digest('hex');
  }

  /**
   * Forgets uploads untouched for `idleMs` (abandoned, finished or terminated): their
   * state and bytes go, and they are unknown (404) from then on. Returns how many went.
   */
  async sweep(idleMs: number, nowMs: number = Date.now()): Promise<number> {
    if (!existsSync(this.root)) return 0;
    let removed = 0;
    for (const org of readdirSync(this.root)) {
      if (!/^\d+$/.test(org)) continue;
      const dir = join(this.root, org);
      for (const name of readdirSync(dir)) {
        const m = /^([0-9a-f]{32})\.json$/.exec(name);
        if (!m || this.busy.has(`${org}/${m[1]}`)) continue;
        const part = join(dir, `${m[1]}.part`);
        const touched = Math.max(statSync(join(dir, name)).mtimeMs, existsSync(part) ? statSync(part).mtimeMs : 0);
        if (nowMs - touched < idleMs) continue;
        await unlink(part).catch(() => {});
        await unlink(join(dir, name)).catch(() => {});
        removed++;
      }
    }
    return removed;
  }

  /** Terminates an upload: its bytes go, its state says so (410 from now on). */
  async terminate(org: number, u: TusUpload): Promise<void> {
    await this.save(org, { ...u, terminated: true });
    await unlink(this.partPath(org, u.id)).catch(() => {});
  }
}

const stores = new Map<string, TusStore>();

/** The tus store of an upload store's root (one per directory per process). */
export function tusStore(uploadsRoot: string): TusStore {
  let s = stores.get(uploadsRoot);
  if (!s) stores.set(uploadsRoot, (s = new TusStore(uploadsRoot)));
  return s;
}
