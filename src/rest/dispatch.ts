// Method dispatch for /api/v1 (behaviour.md 1.2 and 2) and its /json twin (signin.md section 4): one
// routing table, two doors that differ only in how they authenticate. Route match, OPTIONS and 405
// before any authentication, then the door's credentials (Basic at /api/v1; the session cookie and,
// for methods that change state, its CSRF token at /json), then the handler. Every failure becomes
// the JSON envelope.
import type { ServerContext } from '../server-context.js';
import { authenticateRequest, authenticateSession, notLoggedIn, sessionRequired, type Actor } from '../domain/auth/authenticate.js';
import type { Credentials } from '../domain/auth/held-credentials.js';
import type { RateLimitReport } from '../domain/auth/rate-limit.js';
import { DomainError } from '../domain/errors.js';
import { csrfFailure, sessionTokenOf } from '../http/cookies.js';
import { type DatabaseStatus, unavailableResponse } from '../http/database-status.js';
import type { Logger } from '../logging.js';
import { errorResponse, jsonResponse } from './envelope.js';
import { readParams, type PublicRestHandler, type RestHandler } from './request.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface RestRoute {
  /** Matched against the raw (still percent-encoded) path after /api/v1; groups become path params. */
  pattern: RegExp;
  /** In declaration order: it is the order of `allowed_methods`. */
  methods: Partial<Record<Method, RestHandler>>;
  /** Handlers that need no credentials (e.g. server_settings). */
  publicMethods?: Partial<Record<Method, PublicRestHandler>>;
  /** Methods whose handler reads the (multipart) body itself as it streams in; parameters then come from the query. */
  streamsBody?: Method[];
  /** Served at /api/v1 only, never to a browser session at /json (signin.md section 4). */
  apiOnly?: true;
}

export const API_PREFIX = '/api/v1';
export const JSON_PREFIX = '/json';

/** How a door knows its caller: an actor and the credentials it held, or an answer instead (a redirect). */
type Authenticated = { actor: Actor; credentials: Credentials } | Response;

export interface Door {
  prefix: string;
  serves(route: RestRoute): boolean;
  authenticate(request: Request, app: ServerContext, clientAddress: string, rateLimits?: RateLimitReport): Promise<Authenticated>;
}

