/**
 * The settings' flags, which commander parses for `parley serve`, `npm start`,
 * `parley config` and resolveConfig: `--flag value` and `--flag=value`, booleans bare or
 * with a value, `--config`, and clear errors for a bad flag or value.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withConfigFile } from './config_helpers.js';
import { loadConfig, resolveConfig } from '../src/config.js';

const none = mkdtempSync(join(tmpdir(), 'parley-config-'));

t.test('a value after the flag or after =', async (t) => {
  for (const argv of [['--port', '7', '--host', 'a=b'], ['--port=7', '--host=a=b']]) {
    const r = resolveConfig(argv, {}, none);
    t.same([r.config.port, r.config.host], [7, 'a=b'], argv.join(' '));
    t.same(r.sources.port, { kind: 'flag', name: '--port' });
  }
  t.equal(loadConfig(['--smtp-password', '-starts-with-a-dash'], {}).smtpPassword, '-starts-with-a-dash', 'a required value may start with a dash');
  t.equal(loadConfig(['--port', '1', '--port', '2'], {}).port, 2, 'the last one wins');
  t.equal(loadConfig(['--metrics-port='], {}).metricsPort, null, 'an empty value unsets');
});

t.test('a boolean: bare is true, or =VALUE', async (t) => {
  t.equal(loadConfig(['--skip-corrupt'], {}).skipCorrupt, true);
  t.equal(loadConfig(['--skip-corrupt', '--port', '1'], {}).skipCorrupt, true, 'followed by another flag');
  t.equal(loadConfig(['--skip-corrupt=false'], { PARLEY_SKIP_CORRUPT: 'true' }).skipCorrupt, false);
  t.equal(loadConfig(['--smtp-secure=true'], {}).smtpSecure, true);
  t.equal(loadConfig(['--smtp-secure=off'], {}).smtpSecure, false);
  t.throws(() => loadConfig(['--smtp-secure=maybe'], {}), { message: "--smtp-secure: expected true or false, got 'maybe'" });
});

t.test('flag over environment over file, each with its source', async (t) => {
  const cwd = withConfigFile('[smtp]\nsecure = true\nport = 1\nhost = "file.example"\n');
  const file = join(cwd, 'parley.toml');
  const r = resolveConfig(['--smtp-port=3'], { PARLEY_SMTP_PORT: '2', PARLEY_SMTP_SECURE: 'false' }, cwd);
  t.same([r.config.smtpPort, r.config.smtpSecure, r.config.smtpHost, r.config.smtpUser], [3, false, 'file.example', '']);
  t.same([r.sources.smtpPort, r.sources.smtpSecure, r.sources.smtpHost, r.sources.smtpUser], [
    { kind: 'flag', name: '--smtp-port' },
    { kind: 'env', name: 'PARLEY_SMTP_SECURE' },
    { kind: 'file', path: file, line: 4 },
    { kind: 'default' },
  ]);
});

t.test('--config PATH and --config=PATH', async (t) => {
  const a = withConfigFile('[server]\nport = 1\n');
  const b = withConfigFile('[server]\nport = 2\n');
  for (const argv of [['--config', join(a, 'parley.toml')], [`--config=${join(a, 'parley.toml')}`]]) {
    const r = resolveConfig(argv, { PARLEY_CONFIG: join(b, 'parley.toml') }, b);
    t.same([r.file, r.config.port, r.sources.port], [join(a, 'parley.toml'), 1, { kind: 'file', path: join(a, 'parley.toml'), line: 2 }], argv.join(' '));
  }
  t.throws(() => resolveConfig(['--config='], {}, none), { message: '--config needs a path' });
  t.throws(() => resolveConfig(['--config'], {}, none), { message: "option '--config <path>' argument missing" });
});

t.test('the environment is the one given, not the process\'s', async (t) => {
  const saved = { PARLEY_PORT: process.env.PARLEY_PORT, PARLEY_CONFIG: process.env.PARLEY_CONFIG };
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  process.env.PARLEY_PORT = '1234';
  process.env.PARLEY_CONFIG = join(none, 'missing.toml');
  const r = resolveConfig([], {}, none);
  t.same([r.config.port, r.sources.port, r.file], [9991, { kind: 'default' }, undefined]);
});

t.test('a bad flag or value: a clear error, nothing printed', async (t) => {
  t.throws(() => loadConfig(['--typo'], {}), { message: "unknown option '--typo'" });
  t.throws(() => loadConfig(['--prot', '1'], {}), { message: "unknown option '--prot'\n(Did you mean --port?)" });
  t.throws(() => loadConfig(['--help'], {}), { message: "unknown option '--help'" }, 'no help printed, no exit');
  t.throws(() => loadConfig(['7'], {}), { message: /^too many arguments/ });
  t.throws(() => loadConfig(['--port'], {}), { message: "option '--port <n>' argument missing" });
  t.throws(() => loadConfig(['--port', 'abc'], {}), { message: "--port: expected a non-negative integer, got 'abc'" });
  t.throws(() => loadConfig(['--port=-1'], {}), { message: "--port: expected a non-negative integer, got '-1'" });
  t.throws(() => loadConfig([], { PARLEY_PORT: 'abc' }), { message: "PARLEY_PORT: expected a non-negative integer, got 'abc'" });
});
