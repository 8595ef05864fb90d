/**
 * Hostile HTTP over real sockets, against a real server (chat port and board port):
 * - what Parley answers itself, as nginx would: 414 for a long URL, 431 for large
 *   header fields, 400 for a repeated Host or Content-Length, and HEAD without a body;
 * - what uWS closes in C++ before any JavaScript runs, at once or after its 10-second
 *   idle timeout (the limits documented at the top of src/http/uws.ts);
 * - invalid UTF-8 refused alike whether raw or percent-encoded;
 * and after every case, that a new connection is still served and a parked long poll
 * is still answered.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseQuery } from '../src/board/input.js';
import { BoardError } from '../src/board/errors.js';
import { decodeParams, INVALID_UTF8, MalformedBody } from '../src/http/body.js';
import { HTTP_LIMITS, listen } from '../src/http/uws.js';
import { loadConfig, type Config } from '../src/config.js';
import { startServer, type RunningServer } from '../src/server.js';
import { lineLogger } from '../actors/core/logger.js';

/** A tap test, as subtests receive it. */
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

interface Outcome {
  /** Everything received, as latin1. */
  data: string;
  /** Whether the server closed (or reset) the connection within the wait. */
  closed: boolean;
  /** When it closed, in ms after the request was sent. */
  ms: number;
}

/** Sends `payload` in one write on a new connection; resolves when the server closes it, or after `waitMs`. */
function exchange(port: number, payload: string | Buffer, waitMs = 3000): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let sentAt = Date.now();
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ data, closed, ms: Date.now() - sentAt });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      sentAt = Date.now();
      socket.write(typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload);
    });
  });
}

