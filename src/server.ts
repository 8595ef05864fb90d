/**
 * Boots Parley: listens (answering health checks only), recovers the data directory,
 * makes sure an organization exists, and serves the chat API and the board over
 * uWebSockets.js. `stop` drains: refuse new requests with 503, complete parked polls,
 * wait for requests in flight, flush the log, take a final snapshot, release the data
 * directory, close the listeners.
 */
import type { LogFields, Logger } from '../actors/core/logger.js';
import type { RuntimeOptions } from '../actors/runtime/runtime.js';
import { DiskBodies } from '../snapshots/disk_bodies.js';
import { openStoreInSlices, type Store } from './store.js';
import { snapshotDue } from '../snapshots/schedule.js';
import type { SnapshotInfo } from '../snapshots/snapshot.js';
import { createOrganization, createStarterChannels, randomPassword, type CreatedOrg, type StarterContent } from './bootstrap.js';
import type { Config } from './config.js';
import { startControl, type ControlHandler } from './control.js';
import { compactionReport } from './operator/compaction.js';
import { scheduleMessageRetention } from './retention.js';
import { BOARD_API, CHAT_API } from './http/api.js';
import { ChatApp, errorResponse } from './http/chat_app.js';
import { Lifecycle } from './http/lifecycle.js';
import { ApiError } from '../actors/shared/errors.js';
import { listen, type Listener } from './http/uws.js';
import { collectUploads } from './uploads/collect.js';
import { resumeExports } from './exports/realm_export.js';
import { uploadStore } from './uploads/store.js';
import { TUS_IDLE_MS, tusStore } from './uploads/tus.js';
import { chatRoutes } from './routes/chat/index.js';
import { BoardApp } from './board/app.js';
import { boardSettings, isBoardHost, listenBoard, mainPort } from './board/listen.js';
import { boardControlHandlers } from './operator/board_commands.js';
import { boardRoutes } from './routes/board/index.js';
import { Metrics } from './observe/metrics.js';
import { HIGH_WATERMARK, LOW_WATERMARK, MemoryPressure } from './memory/pressure.js';
import { MiB } from './memory/limit.js';
import { listenMetrics, metricsHandler, withMetrics } from './observe/endpoint.js';

export interface RunningServer {
  port: number;
  store: Store;
  app: ChatApp;
  /** The message board, and the port of its own listener. */
  board: BoardApp;
  boardPort: number;
  /** This server's metrics, and the port serving `GET /metrics` (the chat port unless `--metrics-port`). */
  metrics: Metrics;
  metricsPort: number;
  /** The heap's memory pressure, which refuses requests that grow state (`src/memory/pressure.ts`). */
  memory: MemoryPressure;
  /** Set when this start created the default organization (and its starter channels). */
  bootstrapped?: CreatedOrg & { password: string; starter: StarterContent };
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Where the server logs (children per component). */
  log: Logger;
  /** Called when the log cannot be written; by default the process exits. */
  onFatal?(error: Error): void;
  runtime?: Partial<RuntimeOptions>;
  /**
   * The memory pressure to admit requests under; by default one that watches this
   * process's heap. A test passes one it drives itself (`MemoryPressure.observe`).
   */
  memory?: MemoryPressure;
  /** Test hooks, never set in production. */
  testHooks?: {
    /** A pause after each slice of replay, to make recovery of a small log observable (`/readyz`). */
    replayPauseMs?: number;
  };
}

/** The runtime's queue timings, from the configuration. */
export function queueTimings(config: Config): RuntimeOptions['queues'] {
  return {
    heartbeatMinMs: config.heartbeatMinMs,
    heartbeatMaxMs: config.heartbeatMaxMs,
    defaultLifespanMs: config.queueLifespanMs,
    maxLifespanMs: 7 * 24 * 3600 * 1000,
    maxEvents: config.queueMaxEvents,
    passivateAfterMs: 60000,
  };
}

/** Facts replayed between two turns of the event loop while recovering (a few ms of work). */
const REPLAY_SLICE_RECORDS = 1000;

/**
 * Starts the listeners at once (answering `/healthz`, `/readyz`, and 503 to the rest),
 * then recovers the data directory in slices, then serves: see `Lifecycle`.
 */
