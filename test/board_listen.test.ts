/**
 * The board over real sockets: its own listener serves only the board; on the main
 * port the board Host goes to the board and every other Host to the chat API; and the
 * guestbook's 413 is decided while the body streams in, before it is buffered.
 */
import t from 'tap';
import { connect } from 'node:net';
import { loadConfig, type Config } from '../src/config.js';
import { listenBoard, mainPort } from '../src/board/listen.js';
import { listen } from '../src/http/uws.js';
import { boardFixture } from './board_helpers.js';

const config: Config = { ...loadConfig([], {}), host: '127.0.0.1', port: 0, boardPort: 0, boardHost: 'board.example' };

/** Sends raw bytes and resolves with the first response text, or rejects after `ms`. */
function raw(port: number, write: (send: (s: string | Buffer) => boolean) => Promise<void> | void, ms = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${ms} ms; got ${JSON.stringify(got)}`));
    }, ms);
    socket.on('data', (d) => {
      got += d.toString();
      if (/\r\n\r\n[\s\S]*\}$/.test(got)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(got);
      }
    });
    socket.on('error', () => {});
    socket.on('connect', () => void write((s) => !socket.destroyed && socket.write(s)));
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('the board listener: 413 while streaming, before the body is buffered', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const listener = await listenBoard(config, f.app);
  t.teardown(() => listener.close());
  const head = (extra: string): string => `POST /api/v1/guestbook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}\r\n`;

  const disabled = await raw(listener.port, (send) => void send(head('Content-Length: 100000\r\n')));
  t.match(disabled, /^HTTP\/1.1 404/, 'while publication is off, the endpoint is a 404 whatever its size');
  t.match(disabled, /publication_disabled/);

  await f.setSwitch('guestbook', true);
  const declared = await raw(listener.port, (send) => void send(head('Content-Length: 100000\r\n') + '{"message":"'));
  t.match(declared, /^HTTP\/1.1 413/, 'a declared length over 8192 is refused with only the headers sent');
  t.match(declared, /"code":"payload_too_large"/);
  t.match(declared, /application\/problem\+json/);

  let sentAll = false;
  const chunked = await raw(listener.port, async (send) => {
    send(head('Transfer-Encoding: chunked\r\n'));
    for (let i = 0; i < 3; i++) {
      send(`1000\r\n${'x'.repeat(4096)}\r\n`);
      await sleep(30);
    }
    await sleep(300);
    sentAll = true;
    send('0\r\n\r\n');
  });
  t.match(chunked, /^HTTP\/1.1 413/, 'a chunked body is cut off once it passes 8192 bytes');
  t.notOk(sentAll, 'the answer came before the body was complete');

  const exact = JSON.stringify({ message: 'ok' });
  const res = await fetch(`http://127.0.0.1:${listener.port}/api/v1/guestbook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: exact + ' '.repeat(8192 - exact.length) });
  t.equal(res.status, 201, 'exactly 8192 bytes passes');
  const over = await fetch(`http://127.0.0.1:${listener.port}/api/v1/guestbook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: exact + ' '.repeat(8193 - exact.length) });
  t.equal(over.status, 413);
  t.equal(((await over.json()) as { code: string }).code, 'payload_too_large');
});

t.test('the board listener serves nothing of the chat API', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  const listener = await listenBoard(config, f.app);
  t.teardown(() => listener.close());
  const base = `http://127.0.0.1:${listener.port}`;
  for (const path of ['/api/v1/server_settings', '/api/v1/users/me', '/api/v1/register']) {
    const res = await fetch(base + path);
    t.equal(res.status, 404);
    t.equal(res.headers.get('content-type'), 'application/problem+json');
  }
  const created = await fetch(`${base}/api/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"body":"board, not chat"}' });
  t.equal(created.status, 201);
  t.equal(((await created.json()) as { contentTrust: string }).contentTrust, 'untrusted');
  const md = await fetch(`${base}/messages/m1.md`);
  t.equal(md.headers.get('content-type'), 'text/markdown; charset=utf-8');
});

t.test('on the main port, the board Host reaches the board and every other Host the chat API', async (t) => {
  const f = boardFixture();
  t.teardown(f.stop);
  await f.setSwitch('guestbook', true);
  const chatHits: string[] = [];
  const main = mainPort(config, f.app, {
    handler: (req) => {
      chatHits.push(`${req.method} ${req.path}`);
      return { status: 200, headers: [['Content-Type', 'application/json']], body: '{"result":"success","api":"chat"}' };
    },
    tooLarge: () => ({ status: 413, headers: [['Content-Type', 'application/json']], body: '{"result":"error","code":"PAYLOAD_TOO_LARGE"}' }),
  });
  const listener = await listen(main.options, main.handler);
  t.teardown(() => listener.close());
  const url = `http://127.0.0.1:${listener.port}`;
  // fetch refuses to set Host, so these go over a raw socket.
  const request = (host: string | null, method: string, path: string, body = ''): Promise<string> =>
    raw(listener.port, (send) => void send(`${method} ${path} HTTP/1.1\r\n${host === null ? '' : `Host: ${host}\r\n`}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
  t.match(await request('board.example', 'POST', '/api/v1/messages', '{"body":"to the board"}'), /^HTTP\/1.1 201[\s\S]*"contentTrust":"untrusted"/);
  t.match(await request('BOARD.example:9991', 'GET', '/messages/m1.json', ''), /^HTTP\/1.1 200[\s\S]*"to the board"/);
  t.match(await request('board.example.', 'GET', '/messages/m1.json', ''), /^HTTP\/1.1 200[\s\S]*"to the board"/, 'the fully qualified name (a trailing dot) is the board too');
  t.match(await request('board.example.:9991', 'GET', '/messages/m1.json', ''), /^HTTP\/1.1 200/);
  t.match(await request('board.example', 'GET', '/api/v1/server_settings', ''), /^HTTP\/1.1 404[\s\S]*problem\+json/, 'the board Host never reaches the chat API');
  t.same(chatHits, []);
  t.match(await request('chat.example', 'POST', '/api/v1/messages', '{"body":"to chat"}'), /"api":"chat"/);
  t.match(await request('board.example.evil', 'GET', '/messages.json', ''), /"api":"chat"/);
  t.match(await request('127.0.0.1', 'GET', '/messages.json', ''), /"api":"chat"/);
  t.same(chatHits, ['POST /api/v1/messages', 'GET /messages.json', 'GET /messages.json'], 'other Hosts never reach the board');
  t.equal(f.runtime.board().messages.length, 1);
  // The board's own ceilings apply to the board Host on the main port, before buffering.
  const big = await raw(listener.port, (send) => void send(`POST /api/v1/guestbook HTTP/1.1\r\nHost: board.example\r\nContent-Type: application/json\r\nContent-Length: 9000\r\n\r\n`));
  t.match(big, /^HTTP\/1.1 413[\s\S]*payload_too_large/);
  const chatBig = await fetch(`${url}/api/v1/guestbook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(9000) });
  t.equal(chatBig.status, 200, 'the chat API keeps its own ceiling');
});

t.test('a handler reads the peer address of a real socket, with and without a body', async (t) => {
  const seen: string[] = [];
  const listener = await listen({ host: '127.0.0.1', port: 0, maxBodyBytes: 1024, tooLarge: () => ({ status: 413, headers: [], body: '{}' }) }, (req) => {
    seen.push(`${req.method} ${req.remoteAddress}`);
    return { status: 200, headers: [['Content-Type', 'application/json']], body: '{}' };
  });
  t.teardown(() => listener.close());
  const get = await raw(listener.port, (send) => void send('GET /x HTTP/1.1\r\nHost: a\r\n\r\n'));
  t.match(get, /^HTTP\/1.1 200/);
  const post = await raw(listener.port, (send) => void send('POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}'));
  t.match(post, /^HTTP\/1.1 200/);
  t.same(seen, ['GET 127.0.0.1', 'POST 127.0.0.1'], 'the address the rate limiters key on');
});
