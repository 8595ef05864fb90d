/**
 * The commands that take the server's settings, `parley serve` and `parley config`.
 * loadConfig parses their options (so `npm start` and `parley serve` accept exactly the
 * same); commander only shows them, one option per SETTINGS row, grouped by the section
 * of the configuration file the setting is in.
 */
import { Command, Help } from 'commander';
import { settingsOptions } from '../config.js';

/** A command whose options are the settings: its arguments reach `run` unparsed, for loadConfig. */
export function settingsCommand(name: string, description: string, run: (args: string[]) => Promise<void> | void): Command {
  const shown = settingsOptions();
  return new Command(name)
    .description(description)
    .allowUnknownOption()
    .allowExcessArguments()
    .configureHelp({
      visibleOptions(this: Help, cmd: Command) {
        return [...shown, ...Help.prototype.visibleOptions.call(this, cmd)];
      },
    })
    .action(async (_opts: unknown, cmd: Command) => run(cmd.args));
}

/** `parley serve`: runs main.ts (`npm start`) with its arguments. */
export function serveCommand(): Command {
  return settingsCommand('serve', 'run the server (the same as npm start)', async (args) => {
    process.argv = [process.argv[0], process.argv[1], ...args];
    await import('../main.js');
  });
}

/** `parley serve --help`, which `npm start -- --help` prints too. */
export function serveHelp(): string {
  const serve = serveCommand();
  new Command('parley').addCommand(serve);
  return serve.helpInformation();
}
