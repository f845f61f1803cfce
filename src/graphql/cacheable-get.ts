// GET answers of /graphql (queries only: Yoga refuses mutations over GET), most usefully those naming a
// persisted document by hash. They depend on the caller's Authorization (and on Accept, which picks
// the media type) or its session cookie, so shared caches must not keep them; the caller's browser may, and revalidates each
// use with the ETag (304 Not Modified when the answer is the same, which saves its transfer).
import { createHash } from 'node:crypto';

export const CACHEABLE = 'private, no-cache';
const VARY = 'Authorization, Cookie, Accept';

const etagOf = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

/** RFC 9110's weak comparison: `*`, or one of the listed tags with or without W/. */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/** Subscriptions' streams (Server-Sent Events) are never finished answers to keep. */
const isStream = (response: Response) => /^(text\/event-stream|multipart\/mixed)/i.test(response.headers.get('content-type') ?? '');

export async function privatelyCacheable(request: Request, response: Response): Promise<Response> {
  if (isStream(response)) return response;
  const headers = new Headers(response.headers);
  headers.append('Vary', VARY);
  if (response.status !== 200) {
    headers.set('Cache-Control', 'no-store');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
  const body = await response.text();
  const etag = etagOf(body);
  headers.set('Cache-Control', CACHEABLE);
  headers.set('ETag', etag);
  if (!matches(request.headers.get('if-none-match'), etag)) return new Response(body, { status: 200, headers });
  headers.delete('Content-Length');
  headers.delete('Content-Type');
  return new Response(null, { status: 304, headers });
}
