/**
 * Operator commands on a data directory: snapshot, list snapshots, verify, inspect,
 * restore and compact. Commands that change a directory refuse while a server holds
 * it, except `snapshot`, which asks the running server to take one.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { defaultRuntimeOptions, Runtime, volatileSink } from '../../actors/runtime/runtime.js';
import { describeTorn, listSegments, readSegment, runSlices, SegmentFile, seqAtTime } from '../../snapshots/log.js';
import { DirectorySnapshots, listSnapshots, readSnapshot, walkSnapshotFile, writeSnapshot } from '../../snapshots/snapshot.js';
import type { SnapshotSummary } from '../../snapshots/snapshot_format.js';
import { lockHolder, openStore, recover } from '../store.js';
import { ORG_RESTORES_FILE, readOrgRestores, restoreCrossed, type OrgRestore } from '../../snapshots/org_restores.js';
import { BodyStore } from '../../snapshots/body_store.js';
import { DiskBodies } from '../../snapshots/disk_bodies.js';
import { bodiesDir } from '../../snapshots/store.js';
import { printFromServer } from '../control.js';
import { terminalLog } from '../logging.js';
import { progress } from './progress.js';
import { compactionReport } from './compaction.js';
import { checkFile, copyFiles, stateAttachments, type NamedFile } from '../uploads/check.js';
import { chunkAttachments } from '../uploads/collect.js';
import { UploadStore } from '../uploads/store.js';

/** Opens a stopped server's data directory for a command that writes. */
export function openOffline(dataDir: string, keepSnapshots?: number) {
  return openStore({
    dataDir,
    keepSnapshots,
    fsync: 'always',
    fsyncBatchMs: 100,
    segmentBytes: 64 * 1024 * 1024,
    skipCorrupt: false,
    log: terminalLog,
    onFatal: (err) => {
      console.error(`fatal: ${err.message}`);
      process.exit(70);
    },
  });
}

/** Where to restore to: a seq, or a moment (the last record committed at or before it). */
export type RestorePoint = { toSeq: number } | { atMs: number };

/** The seq a restore point names in `dataDir`'s log, and the time of its record when it was named by time. */
export function resolvePoint(dataDir: string, point: RestorePoint): { toSeq: number; time?: string } {
  if ('toSeq' in point) return { toSeq: point.toSeq };
  const found = seqAtTime(dataDir, point.atMs, terminalLog);
  return { toSeq: found.seq, time: new Date(found.at).toISOString() };
}

/** A runtime that only reads: for inspecting or restoring without touching the directory. */
function readOnlyRuntime(): Runtime {
  return new Runtime(defaultRuntimeOptions(volatileSink));
}

/** `parley snapshot`: asks a running server for a snapshot, or takes one offline. */
export async function snapshotCommand(dataDir: string): Promise<void> {
  if (await printFromServer(dataDir, { command: 'snapshot' })) return;
  const store = openOffline(dataDir);
  try {
    const info = await store.snapshot();
    console.log(JSON.stringify({ snapshot: info.path, start_seq: info.startSeq, end_seq: info.endSeq, bytes: info.bytes }));
  } finally {
    await store.close();
  }
}

/** `parley snapshots`: lists snapshots with time, seq, size and whether each verifies. */
export function listSnapshotsCommand(dataDir: string): void {
  const snaps = listSnapshots(dataDir);
  if (snaps.length === 0) {
    console.log('no snapshots');
    return;
  }
  let restores: OrgRestore[] = [];
  try {
    restores = readOrgRestores(dataDir);
  } catch (err) {
    console.error(`snapshots: ${(err as Error).message}`);
  }
  const bar = progress('verifying', snaps.length);
  const rows = snaps.map((s, i) => {
    const v = readSnapshot(s.path, false);
    bar.update(i + 1);
    const crossed = restoreCrossed(restores, s.startSeq, undefined);
    const note = crossed ? ` (older than the restore of organization ${crossed.org} at seq ${crossed.seq})` : '';
    return {
      name: s.name,
      time: typeof v === 'string' ? new Date(s.mtimeMs).toISOString() : new Date(v.header.createdAt).toISOString(),
      start_seq: s.startSeq,
      end_seq: typeof v === 'string' ? null : v.endSeq,
      bytes: s.size,
      verified: typeof v === 'string' ? `no: ${v}` : `yes${note}`,
    };
  });
  bar.finish();
  console.log(['name'.padEnd(30), 'time'.padEnd(25), 'start seq'.padStart(10), 'end seq'.padStart(10), 'bytes'.padStart(12), '  verified'].join(' '));
  for (const r of rows) {
    console.log([r.name.padEnd(30), r.time.padEnd(25), String(r.start_seq).padStart(10), String(r.end_seq ?? '-').padStart(10), String(r.bytes).padStart(12), `  ${r.verified}`].join(' '));
  }
}

