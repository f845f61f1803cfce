// Serving stored files (uploads.md section 2): /user_uploads/<path_id>, its /download/ variant,
// temporary URLs, and custom emoji images under /user_avatars/. Access is decided by the domain;
// this module turns the decision into the reference's statuses, bodies and headers.
import { Readable } from 'node:stream';
import type { Context, Hono } from 'hono';
import { clientAddress } from './client-address.js';
import Negotiator from 'negotiator';
import rangeParser from 'range-parser';
import type { AppContext } from '../app-context.js';
import { authenticateApiKey, authenticateRequest, type Actor } from '../domain/auth/authenticate.js';
import type { RateLimitReport } from '../domain/auth/rate-limit.js';
import { DomainError } from '../domain/errors.js';
import { accessFile, type ServableFile } from '../domain/uploads/file-access.js';
import { contentDisposition, contentTypeFor, isInlineType } from '../domain/uploads/file-names.js';
import { avatarKey, fileKey } from '../domain/uploads/paths.js';
import { resolveTemporaryUrl } from '../domain/uploads/temporary-urls.js';
import { isSafeKey } from '../storage/storage.js';
import { errorResponse } from '../rest/envelope.js';
import { lookup } from 'mime-types';

/** The reference serves static PNGs for image requests that fail; a transparent pixel stands in. */
const ERROR_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADUlEQVQImWNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==',
  'base64',
);

/** Django's request.get_preferred_type(["text/html", "image/png"]) == "image/png" (negotiator ranks Accept the same way). */
export function prefersImage(accept: string | null): boolean {
  return new Negotiator({ headers: { accept: accept || '*/*' } }).mediaType(['text/html', 'image/png']) === 'image/png';
}

function failure(status: number, request: Request, html: string): Response {
  const headers = { Vary: 'Accept' };
  if (prefersImage(request.headers.get('accept')))
    return new Response(ERROR_PNG, { status, headers: { ...headers, 'Content-Type': 'image/png' } });
  return new Response(html, { status, headers: { ...headers, 'Content-Type': 'text/html; charset=utf-8' } });
}

export const fileMissing = (request: Request) => failure(404, request, '<p>This file does not exist or has been deleted.</p>');

/** The answer for a file the viewer may not read: 403, or for spectators the login page. */
export function fileForbidden(request: Request, viewer: Actor | null): Response {
  if (!viewer && !prefersImage(request.headers.get('accept'))) {
    const { pathname, search } = new URL(request.url);
    return new Response(null, { status: 302, headers: { Location: `/login/?next=${encodeURIComponent(pathname + search)}` } });
  }
  return failure(403, request, '<p>You are not authorized to view this file.</p>');
}

/** Basic auth, or the API key alone in `?api_key=`; no credentials: a spectator (null). */
async function viewerOf(app: AppContext, request: Request, address: string, rateLimits: RateLimitReport): Promise<Actor | null> {
  const header = request.headers.get('authorization');
  if (header) return authenticateRequest(app, header, address, rateLimits);
  const apiKey = new URL(request.url).searchParams.get('api_key');
  if (apiKey !== null) return authenticateApiKey(app, apiKey);
  return null;
}

interface ServeOptions {
  contentType: string;
  contentDisposition?: string;
  cacheControl: string;
}

/** The stored bytes with range support (a single range; several ranges get the whole file). */
async function serveStored(
  app: AppContext,
  request: Request,
  key: string,
  options: ServeOptions,
  missing: () => Response,
): Promise<Response> {
  const info = await app.storage.stat(key);
  if (!info) return missing();
  const headers: Record<string, string> = {
    'Content-Type': options.contentType,
    'Cache-Control': options.cacheControl,
    'Accept-Ranges': 'bytes',
    ...(options.contentDisposition ? { 'Content-Disposition': options.contentDisposition } : {}),
  };
  const rangeHeader = request.headers.get('range');
  const ranges = rangeHeader ? rangeParser(info.size, rangeHeader, { combine: true }) : -2;
  if (ranges === -1) return new Response(null, { status: 416, headers: { ...headers, 'Content-Range': `bytes */${info.size}` } });
  const range = Array.isArray(ranges) && ranges.length === 1 && ranges.type === 'bytes' ? ranges[0]! : undefined;
  const body = await app.storage.read(key, range);
  if (!body) return missing();
  const stream = Readable.toWeb(body) as ReadableStream;
  if (range) {
    return new Response(stream, {
      status: 206,
      headers: {
        ...headers,
        'Content-Range': `bytes ${range.start}-${range.end}/${info.size}`,
        'Content-Length': String(range.end - range.start + 1),
      },
    });
  }
  return new Response(stream, { status: 200, headers: { ...headers, 'Content-Length': String(info.size) } });
}

/** The reference's answer when the row exists but the stored bytes do not. */
const storedFileMissing = () =>
  new Response('<p>File not found</p>', { status: 404, headers: { 'Content-Type': 'text/html; charset=utf-8' } });

/** An uploaded file as the reference's serve_local answers it. */
export function serveUpload(app: AppContext, request: Request, file: ServableFile, forceDownload: boolean): Promise<Response> {
  const contentType = file.contentType ?? contentTypeFor(file.name, undefined);
  return serveStored(
    app,
    request,
    fileKey(file.pathId),
    {
      contentType,
      contentDisposition: contentDisposition(forceDownload || !isInlineType(contentType), file.name),
      cacheControl: 'private, immutable',
    },
    storedFileMissing,
  );
}

/** The path after a route prefix, percent-decoded segment by segment; null when it cannot be. */
function decodedPath(request: Request, prefix: string): string | null {
  const raw = new URL(request.url).pathname.slice(prefix.length);
  try {
    return raw.split('/').map(decodeURIComponent).join('/');
  } catch {
    return null;
  }
}

async function withDomainErrors(work: () => Promise<Response>): Promise<Response> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) return errorResponse(error);
    throw error;
  }
}

export function mountFileRoutes(http: Hono, app: AppContext): void {
  http.get('/user_uploads/temporary/:token/:fileName', (c) =>
    withDomainErrors(async () => {
      const file = await resolveTemporaryUrl(app, c.req.param('token'), c.req.param('fileName'));
      return serveUpload(app, c.req.raw, file, false);
    }),
  );
  const serve = (prefix: string, forceDownload: boolean) => (c: Context) =>
    withDomainErrors(async () => {
      const request = c.req.raw;
      const pathId = decodedPath(request, prefix);
      if (pathId === null || !/^[0-9]+\/./.test(pathId)) return fileMissing(request);
      const viewer = await viewerOf(app, request, clientAddress(c), c.get('rateLimits'));
      const access = await accessFile(app, viewer, pathId);
      if (access.kind === 'missing') return fileMissing(request);
      if (access.kind === 'forbidden') return fileForbidden(request, viewer);
      return serveUpload(app, request, access.file, forceDownload);
    });
  http.get('/user_uploads/download/*', serve('/user_uploads/download/', true));
  http.get('/user_uploads/*', serve('/user_uploads/', false));
  // Custom emoji images: public, cached for a year (their names never change).
  http.get('/user_avatars/*', async (c) => {
    const path = decodedPath(c.req.raw, '/user_avatars/');
    if (path === null || !isSafeKey(path)) return storedFileMissing();
    const contentType = lookup(path) || 'application/octet-stream';
    return serveStored(
      app,
      c.req.raw,
      avatarKey(path),
      { contentType, cacheControl: 'max-age=31536000, public, immutable' },
      storedFileMissing,
    );
  });
}
