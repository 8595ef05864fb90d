/**
 * The commands that take the server's settings, `parley serve` and `parley config`.
 * loadConfig parses their options (so `npm start` and `parley serve` accept exactly the
 * same); commander only shows them, one option per SETTINGS row, grouped by the section
 * of the configuration file the setting is in.
 */
import { Command, Help, Option } from 'commander';
import { SETTINGS, settingType, type Setting } from '../config.js';
import { fileKeyOf } from '../config_file.js';
import { formatRateLimit, type RateLimit } from '../http/rate_limit.js';

/** Whether a setting's value is masked when shown: its `secret` marker, else a name that says password, secret or token. */
export function isSecret(s: Pick<Setting, 'key' | 'secret'>): boolean {
  return s.secret ?? /password|secret|token/i.test(s.key);
}

/** A setting's default as the help and `parley config` show it (a rate limit as `200/60`, or `2/3600,5/86400`). */
export function showValue(v: unknown): string {
  if (v !== null && typeof v === 'object' && 'windowSecs' in v) return JSON.stringify(formatRateLimit(v as RateLimit));
  // Unset (a default of null) shows as empty, as the environment and flags take it.
  return v === null ? '""' : JSON.stringify(v);
}

function settingOption(s: Setting): Option {
  const key = fileKeyOf(s);
  const dot = key.lastIndexOf('.');
  const value = { boolean: '', integer: ' <n>', rate: ' <n/secs>', string: ' <value>' }[settingType(s)];
  return new Option(`${s.flag}${value}`, `${key.slice(dot + 1)}${isSecret(s) ? ' (secret)' : ''}`)
    .default(s.def, showValue(s.def))
    .env(s.env)
    .helpGroup(`Settings in [${key.slice(0, dot)}] (file key, default, environment variable):`);
}

/** `--config PATH`, which every settings command takes. */
function configOption(): Option {
  return new Option('--config <path>', 'the configuration file (default: ./parley.toml if it exists)').env('PARLEY_CONFIG');
}

/** A command whose options are the settings: its arguments reach `run` unparsed, for loadConfig. */
export function settingsCommand(name: string, description: string, run: (args: string[]) => Promise<void> | void): Command {
  const shown = [configOption(), ...SETTINGS.map(settingOption)];
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
