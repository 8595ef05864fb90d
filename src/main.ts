/**
 * `npm start`: `parley serve` with the same arguments (src/operator/settings_command.ts),
 * so that both take the same flags and give the same help and usage errors.
 */
import { buildProgram } from './operator/program.js';

buildProgram()
  .parseAsync(['serve', ...process.argv.slice(2)], { from: 'user' })
  .catch((err: Error) => {
    console.error(`parley: ${err.message}`);
    process.exit(2);
  });
