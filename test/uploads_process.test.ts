/**
 * Uploads through a real server process over real sockets: a large upload sent in
 * many small writes (the server pauses and resumes the socket as its buffer fills),
 * read back whole and by range by a slow reader, byte for byte; clients that go away
 * mid-upload or mid-download; and kill -9 before and after an upload is acknowledged.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess, type ServerProcess } from './server_process.js';

const BOUNDARY = 'parley-process-boundary';
const MIB = 1024 * 1024;

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function start(dir: string): Promise<{ server: ServerProcess; auth: string }> {
  const server = await startServerProcess({ PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0', PARLEY_MAX_FILE_UPLOAD_SIZE_MIB: '16' });
  return { server, auth: '' };
}

/** Deterministic bytes that are not periodic in any small window. */
function bytes(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function multipartHead(filename: string): Buffer {
  return Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
}
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/**
 * POSTs a multipart upload in `piece`-byte writes, waiting for drain whenever the
 * socket's buffer is full. `stopAfter`: write only this many bytes, then call it (the
 * test then cuts the connection or kills the server).
 */
function postUpload(base: string, auth: string, filename: string, data: Buffer, piece: number, stopAfter?: { bytes: number; then: (req: ReturnType<typeof request>) => void }): Promise<{ status: number; body: string }> {
  const body = Buffer.concat([multipartHead(filename), data, TAIL]);
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/v1/user_uploads`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(body.length) },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    let at = 0;
    const limit = stopAfter?.bytes ?? body.length;
    const pump = (): void => {
      while (at < limit) {
        const next = body.subarray(at, Math.min(at + piece, limit));
        at += next.length;
        if (!req.write(next)) {
          req.once('drain', pump);
          return;
        }
      }
      if (stopAfter) stopAfter.then(req);
      else req.end();
    };
    pump();
  });
}

/** GETs a URL reading slowly: `perTick` bytes are taken, then the reader pauses. */
function slowGet(base: string, auth: string, path: string, headers: Record<string, string> = {}, pauseMs = 2): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers: { authorization: auth, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        res.pause();
        setTimeout(() => res.resume(), pauseMs);
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function api(base: string, auth: string, path: string): Promise<any> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: auth }, signal: AbortSignal.timeout(10000) });
  return res.json();
}

function storedFiles(dir: string): string[] {
  const root = join(dir, 'uploads');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(root.length + 1)).sort();
}

function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

async function ownerAuth(server: ServerProcess): Promise<string> {
  await waitFor(() => /API key:\s+\S+/.test(server.stdout()), 10000, 'the API key');
  const key = /API key:\s+(\S+)/.exec(server.stdout())![1];
  return 'Basic ' + Buffer.from(`owner@localhost:${key}`).toString('base64');
}

t.test('streaming over real sockets: a large upload, slow whole and ranged reads, clients that go away', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-uploads-process-'));
  const { server } = await start(dir);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const auth = await ownerAuth(server);
  const data = bytes(6 * MIB + 4321, 7);
  const up = await postUpload(server.base, auth, 'big.bin', data, 16 * 1024);
  t.equal(up.status, 200, up.body);
  const { url } = JSON.parse(up.body);
  const [sha] = storedFiles(dir).map((f) => f.split('/')[1]);
  t.equal(sha, createHash('sha256').update(data).digest('hex'), 'stored under its SHA-256');

  const whole = await slowGet(server.base, auth, url);
  t.equal(whole.status, 200);
  t.equal(whole.headers['content-length'], String(data.length));
  t.ok(whole.body.equals(data), 'read back whole, byte for byte, by a slow reader');
  const ranged = await slowGet(server.base, auth, url, { range: 'bytes=1000000-4999999' });
  t.same([ranged.status, ranged.headers['content-range'], ranged.body.length], [206, `bytes 1000000-4999999/${data.length}`, 4_000_000]);
  t.ok(ranged.body.equals(data.subarray(1_000_000, 5_000_000)), 'a range, byte for byte');
  const suffix = await slowGet(server.base, auth, url, { range: 'bytes=-70000' }, 0);
  t.ok(suffix.body.equals(data.subarray(data.length - 70000)), 'a suffix range');
  const head = await fetch(`${server.base}${url}`, { method: 'HEAD', headers: { authorization: auth } });
  t.same([head.status, head.headers.get('content-length'), (await head.arrayBuffer()).byteLength], [200, String(data.length), 0], 'HEAD: the length, no body');

  // A client that goes away mid-upload leaves no file, temporary or in place, and no attachment.
  const before = storedFiles(dir);
  for (const cutAt of [100_000, 3 * MIB]) {
    const cut = postUpload(server.base, auth, 'cut.bin', bytes(5 * MIB, cutAt), 32 * 1024, { bytes: cutAt, then: (req) => setTimeout(() => req.destroy(), 50) });
    await cut.then(() => t.fail('a cut upload was answered'), () => {});
    await waitFor(() => storedFiles(dir).join() === before.join(), 5000, 'the temp file to go').catch(() => {});
    t.same(storedFiles(dir), before, `cut after ${cutAt} bytes: nothing left in uploads/ (tmp included)`);
  }
  t.equal((await api(server.base, auth, '/api/v1/attachments')).attachments.length, 1);

  // Clients that go away mid-download: no crash, no file handle left open.
  await slowGet(server.base, auth, url, { range: 'bytes=0-10' }, 0);
  const fds = openFds(server.pid);
  for (let i = 0; i < 20; i++) {
    await new Promise<void>((resolve) => {
      const req = request(`${server.base}${url}`, { headers: { authorization: auth } }, (res) => {
        let got = 0;
        res.on('data', (c: Buffer) => {
          got += c.length;
          if (got > 200_000) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', () => resolve());
      req.end();
    });
  }
  await waitFor(() => openFds(server.pid) <= fds, 5000, 'the file handles to close').catch(() => {});
  t.ok(openFds(server.pid) <= fds, `open descriptors back to ${fds} (now ${openFds(server.pid)})`);
  const again = await slowGet(server.base, auth, url, {}, 0);
  t.ok(again.body.equals(data), 'the server still serves the file');
  t.equal(server.child.exitCode, null, 'and is still running');
  t.notMatch(server.stderr(), /internal error/);
});

t.test('kill -9: an acknowledged upload survives with its attachment; one killed before its acknowledgement leaves nothing', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-uploads-kill9-'));
  let { server } = await start(dir);
  t.teardown(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });
  const auth = await ownerAuth(server);
  const data = bytes(2 * MIB + 17, 11);
  const up = await postUpload(server.base, auth, 'kept.bin', data, 64 * 1024);
  t.equal(up.status, 200, up.body);
  const { url } = JSON.parse(up.body);
  server.child.kill('SIGKILL');
  await server.exited;
  ({ server } = await start(dir));
  const after = await slowGet(server.base, auth, url, {}, 0);
  t.equal(after.status, 200);
  t.ok(after.body.equals(data), 'the acknowledged file is there, byte for byte');
  const listed = (await api(server.base, auth, '/api/v1/attachments')).attachments;
  t.match(listed, [{ name: 'kept.bin', size: data.length, path_id: url.replace('/user_uploads/', '') }], 'and its attachment');
  const kept = storedFiles(dir);

  // Killed while the body is arriving: the answer never came.
  const partial = postUpload(server.base, auth, 'doomed.bin', bytes(4 * MIB, 3), 64 * 1024, { bytes: 3 * MIB, then: () => {} });
  partial.catch(() => {});
  await waitFor(() => existsSync(join(dir, 'uploads', 'tmp')) && readdirSync(join(dir, 'uploads', 'tmp')).length > 0, 5000, 'the temp file');
  await new Promise((r) => setTimeout(r, 100));
  server.child.kill('SIGKILL');
  await server.exited;
  await partial.then(() => t.fail('answered'), () => t.pass('the killed upload was never acknowledged'));
  ({ server } = await start(dir));
  t.same(storedFiles(dir), kept, 'no partial file, in tmp or in place');
  t.equal((await api(server.base, auth, '/api/v1/attachments')).attachments.length, 1, 'and no attachment for it');
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});
