/**
 * A minimal HTTP/1.1 client on raw sockets, built for load: one keep-alive connection
 * per `Connection`, one request in flight on each (no pipelining), responses framed by
 * Content-Length or chunked encoding, and completion stamped on the monotonic clock
 * the moment the last byte is parsed, before any promise machinery runs.
 *
 * Large pools spread their connections over several loopback source addresses,
 * because one source address has only ~28k ephemeral ports towards one server port.
 */
import { connect, type Socket } from 'node:net';
import { nowMs } from './stats.js';

/** Where requests go: the socket address and the Host header to send. */
export interface Endpoint {
  host: string;
  port: number;
  hostHeader: string;
}

/** A complete response, with the times it was sent and fully received. */
export interface HttpResponse {
  status: number;
  body: string;
  sentAt: number;
  doneAt: number;
}

interface Head {
  status: number;
  /** Content-Length, or -1 when absent. */
  length: number;
  chunked: boolean;
}

interface Pending {
  sentAt: number;
  resolve(res: HttpResponse): void;
  reject(err: Error): void;
}

const EMPTY = Buffer.alloc(0);
/** Every socket reads into this one buffer; a read is fully handled before the next. */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

export class Connection {
  private buf: Buffer = EMPTY;
  private head: Head | null = null;
  private pending: Pending | null = null;
  private closedWith: Error | null = null;

  private constructor(private readonly socket: Socket, readonly endpoint: Endpoint) {
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed by the server')));
  }

  /** Opens a keep-alive connection, optionally from a given local address. */
  static open(endpoint: Endpoint, localAddress?: string, timeoutMs = 10000): Promise<Connection> {
    return new Promise((resolve, reject) => {
      let conn: Connection | undefined;
      // `onread` hands bytes over without the stream machinery, halving the client's cost per response.
      const onread = { buffer: READ_BUFFER, callback: (n: number, buf: Uint8Array): boolean => (conn?.onData(buf as Buffer, n), true) };
      const socket = connect({ host: endpoint.host, port: endpoint.port, localAddress, noDelay: true, keepAlive: true, onread });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect to ${endpoint.host}:${endpoint.port} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        conn = new Connection(socket, endpoint);
        resolve(conn);
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** True while a request waits for its response. */
  get busy(): boolean {
    return this.pending !== null;
  }

  /** Sends a fully encoded request and resolves with its response. */
  send(raw: string | Buffer): Promise<HttpResponse> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.pending) return Promise.reject(new Error('a request is already in flight on this connection'));
    return new Promise((resolve, reject) => {
      this.pending = { sentAt: nowMs(), resolve, reject };
      this.socket.write(raw);
    });
  }

  /** Encodes and sends one request. */
  request(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<HttpResponse> {
    return this.send(encodeRequest(this.endpoint, method, path, headers, body));
  }

  /** Closes with a reset, so that no TIME_WAIT socket holds a local port afterwards. */
  close(): void {
    this.fail(new Error('connection closed by the client'));
    try {
      this.socket.resetAndDestroy();
    } catch {
      this.socket.destroy();
    }
  }

  private fail(err: Error): void {
    this.closedWith ??= err;
    const p = this.pending;
    this.pending = null;
    p?.reject(err);
  }

  /** Takes `n` bytes from the shared read buffer; keeps a copy only of what stays unparsed. */
  private onData(shared: Buffer, n: number): void {
    const chunk = shared.subarray(0, n);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length > 0 && this.parseOne());
    if (this.buf.length > 0 && this.buf.buffer === shared.buffer) this.buf = Buffer.from(this.buf);
  }

  /** Parses one response from the buffer if it is complete; returns whether it did. */
  private parseOne(): boolean {
    if (!this.head) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return false;
      this.head = parseHead(this.buf.toString('latin1', 0, end));
      this.buf = this.buf.subarray(end + 4);
    }
    let body: Buffer;
    if (this.head.chunked) {
      const r = dechunk(this.buf);
      if (!r) return false;
      body = r.body;
      this.buf = this.buf.subarray(r.consumed);
    } else {
      const length = Math.max(0, this.head.length);
      if (this.buf.length < length) return false;
      body = this.buf.subarray(0, length);
      this.buf = length === this.buf.length ? EMPTY : this.buf.subarray(length);
    }
    const doneAt = nowMs();
    const p = this.pending;
    const status = this.head.status;
    this.head = null;
    this.pending = null;
    if (!p) {
      this.fail(new Error(`unsolicited ${status} response`));
      return false;
    }
    p.resolve({ status, body: body.toString('utf8'), sentAt: p.sentAt, doneAt });
    return true;
  }
}

