/**
 * Request parameter decoding, as Django does it for Zulip: form fields from an
 * `application/x-www-form-urlencoded` or `multipart/form-data` body, then the query
 * string. A name found in the body wins over the same name in the query.
 *
 * Text must be UTF-8, however it is sent: invalid UTF-8 is a 400, whether it comes
 * percent-encoded (`%FF`) or as raw bytes in a form body, a multipart text field or
 * part header, or the query string. Nothing is silently turned into U+FFFD.
 *
 * The url-encoded decoder is Parley's own: it is on the hot path (`POST /messages`), and
 * decodes a body from its bytes (`decodeUrlEncodedBody`).
 * Multipart bodies are read by busboy, whole decoding asynchronous (`decodeParams`
 * then answers with a promise), with Django's limits on fields and files.
 */
import busboy from 'busboy';
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';

/** A file part of a multipart body. */
export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

/** The decoded parameters of one request. */
export interface DecodedParams {
  values: Map<string, string>;
  files: UploadedFile[];
}

/** Thrown for a body that cannot be decoded; the dispatcher turns it into a 400. */
export class MalformedBody extends Error {}

/** The message for text that is not UTF-8, whether sent raw or percent-encoded. */
export const INVALID_UTF8 = 'Invalid UTF-8 in request';

/** Decodes `a=1&b=%20x+y` into `into`, later names overwriting earlier ones (a query string, already text). */
export function decodeUrlEncoded(text: string, into: Map<string, string>): void {
  if (text.length === 0) return;
  for (const pair of text.split('&')) {
    if (pair.length === 0) continue;
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
    into.set(decodeComponent(rawName), decodeComponent(rawValue));
  }
}

function decodeComponent(s: string): string {
  // split/join: a global regex replace costs ~15x more on values with many '+' (1 MB: 215 ms).
  const plus = s.includes('+') ? s.split('+').join(' ') : s;
  if (!plus.includes('%')) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    // decodeURIComponent refuses both `%ZZ` and well-formed escapes of invalid UTF-8 (`%FF`).
    throw new MalformedBody(/%(?![0-9A-Fa-f]{2})/.test(plus) ? MALFORMED_ESCAPE : INVALID_UTF8);
  }
}

const MALFORMED_ESCAPE = 'Malformed percent-encoding in request';
const AMP = 0x26;
const EQ = 0x3d;
const PLUS = 0x2b;
const PERCENT = 0x25;

/**
 * Decodes an urlencoded form body, as `decodeUrlEncoded` decodes its text, but from the
 * bytes: each name and value is decoded once, straight into UTF-8 bytes and then into a
 * string, with no intermediate strings and no `decodeURIComponent` (this is the body of
 * every `POST /messages`; on the bench's message it took 5.6 of 83 us per message under
 * the profiler, the string path's split, `+` replacement and decodeURIComponent).
 * Raw bytes must be UTF-8, and so must the bytes an escape spells out.
 */
export function decodeUrlEncodedBody(body: Buffer, into: Map<string, string>): void {
  checkFieldCount(body);
  if (!isUtf8(body)) throw new MalformedBody(INVALID_UTF8);
  const n = body.length;
  let start = 0;
  while (start < n) {
    let end = body.indexOf(AMP, start);
    if (end < 0) end = n;
    if (end > start) {
      let eq = start;
      while (eq < end && body[eq] !== EQ) eq++;
      into.set(formComponent(body, start, eq), eq < end ? formComponent(body, eq + 1, end) : '');
    }
    start = end + 1;
  }
}

/**
 * Django's `DATA_UPLOAD_MAX_NUMBER_FIELDS`: a form with more fields than this is refused
 * (Django's `TooManyFieldsSent`), whether urlencoded or multipart. Zulip's endpoints take a
 * few parameters each, lists arriving as one JSON-encoded field.
 */
export const MAX_FORM_FIELDS = 1000;

/**
 * Refuses an urlencoded body of more than `MAX_FORM_FIELDS` fields before anything is
 * decoded: it looks for at most that many `&`, so a body of a million tiny fields costs
 * a thousand `indexOf`s, not a million decoded strings. As Django, every `&`-separated
 * piece counts, empty or not.
 */
function checkFieldCount(body: Buffer): void {
  let at = -1;
  for (let seen = 0; seen < MAX_FORM_FIELDS; seen++) {
    at = body.indexOf(AMP, at + 1);
    if (at < 0) return;
  }
  throw new MalformedBody(`Too many fields in a form body (at most ${MAX_FORM_FIELDS})`);
}

/** Where escapes are decoded; grown to the largest component seen (the body ceiling bounds it). */
let scratch = Buffer.allocUnsafe(4096);

/** The value of a hex digit, or -1. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** One urlencoded name or value, bytes `start` to `end` of `body` (already known to be UTF-8). */
function formComponent(body: Buffer, start: number, end: number): string {
  let i = start;
  while (i < end && body[i] !== PLUS && body[i] !== PERCENT) i++;
  if (i === end) return body.toString('utf8', start, end);
  if (scratch.length < end - start) scratch = Buffer.allocUnsafe(Math.max(end - start, scratch.length * 2));
  const out = scratch;
  let o = body.copy(out, 0, start, i);
  let escaped = false;
  for (; i < end; i++) {
    const c = body[i];
    if (c === PLUS) out[o++] = 0x20;
    else if (c !== PERCENT) out[o++] = c;
    else {
      const hi = i + 2 < end ? hexDigit(body[i + 1]) : -1;
      const lo = hi < 0 ? -1 : hexDigit(body[i + 2]);
      if (lo < 0) throw new MalformedBody(MALFORMED_ESCAPE);
      out[o++] = (hi << 4) | lo;
      escaped = true;
      i += 2;
    }
  }
  // An escape may spell bytes that are not UTF-8 (`%FF`): refused, as decodeURIComponent refuses them.
  if (escaped && !isUtf8(out.subarray(0, o))) throw new MalformedBody(INVALID_UTF8);
  return out.toString('utf8', 0, o);
}

