/**
 * Request parameter decoding, as Django does it for Zulip: form fields from an
 * `application/x-www-form-urlencoded` or `multipart/form-data` body, then the query
 * string. A name found in the body wins over the same name in the query.
 *
 * Text must be UTF-8, however it is sent: invalid UTF-8 is a 400, whether it comes
 * percent-encoded (`%FF`) or as raw bytes in a form body, a multipart text field or
 * part header, or the query string. Nothing is silently turned into U+FFFD.
 */
import { isUtf8 } from 'node:buffer';

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

/** Decodes `a=1&b=%20x+y` into `into`, later names overwriting earlier ones. */
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
    throw new MalformedBody(/%(?![0-9A-Fa-f]{2})/.test(plus) ? 'Malformed percent-encoding in request' : INVALID_UTF8);
  }
}

/** Decodes UTF-8 text, refusing invalid bytes instead of replacing them with U+FFFD. */
function utf8(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new MalformedBody(INVALID_UTF8);
  return bytes.toString('utf8');
}

/** Reads one parameter of a header value such as `multipart/form-data; boundary="x"`. */
export function headerParam(value: string, name: string): string | undefined {
  for (const part of value.split(';').slice(1)) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim().toLowerCase() !== name) continue;
    let v = part.slice(eq + 1).trim();
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    return v;
  }
  return undefined;
}

/** Decodes a `multipart/form-data` body: text fields into `values`, file parts into `files`. */
export function decodeMultipart(body: Buffer, boundary: string, values: Map<string, string>, files: UploadedFile[]): void {
  if (boundary.length === 0 || boundary.length > 200) throw new MalformedBody('Invalid multipart boundary');
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new MalformedBody('Malformed multipart body');
  for (;;) {
    pos += delimiter.length;
    // `--` after a delimiter closes the body.
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return;
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    else throw new MalformedBody('Malformed multipart body');
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw new MalformedBody('Malformed multipart part headers');
    const headers = utf8(body.subarray(pos, headerEnd)).split('\r\n');
    const next = body.indexOf(delimiter, headerEnd + 4);
    if (next < 0) throw new MalformedBody('Unterminated multipart body');
    // The part's data ends before the CRLF that precedes the next delimiter.
    const data = body.subarray(headerEnd + 4, next - 2);
    let disposition = '';
    let contentType = 'application/octet-stream';
    for (const line of headers) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      if (key === 'content-disposition') disposition = line.slice(colon + 1).trim();
      else if (key === 'content-type') contentType = line.slice(colon + 1).trim();
    }
    const field = headerParam(disposition, 'name');
    if (field === undefined) throw new MalformedBody('Multipart part without a name');
    const filename = headerParam(disposition, 'filename');
    if (filename !== undefined) files.push({ field, filename, contentType, data: Buffer.from(data) });
    else values.set(field, utf8(data));
    pos = next;
  }
}

/**
 * Decodes every parameter of a request. The query string is read first and the body
 * second, so that a body field replaces a query field of the same name.
 */
export function decodeParams(contentType: string | undefined, body: Buffer, query: string): DecodedParams {
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
    decodeMultipart(body, headerParam(contentType ?? '', 'boundary') ?? '', values, files);
  } else if (type === 'application/x-www-form-urlencoded' || type === '') {
    decodeUrlEncoded(utf8(body), values);
  } else {
    throw new MalformedBody(`Unsupported content type: ${type}`);
  }
  return { values, files };
}