/** /api/v1: Basic credentials only (never the session cookie). */
export const API_DOOR: Door = {
  prefix: API_PREFIX,
  serves: () => true,
  authenticate: authenticateCaller,
};

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * /json: the session only (its cookie named for the request's scheme); a method that changes state
 * needs the session's own CSRF token in X-CSRFToken (a token planted in the CSRF cookie is not it).
 */
export function sessionDoor(secure: boolean): Door {
  return {
    prefix: JSON_PREFIX,
    serves: (route) => !route.apiOnly,
    async authenticate(request, app, clientAddress, rateLimits) {
      const token = sessionTokenOf(request, secure);
      if (!token) throw sessionRequired();
      const session = await authenticateSession(app, token, clientAddress, { rateLimits });
      if (!SAFE_METHODS.has(request.method)) {
        const reason = csrfFailure(request.headers.get('x-csrftoken'), token);
        if (reason) throw csrfError(reason);
      }
      return { actor: session.actor, credentials: { sessionToken: token, sessionId: session.sessionId, apiKeyHash: session.apiKeyHash } };
    },
  };
}

function csrfError(reason: string): DomainError {
  return new DomainError(`CSRF error: ${reason}`, { code: 'CSRF_FAILED', status: 403, data: { reason } });
}

/** The 403 of a /json request refused for CSRF (the origin check's too). */
export const csrfFailedResponse = (reason: string): Response => errorResponse(csrfError(reason));

function declaredMethods(route: RestRoute): string[] {
  const methods = Object.keys({ ...route.publicMethods, ...route.methods });
  return methods.includes('GET') ? [...methods, 'HEAD'] : methods;
}

function matchRoute(routes: RestRoute[], path: string) {
  for (const route of routes) {
    const match = route.pattern.exec(path);
    if (match) {
      const pathParams: Record<string, string> = {};
      for (const [name, value] of Object.entries(match.groups ?? {})) pathParams[name] = decodeURIComponent(value);
      return { route, pathParams };
    }
  }
  return undefined;
}

const prefixOf = (pathname: string) => [API_PREFIX, JSON_PREFIX].find((prefix) => pathname.startsWith(`${prefix}/`));

/**
 * Whether the request goes to a handler that streams its body (exempt from the global body limit), at
 * either door. `pathname` is hono's (percent-decoded where that changes nothing reserved, as hono
 * routes): it can differ from the raw path dispatch matches only by encoded plain characters, and such
 * a request is answered 404 by dispatch without its body being read.
 */
export function streamsBody(routes: RestRoute[], method: string, pathname: string): boolean {
  const prefix = prefixOf(pathname);
  if (!prefix) return false;
  const route = routes.find((r) => r.pattern.test(pathname.slice(prefix.length)));
  return route?.streamsBody?.includes(method as Method) ?? false;
}

export interface DispatchOptions {
  /** The peer's address, for the failed-login limit. */
  clientAddress: string;
  /** The request's logger. */
  log: Logger;
  /** Told about failures; an unreachable database answers 503. */
  database?: DatabaseStatus;
  /** Default: /api/v1's. */
  door?: Door;
  /** Where the limiters that ran are noted (the answer's X-RateLimit-* headers). */
  rateLimits?: RateLimitReport;
}

export async function dispatchRest(routes: RestRoute[], request: Request, app: ServerContext, options: DispatchOptions): Promise<Response> {
  const door = options.door ?? API_DOOR;
  const { log } = options;
  try {
    const url = new URL(request.url);
    const matched = matchRoute(routes, url.pathname.slice(door.prefix.length));
    if (!matched || !door.serves(matched.route)) return jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404);
    const scope = { clientAddress: options.clientAddress, log, door, rateLimits: options.rateLimits };
    return await dispatchMethod(matched.route, matched.pathParams, request, url.searchParams, app, scope);
  } catch (error) {
    if (error instanceof DomainError) return errorResponse(error);
    if (error instanceof URIError) return jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404);
    const unavailable = options.database?.noteFailure(error, log);
    if (unavailable) return unavailableResponse(unavailable);
    log.error({ err: error }, 'unexpected error');
    return jsonResponse({ result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' }, 500);
  }
}

/** Who asks, as the door knows it. */
interface RequestScope {
  clientAddress: string;
  log: Logger;
  door: Door;
  rateLimits?: RateLimitReport;
}

async function dispatchMethod(
  route: RestRoute,
  path: Record<string, string>,
  request: Request,
  query: URLSearchParams,
  app: ServerContext,
  { clientAddress, log, door, rateLimits }: RequestScope,
) {
  const method = (request.method === 'HEAD' ? 'GET' : request.method) as Method;
  if (request.method === 'OPTIONS') {
    return new Response(null, { status: 204, headers: { Allow: declaredMethods(route).sort().join(', ') } });
  }
  const publicHandler = route.publicMethods?.[method];
  const handler = route.methods[method];
  if (!publicHandler && !handler) {
    const allowed = declaredMethods(route);
    return jsonResponse({ result: 'error', msg: 'Method Not Allowed', allowed_methods: allowed }, 405, { Allow: allowed.join(', ') });
  }
  const params = route.streamsBody?.includes(method) ? new Map(query) : await readParams(request, query);
  if (publicHandler) return publicHandler({ params, path, app, request, log, clientAddress, rateLimits });
  const caller = await door.authenticate(request, app, clientAddress, rateLimits);
  if (caller instanceof Response) return caller;
  return handler!({ ...caller, params, path, app, request, log });
}

async function authenticateCaller(
  request: Request,
  app: ServerContext,
  clientAddress: string,
  rateLimits?: RateLimitReport,
): Promise<Authenticated> {
  const header = request.headers.get('authorization');
  if (header) return { actor: await authenticateRequest(app, header, clientAddress, rateLimits), credentials: { authorization: header } };
  if (prefersHtml(request.headers.get('accept') ?? '')) {
    const { pathname } = new URL(request.url);
    return new Response(null, { status: 302, headers: { Location: `/login/?next=${encodeURIComponent(pathname)}` } });
  }
  throw notLoggedIn();
}

/** A browser: text/html ranks above application/json in Accept. */
function prefersHtml(accept: string): boolean {
  const quality = (type: string) => {
    for (const part of accept.split(',')) {
      const [name, ...rest] = part.trim().split(';');
      if (name?.trim() === type) {
        const q = rest.find((p) => p.trim().startsWith('q='));
        return q ? Number(q.trim().slice(2)) : 1;
      }
    }
    return 0;
  };
  return quality('text/html') > quality('application/json');
}
