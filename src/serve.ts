/**
 * `parley serve` (and `npm start`): run Parley until SIGTERM or SIGINT.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Config } from './config.js';
import { createLogger } from './logging.js';
import { needsRelaunch, relaunch, watchParent } from './memory/relaunch.js';
import type { StartOptions } from './server.js';

/** At `info` until the configuration is read, so that a bad setting is logged too. */
const log = createLogger('info');

/**
 * Starts the server with the configuration `resolve` gives; returns once it serves (or,
 * when Node must start again under the memory limit, once that child runs it). A bad
 * configuration, like any other failure to start, is logged and exits 1.
 */
export async function serve(resolve: () => Config): Promise<void> {
  try {
    await start(resolve);
  } catch (err) {
    log.fatal({ event: 'server.start_failed', error: (err as Error).message }, `cannot start: ${(err as Error).message}`);
    exit(1);
  }
}

async function start(resolve: () => Config): Promise<void> {
  const config = resolve();
  log.level = config.logLevel;
  const problem = uwsProblem();
  if (problem) throw new Error(problem);
  // The heap limit is fixed when Node starts: run again under the configured one.
  if (needsRelaunch(config.memoryLimitMib, process.env, log)) {
    relaunch(config.memoryLimitMib, log, exit);
    return;
  }
  watchParent(process.env);
  // Imported only now, so that an unsupported Node stops on the message above instead of
  // on uWebSockets.js's own warning about its fallback.
  const { startServer } = await import('./server.js');
  const server = await startServer(config, { log, testHooks: testHooks(process.env) });
  const base = `http://${config.host}:${server.port}`;
  const boardHost = config.boardHost ? ` (and on port ${server.port} for Host ${config.boardHost})` : '';
  log.info({ event: 'server.serving', api: 'board', port: server.boardPort, board_host: config.boardHost || undefined }, `Parley is serving the message board on http://${config.host}:${server.boardPort}${boardHost}`);
  log.info({ event: 'server.serving', api: 'chat', port: server.port, data_dir: config.dataDir, fsync: config.fsync }, `Parley is serving the chat API on ${base}/api/v1 (data in ${config.dataDir}, fsync ${config.fsync})`);
  if (server.bootstrapped) {
    const b = server.bootstrapped;
    console.log(
      [
        '',
        'Created the default organization. Log in with:',
        `  email:    ${b.owner.email}`,
        `  password: ${b.password}`,
        `  API key:  ${b.owner.api_key}`,
        `  channels: ${b.starter.channels.map((c) => c.name).join(', ')}`,
        `  e.g. curl -u ${b.owner.email}:${b.owner.api_key} ${base}/api/v1/users/me`,
        '',
      ].join('\n'),
    );
  }
  const shutdown = (signal: string): void => {
    log.info({ event: 'shutdown.started', signal, timeout_ms: config.shutdownTimeoutMs }, `${signal}: shutting down`);
    // Past the bound, exit as a crash would: the log is always safe to replay.
    setTimeout(() => {
      log.error({ event: 'shutdown.timeout', timeout_ms: config.shutdownTimeoutMs }, `shutdown did not finish within ${config.shutdownTimeoutMs} ms; exiting without it`);
      exit(1);
    }, config.shutdownTimeoutMs);
    server.stop().then(
      () => exit(0),
      (err) => {
        log.error({ event: 'shutdown.failed', error: (err as Error).message }, `shutdown failed: ${(err as Error).message}`);
        exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

/**
 * Why this Node cannot run Parley's HTTP server, or undefined. The uWebSockets.js build
 * Parley uses ships native binaries for Node 20's ABI only; on any other Node it loads a
 * pure-JavaScript fallback that throws "Not implemented" at the first request.
 */
function uwsProblem(): string | undefined {
  const fallback = /^(1|true)$/i.test(process.env.UWS_USE_FALLBACK ?? '');
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve('uWebSockets.js/package.json'));
  } catch {
    return undefined; // not installed: the import fails with its own message
  }
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  if (!fallback && existsSync(join(dir, 'binaries', binary))) return undefined;
  return fallback
    ? 'UWS_USE_FALLBACK is set, but uWebSockets.js\'s JavaScript fallback cannot serve Parley; unset it'
    : `Parley needs Node 20 (20.15 or a later 20.x): its uWebSockets.js has no native binary for Node ${process.version} on ${process.platform}-${process.arch} (${binary}), and its JavaScript fallback cannot serve Parley`;
}

/**
 * Test hooks from the environment (`PARLEY_TEST_HOOK_*`), for tests of the real process
 * only: `PARLEY_TEST_HOOK_REPLAY_PAUSE_MS` pauses after each slice of replay.
 */
function testHooks(env: NodeJS.ProcessEnv): StartOptions['testHooks'] {
  const pause = Number(env.PARLEY_TEST_HOOK_REPLAY_PAUSE_MS ?? 0);
  return pause > 0 ? { replayPauseMs: pause } : undefined;
}

/** Exits once the log's last lines are out. */
function exit(code: number): void {
  log.flush(() => process.exit(code));
}
