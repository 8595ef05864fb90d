/**
 * Operator commands on one organization's data: `history` (its facts in the log),
 * `verify --org` (its sequence in the log, its chunks in the newest snapshot) and
 * `restore-org`.
 *
 * `parley restore-org`: one organization as it was at an earlier seq, in place, on a
 * stopped server; every other organization stays exactly as it is, event queues and
 * all. The day someone deletes the wrong channel, an administrator gets it back
 * without rolling the whole server back.
 *
 * How: the directory is recovered as it is now, and the organization alone (with the
 * server-wide state) up to the seq asked for (from the newest snapshot at or before it,
 * plus the log); the organization's actors from the second replace its actors in the
 * first, its message bodies are copied into the body store again, its event queues are
 * dropped (their clients register again, as after a queue expires), and a snapshot of
 * the result is taken. That snapshot is
 * where the restore lives: it is recorded (`org_restores.ts`) so that no recovery ever
 * replays the log across it, since the log before it holds what the restore undid.
 * Message ids go on from the highest ever given, so none is given twice.
 */
import { defaultRuntimeOptions, Runtime, volatileSink } from '../../actors/runtime/runtime.js';
import type { Chunk } from '../../actors/core/persistence.js';
import { factOrg, type Stamped } from '../../actors/core/domain_logic.js';
import { chunkOrg } from '../../actors/runtime/actor_directory.js';
import { encodeChunk, encodeHeader, encodeTrailer, verifySnapshot } from '../../snapshots/snapshot_format.js';
import { recordOrgRestore } from '../../snapshots/org_restores.js';
import { listSegments, readLog, runSlices } from '../../snapshots/log.js';
import { listSnapshots, walkSnapshotFile } from '../../snapshots/snapshot.js';
import type { SnapshotSummary } from '../../snapshots/snapshot_format.js';
import { crc32 } from 'node:zlib';
import { recover } from '../store.js';
import { terminalLog } from '../logging.js';
import { progress } from './progress.js';
import { openOffline, resolvePoint, type RestorePoint } from './data_commands.js';
import { checkFile, stateAttachments } from '../uploads/check.js';
import { UploadStore } from '../uploads/store.js';

/** What a restore of one organization did. */
export interface OrgRestoreReport {
  organization_id: number;
  subdomain: string;
  /** The seq the organization was restored to. */
  to_seq: number;
  /** With `--at`: when that seq's record was committed (the last one at or before the moment asked for). */
  to_time?: string;
  /** The end of the log when restored: the restore's snapshot covers it, and later facts follow it. */
  seq: number;
  snapshot: string;
  before: OrgCounts;
  after: OrgCounts;
  queues_dropped: number;
  /** Uploaded files the restored state names that are missing or damaged (deleted since, for instance). */
  files_missing: string[];
}

interface OrgCounts {
  users: number;
  channels: number;
  messages: number;
}

function countsOf(runtime: Runtime, org: number): OrgCounts {
  const ctx = runtime.org(org)!;
  const channels = runtime.channelIdsOf(org);
  let messages = ctx.directMessages.size;
  for (const id of channels) messages += runtime.channel(org, id)!.messages.size;
  return { users: ctx.users.size, channels: channels.length, messages };
}

/**
 * An organization's chunks from `runtime`, taken through the snapshot codec (framed,
 * checksummed and decoded again), so that the state restored is exactly what a
 * snapshot of it would give back, and shares nothing with `runtime`.
 */
function orgState(runtime: Runtime, org: number): { chunks: Chunk[]; version: number } {
  const parts: Buffer[] = [encodeHeader({ startSeq: runtime.lastSeq, createdAt: Date.now() })];
  let crc = crc32(parts[0]);
  let count = 0;
  for (const make of runtime.orgChunks(org, 2000)) {
    const buf = encodeChunk(make());
    crc = crc32(buf, crc);
    parts.push(buf);
    count++;
  }
  parts.push(encodeTrailer(runtime.lastSeq, count, crc));
  const snap = verifySnapshot(Buffer.concat(parts));
  if (typeof snap === 'string') throw new Error(`the organization's state did not encode: ${snap}`);
  return { chunks: snap.chunks as Chunk[], version: snap.header.version };
}

