/**
 * Resumable uploads (tus 1.0 at /api/v1/tus): the protocol in process, status by
 * status; then the `tus-js-client` package against a real listening server: chunked
 * uploads, a resume after an interrupted upload, a resume after a server restart, and
 * termination.
 */
import t from 'tap';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { globalAgent } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../src/bootstrap.js';
import { loadConfig, type Config } from '../src/config.js';
import { startServer, type RunningServer } from '../src/server.js';
import { uploadStore } from '../src/uploads/store.js';
import { checkedFetch } from './server_process.js';
import { TUS_IDLE_MS, tusStore } from '../src/uploads/tus.js';
import { basicAuth, chatFixture, type ChatFixture, type Credentials, injectChecked } from './helpers.js';
import { lineLogger } from '../actors/core/logger.js';
import { attachmentContentType } from '../actors/areas/attachments.js';

const TUS = { 'tus-resumable': '1.0.0' };
const b64 = (s: string): string => Buffer.from(s).toString('base64');

function tus(f: ChatFixture, who: Credentials | null, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer) {
  return injectChecked(f.app, { method, url, headers: { ...(who ? { authorization: basicAuth(who) } : {}), ...headers }, body });
}

async function fixture() {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-tus-'));
  return chatFixture({ config: { dataDir, maxFileUploadSizeMib: 1 } });
}

