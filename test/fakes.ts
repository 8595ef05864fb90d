/**
 * Stand-ins for the outside services Parley may call, on 127.0.0.1 only: a
 * BigBlueButton server that checks checksums as BigBlueButton does, and a push
 * notification relay. And a port nothing listens on, for the unreachable case.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Checks a BigBlueButton API URL as the server does: SHA-256 of call name, query without the checksum, secret. */
export function bbbChecksumValid(url: URL, secret: string): boolean {
  const call = url.pathname.split('/').pop()!;
  const raw = url.search.slice(1);
  const at = raw.lastIndexOf('&checksum=');
  if (at < 0) return false;
  const query = raw.slice(0, at);
  return createHash('sha256').update(call + query + secret).digest('hex') === raw.slice(at + '&checksum='.length);
}

export interface FakeBbb { url: string; calls: URL[]; server: Server }

/** A BigBlueButton stand-in: `api/create` answers SUCCESS when the checksum is right under `secret`. */
export async function fakeBbb(secret: string): Promise<FakeBbb> {
  const calls: URL[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://127.0.0.1');
    calls.push(url);
    res.setHeader('content-type', 'text/xml');
    if (!bbbChecksumValid(url, secret)) {
      res.end('<response><returncode>FAILED</returncode><messageKey>checksumError</messageKey><message>Checksums do not match</message></response>');
      return;
    }
    res.end(`<response><returncode>SUCCESS</returncode><meetingID>${url.searchParams.get('meetingID')}</meetingID><createTime>1700000000123</createTime></response>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/bigbluebutton`, calls, server };
}

/** A port nothing listens on (bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}


/** How the fake relay answers. */
export type BouncerMode = 'ok' | 'error500' | 'refuse' | 'unknown_device';

export interface FakeBouncer { url: string; requests: Array<{ path: string; body: any }>; mode: BouncerMode; server: Server }

/** A push relay stand-in: records each request and answers as `mode` says (changeable). */
export async function fakeBouncer(): Promise<FakeBouncer> {
  const fake = { url: '', requests: [], mode: 'ok', server: undefined as unknown as Server } as FakeBouncer;
  fake.server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      fake.requests.push({ path: req.url!, body: JSON.parse(body || '{}') });
      res.setHeader('content-type', 'application/json');
      if (fake.mode === 'error500') {
        res.statusCode = 500;
        res.end('{"result":"error","msg":"boom"}');
      } else if (fake.mode === 'refuse') {
        res.statusCode = 401;
        res.end('{"result":"error","msg":"Zulip server auth failure","code":"INVALID_ZULIP_SERVER"}');
      } else if (fake.mode === 'unknown_device') {
        res.statusCode = 400;
        res.end('{"result":"error","msg":"Device not recognized by the push bouncer","code":"INVALID_REMOTE_PUSH_DEVICE_TOKEN"}');
      } else res.end('{"result":"success","msg":""}');
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
}
