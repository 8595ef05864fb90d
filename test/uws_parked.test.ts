/**
 * A request answered later (a parked long-poll) keeps only its response and abort
 * state alive in the uWS front end, not the request and its headers: thousands of
 * parked polls would otherwise hold them until their replies.
 */
import t from 'tap';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { listen } from '../src/http/uws.js';
import type { Exchange, IncomingRequest } from '../src/http/types.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('a parked request is collectable while its exchange still answers', async (t) => {
  let request: WeakRef<IncomingRequest> | undefined;
  let parked: Exchange | undefined;
  const listener = await listen(
    { host: '127.0.0.1', port: 0, maxBodyBytes: 1024, tooLarge: () => ({ status: 413, headers: [], body: '' }) },
    (req, exchange) => {
      request = new WeakRef(req);
      parked = exchange;
      return null;
    },
  );
  t.teardown(() => listener.close());
  const socket = connect(listener.port, '127.0.0.1');
  let got = '';
  socket.on('data', (d) => (got += d.toString()));
  socket.write('GET /api/v1/events?queue_id=q HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dXNlcjprZXk=\r\n\r\n');
  for (let i = 0; i < 100 && !parked; i++) await sleep(10);
  t.ok(parked, 'the request reached the handler and was parked');
  for (let i = 0; i < 3; i++) {
    await sleep(10);
    gc();
  }
  t.equal(request?.deref(), undefined, 'the parked request and its headers were collected');
  parked!.respond({ status: 200, headers: [['Content-Type', 'application/json']], body: '{"result":"success"}' });
  for (let i = 0; i < 100 && !got.includes('success'); i++) await sleep(10);
  t.match(got, /^HTTP\/1.1 200 OK[\s\S]*\{"result":"success"\}$/, 'the exchange still answered the client');
  socket.destroy();
});
