/**
 * Uploads when the disk is full: every path that writes upload files (the plain
 * upload, a custom emoji, tus creation and appends) answers 507 in Zulip's error shape
 * with an `uploads.write_failed` log event, never a 400 that blames the client and
 * never an unhandled 500; what was acknowledged before stays, and the same request
 * succeeds once there is room again. The full disk is real (`/dev/full`, whose writes
 * fail with ENOSPC) or a sink that takes some bytes and then fails as a full disk does.
 */
import t from 'tap';
import { createWriteStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileSink, uploadStore, type OpenSink } from '../src/uploads/store.js';
import { tusStore } from '../src/uploads/tus.js';
import { basicAuth, chatFixture, type ChatFixture, injectChecked } from './helpers.js';
import { capturedLines } from './log_guard.js';

const BOUNDARY = 'parley-full-disk';
const TUS = { 'tus-resumable': '1.0.0' };

function multipart(filename: string, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

function post(f: ChatFixture, url: string, filename: string, data: Buffer) {
  return injectChecked(f.app, { method: 'POST', url, headers: { authorization: basicAuth(f.owner), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(filename, data) });
}

function tus(f: ChatFixture, method: string, url: string, headers: Record<string, string> = {}, body?: Buffer) {
  return injectChecked(f.app, { method, url, headers: { authorization: basicAuth(f.owner), ...TUS, ...headers }, body });
}

/** A real full disk: every write goes to /dev/full and fails with ENOSPC. */
const devFull: OpenSink = () => createWriteStream('/dev/full');

/** A disk that fills up: the first `room` bytes land in the real file, then writes fail with ENOSPC. */
function fillsAfter(room: number): OpenSink {
  return (path, flags) => {
    const file = fileSink(path, flags);
    let left = room;
    return new Writable({
      write(chunk: Buffer, _enc, done) {
        const fits = chunk.subarray(0, Math.max(0, left));
        left -= fits.length;
        const fail = (): void => done(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' }));
        if (fits.length === chunk.length) file.write(chunk, done);
        else if (fits.length > 0) file.write(fits, fail);
        else fail();
      },
      final(done) {
        file.end(done);
      },
      destroy(err, done) {
        file.end(() => done(err));
      },
    });
  };
}

/** The `uploads.write_failed` events logged since `from` (an index into the captured lines). */
function writeFailures(from: number): Array<Record<string, unknown>> {
  return capturedLines().slice(from).filter((l) => l.event === 'uploads.write_failed');
}

async function fixture(t: Tap) {
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-full-')), maxFileUploadSizeMib: 1 } });
  const store = uploadStore(f.config.dataDir);
  t.teardown(() => {
    store.openSink = fileSink;
    tusStore(store.root).openSink = fileSink;
    f.stop();
  });
  return { f, store, tus: tusStore(store.root) };
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

/** Asserts the server's answer to a full disk: 507, Zulip's shape, and one log event naming the route. */
function isFull(t: Tap, res: { status: number; json: any; body: string }, from: number, route: string): void {
  t.equal(res.status, 507, `507 Insufficient Storage (${res.body})`);
  t.same([res.json?.result, res.json?.code], ['error', 'INSUFFICIENT_STORAGE'], "Zulip's error shape");
  t.match(res.json?.msg, /no space left/, 'the message says what happened');
  const events = writeFailures(from);
  t.equal(events.length, 1, 'one uploads.write_failed event');
  t.match(events[0], { event: 'uploads.write_failed', route, code: 'ENOSPC' }, 'the event names the route and the error');
}

t.test('POST /user_uploads on a full disk: 507 and a log event, nothing recorded, and it works once there is room', async (t) => {
  const { f, store } = await fixture(t);
  const data = Buffer.alloc(200_000, 5);
  for (const [what, sink] of [['/dev/full', devFull], ['a disk that fills up halfway', fillsAfter(100_000)]] as const) {
    store.openSink = sink;
    const from = capturedLines().length;
    isFull(t, await post(f, '/api/v1/user_uploads', 'big.bin', data), from, 'POST /api/v1/user_uploads');
    t.same((await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments, [], `${what}: no attachment was recorded`);
  }
  store.openSink = fileSink;
  const ok = await post(f, '/api/v1/user_uploads', 'big.bin', data);
  t.equal(ok.status, 200, ok.body);
  const [a] = (await f.call(f.owner, 'GET', '/api/v1/attachments')).json.attachments;
  t.equal(a.size, data.length, 'the upload after the disk has room is whole');
});

t.test('a failed rename into place (ENOSPC on a metadata write) is the same 507', async (t) => {
  const { f, store } = await fixture(t);
  const commit = store.commit.bind(store);
  store.commit = async () => {
    throw Object.assign(new Error('ENOSPC: no space left on device, fsync'), { code: 'ENOSPC', syscall: 'fsync' });
  };
  t.teardown(() => void (store.commit = commit));
  const from = capturedLines().length;
  isFull(t, await post(f, '/api/v1/user_uploads', 'a.txt', Buffer.from('hello')), from, 'POST /api/v1/user_uploads');
});

t.test('a custom emoji on a full disk: 507, not "malformed"', async (t) => {
  const { f, store } = await fixture(t);
  store.openSink = devFull;
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(64)]);
  const from = capturedLines().length;
  isFull(t, await post(f, '/api/v1/realm/emoji/parrot', 'parrot.png', png), from, 'POST /api/v1/realm/emoji/{emoji_name}');
});

t.test('tus on a full disk: an append keeps what landed, says 507, and resumes from the offset HEAD gives', async (t) => {
  const { f, tus: store } = await fixture(t);
  const data = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  const created = await tus(f, 'POST', '/api/v1/tus', { 'upload-length': String(data.length), 'upload-metadata': `filename ${Buffer.from('data.bin').toString('base64')}` });
  t.equal(created.status, 201);
  const url = created.headers.location;
  const patch = (offset: number, body: Buffer) => tus(f, 'PATCH', url, { 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) }, body);

  // An acknowledged first part.
  const first = await patch(0, data.subarray(0, 100_000));
  t.same([first.status, first.headers['upload-offset']], [204, '100000']);

  // The disk fills up 50,000 bytes into the second part.
  store.openSink = fillsAfter(50_000);
  const from = capturedLines().length;
  const full = await patch(100_000, data.subarray(100_000));
  isFull(t, full, from, 'PATCH /api/v1/tus/{upload_id}');
  t.equal(full.headers['tus-resumable'], '1.0.0');
  t.match(writeFailures(from)[0], { offset: 150_000 }, 'the event says how far the upload got');
  const head = await tus(f, 'HEAD', url);
  t.equal(head.headers['upload-offset'], '150000', 'the acknowledged part and what landed after it are kept');

  // A real full disk: nothing lands, the offset stays.
  store.openSink = devFull;
  const before = capturedLines().length;
  isFull(t, await patch(150_000, data.subarray(150_000)), before, 'PATCH /api/v1/tus/{upload_id}');
  t.equal((await tus(f, 'HEAD', url)).headers['upload-offset'], '150000');

  // Room again: the client resumes where HEAD said, and the file is whole.
  store.openSink = fileSink;
  const done = await patch(150_000, data.subarray(150_000));
  t.equal(done.status, 200, done.body);
  const stored = await f.call(f.owner, 'GET', '/api/v1/attachments');
  const a = stored.json.attachments[0];
  t.equal(a.size, data.length);
  const file = await injectChecked(f.app, { method: 'GET', url: JSON.parse(done.body).url, headers: { authorization: basicAuth(f.owner) } });
  t.ok(Buffer.from(file.body, 'latin1').equals(data), 'the stored bytes are exactly the upload');
});

t.test('tus creation on a full disk: 507, and no upload is given out', async (t) => {
  const { f, tus: store } = await fixture(t);
  const create = store.create.bind(store);
  store.create = async () => {
    throw Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC', syscall: 'open' });
  };
  t.teardown(() => void (store.create = create));
  const from = capturedLines().length;
  const res = await tus(f, 'POST', '/api/v1/tus', { 'upload-length': '10' });
  isFull(t, res, from, 'POST /api/v1/tus');
  t.notOk(res.headers.location, 'no Location');
});

t.test('another failed write (EIO) is a 500 that says the file was not stored, and is logged', async (t) => {
  const { f, store } = await fixture(t);
  store.openSink = () =>
    new Writable({
      write(_c, _e, done) {
        done(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO', syscall: 'write' }));
      },
    });
  const from = capturedLines().length;
  const res = await post(f, '/api/v1/user_uploads', 'a.txt', Buffer.from('hello'));
  t.same([res.status, res.json?.code], [500, 'INTERNAL_SERVER_ERROR'], res.body);
  t.match(res.json?.msg, /could not store/);
  t.match(writeFailures(from), [{ code: 'EIO', syscall: 'write' }]);
});
