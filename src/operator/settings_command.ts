/**
 * The commands that take the server's settings, `parley serve` (which `npm start` runs)
 * and `parley config`. loadConfig parses their options; commander only shows them, one
 * option per SETTINGS row, grouped by the section of the configuration file the setting
 * is in.
 */
import { Command, Help } from 'commander';
import { loadConfig, settingsOptions } from '../config.js';

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

/** `parley serve` (which `npm start` runs): runs the server (src/serve.ts), which reports a bad configuration as a failed start. */
export function serveCommand(): Command {
  return settingsCommand('serve', 'run the server (the same as npm start)', async (args) => {
    const { serve } = await import('../serve.js');
    await serve(() => loadConfig(args, process.env));
  });
}