t.test('the tus protocol, status by status', async (t) => {
  const f = await fixture();
  t.teardown(() => f.stop());
  const options = await tus(f, null, 'OPTIONS', '/api/v1/tus');
  t.same([options.status, options.headers['tus-resumable'], options.headers['tus-version'], options.headers['tus-extension'], options.headers['tus-max-size']], [204, '1.0.0', '1.0.0', 'creation,termination', String(1024 * 1024)]);
  // No version, or another: 412, and nothing is created.
  const create = (headers: Record<string, string>) => tus(f, f.owner, 'POST', '/api/v1/tus', headers);
  for (const version of [undefined, '0.2.2', '1.0.0 ']) {
    const res = await create({ 'upload-length': '5', ...(version === undefined ? {} : { 'tus-resumable': version }) });
    t.same([res.status, res.headers['tus-version'], res.headers['tus-resumable']], [412, '1.0.0', '1.0.0'], `Tus-Resumable ${version}`);
  }
  const anonymous = await tus(f, null, 'POST', '/api/v1/tus', { ...TUS, 'upload-length': '5' });
  t.same([anonymous.status, anonymous.headers['tus-resumable'], anonymous.json?.code], [401, '1.0.0', 'UNAUTHORIZED'], 'credentials as on every chat route');
  t.equal((await create({ ...TUS })).status, 400, 'no Upload-Length');
  t.equal((await create({ ...TUS, 'upload-length': '-1' })).status, 400);
  t.equal((await create({ ...TUS, 'upload-defer-length': '1' })).status, 411, 'a deferred length is not supported (as Zulip refuses it)');
  t.equal((await create({ ...TUS, 'upload-length': String(1024 * 1024 + 1) })).status, 413, 'over max_file_upload_size_mib');
  t.equal((await create({ ...TUS, 'upload-length': '5', 'upload-metadata': 'filename !!!' })).status, 400, 'malformed metadata');
  t.equal((await create({ ...TUS, 'upload-length': '5', 'upload-metadata': `a ${b64('x')},a ${b64('y')}` })).status, 400, 'a repeated key');

  const metadata = `filename ${b64('report ünïcode.txt')},filetype ${b64('text/plain')}`;
  const created = await create({ ...TUS, 'upload-length': '11', 'upload-metadata': metadata });
  t.equal(created.status, 201);
  t.match(created.headers.location, /^\/api\/v1\/tus\/[0-9a-f]{32}$/);
  const url = created.headers.location;
  const head = await tus(f, f.owner, 'HEAD', url, TUS);
  t.same([head.status, head.headers['upload-offset'], head.headers['upload-length'], head.headers['cache-control'], head.headers['upload-metadata'], head.headers['tus-resumable']], [200, '0', '11', 'no-store', metadata, '1.0.0']);
  t.equal((await tus(f, f.owner, 'HEAD', url)).status, 412);

  const patch = (offset: string, body: string, headers: Record<string, string> = {}) =>
    tus(f, f.owner, 'PATCH', url, { ...TUS, 'content-type': 'application/offset+octet-stream', 'upload-offset': offset, ...headers }, Buffer.from(body));
  t.equal((await patch('0', 'hello', { 'content-type': 'application/x-www-form-urlencoded' })).status, 415);
  t.equal((await patch('x', 'hello')).status, 400);
  t.same([(await patch('3', 'hello')).status, (await patch('3', 'hello')).headers['upload-offset']], [409, '0'], 'an offset other than the one held');
  t.equal((await patch('0', 'hello world!', { 'content-length': '12' })).status, 413, 'past Upload-Length');
  const first = await patch('0', 'hello');
  t.same([first.status, first.headers['upload-offset'], first.headers['tus-resumable']], [204, '5', '1.0.0']);
  t.equal((await tus(f, f.owner, 'HEAD', url, TUS)).headers['upload-offset'], '5');
  t.equal((await patch('5', ' world!!')).status, 413, 'more bytes than remain, without a Content-Length');

  // Nobody else sees the upload: another member, another organization.
  const bob = await f.createUser('bob@example.com');
  t.equal((await tus(f, bob, 'HEAD', url, TUS)).status, 404);
  t.equal((await tus(f, bob, 'PATCH', url, { ...TUS, 'content-type': 'application/offset+octet-stream', 'upload-offset': '5' }, Buffer.from(' world'))).status, 404);
  t.equal((await tus(f, bob, 'DELETE', url, TUS)).status, 404);
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: f.owner.email, ownerPassword: 'pw', ownerName: 'Twin' });
  const twin = { ...beta.owner };
  t.equal((await tus(f, twin, 'HEAD', url, { ...TUS, host: `beta.${f.config.externalHost}` })).status, 404, 'the same id in another organization is unknown');

  const last = await patch('5', ' world');
  t.equal(last.status, 200, last.body);
  t.equal(last.headers['upload-offset'], '11');
  t.match(last.json, { url: /^\/user_uploads\/1\/[^/]+\/[^/]+\/report-ünïcode\.txt$/, filename: 'report-ünïcode.txt' });
  t.same(Object.keys(last.json).sort(), ['filename', 'url'], "Zulip's tusd hook body: url and filename");
  const file = await tus(f, f.owner, 'GET', encodeURI(last.json.url));
  t.same([file.status, file.body], [200, 'hello world']);
  const listed = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments;
  t.match(listed, [{ name: 'report-ünïcode.txt', size: 11, path_id: last.json.url.replace('/user_uploads/', '') }]);
  t.equal(attachmentContentType(f.runtime, 1, listed[0].id), 'text/plain');
  t.equal((await tus(f, f.owner, 'HEAD', url, TUS)).headers['upload-offset'], '11', 'a finished upload reports its whole length');
  t.same((await patch('11', '')).json, last.json, 'and repeats its answer');

  // Termination: 204, then 410 for everything; a finished upload keeps its attachment.
  t.equal((await tus(f, f.owner, 'DELETE', url, TUS)).status, 204);
  for (const method of ['HEAD', 'DELETE']) t.equal((await tus(f, f.owner, method, url, TUS)).status, 410, method);
  t.equal((await patch('11', '')).status, 410);
  t.equal((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments.length, 1);
  const pending = await create({ ...TUS, 'upload-length': '4' });
  t.equal((await tus(f, f.owner, 'DELETE', pending.headers.location, TUS)).status, 204);
  t.equal((await tus(f, f.owner, 'HEAD', pending.headers.location, TUS)).status, 410);
  for (const id of ['0'.repeat(32), 'abc', '..%2F..%2Fetc', 'A'.repeat(32)]) t.equal((await tus(f, f.owner, 'HEAD', `/api/v1/tus/${id}`, TUS)).status, 404, id);
  // Idle for a day, an upload is forgotten by the sweep; a fresh one is kept.
  const idle = await create({ ...TUS, 'upload-length': '4' });
  const fresh = await create({ ...TUS, 'upload-length': '4' });
  const store = tusStore(uploadStore(f.config.dataDir).root);
  const old = new Date(Date.now() - TUS_IDLE_MS - 60_000);
  const idleId = idle.headers.location.split('/').pop()!;
  for (const ext of ['json', 'part']) utimesSync(join(f.config.dataDir, 'uploads', 'tus', '1', `${idleId}.${ext}`), old, old);
  t.ok((await store.sweep(TUS_IDLE_MS)) >= 1);
  t.equal((await tus(f, f.owner, 'HEAD', idle.headers.location, TUS)).status, 404, 'an idle upload is forgotten');
  t.equal((await tus(f, f.owner, 'HEAD', fresh.headers.location, TUS)).status, 200, 'a fresh one is kept');
  // An empty file is finished at creation.
  const empty = await create({ ...TUS, 'upload-length': '0', 'upload-metadata': `filename ${b64('empty.txt')}` });
  t.same([empty.status, empty.json?.filename], [201, 'empty.txt']);
  t.match(empty.headers.location, /^\/api\/v1\/tus\//);
});

/** The parts of tus-js-client this test uses (its Node build). */
interface TusUpload {
  url: string | null;
  start(): void;
  abort(shouldTerminate?: boolean): Promise<void>;
}
interface TusModule {
  Upload: new (file: Buffer, options: Record<string, unknown>) => TusUpload;
}
const tusClient = createRequire(import.meta.url)('tus-js-client') as TusModule;

/** Runs an upload to its end; resolves with the final response body, or rejects. */
function run(upload: (opts: Record<string, unknown>) => TusUpload, opts: Record<string, unknown> = {}): { upload: TusUpload; done: Promise<{ body: string; status: number }> } {
  let handle!: TusUpload;
  const done = new Promise<{ body: string; status: number }>((resolve, reject) => {
    handle = upload({
      ...opts,
      onSuccess: (payload: any) => resolve({ body: payload.lastResponse.getBody(), status: payload.lastResponse.getStatus() }),
      onError: reject,
    });
    handle.start();
  });
  return { upload: handle, done };
}

