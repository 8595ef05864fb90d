/**
 * `npm start`: run Parley until SIGTERM or SIGINT.
 */
import { describeSettings, loadConfig } from './config.js';
import { startServer } from './server.js';

const log = (line: string): void => console.error(`[${new Date().toISOString()}] ${line}`);

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help')) {
    console.log(`Usage: parley serve [options]\n\nOptions (flag, environment variable, default):\n${describeSettings()}`);
    return;
  }
  const config = loadConfig(argv, process.env);
  const server = await startServer(config, { log });
  const base = `http://${config.host}:${server.port}`;
  const boardHost = config.boardHost ? ` (and on port ${server.port} for Host ${config.boardHost})` : '';
  log(`Parley is serving the message board on http://${config.host}:${server.boardPort}${boardHost}`);
  log(`Parley is serving the chat API on ${base}/api/v1 (data in ${config.dataDir}, fsync ${config.fsync})`);
  if (server.bootstrapped) {
    const b = server.bootstrapped;
    console.log(
      [
        '',
        'Created the default organization. Log in with:',
        `  email:    ${b.owner.email}`,
        `  password: ${b.password}`,
        `  API key:  ${b.owner.api_key}`,
        `  e.g. curl -u ${b.owner.email}:${b.owner.api_key} ${base}/api/v1/users/me`,
        '',
      ].join('\n'),
    );
  }
  const shutdown = (signal: string): void => {
    log(`${signal}: shutting down`);
    server.stop().then(
      () => process.exit(0),
      (err) => {
        log(`shutdown failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: Error) => {
  log(`cannot start: ${err.message}`);
  process.exit(1);
});
