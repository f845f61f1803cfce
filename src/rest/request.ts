// What a REST handler receives: the authenticated actor, the request's parameters (form body over
// query string, last value wins) and the path parameters of its route.
import type { Actor } from '../domain/auth/authenticate.js';
import type { Credentials } from '../domain/auth/held-credentials.js';
import type { RateLimitReport } from '../domain/auth/rate-limit.js';
import type { ServerContext } from '../server-context.js';
import type { Logger } from '../logging.js';

export interface RestRequest {
  actor: Actor;
  /** What the actor authenticated with (a waiting request checks them again as they change). */
  credentials: Credentials;
  params: Map<string, string>;
  path: Record<string, string>;
  app: ServerContext;
  /** The raw request; its body is unread only on routes that stream it (`streamsBody`). */
  request: Request;
  /** The request's logger: its id on every line. */
  log: Logger;
}

export type RestHandler = (request: RestRequest) => Promise<Response>;
/**
 * A handler that needs no credentials; it sees the client's address (the limits per address count
 * it) and notes the limiters it runs in `rateLimits` (the answer's X-RateLimit-* headers).
 */
export type PublicRestHandler = (
  request: Omit<RestRequest, 'actor' | 'credentials'> & { clientAddress: string; rateLimits?: RateLimitReport },
) => Promise<Response>;

/** Form fields (urlencoded or multipart; file parts are not parameters) after the query's parameters. */
export async function readParams(request: Request, query: URLSearchParams): Promise<Map<string, string>> {
  const params = new Map<string, string>();
  const body = await readForm(request);
  for (const [name, value] of query) params.set(name, value);
  for (const [name, value] of body) params.set(name, value);
  return params;
}

async function readForm(request: Request): Promise<[string, string][]> {
  const type = request.headers.get('content-type') ?? '';
  try {
    // What formData() does for this type, without building a FormData from a fetch body stream.
    if (/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) return [...new URLSearchParams(await request.text())];
    if (!/^multipart\/form-data/i.test(type)) return [];
    const form = await request.formData();
    return [...form.entries()].filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  } catch {
    return [];
  }
}