function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

t.test('tus-js-client against a real server: chunks, an interrupted upload resumed, a restart, termination', { timeout: 90_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-tus-client-'));
  const config: Config = { ...loadConfig([], {}), host: '127.0.0.1', port: 0, dataDir, fsync: 'always', maxFileUploadSizeMib: 4 };
  const logs: string[] = [];
  const start = () => startServer(config, { log: lineLogger((line) => logs.push(line)), onFatal: (err) => logs.push(`fatal: ${err.message}`) });
  let server: RunningServer = await within(20_000, 'start', start());
  t.teardown(async () => {
    await server.stop();
    globalAgent.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const owner = server.bootstrapped!.owner;
  const headers = { Authorization: basicAuth(owner) };
  const base = () => `http://127.0.0.1:${server.port}`;
  const data = Buffer.alloc(3 * 1024 * 1024 + 12345);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7919 + (i >> 11)) & 0xff;
  const fetchFile = async (url: string): Promise<Buffer> => Buffer.from(await (await fetch(`${base()}${url}`, { headers })).arrayBuffer());
  const common = { headers, chunkSize: 256 * 1024, retryDelays: null, storeFingerprintForResuming: false, metadata: { filename: 'big.bin', filetype: 'application/octet-stream' } };

  // A whole upload in chunks.
  const whole = run((o) => new tusClient.Upload(data, { ...common, endpoint: `${base()}/api/v1/tus`, ...o }));
  const finished = await within(30_000, 'whole upload', whole.done);
  t.equal(finished.status, 200);
  const answer = JSON.parse(finished.body);
  t.match(answer, { url: /^\/user_uploads\/1\//, filename: 'big.bin' });
  t.ok((await fetchFile(answer.url)).equals(data), 'byte for byte');

  // Interrupted after two chunks, then resumed by a fresh client from the server's offset.
  let chunks = 0;
  let cut!: () => void;
  const interrupted = new Promise<void>((resolve) => (cut = resolve));
  const first = run((o) => new tusClient.Upload(data, { ...common, endpoint: `${base()}/api/v1/tus`, ...o, onChunkComplete: () => ++chunks === 2 && cut() }));
  first.done.catch(() => {});
  await within(20_000, 'two chunks', interrupted);
  await first.upload.abort();
  const uploadUrl = first.upload.url!;
  t.match(uploadUrl, /\/api\/v1\/tus\/[0-9a-f]{32}$/);
  const offsets: number[] = [];
  const resumed = run((o) => new tusClient.Upload(data, { ...common, uploadUrl, ...o, onProgress: (sent: number) => offsets.push(sent) }));
  const done2 = JSON.parse((await within(30_000, 'resumed upload', resumed.done)).body);
  t.ok(offsets[0] >= 2 * 256 * 1024, `resumed from the server's offset (${offsets[0]}), not from 0`);
  t.ok((await fetchFile(done2.url)).equals(data), 'the resumed upload is byte for byte the file');

  // Interrupted, the server restarts, and the upload resumes on the new server.
  chunks = 0;
  const beforeRestart = new Promise<void>((resolve) => (cut = resolve));
  const third = run((o) => new tusClient.Upload(data, { ...common, endpoint: `${base()}/api/v1/tus`, ...o, onChunkComplete: () => ++chunks === 3 && cut() }));
  third.done.catch(() => {});
  await within(20_000, 'three chunks', beforeRestart);
  await third.upload.abort();
  const path = new URL(third.upload.url!).pathname;
  await server.stop();
  server = await within(20_000, 'restart', start());
  const afterRestart = run((o) => new tusClient.Upload(data, { ...common, uploadUrl: `${base()}${path}`, ...o }));
  const done3 = JSON.parse((await within(30_000, 'upload resumed after a restart', afterRestart.done)).body);
  t.ok((await fetchFile(done3.url)).equals(data), 'resumed after a restart, byte for byte');

  // Termination: abort(true) deletes the upload on the server; it is gone (410).
  chunks = 0;
  const doomedCut = new Promise<void>((resolve) => (cut = resolve));
  const doomed = run((o) => new tusClient.Upload(data, { ...common, endpoint: `${base()}/api/v1/tus`, ...o, onChunkComplete: () => ++chunks === 1 && cut() }));
  doomed.done.catch(() => {});
  await within(20_000, 'one chunk', doomedCut);
  await doomed.upload.abort(true);
  const gone = await fetch(doomed.upload.url!, { method: 'HEAD', headers: { ...headers, 'Tus-Resumable': '1.0.0' } });
  t.equal(gone.status, 410, 'terminated');
  const attachments = (await (await checkedFetch(`${base()}/api/v1/attachments`, { headers })).json()) as { attachments: unknown[] };
  t.equal(attachments.attachments.length, 3, 'one attachment per finished upload, none for the terminated one');
  t.same(logs.filter((l) => /internal error|fatal/.test(l)), []);
});
