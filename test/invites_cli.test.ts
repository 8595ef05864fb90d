/**
 * The operator side of invitations: a server configured without SMTP writes the
 * invitation to `<data dir>/outbox`, `parley outbox` lists and shows it, and
 * `parley accept-invite` makes the account offline through the same command as the
 * API route.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { ChatApp } from '../src/http/chat_app.js';
import { chatRoutes } from '../src/routes/chat/index.js';
import { openStore } from '../src/store.js';
import { basicAuth, encodeParams, injectChecked, storeClient } from './helpers.js';
import { channelIdByName } from '../actors/areas/channels.js';
import { checkedFetch, startServerProcess } from './server_process.js';
import { quietLogger } from '../actors/core/logger.js';
import { built } from './built.js';
import { root } from './paths.js';

function parley(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [built('src/cli.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 60000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const open = (dir: string) => openStore({ dataDir: dir, fsync: 'always', fsyncBatchMs: 10, segmentBytes: 1 << 22, skipCorrupt: false, log: quietLogger, onFatal: (e) => { throw e; } });

t.test('outbox and accept-invite', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-invites-cli-'));
  const created = parley(['create-org', '--data-dir', dir, '--name', 'Acme', '--subdomain', 'acme', '--owner-email', 'ceo@acme.example', '--owner-password', 'pw', '--owner-name', 'Cee']);
  t.equal(created.status, 0, created.stderr);
  const owner = JSON.parse(created.stdout).owner;
  t.match(parley(['outbox', '--data-dir', dir]).stdout, 'outbox is empty');

  // A server with no SMTP settings: invitations go to the outbox.
  let store = open(dir);
  const config = { ...loadConfig(['--data-dir', dir], {}), rateLimit: { requests: 0, windowSecs: 60 } };
  const app = new ChatApp(chatRoutes, store.runtime, config, quietLogger);
  const general = channelIdByName(store.runtime, 1, 'general');
  const r = await injectChecked(app, {
    method: 'POST', url: '/api/v1/invites', body: encodeParams({ invitee_emails: 'new@acme.example', stream_ids: [general] }),
    headers: { host: 'acme.localhost', authorization: basicAuth(owner), 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(r.status, 200, r.body);
  await store.close();

  const listed = parley(['outbox', '--data-dir', dir]);
  t.equal(listed.status, 0, listed.stderr);
  const [name, , to, subject] = listed.stdout.trim().split('\t');
  t.match(name, /^\d{13}-[0-9a-f]{8}\.eml$/);
  t.same([to, subject], ['new@acme.example', 'Cee invited you to join Acme']);
  const shown = parley(['outbox', '--data-dir', dir, '--show', name]);
  t.match(shown.stdout, /^Subject: Cee invited you to join Acme$/m);
  const key = /Your invitation key: (\S+)/.exec(shown.stdout)![1];
  t.match(shown.stdout, `http://acme.localhost/join/${key}/`);
  t.equal(parley(['outbox', '--data-dir', dir, '--show', '../parley.pid']).status, 2, 'only a message of the outbox');

  t.match(parley(['accept-invite', '--data-dir', dir, '--subdomain', 'acme', '--key', 'nope', '--full-name', 'N', '--password', 'pw']).stderr, 'BAD_REQUEST: Invalid invitation key');
  const accepted = parley(['accept-invite', '--data-dir', dir, '--subdomain', 'acme', '--key', key, '--full-name', 'New Person', '--password', 'their pw']);
  t.equal(accepted.status, 0, accepted.stderr);
  const user = JSON.parse(accepted.stdout);
  t.match(user, { email: 'new@acme.example', role: 400, api_key: /^[A-Za-z0-9_-]{32}$/ });
  const again = parley(['accept-invite', '--data-dir', dir, '--subdomain', 'acme', '--key', key, '--full-name', 'N', '--password', 'pw']);
  t.equal(again.status, 2);
  t.match(again.stderr, /^parley: BAD_REQUEST: This invitation has already been used$/m);

  store = open(dir);
  t.teardown(() => store.close());
  const api = storeClient(store, owner, 'acme.localhost');
  const get = (url: string, params: Record<string, unknown> = {}) => api('GET', url, params);
  t.equal((await get(`/api/v1/users/${user.user_id}`)).user.full_name, 'New Person');
  t.ok((await get(`/api/v1/streams/${general}/members`)).subscribers.includes(user.user_id), "subscribed to the invitation's channel");
  t.equal((await get('/api/v1/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow: [{ operator: 'is', operand: 'dm' }] })).messages.length, 1, 'the referrer was told');
});

t.test('kill -9: acknowledged invitations survive, their mail was written once, and replay sends none', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-invites-kill9-'));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', PARLEY_SNAPSHOT_EVERY_RECORDS: '5', PARLEY_SNAPSHOT_GROWTH_PERCENT: '0' };
  let server = await startServerProcess(env);
  const waitKey = async () => {
    for (let i = 0; i < 500 && !/API key:\s+\S+/.test(server.stdout()); i++) await new Promise((r) => setTimeout(r, 20));
    return /API key:\s+(\S+)/.exec(server.stdout())![1];
  };
  const auth = basicAuth({ email: 'owner@localhost', api_key: await waitKey() });
  const call = async (method: string, path: string, params: Record<string, unknown> = {}) => {
    const res = await fetch(`${server.base}${path}`, {
      method, headers: { authorization: auth, ...(method === 'GET' ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
      body: method === 'GET' ? undefined : encodeParams(params),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  for (let i = 0; i < 8; i++) t.equal((await call('POST', '/api/v1/invites', { invitee_emails: `p${i}@example.com`, stream_ids: [] })).status, 200);
  const link = (await call('POST', '/api/v1/invites/multiuse')).json.invite_link as string;
  t.equal((await call('DELETE', '/api/v1/invites/3')).status, 200);
  server.child.kill('SIGKILL');
  await server.exited;
  const mailed = readdirSync(join(dir, 'outbox')).filter((n) => n.endsWith('.eml')).length;
  t.equal(mailed, 8, 'one mail per acknowledged invitation');
  server = await startServerProcess(env);
  t.teardown(() => server.child.kill('SIGKILL'));
  const listed = (await call('GET', '/api/v1/invites')).json.invites;
  t.same(listed.map((i: any) => i.email ?? i.link_url), [...[0, 1, 3, 4, 5, 6, 7].map((i) => `p${i}@example.com`), link.replace(/^http:\/\/[^/]+/, server.base)]);
  t.equal(readdirSync(join(dir, 'outbox')).filter((n) => n.endsWith('.eml')).length, mailed, 'no mail sent again on replay');
  const accepted = await checkedFetch(`${server.base}/api/v1/parley/invites/accept`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: encodeParams({ key: link, full_name: 'After Crash', password: 'pw', email: 'after@example.com' }),
  });
  t.equal(accepted.status, 200, 'a link made before the kill still works');
});