/** The JSON body of a response received whole. */
function jsonOf(data: string): any {
  return JSON.parse(Buffer.from(data.slice(data.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8'));
}

const CRLF = '\r\n';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('malformed and oversized requests against a real server', { timeout: 90_000 }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-http-limits-'));
  const off = { requests: 0, windowSecs: 60 };
  const config: Config = {
    ...loadConfig([], {}),
    host: '127.0.0.1',
    port: 0,
    boardPort: 0,
    dataDir,
    fsync: 'none',
    // The parked poll must be answered by the message sent at the end, not by a heartbeat.
    heartbeatMinMs: 80_000,
    heartbeatMaxMs: 90_000,
    rateLimit: off,
    rateLimitAnonymous: off,
    boardMessageRateLimit: off,
  };
  const logs: string[] = [];
  let server: RunningServer | undefined;
  const sockets: Array<{ destroy(): void }> = [];
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  server = await startServer(config, { log: lineLogger((line) => logs.push(line)), onFatal: (err) => logs.push(`fatal: ${err.message}`) });
  const boot = server.bootstrapped!;
  const chat = server.port;
  const board = server.boardPort;
  const auth = `Authorization: Basic ${Buffer.from(`${boot.owner.email}:${boot.owner.api_key}`).toString('base64')}${CRLF}`;
  /** A POST on a connection of its own; `body` as a string is taken byte for byte (latin1). */
  const post = (path: string, type: string, body: Buffer | string, who = auth): Buffer => {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
    return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${who}Content-Type: ${type}${CRLF}Content-Length: ${bytes.length}${CRLF}Connection: close${CRLF}${CRLF}`, 'latin1'), bytes]);
  };

  /** A normal request on a new connection is still answered on both ports. */
  const healthy = async (t: Tap, after: string): Promise<void> => {
    const c = await exchange(chat, `GET /api/v1/server_settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}Connection: close${CRLF}${CRLF}`);
    t.match(c.data, /^HTTP\/1\.1 200 OK\r\n[\s\S]*"result":"success"/, `after ${after}: the chat port still answers`);
    const b = await exchange(board, `GET /messages.json HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}Connection: close${CRLF}${CRLF}`);
    t.match(b.data, /^HTTP\/1\.1 200 OK\r\n/, `after ${after}: the board port still answers`);
  };

  // A long poll parked on the chat port for the whole test, by a second user: the owner's
  // own messages below reach only the owner.
  const created = await exchange(chat, post('/api/v1/users', 'application/x-www-form-urlencoded', 'email=poller%40example.com&password=poller-secret&full_name=Pat%20Poller'));
  const pollerId: number = jsonOf(created.data).user_id;
  t.type(pollerId, 'number', 'a second user');
  const poller = await exchange(chat, post('/api/v1/fetch_api_key', 'application/x-www-form-urlencoded', 'username=poller%40example.com&password=poller-secret'));
  const pollerAuth = `Authorization: Basic ${Buffer.from(`poller@example.com:${jsonOf(poller.data).api_key}`).toString('base64')}${CRLF}`;
  const registered = await exchange(chat, post('/api/v1/register', 'application/x-www-form-urlencoded', 'event_types=%5B%22message%22%5D', pollerAuth));
  const queueId: string = jsonOf(registered.data).queue_id;
  t.type(queueId, 'string', 'a queue to poll');
  const poll = connect(chat, '127.0.0.1');
  sockets.push(poll);
  let polled = '';
  let pollClosed = false;
  poll.on('data', (d) => (polled += d.toString('latin1')));
  poll.on('close', () => (pollClosed = true));
  poll.on('error', () => {});
  poll.write(`GET /api/v1/events?queue_id=${encodeURIComponent(queueId)}&last_event_id=-1 HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${pollerAuth}${CRLF}`);
  await sleep(100);
  t.equal(polled, '', 'the poll is parked');

  await t.test('Parley answers what reaches it, as nginx would, and closes the connection', async (t) => {
    const get = (target: string, extra = ''): string => `GET ${target} HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${extra}${CRLF}`;
    const narrow = encodeURIComponent(JSON.stringify([{ operator: 'search', operand: 'x'.repeat(HTTP_LIMITS.maxUrlChars) }]));
    const cases: Array<[string, number, string, RegExp]> = [
      ['a GET narrow over 8192 characters', chat, get(`/api/v1/messages?anchor=newest&num_before=1&num_after=0&narrow=${narrow}`, auth), /^HTTP\/1\.1 414 URI Too Long\r\n/],
      ['a 32 KB query string (it arrives in one read)', chat, get(`/api/v1/messages?narrow=${'a'.repeat(32 * 1024)}`, auth), /^HTTP\/1\.1 414 URI Too Long\r\n/],
      ['a path over 8192 characters on the board', board, get(`/${'p'.repeat(HTTP_LIMITS.maxUrlChars + 1)}`), /^HTTP\/1\.1 414 URI Too Long\r\n/],
      ['one header field over 8192 characters', chat, get('/api/v1/server_settings', `X-Big: ${'b'.repeat(HTTP_LIMITS.maxHeaderFieldChars)}${CRLF}`), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/],
      ['header fields over 32768 characters in all (40 fields)', board, get('/messages.json', Array.from({ length: 40 }, (_, i) => `X-Pad-${i}: ${'v'.repeat(1000)}${CRLF}`).join('')), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/],
      ['two Host headers', chat, get('/api/v1/server_settings', `Host: other.example${CRLF}`), /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*more than one host header/],
      ['two Content-Length headers', chat, `POST /api/v1/messages HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${auth}Content-Length: 3${CRLF}Content-Length: 4${CRLF}${CRLF}abcd`, /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*more than one content-length header/],
    ];
    for (const [what, port, request, status] of cases) {
      const got = await exchange(port, request);
      t.match(got.data, status, `${what}: ${JSON.stringify(got.data.slice(0, 60))}`);
      t.match(got.data, /\r\nConnection: close\r\n/i, `${what}: Connection: close`);
      t.ok(got.closed, `${what}: the connection is closed after the answer`);
      await healthy(t, what);
    }
    // At the limit exactly, the request is served.
    const path = '/api/v1/server_settings?x=';
    const fits = await exchange(chat, get(path + 'y'.repeat(HTTP_LIMITS.maxUrlChars - path.length + 1), `Connection: close${CRLF}`));
    t.match(fits.data, /^HTTP\/1\.1 200 OK\r\n/, 'a URL of exactly 8192 characters (path and query) is served');
  });

  await t.test('HEAD is answered with the length of the body but not the body', async (t) => {
    const socket = connect(chat, '127.0.0.1');
    sockets.push(socket);
    let got = '';
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.write(`HEAD /api/v1/server_settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${CRLF}`);
    for (let i = 0; i < 100 && !got.includes('\r\n\r\n'); i++) await sleep(10);
    await sleep(50);
    t.match(got, /^HTTP\/1\.1 200 OK\r\n/);
    const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(got)?.[1]);
    t.ok(length > 0, `Content-Length is that of the GET body (${length})`);
    t.ok(got.endsWith('\r\n\r\n'), 'no body follows the head');
    got = '';
    socket.write(`GET /api/v1/server_settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${CRLF}`);
    const bodyOf = (): string => (got.includes('\r\n\r\n') ? got.slice(got.indexOf('\r\n\r\n') + 4) : '');
    for (let i = 0; i < 300 && bodyOf().length < length; i++) await sleep(10);
    await sleep(50);
    t.match(got, /^HTTP\/1\.1 200 OK\r\n/, 'the next response on the same connection is read in step');
    t.equal(bodyOf().length, length, 'and its body has the length HEAD announced');
    socket.destroy();
  });

  await t.test('uWS closes these at once, before any JavaScript, without an answer', async (t) => {
    const host = `Host: 127.0.0.1${CRLF}`;
    const cases: Array<[string, number, string]> = [
      ['an unknown method (FOO)', chat, `FOO /api/v1/server_settings HTTP/1.1${CRLF}${host}${CRLF}`],
      ['an unknown method on the board (PROPFIND)', board, `PROPFIND /messages.json HTTP/1.1${CRLF}${host}${CRLF}`],
      ['a lower-case method (get)', chat, `get /api/v1/server_settings HTTP/1.1${CRLF}${host}${CRLF}`],
      ['no Host header (but another header)', chat, `GET /api/v1/server_settings HTTP/1.1${CRLF}Accept: */*${CRLF}${CRLF}`],
      ['both Content-Length and Transfer-Encoding', chat, `POST /api/v1/messages HTTP/1.1${CRLF}${host}Content-Length: 5${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}0${CRLF}${CRLF}`],
      ['a Content-Length that is not digits', chat, `POST /api/v1/messages HTTP/1.1${CRLF}${host}${auth}Content-Length: abc${CRLF}${CRLF}`],
      ['a Content-Length of 10 digits', chat, `POST /api/v1/messages HTTP/1.1${CRLF}${host}${auth}Content-Length: 1000000000${CRLF}${CRLF}`],
      ['a URL over uWS\'s 512 KB receive buffer', chat, `GET /api/v1/messages?narrow=${'a'.repeat(600 * 1024)} HTTP/1.1${CRLF}${host}${CRLF}`],
      ['an unparsable head of 4 KB or more (NUL in the path)', chat, `GET /x\0y HTTP/1.1${CRLF}${host}X-Pad: ${'p'.repeat(4096)}${CRLF}${CRLF}`],
      ['an unparsable head of 4 KB or more (49 header fields)', board, `GET /messages.json HTTP/1.1${CRLF}${host}${Array.from({ length: 48 }, (_, i) => `X-H${i}: ${'v'.repeat(90)}${CRLF}`).join('')}${CRLF}`],
    ];
    for (const [what, port, request] of cases) {
      const got = await exchange(port, request);
      t.equal(got.data, '', `${what}: no answer`);
      t.ok(got.closed && got.ms < 2000, `${what}: closed at once (${got.ms} ms)`);
      await healthy(t, what);
    }
  });

  await t.test('uWS holds an unparsable head under 4 KB unanswered until its idle timeout closes it', async (t) => {
    const cases: Array<[string, number, string]> = [
      ['a NUL in the path', chat, `GET /api/v1/server\0settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${CRLF}`],
      ['a garbage request line', chat, `hello there${CRLF}${CRLF}`],
      ['TLS bytes on the plain port', board, '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03'],
      ['HTTP/0.9', chat, `GET /api/v1/server_settings${CRLF}`],
      ['HTTP/1.0', chat, `GET /api/v1/server_settings HTTP/1.0${CRLF}Host: 127.0.0.1${CRLF}${CRLF}`],
      ['an absolute URL', chat, `GET http://127.0.0.1/api/v1/server_settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${CRLF}`],
      ['49 header fields', chat, `GET /api/v1/server_settings HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${Array.from({ length: 48 }, (_, i) => `X-H${i}: v${CRLF}`).join('')}${CRLF}`],
      ['a space before the colon', board, `GET /messages.json HTTP/1.1${CRLF}Host : 127.0.0.1${CRLF}${CRLF}`],
      ['bare LF line ends', chat, 'GET /api/v1/server_settings HTTP/1.1\nHost: 127.0.0.1\n\n'],
      ['a request line with no header field', chat, `GET /api/v1/server_settings HTTP/1.1${CRLF}${CRLF}`],
    ];
    // All at once: each waits out the same timeout (10 s, checked every 4 s).
    const pending = cases.map(([, port, request]) => exchange(port, request, 20_000));
    await sleep(1000);
    await healthy(t, 'sending the held requests (while they are held)');
    const outcomes = await Promise.all(pending);
    cases.forEach(([what], i) => {
      const got = outcomes[i];
      t.equal(got.data, '', `${what}: no answer`);
      t.ok(got.closed, `${what}: closed by the idle timeout`);
      t.ok(got.ms >= 5000 && got.ms < 20_000, `${what}: after ${got.ms} ms`);
    });
    await healthy(t, 'the idle timeouts');
  });

  await t.test('invalid UTF-8 is a 400 whether raw or percent-encoded', async (t) => {
    const form = 'application/x-www-form-urlencoded';
    const dm = (content: string): string => `type=private&to=%5B${boot.owner.user_id}%5D&content=${content}`;
    const boundary = 'b0undary';
    const multipart = (value: Buffer, disposition = 'form-data; name="content"'): Buffer =>
      Buffer.concat([
        Buffer.from(`--${boundary}${CRLF}Content-Disposition: form-data; name="type"${CRLF}${CRLF}private${CRLF}--${boundary}${CRLF}Content-Disposition: form-data; name="to"${CRLF}${CRLF}[${boot.owner.user_id}]${CRLF}--${boundary}${CRLF}Content-Disposition: `, 'latin1'),
        Buffer.from(disposition, 'latin1'),
        Buffer.from(`${CRLF}${CRLF}`, 'latin1'),
        value,
        Buffer.from(`${CRLF}--${boundary}--${CRLF}`, 'latin1'),
      ]);
    const cases: Array<[string, Buffer | string]> = [
      ['raw 0xFF in a form body', post('/api/v1/messages', form, dm('bad \xff byte'))],
      ['%FF in a form body', post('/api/v1/messages', form, dm('bad %FF byte'))],
      ['a raw overlong encoding (C0 AF) in a form body', post('/api/v1/messages', form, dm('\xc0\xaf'))],
      ['a raw lone surrogate (ED A0 80) in a form body', post('/api/v1/messages', form, dm('\xed\xa0\x80'))],
      ['%ED%A0%80 in a form body', post('/api/v1/messages', form, dm('%ED%A0%80'))],
      ['raw 0xFF in a multipart text field', post('/api/v1/messages', `multipart/form-data; boundary=${boundary}`, multipart(Buffer.from('bad \xff byte', 'latin1')))],
      ['raw 0xFF in a multipart part header', post('/api/v1/messages', `multipart/form-data; boundary=${boundary}`, multipart(Buffer.from('x'), 'form-data; name="content\xff"'))],
      ['raw 0xFF in the query string', `GET /api/v1/users/me?client_gravatar=\xff HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${auth}Connection: close${CRLF}${CRLF}`],
      ['%FF in the query string', `GET /api/v1/users/me?client_gravatar=%FF HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${auth}Connection: close${CRLF}${CRLF}`],
    ];
    for (const [what, request] of cases) {
      const got = await exchange(chat, request);
      t.match(got.data, /^HTTP\/1\.1 400 Bad Request\r\n/, `${what}: 400`);
      const body = jsonOf(got.data);
      t.same({ result: body.result, code: body.code, msg: body.msg }, { result: 'error', code: 'BAD_REQUEST', msg: INVALID_UTF8 }, `${what}: in Zulip's shape`);
    }
    const malformed = await exchange(chat, post('/api/v1/messages', form, dm('%ZZ')));
    t.equal(jsonOf(malformed.data).msg, 'Malformed percent-encoding in request', '%ZZ is malformed percent-encoding, not invalid UTF-8');
    // Valid UTF-8 is taken, raw or percent-encoded, including U+FFFD itself and a raw UTF-8 filename.
    for (const [what, content] of [['raw', 'caf\xc3\xa9 \xef\xbf\xbd'], ['percent-encoded', 'caf%C3%A9%20%EF%BF%BD']]) {
      const got = await exchange(chat, post('/api/v1/messages', form, dm(content)));
      t.match(got.data, /^HTTP\/1\.1 200 OK\r\n/, `valid UTF-8 sent ${what} is taken`);
    }
    const file = Buffer.from('\xff\xfe binary', 'latin1');
    const upload = await decodeParams(`multipart/form-data; boundary=${boundary}`, Buffer.concat([Buffer.from(`--${boundary}${CRLF}Content-Disposition: form-data; name="file"; filename="caf\xc3\xa9.bin"${CRLF}${CRLF}`, 'latin1'), file, Buffer.from(`${CRLF}--${boundary}--${CRLF}`)]), '');
    t.equal(upload.files[0].filename, 'café.bin', 'a raw UTF-8 filename is taken');
    t.same(upload.files[0].data, file, 'a file part is bytes, never checked as text');
    const untyped = ((): unknown => {
      try {
        return decodeParams(undefined, Buffer.from('a=\xff', 'latin1'), '');
      } catch (err) {
        return err;
      }
    })();
    t.ok(untyped instanceof MalformedBody && untyped.message === INVALID_UTF8, 'a body without a content type is a form, and checked');
    // The board's JSON bodies were already strict: the same bytes are its 422 malformed_json.
    const json = await exchange(board, post('/api/v1/messages', 'application/json', Buffer.concat([Buffer.from('{"body":"bad '), Buffer.from([0xff]), Buffer.from('"}')])));
    t.match(json.data, /^HTTP\/1\.1 422 Unprocessable Entity\r\n[\s\S]*"code":"malformed_json"/, 'the board refuses raw invalid UTF-8 in JSON');
    // Board query strings and chat path parameters: raw bytes are refused as their percent-encoded form is.
    const refusal = (raw: string): unknown => {
      try {
        return parseQuery(raw, 'validation_failed');
      } catch (err) {
        return err;
      }
    };
    t.ok(refusal('message=caf\uFFFD') instanceof BoardError, 'uWS hands raw invalid bytes to the board as U+FFFD: refused like %FF');
    t.ok(refusal('message=caf%FF') instanceof BoardError, '%FF in a board query is refused');
    for (const q of ['%FF', '\xff']) {
      const path = await exchange(chat, `GET /api/v1/users/${q} HTTP/1.1${CRLF}Host: 127.0.0.1${CRLF}${auth}Connection: close${CRLF}${CRLF}`);
      t.match(path.data, /^HTTP\/1\.1 404 /, `a chat path parameter with ${JSON.stringify(q)}: 404`);
    }
    await healthy(t, 'invalid UTF-8');
  });

  await t.test('the parked long poll was never disturbed and still answers', async (t) => {
    t.equal(polled, '', 'nothing was written to the parked poll');
    t.notOk(pollClosed, 'its connection is open');
    const sent = await exchange(chat, post('/api/v1/messages', 'application/x-www-form-urlencoded', `type=private&to=%5B${pollerId}%5D&content=still%20here`));
    t.match(sent.data, /^HTTP\/1\.1 200 OK\r\n/);
    for (let i = 0; i < 300 && !polled.includes('still here'); i++) await sleep(10);
    t.match(polled, /^HTTP\/1\.1 200 OK\r\n[\s\S]*"type":"message"[\s\S]*still here/, 'the poll gets the message');
  });
  t.same(logs.filter((l) => /internal error|fatal/.test(l)), [], 'no internal errors logged');
});

t.test('a listener given `refuse` answers refusals in its API\'s shape', async (t) => {
  const listener = await listen(
    {
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1024,
      tooLarge: () => ({ status: 413, headers: [], body: '' }),
      refuse: (status, message) => ({ status, headers: [['Content-Type', 'application/json']], body: JSON.stringify({ result: 'error', msg: message, code: status === 414 ? 'URI_TOO_LONG' : 'BAD_REQUEST' }) }),
    },
    () => ({ status: 200, headers: [['Content-Type', 'application/json']], body: '{"result":"success"}' }),
  );
  t.teardown(() => listener.close());
  const got = await exchange(listener.port, `GET /${'x'.repeat(HTTP_LIMITS.maxUrlChars + 1)} HTTP/1.1${CRLF}Host: a${CRLF}${CRLF}`);
  t.match(got.data, /^HTTP\/1\.1 414 URI Too Long\r\n/);
  t.match(jsonOf(got.data), { result: 'error', code: 'URI_TOO_LONG', msg: /over 8192 characters/ });
  const plain = await exchange(listener.port, `GET /ok HTTP/1.1${CRLF}Host: a${CRLF}Connection: close${CRLF}${CRLF}`);
  t.match(plain.data, /^HTTP\/1\.1 200 OK\r\n[\s\S]*"success"/);
});