export async function startServer(config: Config, opts: StartOptions): Promise<RunningServer> {
  const log = opts.log;
  const fatal = opts.onFatal ?? ((error: Error) => {
    log.fatal({ event: 'log.write_failed', error: error.message }, `fatal: the log could not be written (${error.message}); stopping so that no unrecorded write is acknowledged`);
    process.exit(70);
  });
  const metrics = new Metrics();
  const opening = openStoreInSlices(
    {
      dataDir: config.dataDir,
      fsync: config.fsync,
      fsyncBatchMs: config.fsyncBatchMs,
      segmentBytes: config.segmentBytes,
      skipCorrupt: config.skipCorrupt,
      keepSnapshots: config.keepSnapshots,
      bodyCacheBytes: config.bodyCacheMib * 1024 * 1024,
      log: log.child({ component: 'store' }),
      onFatal: fatal,
      observer: metrics.store,
      runtime: { queues: queueTimings(config), delivery: metrics.delivery, log: log.child({ component: 'runtime' }), ...opts.runtime },
    },
    { sliceRecords: REPLAY_SLICE_RECORDS, pauseMs: opts.testHooks?.replayPauseMs },
  );
  const { runtime } = opening;
  const memory = opts.memory ?? watchedHeap(log.child({ component: 'memory' }));
  const lifecycle = new Lifecycle(memory);
  metrics.watchStart(runtime, () => lifecycle.phase === 'ready');
  metrics.watchMemory(memory);
  const app = new ChatApp(chatRoutes, runtime, config, log.child({ component: 'chat' }));
  const board = new BoardApp(boardRoutes, runtime, boardSettings(config), log.child({ component: 'board' }));
  app.observeRoutes(metrics.routes);
  board.observeRoutes(metrics.routes);
  app.admitUnder(memory);
  board.admitUnder(memory);
  const serveMetrics = metricsHandler(metrics, config.metricsToken);
  let listener: Listener;
  let boardListener: Listener;
  let metricsListener: Listener | undefined;
  try {
    const main = mainPort(config, board, {
      handler: (req, abort) => app.handle(req, abort),
      bodyLimit: (req) => app.bodyLimit(req),
      streamsBody: (req) => app.streamsBody(req),
      tooLarge: () => errorResponse(new ApiError('PAYLOAD_TOO_LARGE', `Request body too large (limit: ${config.maxBodyBytes} bytes)`)),
    });
    const gated = lifecycle.gate(main.handler, (req) => (isBoardHost(req.headers.host, config.boardHost) ? BOARD_API : CHAT_API));
    listener = await listen(main.options, config.metricsPort === null ? withMetrics(serveMetrics, gated) : gated);
    boardListener = await listenBoard(config, board, (handler) => lifecycle.gate(handler, () => BOARD_API)).catch((err: unknown) => {
      listener.close();
      throw err;
    });
    if (config.metricsPort !== null) {
      metricsListener = await listenMetrics(config.host, config.metricsPort, serveMetrics).catch((err: unknown) => {
        listener.close();
        boardListener.close();
        throw err;
      });
    }
  } catch (err) {
    memory.stop();
    await (await opening.recover()).close();
    throw err;
  }
  const closeListeners = (): void => {
    listener.close();
    boardListener.close();
    metricsListener?.close();
  };
  log.info({ event: 'server.listening', port: listener.port, board_port: boardListener.port }, `listening on http://${config.host}:${listener.port} (board http://${config.host}:${boardListener.port}); not ready until recovery is done`);
  const store = await opening.recover().catch((err: unknown) => {
    memory.stop();
    closeListeners();
    throw err;
  });
  metrics.watch(store);
  if (runtime.bodies instanceof DiskBodies) metrics.watchBodies(runtime.bodies.store, config.bodyCacheMib * 1024 * 1024);
  let bootstrapped: RunningServer['bootstrapped'];
  if (runtime.server().orgs.size === 0) {
    // The first start on an empty data directory: the default organization, its owner,
    // and the channels a Zulip realm starts with. (A crash between these writes leaves
    // the organization without them; the next start does not retry.)
    const password = randomPassword();
    const created = await createOrganization(runtime, { name: 'Parley', subdomain: '', ownerEmail: 'owner@localhost', ownerPassword: password, ownerName: 'Owner' });
    const starter = await createStarterChannels(runtime, created);
    bootstrapped = { ...created, password, starter };
  }
  // Queues that outlived the last run learn that the server restarted, as in Zulip.
  if (runtime.queues.size > 0) await runtime.commitFacts([{ type: 'ServerRestarted' }]);
  runtime.queues.start();
  // Items that came due while the server was down go out now; the rest at their time.
  runtime.scheduled.start();
  // Message deletion jobs a crash cut short are finished now; new ones run as they are recorded.
  runtime.deletionJobs.start();
  // Data exports asked for before a restart and never finished are built now.
  resumeExports(runtime, config);
  const scheduler = scheduleSnapshots(store, config, log);
  const activity = scheduleChannelActivity(store, log);
  // Temp files of uploads a crash cut short, then files nothing names any more.
  uploadStore(config.dataDir).clearTemp();
  const sweep = scheduleUploadSweep(store, config, log);
  // Messages past their organization's or channel's retention period, now and hourly.
  const retention = scheduleMessageRetention(runtime, log);
  const control = await startControl(config.dataDir, controlHandlers(store), log.child({ component: 'control' }));
  lifecycle.phase = 'ready';
  log.info({ event: 'server.ready', seq: runtime.lastSeq }, 'ready');
  let stopping: Promise<void> | undefined;
  return {
    port: listener.port,
    store,
    app,
    board,
    boardPort: boardListener.port,
    metrics,
    metricsPort: metricsListener?.port ?? listener.port,
    memory,
    bootstrapped,
    stop() {
      stopping ??= (async () => {
        // Draining: new requests get 503 while those admitted finish; the listeners stay
        // open until the end, so that a client on a kept-alive connection is told to retry.
        const started = performance.now();
        lifecycle.phase = 'draining';
        control.close();
        clearInterval(scheduler);
        clearInterval(activity);
        clearInterval(sweep);
        retention.stop();
        runtime.scheduled.stop();
        const parked = runtime.queues.parkedCount;
        runtime.queues.releaseAll();
        await lifecycle.settled();
        // Deletion jobs stop after their current step; the next start resumes them.
        runtime.deletionJobs.stop();
        await store.writer.drain();
        log.info({ event: 'shutdown.drained', released_polls: parked, seq: runtime.lastSeq, ms: elapsed(started) }, `shutdown: drained (${parked} parked polls answered), log flushed at seq ${runtime.lastSeq}`);
        const info = await store.snapshot();
        log.info({ ...snapshotWritten(info), event: 'shutdown.snapshot_written' }, `shutdown: final snapshot ${info.path} at seq ${info.endSeq}`);
        await store.close();
        memory.stop();
        closeListeners();
        log.info({ event: 'shutdown.complete', ms: elapsed(started) }, 'shutdown: complete');
      })();
      return stopping;
    },
  };
}

