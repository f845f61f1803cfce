// GET /metrics: on the main port behind METRICS_TOKEN (a bearer token compared in constant time), and
// on METRICS_PORT's listener of its own (the token required there too when it is set).
import { createHash, timingSafeEqual } from 'node:crypto';
import { jsonResponse } from '../rest/envelope.js';
import type { ServerMetrics } from './metrics.js';

export const METRICS_PATH = '/metrics';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether `authorization` is `Bearer <token>`; equal-length digests let the comparison take the same time whatever the guess. */
export function bearerMatcher(token: string): (authorization: string | null | undefined) => boolean {
  const expected = digest(token);
  return (authorization) => {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null;
  };
}

const unauthorized = () =>
  jsonResponse({ result: 'error', msg: 'Metrics need Authorization: Bearer <METRICS_TOKEN>', code: 'UNAUTHORIZED' }, 401, {
    'WWW-Authenticate': 'Bearer realm="metrics"',
  });

const notFound = () => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404);

/** Answers a request already routed to /metrics. */
export function metricsEndpoint(metrics: ServerMetrics, token: string | undefined): (request: Request) => Promise<Response> {
  const authorized = token === undefined ? () => true : bearerMatcher(token);
  return async (request) => {
    if (!authorized(request.headers.get('authorization'))) return unauthorized();
    return new Response(await metrics.scrape(), { headers: { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' } });
  };
}

/** METRICS_PORT's whole application: GET (or HEAD) /metrics, and JSON 404s. */
export function metricsOnly(metrics: ServerMetrics, token: string | undefined): (request: Request) => Promise<Response> {
  const endpoint = metricsEndpoint(metrics, token);
  return async (request) => {
    const { pathname } = new URL(request.url);
    if (pathname !== METRICS_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) return notFound();
    return endpoint(request);
  };
}
