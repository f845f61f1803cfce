// The first middleware of every request: its id (X-Request-Id on the answer), the client's address
// (and a warning when forwarding headers come from an untrusted peer), its scheme, the rate limits'
// headers, one log line when it arrives and one when it is answered, and, when tracing, its server span.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { RateLimitReport } from '../domain/auth/rate-limit.js';
import { requestIdFor, requestLogger, type Logger } from '../logging.js';
import { requestRoutes, UNMATCHED } from '../metrics/http.js';
import { restRoutes } from '../rest/routes.js';
import { tracing, traceFieldsOf, type Span, type TraceFields } from '../tracing/spans.js';
import { clientAddressOf, peerTrustedBy, untrustedForwardingWarning, type ClientAddressOf } from './client-address.js';
import { ACCEPTANCE_PATH } from './pages/acceptance.js';
import { RESET_DONE_PATH, RESET_LINK_PATH } from './pages/password-reset.js';
import { LIVE_PATH, READY_PATH, type Lifecycle } from './probes.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by the first middleware: see src/http/client-address.ts. */
    clientAddress: string;
    /** Set by the first middleware: the request's logger (its id on every line). */
    log: Logger;
    /** Set by the first middleware: whether the request arrived over https (the cookies' names and Secure flag). */
    secure: boolean;
    /** Set by the first middleware: the limiters that ran for the request (its answer's X-RateLimit-* headers). */
    rateLimits: RateLimitReport;
  }
}

const incomingOf = (c: Context) => (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;

/**
 * A header on whatever the handler answered. Served by Node (@hono/node-server), it goes on the Node
 * response, which merges it into the status line's headers: reading the answer's `headers` would turn
 * its plain header object into a fetch Headers, slow to build and slow to write (a few percent of a
 * small request's CPU). In-process (tests' `app.request`), on the answer itself.
 */
function setResponseHeader(c: Context, name: string, value: string): void {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing) outgoing.setHeader(name, value);
  else c.res.headers.set(name, value);
}

const UNTRUSTED_FORWARDING_WARNING =
  'forwarding headers from a peer not in TRUSTED_PROXIES are ignored: every client behind that peer counts as its address,' +
  ' so failed logins from one lock out all; set TRUSTED_PROXIES to the proxy (said at most every 10 minutes)';

/** rate-limits.md section 1: on every answer where a limiter ran, none elsewhere. */
function setRateLimitHeaders(c: Context, report: RateLimitReport): void {
  const summary = report.summary();
  if (!summary) return;
  setResponseHeader(c, 'X-RateLimit-Limit', String(summary.limit));
  setResponseHeader(c, 'X-RateLimit-Remaining', String(summary.remaining));
  setResponseHeader(c, 'X-RateLimit-Reset', String(summary.reset));
}

const RESET_LINK = /^\/accounts\/password\/reset\/[^/]+\/[^/]+\/$/;

/** Acceptance keys and password reset tokens are secrets: their paths are logged as the route. */
function loggedPath(path: string): string {
  if (path.startsWith('/accounts/do_confirm/')) return ACCEPTANCE_PATH;
  return RESET_LINK.test(path) && path !== RESET_DONE_PATH ? RESET_LINK_PATH : path;
}

const isProbe = (path: string) => path === LIVE_PATH || path === READY_PATH;

/** The route TEMPLATE, never the path (which may hold an e-mail address or a token). */
function describeServerSpan(span: Span, method: string, route: string, status: number): void {
  if (route !== UNMATCHED) {
    span.updateName(`${method} ${route}`);
    span.setAttribute('http.route', route);
  }
  span.setAttribute('http.response.status_code', status);
}

/** What the first middleware needs for every request, made once. */
interface RequestDoor {
  log: Logger;
  /** The request lines' logger. */
  requestLine: Logger;
  addressOf: ClientAddressOf;
  untrustedForwarding: ReturnType<typeof untrustedForwardingWarning>;
  secureRequest: (incoming: IncomingMessage | undefined) => boolean;
  routeOf: ReturnType<typeof requestRoutes>;
  lifecycle: Lifecycle;
}

