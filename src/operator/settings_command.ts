/**
 * The commands that take the server's settings, `parley serve` (which `npm start` runs)
 * and `parley config`: their options are `settingsOptions()`, one per SETTINGS row
 * grouped by the section of the configuration file the setting is in, and commander
 * parses them; resolveOptions makes the configuration from what it parsed.
 */
import { Command } from 'commander';
import { resolveOptions, settingsOptions, type ResolvedConfig } from '../config.js';

/** A command whose options are the settings; `run` resolves the configuration when it is ready to report a bad one. */
export function settingsCommand(name: string, description: string, run: (resolve: () => ResolvedConfig) => Promise<void> | void): Command {
  const cmd = new Command(name)
    .description(description)
    // A boolean's value is optional (`--skip-corrupt`, or `--skip-corrupt=false`): it shows as the bare flag.
    .configureHelp({ optionTerm: (option) => (option.optional ? option.long! : option.flags) });
  for (const option of settingsOptions()) cmd.addOption(option);
  return cmd.action(async (_opts: unknown, self: Command) => run(() => resolveOptions(self, process.env)));
}

/** `parley serve` (which `npm start` runs): runs the server (src/serve.ts), which reports a bad configuration as a failed start. */
export function serveCommand(): Command {
  return settingsCommand('serve', 'run the server (the same as npm start)', async (resolve) => {
    const { serve } = await import('../serve.js');
    await serve(() => resolve().config);
  });
}
