// One histogram observation per HTTP request: its door, its route TEMPLATE (never the raw path: the
// label's values stay few, and acceptance keys and file tokens in paths are secrets), method, status.
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { API_PREFIX, JSON_PREFIX, type RestRoute } from '../rest/dispatch.js';
import type { Door, ServerMetrics } from './metrics.js';

/** The route of a request no route answered (404s, or a middleware's early answer). */
export const UNMATCHED = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** `^\/realm\/emoji\/(?<emojiName>[^]+)$` -> `/api/v1/realm/emoji/{emoji_name}` (Zulip's documentation spells them so). */
export function restTemplate(pattern: RegExp): string {
  const path = pattern.source
    .replace(/^\^|\$$/g, '')
    .replace(/\(\?<(\w+)>[^()]*\)/g, (_, name: string) => `{${snakeCase(name)}}`)
    .replace(/\\\//g, '/');
  return `${API_PREFIX}${path}`;
}

/** Hono's `/accounts/do_confirm/:key` -> `/accounts/do_confirm/{key}`. */
const honoTemplate = (path: string) => path.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}');

/** The route that answered: the handler (not a middleware: those are registered for ALL methods) the request reached. */
function answeringRoute(c: Context): string {
  const route = matchedRoutes(c)[c.req.routeIndex];
  return route && route.method !== 'ALL' ? honoTemplate(route.path) : UNMATCHED;
}

function doorOf(route: string): Door {
  if (route.startsWith('/user_uploads/') || route.startsWith('/user_avatars/')) return 'files';
  if (route.startsWith('/accounts/')) return 'pages';
  return 'other';
}

/**
 * The door and route TEMPLATE of a request, once answered; `restRoutes` names the REST layer's routes
 * (matched here again: a dozen regular expressions).
 */
export function requestRoutes(restRoutes: RestRoute[]): (c: Context) => [Door, string] {
  const templates = restRoutes.map((route) => ({ pattern: route.pattern, template: restTemplate(route.pattern) }));
  const restRoute = (path: string) => templates.find((route) => route.pattern.test(path.slice(API_PREFIX.length)))?.template ?? UNMATCHED;
  // The /json twin of a route has the same template under /json.
  const jsonRoute = (path: string) => {
    const template = templates.find((route) => route.pattern.test(path.slice(JSON_PREFIX.length)))?.template;
    return template ? `${JSON_PREFIX}${template.slice(API_PREFIX.length)}` : UNMATCHED;
  };
  return (c) => {
    const path = c.req.path;
    if (path === '/graphql') return ['graphql', path];
    if (path.startsWith(`${API_PREFIX}/`)) return ['rest', restRoute(path)];
    if (path.startsWith(`${JSON_PREFIX}/`)) return ['rest', jsonRoute(path)];
    const route = answeringRoute(c);
    return [doorOf(route), route];
  };
}

/** Records every request. */
export function httpMetrics(metrics: ServerMetrics, restRoutes: RestRoute[]): MiddlewareHandler {
  const doorAndRoute = requestRoutes(restRoutes);
  return async (c, next) => {
    const started = performance.now();
    await next();
    const [door, route] = doorAndRoute(c);
    const method = METHODS.has(c.req.method) ? c.req.method : 'OTHER';
    metrics.httpRequests.observe({ door, route, method, status: c.res.status }, (performance.now() - started) / 1000);
  };
}