/** A request as it arrived: what its answer's headers and log line repeat. */
interface Arrival {
  requestId: string;
  client: string;
  trace: TraceFields | undefined;
  rateLimits: RateLimitReport;
  started: number;
}

/** Sets the request's variables (ContextVariableMap above) and logs its arrival. */
function arrived(door: RequestDoor, c: Context, span: Span | undefined): Arrival {
  const requestId = requestIdFor(c.req.header('x-request-id'));
  const incoming = incomingOf(c);
  const client = incoming ? door.addressOf(incoming) : '';
  const trace = span && traceFieldsOf(span);
  const rateLimits = new RateLimitReport();
  c.set('clientAddress', client);
  c.set('secure', door.secureRequest(incoming));
  c.set('log', requestLogger(door.log, requestId, trace));
  c.set('rateLimits', rateLimits);
  const untrusted = incoming ? door.untrustedForwarding(incoming) : null;
  if (untrusted) c.get('log').warn(untrusted, UNTRUSTED_FORWARDING_WARNING);
  const started = performance.now();
  const received = { requestId, method: c.req.method, path: loggedPath(c.req.path) };
  door.requestLine.debug(trace ? { ...received, ...trace } : received, 'request received');
  return { requestId, client, trace, rateLimits, started };
}

/** The answer's headers, its log line and its span's name. */
function answered(door: RequestDoor, c: Context, { requestId, client, trace, rateLimits, started }: Arrival, span: Span | undefined) {
  setResponseHeader(c, 'X-Request-Id', requestId);
  setRateLimitHeaders(c, rateLimits);
  // Draining: the connection closes after this answer, so that its client reconnects elsewhere.
  // A client that asks again at once on a kept-alive connection (a long poll, answered at once
  // while draining) would otherwise never leave it idle, and the drain would never end.
  if (door.lifecycle.draining()) setResponseHeader(c, 'Connection', 'close');
  const ms = Math.round(performance.now() - started);
  // Orchestrators probe every few seconds: their successes would drown the log.
  const level = isProbe(c.req.path) && c.res.ok ? 'debug' : 'info';
  const line = { requestId, method: c.req.method, path: loggedPath(c.req.path), status: c.res.status, ms, client };
  door.requestLine[level](trace ? { ...line, ...trace } : line, 'request');
  if (span) describeServerSpan(span, c.req.method, door.routeOf(c)[1], c.res.status);
}

/** `secureRequest`: whether a request arrived over https; `lifecycle`: whether the process is draining. */
export function requestContext(
  trustedProxies: string[],
  log: Logger,
  secureRequest: (incoming: IncomingMessage | undefined) => boolean,
  lifecycle: Lifecycle,
): MiddlewareHandler {
  const door: RequestDoor = {
    log,
    // The request line's fields are fixed and hold no credential: it skips the redaction every other
    // line goes through (measured: about 5 % of a small request's CPU).
    requestLine: log.child({}, { redact: [] }),
    addressOf: clientAddressOf(trustedProxies),
    untrustedForwarding: untrustedForwardingWarning(trustedProxies),
    secureRequest,
    routeOf: requestRoutes(restRoutes),
    lifecycle,
  };
  const served = async (c: Context, next: Next, span?: Span) => {
    const arrival = arrived(door, c, span);
    await next();
    answered(door, c, arrival, span);
  };
  // A caller's `traceparent` is believed from a trusted proxy only; anyone else's request starts a trace of its own.
  const traceparentTrusted = peerTrustedBy(trustedProxies);
  return (c, next) => {
    if (!tracing) return served(c, next);
    const incoming = incomingOf(c);
    const trusted = incoming !== undefined && traceparentTrusted(incoming);
    const caller = trusted ? { traceparent: c.req.header('traceparent'), tracestate: c.req.header('tracestate') } : {};
    return tracing.inServerSpan({ method: c.req.method, ...caller }, (span) => served(c, next, span));
  };
}