/**
 * Checks one log segment frame by frame with the rule recovery uses (`readSegment`),
 * so a tail the start would drop is only a note, and what the start would refuse is a
 * problem. `lastSeq` is the seq the log reached before this segment.
 */
export function verifySegment(path: string, isLast: boolean, lastSeq: number): { records: number; lastSeq: number; problem?: string; note?: string } {
  const file = SegmentFile.open(path);
  let records = 0;
  let read: ReturnType<typeof readSegment>;
  try {
    read = readSegment(file, isLast, lastSeq, () => {
      records++;
      return true;
    });
  } finally {
    file.close();
  }
  const { end } = read;
  if (end.kind === 'torn') return { records, lastSeq: read.lastSeq, note: `${describeTorn(end)}; it is dropped at the next start` };
  if (end.kind === 'corrupt') return { records, lastSeq: read.lastSeq, problem: `offset ${end.offset}: ${end.reason}` };
  return { records, lastSeq: read.lastSeq };
}

/**
 * Verifies every snapshot and log segment of a directory, and every stored file a
 * snapshot names (present, of its size and SHA-256): the report lines, and whether
 * all verify.
 */
export function verifyReport(dataDir: string, onProgress: (done: number, total: number) => void = () => {}): { ok: boolean; lines: string[] } {
  const snaps = listSnapshots(dataDir);
  const segments = listSegments(dataDir);
  let total = snaps.length + segments.length;
  let ok = true;
  const lines: string[] = [];
  let done = 0;
  /** Files to check, each once however many snapshots name it, with the first snapshot naming it. */
  const files = new Map<string, NamedFile & { snapshot: string }>();
  let restores: OrgRestore[] = [];
  try {
    restores = readOrgRestores(dataDir);
  } catch (err) {
    ok = false;
    lines.push(`CORRUPT  ${ORG_RESTORES_FILE}: ${(err as Error).message}`);
  }
  for (const s of snaps) {
    // Read chunk by chunk (a snapshot may be larger than memory), decoding each.
    const named: NamedFile[] = [];
    let v: SnapshotSummary | string;
    try {
      v = runSlices(walkSnapshotFile(s.path, (chunk) => named.push(...chunkAttachments(chunk))));
    } catch (err) {
      v = `cannot be read: ${(err as Error).message}`;
    }
    if (typeof v === 'string') {
      ok = false;
      lines.push(`CORRUPT  ${s.name}: ${v}`);
    } else {
      const crossed = restoreCrossed(restores, v.header.startSeq, undefined);
      const before = crossed ? ` (older than the restore of organization ${crossed.org} at seq ${crossed.seq}: serves only a restore --to-seq below it)` : '';
      lines.push(`ok       ${s.name}: seq ${v.header.startSeq}..${v.endSeq}, ${v.chunks} chunks${before}`);
      for (const f of named) if (!files.has(`${f.org}/${f.file.sha256}`)) files.set(`${f.org}/${f.file.sha256}`, { ...f, snapshot: s.name });
    }
    onProgress(++done, total);
  }
  total += files.size;
  let lastSeq = 0;
  segments.forEach((seg, i) => {
    const r = verifySegment(join(dataDir, seg.name), i === segments.length - 1, lastSeq);
    lastSeq = r.lastSeq;
    if (r.problem) {
      ok = false;
      lines.push(`CORRUPT  ${seg.name} at ${r.problem} (after ${r.records} good records)`);
    } else lines.push(`ok       ${seg.name}: ${r.records} records${r.note ? `; ${r.note}` : ''}`);
    onProgress(++done, total);
  });
  const store = new UploadStore(dataDir);
  let sound = 0;
  for (const [key, f] of files) {
    const problem = checkFile(store, f);
    const what = `uploads/${key} (${f.what} of organization ${f.org}, named by ${f.snapshot})`;
    if (problem?.kind === 'missing') lines.push(`MISSING  ${what}`);
    else if (problem) lines.push(`CORRUPT  ${what}: ${problem.why}`);
    else sound++;
    if (problem) ok = false;
    onProgress(++done, total);
  }
  if (files.size > 0) lines.push(`${sound === files.size ? 'ok      ' : 'CORRUPT '} ${sound} of ${files.size} uploaded files the snapshots name are present and intact`);
  if (!verifyBodies(dataDir, lines)) ok = false;
  lines.push(ok ? 'all snapshots, log segments, message bodies and uploaded files verify' : 'some files do not verify');
  return { ok, lines };
}

