// Cross-origin rules for both API doors. Browsers may read responses only from the server's own
// origin and the origins in CORS_ALLOWED_ORIGINS (never a reflected arbitrary origin). A browser
// request that changes state (any method but GET, HEAD and OPTIONS) from any other origin is refused
// before it reaches the API: a form or fetch from another site cannot act for a signed-in user.
// Forms and /json, which act on the browser's session, are stricter (signin.md Decision 7, Django's
// CSRF origin check): a state-changing request must name a trusted origin, in Origin or, when a
// browser sends none, in Referer; a page of the same site (another port of the host) is not trusted.
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { jsonResponse } from '../rest/envelope.js';
import { CSRF_HEADERS } from '../graphql/yoga.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function crossOriginRules(allowedOrigins: string[], serverUrl: () => string): MiddlewareHandler {
  const allowed = new Set(allowedOrigins);
  const allowListed = cors({
    origin: (origin) => (allowed.has(origin) ? origin : null),
    credentials: true,
    allowMethods: ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'],
    allowHeaders: ['Authorization', 'Content-Type', ...CSRF_HEADERS],
    exposeHeaders: ['Retry-After', 'X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
    maxAge: 600,
  });
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (!origin) return next();
    if (allowed.has(origin)) return allowListed(c, next);
    if (isSameOrigin(origin, c.req.url, serverUrl()) || SAFE_METHODS.has(c.req.method)) return next();
    return jsonResponse({ result: 'error', msg: `Cross-origin requests from ${origin} are not allowed`, code: 'BAD_REQUEST' }, 403);
  };
}

const isSameOrigin = (origin: string, requestUrl: string, serverUrl: string) =>
  origin === new URL(requestUrl).origin || origin === new URL(serverUrl).origin;

/** Django's reasons (django.middleware.csrf). */
export const ORIGIN_REASONS = {
  badOrigin: (origin: string) => `Origin checking failed - ${origin} does not match any trusted origins.`,
  noReferer: 'Referer checking failed - no Referer.',
  malformedReferer: 'Referer checking failed - Referer is malformed.',
  badReferer: (referer: string) => `Referer checking failed - ${referer} does not match any trusted origins.`,
} as const;

function refererOrigin(referer: string): string | undefined {
  try {
    const url = new URL(referer);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why a state-changing request that acts on the browser's session is refused, or null: its Origin (or
 * without one, its Referer) must be the server's own or allow-listed. The server's own: SERVER_URL's,
 * or the host the request was sent to with the scheme it arrived over (`secure`: https, as a trusted
 * proxy says), as Django compares it. `Origin: null` (a sandboxed or privacy-restricted page) is no trusted origin.
 */
export function untrustedSourceReason(request: Request, allowed: Set<string>, serverUrl: string, secure: boolean): string | null {
  const ownOrigins = [new URL(serverUrl).origin, `${secure ? 'https' : 'http'}://${new URL(request.url).host}`];
  const trusted = (origin: string) => allowed.has(origin) || ownOrigins.includes(origin);
  const origin = request.headers.get('origin');
  if (origin !== null) return trusted(origin) ? null : ORIGIN_REASONS.badOrigin(origin);
  const referer = request.headers.get('referer');
  if (!referer) return ORIGIN_REASONS.noReferer;
  const source = refererOrigin(referer);
  if (source === undefined) return ORIGIN_REASONS.malformedReferer;
  return trusted(source) ? null : ORIGIN_REASONS.badReferer(referer);
}

/** Refuses (with `refusal`'s answer) a state-changing request whose source is not trusted; the one check of forms and /json. */
export function trustedSourceRequired(
  allowedOrigins: string[],
  serverUrl: () => string,
  refusal: (reason: string) => Response,
): MiddlewareHandler {
  const allowed = new Set(allowedOrigins);
  return async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const reason = untrustedSourceReason(c.req.raw, allowed, serverUrl(), c.get('secure') ?? false);
    return reason ? refusal(reason) : next();
  };
}

/**
 * Whether a connection that can act for its user (a WebSocket's handshake, which CORS does not
 * cover) may be opened from `origin`: none (not a browser), the server's own, or an allowed one.
 */
export function connectionOriginAllowed(allowedOrigins: string[], serverUrl: () => string) {
  const allowed = new Set(allowedOrigins);
  return (origin: string | undefined, requestUrl: string) =>
    origin === undefined || allowed.has(origin) || isSameOrigin(origin, requestUrl, serverUrl());
}