/** Restores organization `org` of a stopped server's `dataDir` to its state at a seq, or at a moment. */
export async function restoreOrgCommand(dataDir: string, org: number, point: RestorePoint): Promise<OrgRestoreReport> {
  const { toSeq, time } = resolvePoint(dataDir, point);
  const store = openOffline(dataDir);
  try {
    const now = store.runtime as Runtime;
    const record = now.server().orgs.get(org);
    if (!record) throw new Error(`there is no organization ${org} in ${dataDir}`);
    if (toSeq >= now.lastSeq) throw new Error(`the log ends at seq ${now.lastSeq}: there is nothing after seq ${toSeq} to undo`);
    const before = countsOf(now, org);

    // The organization (and the server-wide state) as it was at `toSeq`, the others passed
    // over; its replay stores bodies in the same body store (left for the next compaction).
    const past = new Runtime({ ...defaultRuntimeOptions(volatileSink), bodies: now.bodies, onlyOrg: org });
    let state: { chunks: Chunk[]; version: number };
    try {
      const bar = progress(`rebuilding organization ${org} at seq ${toSeq}`, toSeq);
      const rec = recover(past, dataDir, { skipCorrupt: false, toSeq, log: terminalLog, onRecord: (seq) => bar.update(seq) });
      bar.finish(`from ${rec.snapshot ?? 'the log alone'}, ${rec.replayed} facts replayed`);
      if (rec.lastSeq < toSeq) throw new Error(`the log ends at seq ${rec.lastSeq}, before seq ${toSeq}`);
      const then = past.server().orgs.get(org);
      if (!then || !past.org(org)) throw new Error(`organization ${org} did not exist yet at seq ${toSeq}`);
      const holder = now.server().bySubdomain.get(then.subdomain);
      if (holder !== undefined && holder !== org) throw new Error(`organization ${org}'s subdomain then, "${then.subdomain}", is organization ${holder}'s now`);
      state = orgState(past, org);
    } finally {
      past.stop();
    }

    const bar = progress(`restoring organization ${org}`, state.chunks.length);
    const dropped = now.replaceOrg(org, state.chunks, state.version);
    bar.finish();
    const uploads = new UploadStore(dataDir);
    const missing = stateAttachments(now)
      .filter((f) => f.org === org && checkFile(uploads, f) !== undefined)
      .map((f) => `uploads/${f.org}/${f.file.sha256} (${f.what})`);

    const info = await store.snapshot();
    recordOrgRestore(dataDir, { seq: info.startSeq, org, to_seq: toSeq, made_at: new Date().toISOString() });
    return {
      organization_id: org,
      subdomain: now.server().orgs.get(org)!.subdomain,
      to_seq: toSeq,
      ...(time === undefined ? {} : { to_time: time }),
      seq: info.startSeq,
      snapshot: info.path,
      before,
      after: countsOf(now, org),
      queues_dropped: dropped,
      files_missing: [...new Set(missing)],
    };
  } finally {
    await store.close();
  }
}


/** Fields of a fact that `history` never prints: secrets and message text. */
const PRIVATE_FIELD = /password|api_key|token|secret|content|rendered|edit_history|email/i;

/**
 * One line of `history`: the fact's seq, its place in the organization's own sequence and
 * its time of commit (log format 2 records have both), its type, its scalar fields (ids, names, properties) and the sizes of its lists,
 * without message text or secrets; and a message's own time when the fact carries one.
 */
function historyLine(s: Stamped, fact: Record<string, unknown>): Record<string, unknown> {
  const line: Record<string, unknown> = { seq: s.seq, ...(s.oseq === undefined ? {} : { oseq: s.oseq }), ...(s.at === undefined ? {} : { at: new Date(s.at).toISOString() }), type: fact.type };
  // Scalars as they are, lists as their sizes, and one level into records (a message's ids and topic).
  const add = (prefix: string, record: Record<string, unknown>, nested: boolean): void => {
    for (const [key, value] of Object.entries(record)) {
      if (PRIVATE_FIELD.test(key) || (!nested && (key === 'type' || (key === 'org' && typeof value === 'number')))) continue;
      if (typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.length <= 80)) line[prefix + key] = value;
      else if (Array.isArray(value)) line[prefix + key] = `${value.length} item${value.length === 1 ? '' : 's'}`;
      else if (!nested && value && typeof value === 'object') add(`${key}.`, value as Record<string, unknown>, true);
    }
  };
  add('', fact, false);
  const message = fact.message as { timestamp?: unknown } | undefined;
  const timestamp = typeof message?.timestamp === 'number' ? message.timestamp : typeof fact.timestamp === 'number' ? fact.timestamp : undefined;
  if (timestamp !== undefined) line.time = new Date(timestamp * 1000).toISOString();
  return line;
}