/**
 * Checks every record of the body store (read only): a report line per damaged record
 * (the message it held, when its header says), and false when any is damaged. A record
 * cut short at the end of the newest segment, with nothing after it, is a torn tail:
 * no snapshot points at it, and a start cuts it off.
 */
function verifyBodies(dataDir: string, lines: string[]): boolean {
  if (!existsSync(bodiesDir(dataDir))) return true;
  let store: BodyStore;
  try {
    store = BodyStore.open({ dir: bodiesDir(dataDir), readOnly: true });
  } catch (err) {
    lines.push(`CORRUPT  bodies: ${(err as Error).message}`);
    return false;
  }
  try {
    const r = runSlices(store.verify());
    let ok = true;
    for (const d of r.damaged) {
      const where = `bodies/${basename(d.file)} at offset ${d.offset}: ${d.reason}${d.id === undefined ? '' : ` (message ${d.id})`}`;
      if (d.torn) lines.push(`ok       ${where}; a torn tail, which a start cuts off`);
      else {
        ok = false;
        lines.push(`CORRUPT  ${where}`);
      }
    }
    lines.push(`${ok ? 'ok      ' : 'CORRUPT '} bodies: ${r.records} records in ${r.segments} segments, ${r.bytes} bytes`);
    return ok;
  } finally {
    store.close();
  }
}

/** `parley verify`: checks every snapshot, every log segment and the files the snapshots name. Returns true when all verify. */
export function verifyCommand(dataDir: string): boolean {
  // The total grows once the snapshots are read and the files they name are known.
  const bar = progress('verifying', listSnapshots(dataDir).length + listSegments(dataDir).length);
  const { ok, lines } = verifyReport(dataDir, (done, total) => {
    bar.setTotal(total);
    bar.update(done);
  });
  bar.finish();
  for (const l of lines) console.log(l);
  return ok;
}

/**
 * `parley inspect`: counts per organization, read without touching the directory; with
 * `org`, that organization alone, with each channel's messages (for choosing what
 * `restore-org` should bring back).
 */
export function inspectCommand(dataDir: string, only?: number): void {
  const runtime = readOnlyRuntime();
  const rec = recover(runtime, dataDir, { skipCorrupt: false, log: terminalLog });
  const server = runtime.server();
  if (only !== undefined && !server.orgs.has(only)) {
    runtime.stop();
    throw new Error(`there is no organization ${only} in ${dataDir}`);
  }
  const rows = [...server.orgs.values()].filter((org) => only === undefined || org.id === only).map((org) => {
    const ctx = runtime.org(org.id)!;
    let messages = ctx.directMessages.size;
    const channels = runtime.channelIdsOf(org.id);
    for (const id of channels) messages += runtime.channel(org.id, id)!.messages.size;
    const queues = runtime.queues.sizeOf(org.id);
    const row: Record<string, unknown> = { organization_id: org.id, subdomain: org.subdomain, name: org.name, deactivated: org.deactivated, users: ctx.users.size, channels: channels.length, messages, queues };
    if (only !== undefined) {
      row.direct_messages = ctx.directMessages.size;
      row.channel_list = channels.map((id) => {
        const ch = runtime.channel(org.id, id)!;
        return { stream_id: id, name: ch.channel.name, archived: ch.channel.is_archived, messages: ch.messages.size, topics: ch.topics.size };
      });
    }
    return row;
  });
  console.log(JSON.stringify({ seq: rec.lastSeq, snapshot: rec.snapshot, replayed: rec.replayed, organizations: rows }, null, 2));
  runtime.stop();
}

/**
 * `parley restore --from SNAPSHOT --to DIR [--to-seq N]`: rebuilds the state of a
 * snapshot (plus the log after it, up to N) into a fresh data directory, with the
 * uploaded files that state names (and no others), copied and synced before the
 * snapshot is written. The source directory is only read. Returns false when a named
 * file is missing or corrupt in the source (the rest is restored; the report says which).
 */