/** The pressure of this process's heap, watched from now on; its limit is logged (`memory.limit`). */
function watchedHeap(log: Logger): MemoryPressure {
  const memory = new MemoryPressure(log);
  const limitMib = Math.round(memory.limitBytes / MiB);
  log.info(
    { event: 'memory.limit', limit_mib: limitMib, high_percent: Math.round(HIGH_WATERMARK * 100), low_percent: Math.round(LOW_WATERMARK * 100) },
    `memory: heap limit ${limitMib} MiB; requests that grow state get 503 above ${Math.round(HIGH_WATERMARK * 100)}% of it, until it is under ${Math.round(LOW_WATERMARK * 100)}%`,
  );
  memory.watch();
  return memory;
}

/** Milliseconds since `started` (a `performance.now()`), rounded for a log line. */
function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

/** Commands the operator CLI sends to a running server. */
function controlHandlers(store: Store): Record<string, ControlHandler> {
  return {
    snapshot: async () => {
      const info = await store.snapshot();
      return { snapshot: info.path, start_seq: info.startSeq, end_seq: info.endSeq, bytes: info.bytes };
    },
    compact: async () => compactionReport(await store.compactBodies()),
    ...boardControlHandlers(store.runtime),
  };
}

/** How often channels' recent activity is checked (Zulip runs its job daily; a message wakes a channel at once). */
const CHANNEL_ACTIVITY_CHECK_MS = 3600_000;

/**
 * The hourly checks of every organization, once now and then every hour: channels'
 * recent activity, and members whose waiting period has passed (`role:fullmembers`).
 */
