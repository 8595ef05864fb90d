/**
 * How an uploaded file is served safely: which types a browser may show inline
 * (Zulip's `INLINE_MIME_TYPES`), everything else as a download of opaque bytes, never
 * sniffed, never scripted; and the single byte range of a `Range` header.
 */
import type { AttachmentRecord } from '../../actors/areas/attachments.js';

/** Passive types shown inline, as Zulip allows; anything else (HTML, SVG, scripts) is a download. */
export const INLINE_TYPES = new Set([
  'application/pdf', 'audio/aac', 'audio/flac', 'audio/mp4', 'audio/mpeg', 'audio/ogg', 'audio/wav', 'audio/webm',
  'image/apng', 'image/avif', 'image/gif', 'image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/ogg', 'video/webm',
]);

/** Zulip's `patch_disposition_header`: plain ASCII names quoted, others as RFC 8187 `filename*`. */
export function contentDisposition(name: string, inline: boolean): string {
  const kind = inline ? 'inline' : 'attachment';
  if (/^[\x20-\x7e]*$/.test(name)) return `${kind}; filename="${name.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return `${kind}; filename*=utf-8''${encodeURIComponent(name)}`;
}

/** The headers of a file response. */
export function fileHeaders(a: AttachmentRecord): Array<[string, string]> {
  const type = a.content_type.split(';')[0].trim().toLowerCase();
  const inline = INLINE_TYPES.has(type);
  return [
    ['Content-Type', inline ? type : 'application/octet-stream'],
    ['Content-Disposition', contentDisposition(a.name, inline)],
    ['X-Content-Type-Options', 'nosniff'],
    ['Content-Security-Policy', "default-src 'none'; sandbox"],
    ['Cache-Control', 'private, immutable'],
    ['Accept-Ranges', 'bytes'],
  ];
}

/**
 * The one range of `bytes=a-b`, `bytes=a-` or `bytes=-n` (inclusive ends), clipped to
 * the file; undefined for no header, a malformed one or several ranges (the whole file
 * is sent, as RFC 9110 allows); `unsatisfiable` for a range past the end.
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