export async function restoreCommand(dataDir: string, from: string, to: string, point: RestorePoint | undefined): Promise<boolean> {
  const fromPath = existsSync(from) ? resolve(from) : join(dataDir, from);
  const sourceDir = existsSync(from) ? dirname(fromPath) : dataDir;
  const resolved = point === undefined ? undefined : resolvePoint(sourceDir, point);
  const toSeq = resolved?.toSeq;
  if (!existsSync(fromPath)) throw new Error(`no snapshot at ${fromPath}`);
  if (existsSync(to) && readdirSync(to).length > 0) throw new Error(`${to} is not empty; restore writes only into a fresh data directory`);
  if (resolve(to) === resolve(sourceDir)) throw new Error('restore never writes into the directory it reads');
  // The restored messages' bodies are copied from the source's body store into the new
  // directory's: those the snapshot points at, then those the log replays.
  const created = !existsSync(to);
  const source = BodyStore.open({ dir: bodiesDir(sourceDir), readOnly: true, log: terminalLog });
  const dest = BodyStore.open({ dir: bodiesDir(to), log: terminalLog });
  const runtime = new Runtime({ ...defaultRuntimeOptions(volatileSink), bodies: new DiskBodies(dest, terminalLog), restoreBodiesFrom: new DiskBodies(source, terminalLog) });
  let rec: ReturnType<typeof recover>;
  try {
    const total = toSeq ?? Math.max(0, ...listSegments(sourceDir).map((s) => s.firstSeq));
    const bar = progress('replaying', total);
    rec = recover(runtime, sourceDir, { skipCorrupt: false, toSeq, onlySnapshot: basename(fromPath), log: terminalLog, onRecord: (seq) => bar.update(seq) });
    bar.finish(`at seq ${rec.lastSeq}`);
    if (toSeq !== undefined && rec.lastSeq < toSeq) throw new Error(`the log ends at seq ${rec.lastSeq}, before the requested seq ${toSeq}`);
  } catch (err) {
    runtime.stop();
    dest.close();
    rmSync(created ? to : bodiesDir(to), { recursive: true, force: true });
    throw err;
  } finally {
    source.close();
  }
  const named = stateAttachments(runtime);
  const failed = copyFiles(new UploadStore(sourceDir), new UploadStore(to), named);
  for (const f of failed) {
    console.error(`restore: ${f.problem.kind === 'missing' ? 'MISSING' : 'CORRUPT'} uploads/${f.org}/${f.file.sha256} (${f.what})${f.problem.kind === 'corrupt' ? `: ${f.problem.why}` : ''}; not copied`);
  }
  const info = await writeSnapshot(new DirectorySnapshots(to), runtime, async () => dest.sync());
  runtime.stop();
  dest.close();
  const files = new Set(named.map((f) => `${f.org}/${f.file.sha256}`)).size;
  console.log(JSON.stringify({ restored_to: resolve(to), seq: rec.lastSeq, ...(resolved?.time === undefined ? {} : { time: resolved.time }), snapshot: info.path, bytes: info.bytes, files_copied: files - failed.length, files_failed: failed.length }));
  return failed.length === 0;
}

/**
 * `parley compact`: compacts the body store (the bodies messages hold are copied into
 * new segments; deleted and replaced ones are left behind), takes a snapshot, then drops
 * older snapshots, the log segments only they needed, and the old body segments once no
 * kept snapshot needs them. On a running server it asks the server, which keeps its own
 * `--keep-snapshots`.
 */
export async function compactCommand(dataDir: string, keep: number): Promise<void> {
  const sizeOf = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((n, f) => n + (f.isDirectory() ? (f.name === 'bodies' ? sizeOf(join(dir, f.name)) : 0) : statSync(join(dir, f.name)).size), 0);
  const before = sizeOf(dataDir);
  let report: Record<string, unknown> | undefined;
  if (lockHolder(dataDir) !== undefined) {
    if (!(await printFromServer(dataDir, { command: 'compact' }))) throw new Error('the running server did not answer the compact command');
    console.log(JSON.stringify({ bytes_before: before, bytes_after: sizeOf(dataDir) }));
  } else {
    const store = openOffline(dataDir, keep);
    try {
      report = compactionReport(await store.compactBodies());
    } finally {
      await store.close();
    }
    console.log(JSON.stringify({ ...report, bytes_before: before, bytes_after: sizeOf(dataDir) }));
  }
}
