/**
 * The configuration file (parley.toml): the file keys derived from SETTINGS, where the
 * file is, precedence default < file < environment < flag with each value's source, and
 * clear errors for a bad file.
 */
import t from 'tap';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withConfigFile } from './config_helpers.js';
import { resolveConfig, SETTINGS } from '../src/config.js';
import { fileKeyOf } from '../src/config_file.js';
import { root } from './paths.js';

t.test('every setting has its own file key, in sections named by a rule', async (t) => {
  const keys = SETTINGS.map(fileKeyOf);
  t.equal(new Set(keys).size, keys.length, 'no two settings share a key');
  const of = (key: string) => fileKeyOf(SETTINGS.find((s) => s.key === key)!);
  t.same(['smtpHost', 'mailFrom', 'jitsiServerUrl', 'bbbUrl', 'bbbSecret', 'pushBouncerUrl', 'rateLimit', 'rateLimitAnonymous', 'boardMessageRateLimit', 'dataDir', 'keepSnapshots'].map(of),
    ['smtp.host', 'smtp.from', 'calls.jitsi.server_url', 'calls.bigbluebutton.url', 'calls.bigbluebutton.secret', 'push.bouncer_url', 'rate_limits.api', 'rate_limits.anonymous', 'rate_limits.board_message', 'server.data_dir', 'snapshots.keep']);
  t.same(['rateLimitAuth', 'metricsToken', 'logLevel', 'shutdownTimeoutMs'].map((key) => fileKeyOf({ key: key as never })),
    ['rate_limits.auth', 'metrics.token', 'log.level', 'server.shutdown_timeout_ms'], 'a new row gets a key without a change to the rule');
});

t.test('precedence: default < file < environment < flag, and each source is reported', async (t) => {
  const cwd = withConfigFile('[server]\nport = 7000\nhost = "0.0.0.0"\nexternal_host = "chat.example"\n\n[smtp]\npassword = "from-file"\n\n[rate_limits]\napi = "5/10"\n');
  const r = resolveConfig(['--port', '7002'], { PARLEY_PORT: '7001', PARLEY_HOST: '10.0.0.1' }, cwd);
  const file = join(cwd, 'parley.toml');
  t.equal(r.file, file);
  t.same([r.config.port, r.config.host, r.config.externalHost, r.config.dataDir, r.config.rateLimit], [7002, '10.0.0.1', 'chat.example', './data', { requests: 5, windowSecs: 10 }]);
  t.same(r.sources.port, { kind: 'flag', name: '--port' });
  t.same(r.sources.host, { kind: 'env', name: 'PARLEY_HOST' });
  t.same(r.sources.externalHost, { kind: 'file', path: file, line: 4 });
  t.same(r.sources.dataDir, { kind: 'default' });
  t.equal(r.config.smtpPassword, 'from-file');

});

t.test('where the file is: --config, then PARLEY_CONFIG, then ./parley.toml if it exists', async (t) => {
  const a = withConfigFile('[server]\nport = 1\n');
  const b = withConfigFile('[server]\nport = 2\n');
  const none = mkdtempSync(join(tmpdir(), 'parley-config-'));
  t.equal(resolveConfig([], {}, none).file, undefined, 'no file, no error');
  t.equal(resolveConfig([], {}, a).config.port, 1);
  t.equal(resolveConfig([], { PARLEY_CONFIG: join(b, 'parley.toml') }, a).config.port, 2);
  t.equal(resolveConfig([`--config=${join(a, 'parley.toml')}`], { PARLEY_CONFIG: join(b, 'parley.toml') }, none).config.port, 1);
  t.throws(() => resolveConfig(['--config', join(none, 'missing.toml')], {}, none), { message: `configuration file ${join(none, 'missing.toml')}: not found` });
});

t.test('a bad file: the file, the key and the line', async (t) => {
  const error = (text: string): string => {
    try {
      resolveConfig([], {}, withConfigFile(text));
    } catch (err) {
      return (err as Error).message.replace(/^.*parley\.toml/, 'parley.toml');
    }
    return 'no error';
  };
  t.equal(error('[smtp]\nhots = "x"\n'), 'parley.toml:2: smtp.hots: unknown key; [smtp] has host, port, secure, user, password, from');
  t.match(error('[smpt]\nhost = "x"\n'), /^parley\.toml:2: smpt\.host: unknown key; the sections are \[server\], \[snapshots\], .*\[calls\.jitsi\]/);
  t.equal(error('\n[server]\nport = "9991"\n'), 'parley.toml:3: server.port: expected an integer, got a string ("9991")');
  t.equal(error('[server]\nport = 99.5\n'), 'parley.toml:2: server.port: expected an integer, got a float');
  t.equal(error('[server]\nport = -1\n'), "parley.toml:2: server.port: expected a non-negative integer, got '-1'");
  t.equal(error('[server]\nskip_corrupt = "yes"\n'), 'parley.toml:2: server.skip_corrupt: expected a boolean, got a string ("yes")');
  t.equal(error('[calls.jitsi]\nserver_url = "ftp://meet.example"\n'), "parley.toml:2: calls.jitsi.server_url: expected an http or https URL, got 'ftp://meet.example'");
  t.equal(error('[rate_limits]\napi = "lots"\n'), "parley.toml:2: rate_limits.api: expected REQUESTS/SECONDS such as 200/60 (several joined by commas), or 0, got 'lots'");
  t.equal(error('[server.port]\nx = 1\n'), 'parley.toml:1: server.port: expected an integer, got a table');
  t.equal(error('calls = { jitsi = { server_url = 5 } }\n'), 'parley.toml: calls.jitsi.server_url: expected a string, got an integer', 'no line for a key inside an inline table');
  t.match(error('[server]\nport = = 1\n'), /^parley\.toml:2:\d+: /, 'a syntax error has its line and column');
});

t.test('parley.example.toml documents every key, each valid at the value it shows', async (t) => {
  const text = readFileSync(join(root, 'parley.example.toml'), 'utf8');
  const uncommented = text.replace(/^# ([a-z_]+ = .*)$/gm, '$1');
  const r = resolveConfig([], {}, withConfigFile(uncommented));
  const fromFile = SETTINGS.filter((s) => r.sources[s.key].kind === 'file').map(fileKeyOf);
  t.same(SETTINGS.map(fileKeyOf).filter((k) => !fromFile.includes(k)), [], 'every setting has its key in the example (add new settings there)');
});