export function scheduleChannelActivity(store: Store, log: Logger): NodeJS.Timeout {
  const check = (): void => {
    for (const orgId of store.runtime.server().orgs.keys()) {
      store.runtime.execute({ type: 'CHECK_CHANNEL_ACTIVITY', org: orgId }).then(
        ({ changed }) => { if (changed > 0) log.info({ event: 'channels.activity_changed', org: orgId, channels: changed }, `channel activity: ${changed} channels changed in organization ${orgId}`); },
        (err: Error) => log.error({ event: 'channels.activity_check_failed', org: orgId, error: err.message }, `channel activity check failed: ${err.message}`),
      );
      store.runtime.execute({ type: 'PROMOTE_FULL_MEMBERS', org: orgId }).then(
        ({ promoted }) => { if (promoted > 0) log.info({ event: 'users.full_members_promoted', org: orgId, users: promoted }, `full members: ${promoted} members promoted in organization ${orgId}`); },
        (err: Error) => log.error({ event: 'users.full_member_check_failed', org: orgId, error: err.message }, `full member check failed: ${err.message}`),
      );
    }
  };
  check();
  const timer = setInterval(check, CHANNEL_ACTIVITY_CHECK_MS);
  timer.unref();
  return timer;
}

/** How often unused uploads are looked for (Zulip runs `delete_old_unclaimed_attachments` daily). */
const UPLOAD_SWEEP_MS = 24 * 3600_000;

/**
 * Deletes, in every organization, uploads no message has linked for
 * `--upload-retention-weeks`, then the files nothing names; once now, then daily.
 */
export function scheduleUploadSweep(store: Store, config: Config, log: Logger): NodeJS.Timeout {
  const sweep = async (): Promise<void> => {
    if (config.uploadRetentionWeeks > 0) {
      for (const orgId of store.runtime.server().orgs.keys()) {
        const { removed } = await store.runtime.execute({ type: 'SWEEP_ATTACHMENTS', org: orgId, weeks: config.uploadRetentionWeeks });
        if (removed > 0) log.info({ event: 'uploads.unused_deleted', org: orgId, uploads: removed }, `uploads: ${removed} unused uploads deleted in organization ${orgId}`);
      }
    }
    const files = await collectUploads(store.runtime, config.dataDir);
    if (files > 0) log.info({ event: 'uploads.files_deleted', files }, `uploads: ${files} unreferenced files deleted`);
    const resumable = await tusStore(uploadStore(config.dataDir).root).sweep(TUS_IDLE_MS);
    if (resumable > 0) log.info({ event: 'uploads.resumable_forgotten', uploads: resumable }, `uploads: ${resumable} resumable uploads idle for a day forgotten`);
  };
  const run = (): void => void sweep().catch((err: Error) => log.error({ event: 'uploads.sweep_failed', error: err.message }, `upload sweep failed: ${err.message}`));
  run();
  const timer = setInterval(run, UPLOAD_SWEEP_MS);
  timer.unref();
  return timer;
}

/** Takes snapshots as `snapshotDue` says; a failed snapshot is logged and retried later. */
function scheduleSnapshots(store: Store, config: Config, log: Logger): NodeJS.Timeout {
  let lastSeq = store.runtime.lastSeq;
  let lastVolatile = store.runtime.volatileVersion();
  let lastAt = Date.now();
  const policy = { intervalMs: config.snapshotIntervalMs, everyRecords: config.snapshotEveryRecords, growthPercent: config.snapshotGrowthPercent };
  const timer = setInterval(() => {
    const seq = store.runtime.lastSeq;
    const volatile = store.runtime.volatileVersion();
    if (!snapshotDue({ seq, lastSeq, sinceMs: Date.now() - lastAt, volatileChanged: volatile !== lastVolatile }, policy)) return;
    lastSeq = seq;
    lastVolatile = volatile;
    lastAt = Date.now();
    store.snapshot().then(
      (info) => log.info(snapshotWritten(info), `snapshot: ${info.path} (seq ${info.startSeq}..${info.endSeq}, ${info.bytes} bytes, longest slice ${info.longestSliceMs.toFixed(1)} ms)`),
      (err: Error) => log.error({ event: 'snapshot.failed', error: err.message }, `snapshot failed: ${err.message}`),
    );
  }, 1000);
  timer.unref();
  return timer;
}

/** A written snapshot as log fields (`snapshot.written`). */
function snapshotWritten(info: SnapshotInfo): LogFields {
  return { event: 'snapshot.written', path: info.path, start_seq: info.startSeq, end_seq: info.endSeq, bytes: info.bytes, longest_slice_ms: Math.round(info.longestSliceMs * 10) / 10 };
}
