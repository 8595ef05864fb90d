#!/usr/bin/env node
/**
 * `npx parley <command>`: the operator CLI. The commands are in src/operator/program.ts;
 * `parley --help` lists them, `parley help COMMAND` shows one.
 */
import { ApiError } from '../actors/shared/errors.js';
import { buildProgram } from './operator/program.js';

async function main(): Promise<void> {
  const program = buildProgram();
  // Bare `parley` prints the help and succeeds, as `parley help` does.
  if (process.argv.length <= 2) {
    program.outputHelp();
    return;
  }
  await program.parseAsync(process.argv);
}

main().catch((err: unknown) => {
  const message = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
  console.error(`parley: ${message}`);
  process.exit(2);
});
