/**
 * `parley config`: the effective configuration as a parley.toml, each value with its
 * source (default, file, environment, flag), secrets masked.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { withConfigFile } from './config_helpers.js';
import { isSecret, resolveConfig, SETTINGS, showValue } from '../src/config.js';
import { MASKED, renderConfig } from '../src/operator/config_command.js';
import { parseRateLimit } from '../src/http/rate_limit.js';
import { memoryBasis, MiB, MIN_MEMORY_LIMIT_MIB } from '../src/memory/limit.js';
import { built } from './built.js';
import { root } from './paths.js';

t.test('secrets: marked settings, and any setting named like a password, secret or token', async (t) => {
  t.same(SETTINGS.filter(isSecret).map((s) => s.key), ['smtpPassword', 'bbbSecret', 'metricsToken']);
  t.ok(isSecret({ key: 'metricsToken' as never }), 'a new token setting is masked without a marker');
  t.notOk(isSecret({ key: 'tokenTtlSecs' as never, secret: false }), 'the marker decides where it is given');
});

t.test('the report: each value with its source, secrets masked', async (t) => {
  const cwd = withConfigFile('[server]\nport = 7000\nhost = "0.0.0.0"\nexternal_host = "chat.example"\n\n[smtp]\npassword = "from-file"\n\n[rate_limits]\napi = "5/10"\n');
  const r = resolveConfig(['--port', '7002'], { PARLEY_PORT: '7001', PARLEY_HOST: '10.0.0.1' }, cwd);
  const file = join(cwd, 'parley.toml');
  const report = renderConfig(r);
  t.match(report, `configuration file ${file}`);
  t.match(report, /^port = 7002 +# flag --port$/m);
  t.match(report, /^host = "10\.0\.0\.1" +# environment PARLEY_HOST$/m);
  t.match(report, /^external_host = "chat\.example" +# file, line 4$/m);
  t.match(report, /^data_dir = "\.\/data" +# default$/m);
  t.match(report, /^api = "5\/10" +# file, line 10$/m);
  t.match(report, new RegExp(`^password = ${MASKED.replace(/\*/g, '\\*')} +# file, line 7$`, 'm'), 'a secret from the file is masked');
  t.notMatch(report, 'from-file');
  t.match(report, /^secret = "" +# default$/m, 'an unset secret shows as empty');
});

t.test('parley config: the process reports file, environment and flag sources', async (t) => {
  const cwd = withConfigFile('[calls.bigbluebutton]\nurl = "https://bbb.example/bigbluebutton"\nsecret = "s3cret"\n');
  const r = spawnSync(process.execPath, [built('src/cli.ts'), 'config', '--smtp-password', 'pw-flag', '--port=0'], {
    cwd: root, encoding: 'utf8', timeout: 60000, env: { ...process.env, PARLEY_CONFIG: join(cwd, 'parley.toml'), PARLEY_EXTERNAL_HOST: 'env.example' },
  });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^url = "https:\/\/bbb\.example\/bigbluebutton" +# file, line 2$/m);
  t.match(r.stdout, /^secret = "\*{8}" +# file, line 3$/m);
  t.match(r.stdout, /^password = "\*{8}" +# flag --smtp-password$/m);
  t.match(r.stdout, /^external_host = "env\.example" +# environment PARLEY_EXTERNAL_HOST$/m);
  t.match(r.stdout, /^port = 0 +# flag --port$/m);
  t.notMatch(r.stdout, /s3cret|pw-flag/);
  const bad = spawnSync(process.execPath, [built('src/cli.ts'), 'config', '--frob'], { cwd: root, encoding: 'utf8', timeout: 60000 });
  t.equal(bad.status, 2);
  t.match(bad.stderr, /^parley: unknown option '--frob'\n\nUsage: parley config \[options\]/, 'a usage error, with the help');
});

t.test('a rate limit of several windows shows whole', async (t) => {
  t.equal(showValue(parseRateLimit('5/86400,2/3600')), '"2/3600,5/86400"');
  t.equal(showValue(parseRateLimit('0')), '"0"');
});

t.test('the memory limit: half the machine by default, said where it came from; flag, environment and file', async (t) => {
  const half = Math.floor(memoryBasis().bytes / 2 / MiB);
  const r = resolveConfig([], {}, withConfigFile(''));
  t.equal(r.config.memoryLimitMib, Math.max(MIN_MEMORY_LIMIT_MIB, half), 'the default is half the memory the process may use');
  t.match(renderConfig(r), new RegExp(`^memory_limit_mib = ${r.config.memoryLimitMib} +# default: half of (the machine's|the cgroup limit of) \\d+ MiB$`, 'm'));
  t.equal(resolveConfig(['--memory-limit-mib', '300'], {}, withConfigFile('')).config.memoryLimitMib, 300);
  t.equal(resolveConfig([], { PARLEY_MEMORY_LIMIT_MIB: '400' }, withConfigFile('')).config.memoryLimitMib, 400);
  const fromFile = resolveConfig([], {}, withConfigFile('[server]\nmemory_limit_mib = 500\n'));
  t.equal(fromFile.config.memoryLimitMib, 500);
  t.match(renderConfig(fromFile), /^memory_limit_mib = 500 +# file, line 2$/m);
  t.throws(() => resolveConfig(['--memory-limit-mib', '127'], {}, withConfigFile('')), /--memory-limit-mib: expected at least 128 \(MiB\), got '127'/);
  t.throws(() => resolveConfig([], { PARLEY_MEMORY_LIMIT_MIB: '1.5G' }, withConfigFile('')), /PARLEY_MEMORY_LIMIT_MIB: expected a whole number of MiB/);
});

t.test('parley config shows the memory limit of the process', async (t) => {
  const r = spawnSync(process.execPath, [built('src/cli.ts'), 'config', '--memory-limit-mib', '256'], { cwd: root, encoding: 'utf8', timeout: 60000 });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^\[server\][^[]*^memory_limit_mib = 256 +# flag --memory-limit-mib$/m);
});
