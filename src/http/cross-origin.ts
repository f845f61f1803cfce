// Cross-origin rules for both API doors. Browsers may read responses only from the server's own
// origin and the origins in CORS_ALLOWED_ORIGINS (never a reflected arbitrary origin). A browser
// request that changes state (any method but GET, HEAD and OPTIONS) from any other origin is refused
// before it reaches the API: a form or fetch from another site cannot act for a signed-in user.
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

const isSameOrigin = (origin: string, requestUrl: string, serverUrl: string) => origin === new URL(requestUrl).origin || origin === new URL(serverUrl).origin;

/**
 * Whether a connection that can act for its user (a WebSocket's handshake, which CORS does not
 * cover) may be opened from `origin`: none (not a browser), the server's own, or an allowed one.
 */
export function connectionOriginAllowed(allowedOrigins: string[], serverUrl: () => string) {
  const allowed = new Set(allowedOrigins);
  return (origin: string | undefined, requestUrl: string) => origin === undefined || allowed.has(origin) || isSameOrigin(origin, requestUrl, serverUrl());
}