/**
 * `parley history --org ID`: the newest `limit` facts of one organization in the log
 * (after `afterSeq`), oldest first, one JSON object a line, for finding the seq to give
 * `restore-org` (the one just before a mistake). Reads only; a running server may hold
 * the directory.
 */
export function historyCommand(dataDir: string, org: number, limit: number, afterSeq = 0, out: (line: string) => void = console.log): number {
  const segments = listSegments(dataDir);
  if (segments.length === 0) throw new Error(`no log in ${dataDir}`);
  const lastFirst = segments[segments.length - 1].firstSeq;
  const bar = progress(`reading the log of organization ${org}`, lastFirst);
  const kept: Array<Record<string, unknown>> = [];
  let found = 0;
  readLog(dataDir, { afterSeq, skipCorrupt: true, log: terminalLog }, (s) => {
    bar.update(Math.min(s.seq, lastFirst));
    // Records of log format 2 name their organization; older ones are told by their fact.
    if ((s.org ?? factOrg(s.fact)) !== org) return;
    found++;
    kept.push(historyLine(s, s.fact as unknown as Record<string, unknown>));
    if (kept.length > limit) kept.shift();
  });
  bar.finish(`${found} facts of organization ${org}`);
  for (const line of kept) out(JSON.stringify(line));
  return found;
}

/**
 * `parley verify --org ID`: one organization's data. Its chunks in the newest snapshot
 * decode (the file verifies end to end), and its own sequence in the log has no gap: each
 * of its records of log format 2 follows the one before it, from the first to the last.
 * A gap is a fact lost (a corrupt record skipped with `--skip-corrupt`). Reads only.
 * Returns false when something does not verify.
 */
export function verifyOrgCommand(dataDir: string, org: number, out: (line: string) => void = console.log): boolean {
  let ok = true;
  const snap = listSnapshots(dataDir)[0];
  if (snap) {
    let chunks = 0;
    let summary: SnapshotSummary | string;
    try {
      summary = runSlices(walkSnapshotFile(snap.path, (chunk) => {
        if (chunkOrg(chunk as { org?: unknown }) === org) chunks++;
      }));
    } catch (err) {
      summary = `cannot be read: ${(err as Error).message}`;
    }
    if (typeof summary === 'string') {
      ok = false;
      out(`CORRUPT  ${snap.name}: ${summary}`);
    } else if (chunks === 0) {
      ok = false;
      out(`MISSING  organization ${org} is not in ${snap.name}, the newest snapshot`);
    } else out(`ok       ${snap.name}: organization ${org} in ${chunks} chunks`);
  }
  const segments = listSegments(dataDir);
  const bar = progress(`reading the log of organization ${org}`, segments.length > 0 ? segments[segments.length - 1].firstSeq : 0);
  let facts = 0;
  let first: { seq: number; oseq: number } | undefined;
  let last: { seq: number; oseq: number } | undefined;
  let gaps = 0;
  let older = 0;
  readLog(dataDir, { afterSeq: 0, skipCorrupt: true, log: terminalLog }, (s) => {
    bar.update(s.seq);
    if (s.oseq === undefined) {
      if (factOrg(s.fact) === org) older++;
      return;
    }
    if (s.org !== org) return;
    facts++;
    if (last && s.oseq !== last.oseq + 1) {
      gaps++;
      ok = false;
      out(s.oseq > last.oseq + 1
        ? `GAP      organization ${org}: its seqs ${last.oseq + 1} to ${s.oseq - 1} are missing between log seqs ${last.seq} and ${s.seq}`
        : `CORRUPT  organization ${org}: its seq ${s.oseq} at log seq ${s.seq} does not follow ${last.oseq}`);
    }
    first ??= { seq: s.seq, oseq: s.oseq };
    last = { seq: s.seq, oseq: s.oseq };
  });
  bar.finish();
  if (older > 0) out(`note     ${older} facts of organization ${org} were written before log format 2 (no sequence of their own)`);
  if (first && last) out(`${gaps === 0 ? 'ok     ' : 'GAPS   '}  the log: ${facts} facts of organization ${org}, its seqs ${first.oseq} to ${last.oseq} (log seqs ${first.seq} to ${last.seq})${gaps === 0 ? ', none missing' : `, ${gaps} gaps`}`);
  else out(`ok       the log: no fact of organization ${org} ${older > 0 ? 'with a sequence of its own yet' : 'since the oldest segment kept'}`);
  out(ok ? `organization ${org} verifies` : `organization ${org} does not verify`);
  return ok;
}
