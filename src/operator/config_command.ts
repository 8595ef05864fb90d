/**
 * `parley config [options]`: the effective configuration, written as a parley.toml
 * with each value's source as a comment (default, file, environment or flag), secrets
 * masked. It takes the options `parley serve` takes, and resolves them the same way.
 */
import { isSecret, SETTINGS, showValue, type ResolvedConfig, type Setting, type SettingSource } from '../config.js';
import { fileKeyOf } from '../config_file.js';

/** What a masked secret shows instead of its value (an unset secret shows as empty). */
export const MASKED = '"********"';

function describeSource(s: SettingSource, setting: Setting): string {
  switch (s.kind) {
    case 'default':
      return setting.explainDefault ? `default: ${setting.explainDefault()}` : 'default';
    case 'file':
      return s.line === undefined ? 'file' : `file, line ${s.line}`;
    case 'env':
      return `environment ${s.name}`;
    case 'flag':
      return `flag ${s.name}`;
  }
}

/** The report: one `[section]` per file section, one `key = value  # source` line per setting. */
export function renderConfig(r: ResolvedConfig): string {
  const sections = new Map<string, Array<[string, string]>>();
  for (const s of SETTINGS) {
    const key = fileKeyOf(s);
    const dot = key.lastIndexOf('.');
    const value = r.config[s.key];
    const shown = isSecret(s) && value !== '' ? MASKED : showValue(value);
    const rows = sections.get(key.slice(0, dot)) ?? sections.set(key.slice(0, dot), []).get(key.slice(0, dot))!;
    // An unset value (null) has no TOML form: it is shown commented out.
    rows.push([value === null ? `# ${key.slice(dot + 1)} =` : `${key.slice(dot + 1)} = ${shown}`, `${value === null ? 'unset, ' : ''}${describeSource(r.sources[s.key], s)}`]);
  }
  const out = [`# Parley's effective configuration (${r.file === undefined ? 'no configuration file' : `configuration file ${r.file}`}).`, '# Precedence: default < file < environment < flag. Secrets are masked.'];
  for (const [section, rows] of sections) {
    const width = Math.max(...rows.map(([line]) => line.length));
    out.push('', `[${section}]`, ...rows.map(([line, source]) => `${line.padEnd(width)}  # ${source}`));
  }
  return `${out.join('\n')}\n`;
}

/** `parley config`: prints the report for the configuration its options and the process's environment resolve to. */
export function configCommand(resolve: () => ResolvedConfig): void {
  process.stdout.write(renderConfig(resolve()));
}
