// The reference's file-name and content-type rules (uploads.md 1.3, 2.4): the display name kept as
// uploaded, the sanitized name used in storage paths, and which types a browser may show inline.
import { lookup } from 'mime-types';

/**
 * Python's urllib.parse.unquote: %XX sequences decoded as UTF-8 (invalid bytes become U+FFFD),
 * anything else, including a lone `%`, left as it is.
 */
export function unquote(value: string): string {
  return value.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

/**
 * Python's urllib.parse.quote with its default safe characters (`/` and the unreserved ones):
 * encodeURIComponent leaves `!'()*` alone where Python encodes them.
 */
export function quote(value: string): string {
  return encodeURIComponent(value)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}

/**
 * sanitize_name (non-strict): NFKC, keep Unicode letters, digits, `_`, white space, `.` and `-`,
 * trim, collapse runs of dashes and white space into one dash; names left empty, `.` or `..`
 * become `uploaded-file`. Case is kept.
 */
export function sanitizeName(value: string): string {
  const kept = value
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}_\s.-]/gu, '')
    .trim()
    .replace(/[-\s]+/gu, '-');
  return kept === '' || kept === '.' || kept === '..' ? 'uploaded-file' : kept;
}

/**
 * `name` cut to at most `maxBytes` of UTF-8 (whole characters), keeping a short extension: file
 * systems refuse longer names (the reference has no limit; its storage would fail the same way).
 */
export function fitName(name: string, maxBytes = 200): string {
  if (Buffer.byteLength(name) <= maxBytes) return name;
  const extension = /\.[^.]{1,16}$/.exec(name)?.[0] ?? '';
  const base = Array.from(name.slice(0, name.length - extension.length));
  while (base.length > 0 && Buffer.byteLength(base.join('') + extension) > maxBytes) base.pop();
  return base.join('') + extension;
}

/**
 * What a multipart parser keeps of a client's file name: the text after the last `/` or `\`,
 * without control characters. Null when nothing is left, or only `.` or `..` (not a file then).
 */
export function clientBasename(raw: string): string | null {
  // eslint-disable-next-line no-control-regex
  const name = (raw.split(/[/\\]/).pop() ?? '').replace(/[\u0000-\u001f\u007f]/g, '');
  return name === '' || name === '.' || name === '..' ? null : name;
}

/** The declared type; when none (or the generic octet-stream), the one the name suggests. */
export function contentTypeFor(name: string, declared: string | undefined): string {
  const given = declared?.trim() ?? '';
  if (given !== '' && bareContentType(given) !== 'application/octet-stream') return given;
  return lookup(name) || 'application/octet-stream';
}

export const bareContentType = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/** Types served inline (`INLINE_MIME_TYPES`); every other type is served as an attachment. */
export const INLINE_MIME_TYPES: ReadonlySet<string> = new Set([
  'audio/aac',
  'audio/flac',
  'audio/mp4',
  'audio/mpeg',
  'audio/wav',
  'audio/webm',
  'application/pdf',
  'image/apng',
  'image/avif',
  'image/gif',
  'image/jpeg',
  'image/png',
  'image/webp',
  'text/plain',
  'video/mp4',
  'video/webm',
]);

export const isInlineType = (contentType: string) => INLINE_MIME_TYPES.has(bareContentType(contentType));

/** Django's content_disposition_header: quoted ASCII names, RFC 5987 `filename*` for the others. */
export function contentDisposition(asAttachment: boolean, fileName: string): string {
  const disposition = asAttachment ? 'attachment' : 'inline';
  // Control characters cannot travel in a header (imported names may hold them).
  // eslint-disable-next-line no-control-regex
  fileName = fileName.replace(/[\u0000-\u001f\u007f]/g, '');
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(fileName)) return `${disposition}; filename="${fileName.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return `${disposition}; filename*=utf-8''${quote(fileName)}`;
}