/** Django's defaults (`DATA_UPLOAD_MAX_NUMBER_FIELDS`, `DATA_UPLOAD_MAX_NUMBER_FILES`): more parts is a 400. */
export const MULTIPART_LIMITS = { fields: MAX_FORM_FIELDS, files: 100 } as const;

/** busboy's words for a body it cannot read, as the client is told them. */
const BUSBOY_ERRORS: Record<string, string> = {
  'Unexpected end of form': 'Unterminated multipart body',
  'Malformed part header': 'Malformed multipart part headers',
};

/**
 * Refuses text busboy decoded from invalid UTF-8. busboy decodes names, filenames and
 * values as UTF-8 (or a part's declared charset; parameters of part headers only with
 * `defParamCharset: 'utf8'`) with U+FFFD for each invalid byte, so a U+FFFD is refused
 * wherever it stands, as in the query string: a client that means one sends it in an
 * urlencoded body.
 */
export function busboyText(text: string): string {
  if (text.includes('\uFFFD')) throw new MalformedBody(INVALID_UTF8);
  return text;
}

/**
 * Decodes a `multipart/form-data` body with busboy, as its chunks come: text fields
 * into `values`, file parts into `files`. Refuses, with a `MalformedBody`: a missing
 * boundary, a part without a name, invalid UTF-8, an unterminated body, and more
 * fields or files than `MULTIPART_LIMITS`.
 */
export function decodeMultipart(contentType: string, chunks: Iterable<Buffer>, values: Map<string, string>, files: UploadedFile[]): Promise<void> {
  const { fields, files: maxFiles } = MULTIPART_LIMITS;
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': contentType }, defParamCharset: 'utf8', limits: { fields, files: maxFiles, fieldSize: Infinity } });
  } catch {
    return Promise.reject(new MalformedBody('Invalid multipart boundary'));
  }
  return new Promise((resolve, reject) => {
    let failure: MalformedBody | undefined;
    const fail = (err: unknown): void => {
      if (failure) return;
      failure = err instanceof MalformedBody ? err : new MalformedBody(BUSBOY_ERRORS[(err as Error)?.message] ?? 'Malformed multipart body');
      parser.destroy();
      reject(failure);
    };
    /** busboy calls its listeners inside `write`: what they throw fails the body, not the writer. */
    const guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A): void => {
      try {
        fn(...args);
      } catch (err) {
        fail(err);
      }
    };
    const named = (name: string | undefined): string => {
      if (name === undefined) throw new MalformedBody('Multipart part without a name');
      return busboyText(name);
    };
    parser.on('field', guard((name: string | undefined, value: string) => values.set(named(name), busboyText(value))));
    parser.on('file', (name: string | undefined, stream: Readable, info: busboy.FileInfo) => {
      // busboy destroys an unfinished file's stream with an error when the body fails.
      stream.on('error', fail);
      guard(() => {
        const field = named(name);
        const filename = busboyText(info.filename ?? '');
        const data: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => data.push(chunk));
        stream.on('end', () => files.push({ field, filename, contentType: info.mimeType, data: Buffer.concat(data) }));
      })();
    });
    parser.on('fieldsLimit', () => fail(new MalformedBody(`Too many fields in a multipart body (at most ${fields})`)));
    parser.on('filesLimit', () => fail(new MalformedBody(`Too many files in a multipart body (at most ${maxFiles})`)));
    parser.on('error', fail);
    parser.on('close', () => {
      if (!failure) resolve();
    });
    for (const chunk of chunks) {
      if (failure) return;
      parser.write(chunk);
    }
    parser.end();
  });
}

/**
 * Decodes every parameter of a request. The query string is read first and the body
 * second, so that a body field replaces a query field of the same name.
 */
export function decodeParams(contentType: string | undefined, body: Buffer, query: string): DecodedParams | Promise<DecodedParams> {
  const values = new Map<string, string>();
  const files: UploadedFile[] = [];
  // The transport hands over the query as a string, already decoded from UTF-8 with
  // U+FFFD for each invalid byte. A URL is ASCII (RFC 3986), so a raw U+FFFD in it was
  // either invalid bytes or an unencoded character: both are refused, as `%FF` is.
  if (query.includes('\uFFFD')) throw new MalformedBody(INVALID_UTF8);
  decodeUrlEncoded(query, values);
  if (body.length === 0) return { values, files };
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'multipart/form-data') {
    return decodeMultipart(contentType!, [body], values, files).then(() => ({ values, files }));
  }
  if (type === 'application/x-www-form-urlencoded' || type === '') {
    decodeUrlEncodedBody(body, values);
  } else {
    throw new MalformedBody(`Unsupported content type: ${type}`);
  }
  return { values, files };
}
