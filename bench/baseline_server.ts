/**
 * The raw uWebSockets.js baselines, run as their own process (`bench/baselines.ts`
 * starts it) so that the server and the load generator never share a core's time:
 *
 *   GET /hello            "Hello World!", the ceiling for request throughput;
 *   GET /poll             parks the response, as a long-poll with nothing to say
 *                         (also at GET /api/v1/events, so that the fan-out scenario can
 *                         send it the very requests Parley gets);
 *   GET /parked           how many responses are parked;
 *   GET /trigger?bytes=B  answers, then completes every parked response from one
 *                         setImmediate, each corked, with a body of about B bytes:
 *                         the ceiling for fan-out.
 *
 * It prints `{"port":P}` on stdout once listening on 127.0.0.1, and exits on SIGTERM.
 */
import uWS from 'uWebSockets.js';

const held = new Set<uWS.HttpResponse>();
let body = '';

function bodyOf(bytes: number): string {
  const shell = '{"result":"success","msg":"","events":[],"pad":""}';
  return shell.slice(0, -2) + 'x'.repeat(Math.max(0, bytes - shell.length)) + '"}';
}

function completeAll(): void {
  const batch = [...held];
  held.clear();
  for (const res of batch) {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('Content-Type', 'application/json');
      res.end(body);
    });
  }
}

const app = uWS.App();
app.get('/hello', (res) => {
  res.end('Hello World!');
});
function park(res: uWS.HttpResponse): void {
  res.onAborted(() => held.delete(res));
  held.add(res);
}
app.get('/poll', park);
app.get('/api/v1/events', park);
app.get('/parked', (res) => {
  res.end(String(held.size));
});
app.get('/trigger', (res, req) => {
  const bytes = Number(new URLSearchParams(req.getQuery() ?? '').get('bytes') ?? '100');
  if (body.length !== bytes) body = bodyOf(bytes);
  res.end('{"result":"success"}');
  setImmediate(completeAll);
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    console.error('baseline: cannot listen on 127.0.0.1');
    process.exit(1);
  }
  console.log(JSON.stringify({ port: uWS.us_socket_local_port(socket) }));
});
process.once('SIGTERM', () => process.exit(0));
