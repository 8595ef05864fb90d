import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/store.js';
import { organizationIds } from '../actors/areas/organizations.js';
import { storeClient } from './helpers.js';
import { quietLogger } from '../actors/core/logger.js';
import { built } from './built.js';
import { root } from './paths.js';

function parley(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [built('src/cli.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 60000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

t.test('create-org prints the organization and owner, and the server recovers them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-cli-'));
  const r = parley(['create-org', '--data-dir', dir, '--name', 'Acme', '--subdomain', 'acme', '--owner-email', 'ceo@acme.example', '--owner-password', 'secret pw', '--owner-name', 'Cee']);
  t.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.equal(out.organization_id, 1);
  t.equal(out.owner.user_id, 1);
  t.equal(out.owner.email, 'ceo@acme.example');
  t.match(out.owner.api_key, /^[A-Za-z0-9_-]{32}$/);
  const dup = parley(['create-org', '--data-dir', dir, '--name', 'Other', '--subdomain', 'acme', '--owner-email', 'x@acme.example', '--owner-password', 'pw']);
  t.equal(dup.status, 2);
  t.match(dup.stderr, /already in use/);
  const def = parley(['create-org', '--data-dir', dir, '--name', 'Default', '--subdomain', '', '--owner-email', 'root@example.com', '--owner-password', 'pw']);
  t.equal(def.status, 0, def.stderr);
  t.equal(JSON.parse(def.stdout).subdomain, '');

  const store = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 1 << 26, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });
  t.teardown(() => store.close());
  t.equal(organizationIds(store.runtime).length, 2);
  const acme = storeClient(store, out.owner, 'acme.localhost');
  t.equal((await acme('GET', '/api/v1/users/me')).user_id, 1, 'the key printed is the owner\'s');
  t.same((await acme('GET', '/api/v1/streams', { include_all: true })).streams.map((s: any) => s.name).sort(), ['general', 'sandbox', 'welcome'], 'create-org makes the starter channels, as a first start does');
});

t.test('create-org refuses a data directory held by a running process, and bad input', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-cli-'));
  writeFileSync(join(dir, 'parley.pid'), `${process.pid === 1 ? 2 : 1}\n`);
  const r = parley(['create-org', '--data-dir', dir, '--name', 'A', '--subdomain', 'a', '--owner-email', 'a@example.com', '--owner-password', 'pw']);
  t.equal(r.status, 2);
  t.match(r.stderr, /in use by process/);
  const bad = parley(['create-org', '--data-dir', mkdtempSync(join(tmpdir(), 'parley-cli-')), '--name', 'A', '--subdomain', 'Not A Label!', '--owner-email', 'a@example.com', '--owner-password', 'pw']);
  t.equal(bad.status, 2);
  t.match(bad.stderr, /Invalid subdomain/);
  const missing = parley(['create-org', '--name', 'A']);
  t.equal(missing.status, 2);
  t.match(missing.stderr, /--data-dir is required/);
  const unknown = parley(['frobnicate']);
  t.equal(unknown.status, 2);
});

t.test('serve stops with a clear message where uWebSockets.js would fall back to JavaScript', async (t) => {
  // The fallback (used on a Node without a native uWS binary, or with UWS_USE_FALLBACK set)
  // throws "Not implemented" at the first request; the server refuses to start instead.
  const dir = mkdtempSync(join(tmpdir(), 'parley-cli-'));
  const r = spawnSync(process.execPath, [built('src/cli.ts'), 'serve', '--port', '0', '--data-dir', dir], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60000,
    env: { ...process.env, UWS_USE_FALLBACK: '1' },
  });
  t.equal(r.status, 1, r.stderr);
  t.match(r.stderr, /cannot start: UWS_USE_FALLBACK is set, but uWebSockets\.js's JavaScript fallback cannot serve Parley/);
  t.notMatch(r.stdout + r.stderr, /Falling back|Using µWS fallback/, 'uWS was not loaded');
  t.same(readdirSync(dir), [], 'nothing was written to the data directory');
});

t.test('grant-email-changes gives an owner the permission, and --revoke takes it back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-cli-'));
  const created = parley(['create-org', '--data-dir', dir, '--name', 'Acme', '--subdomain', 'acme', '--owner-email', 'ceo@acme.example', '--owner-password', 'pw']);
  t.equal(created.status, 0);
  const made = JSON.parse(created.stdout);
  const r = parley(['grant-email-changes', '--data-dir', dir, '--subdomain', 'acme', '--email', 'CEO@acme.example']);
  t.equal(r.status, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { user_id: 1, can_change_user_emails: true });
  const missing = parley(['grant-email-changes', '--data-dir', dir, '--subdomain', 'acme', '--email', 'nobody@acme.example']);
  t.not(missing.status, 0);
  t.match(missing.stderr, /no user/);
  t.equal(parley(['grant-email-changes', '--data-dir', dir, '--subdomain', 'acme', '--email', 'ceo@acme.example', '--revoke']).status, 0);
  const store = openStore({ dataDir: dir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 1 << 26, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });
  t.teardown(() => store.close());
  const refused = await storeClient(store, made.owner, 'acme.localhost')('PATCH', '/api/v1/users/1', { new_email: 'boss@acme.example' });
  t.equal(refused.msg, 'User not authorized to change user emails', 'the permission is gone');
});