/** Encodes an HTTP/1.1 request with a Content-Length when it has a body. */
export function encodeRequest(endpoint: Endpoint, method: string, path: string, headers: Record<string, string>, body?: string): string {
  let out = `${method} ${path} HTTP/1.1\r\nHost: ${endpoint.hostHeader}\r\n`;
  for (const [k, v] of Object.entries(headers)) out += `${k}: ${v}\r\n`;
  if (body !== undefined) out += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  return out + '\r\n' + (body ?? '');
}

function parseHead(text: string): Head {
  const lines = text.split('\r\n');
  const status = Number(lines[0].slice(9, 12));
  if (!lines[0].startsWith('HTTP/1.') || !Number.isInteger(status)) throw new Error(`bad status line: ${lines[0]}`);
  let length = -1;
  let chunked = false;
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(':');
    const name = lines[i].slice(0, colon).trim().toLowerCase();
    const value = lines[i].slice(colon + 1).trim();
    if (name === 'content-length') length = Number(value);
    else if (name === 'transfer-encoding' && value.toLowerCase().includes('chunked')) chunked = true;
  }
  return { status, length, chunked };
}

/** Decodes a complete chunked body, or returns null if more bytes are needed. */
function dechunk(buf: Buffer): { body: Buffer; consumed: number } | null {
  const parts: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos);
    if (eol < 0) return null;
    const size = parseInt(buf.toString('latin1', pos, eol), 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size');
    if (size === 0) {
      // Optional trailers end with an empty line.
      const end = buf.indexOf('\r\n\r\n', eol);
      if (buf.length >= eol + 4 && buf[eol + 2] === 13 && buf[eol + 3] === 10) return { body: Buffer.concat(parts), consumed: eol + 4 };
      if (end < 0) return null;
      return { body: Buffer.concat(parts), consumed: end + 4 };
    }
    if (buf.length < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
}

/** Connections per loopback source address before the pool spreads to another one. */
const PER_SOURCE_ADDRESS = 8000;

/**
 * Source addresses for a pool of `count` connections to `host`: none (the kernel
 * chooses) for small pools or non-loopback hosts, else 127.0.0.2, 127.0.0.3, ...
 */
export function sourceAddresses(host: string, count: number, configured?: string[]): string[] | undefined {
  if (configured && configured.length > 0) return configured;
  if (!/^127\./.test(host) || count <= PER_SOURCE_ADDRESS) return undefined;
  const k = Math.ceil(count / PER_SOURCE_ADDRESS);
  return Array.from({ length: k }, (_, i) => `127.0.0.${i + 2}`);
}

/** Options for `openPool`. */
export interface PoolOptions {
  /** Connects in flight at once, to stay under the server's accept backlog. */
  concurrency?: number;
  /** Explicit source addresses; otherwise `sourceAddresses` decides. */
  sources?: string[];
  /** Gives up when the whole pool is not open by then. */
  timeoutMs?: number;
  /**
   * Called with each connection as soon as it is open, so that the caller can put it to
   * work before the rest of the pool is open (uWS closes a connection that sends no
   * request for 10 s, and a large pool takes longer than that to open).
   */
  onOpen?: (conn: Connection, index: number) => void;
}

/** Opens `count` connections, spread over source addresses when large. */
export async function openPool(endpoint: Endpoint, count: number, opts: PoolOptions = {}): Promise<Connection[]> {
  const sources = sourceAddresses(endpoint.host, count, opts.sources);
  const conns: Connection[] = new Array(count);
  const deadline = Date.now() + (opts.timeoutMs ?? 60000 + count * 5);
  let next = 0;
  let failure: Error | null = null;
  const worker = async (): Promise<void> => {
    while (next < count && !failure) {
      if (Date.now() > deadline) throw new Error(`opening ${count} connections took too long (${next} started)`);
      const i = next++;
      conns[i] = await Connection.open(endpoint, sources ? sources[i % sources.length] : undefined);
      opts.onOpen?.(conns[i], i);
    }
  };
  const workers = Array.from({ length: Math.min(count, opts.concurrency ?? 128) }, () =>
    worker().catch((err: Error) => {
      failure ??= err;
    }),
  );
  await Promise.all(workers);
  if (failure) {
    closePool(conns);
    throw failure;
  }
  return conns;
}

/** Closes every connection of a pool. */
export function closePool(conns: Array<Connection | undefined>): void {
  for (const c of conns) c?.close();
}
