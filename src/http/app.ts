// The HTTP application: GraphQL, the REST compatibility layer (at /api/v1, and at /json for browser
// sessions), the sign-in, password reset and invitation acceptance pages,
// health check and probes, JSON 404s; a request id, the client's address (and a warning when
// forwarding headers come from an untrusted peer), its scheme, the rate limits' headers and one log
// line per request (and, when tracing, its server span); 503s while the database is unreachable
// (JSON on the API, the site's page on its pages); the origin check of forms and /json.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono, type Context, type MiddlewareHandler, type Next } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { compress } from 'hono/compress';
import type { ServerContext } from '../server-context.js';
import { RateLimitReport } from '../domain/auth/rate-limit.js';
import { GRAPHIQL_OPTIONS } from '../graphql/graphiql-example.js';
import { graphiqlPage, wantsGraphiQL } from '../graphql/graphiql-page.js';
import { SESSION_BAR } from '../graphql/graphiql-session-bar.js';
import { createGraphQLHandler, type GraphQLHandler } from '../graphql/yoga.js';
import { logger as processLogger, requestIdFor, requestLogger, type Logger } from '../logging.js';
import { METRICS_PATH, metricsEndpoint } from '../metrics/endpoint.js';
import { httpMetrics, requestRoutes, UNMATCHED } from '../metrics/http.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, csrfFailedResponse, dispatchRest, JSON_PREFIX, sessionDoor, streamsBody } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { tracing, traceFieldsOf, type Span } from '../tracing/spans.js';
import { clientAddress, clientAddressOf, forwardedSchemeOf, peerTrustedBy, untrustedForwardingWarning } from './client-address.js';
import { secureRequestOf } from './cookies.js';
import { crossOriginRules, trustedSourceRequired } from './cross-origin.js';
import { mountFileRoutes } from './files.js';
import {
  DatabaseStatus,
  RETRY_AFTER_SECONDS,
  UNAVAILABLE_MESSAGE,
  unavailableResponse,
  unavailableStateResponse,
} from './database-status.js';
import { ACCEPTANCE_PATH, mountAcceptancePages } from './pages/acceptance.js';
import { mountPasswordResetPages, RESET_DONE_PATH, RESET_LINK_PATH } from './pages/password-reset.js';
import { unavailablePage } from './pages/layout.js';
import { csrfRefusal, LOGOUT_PATH, mountSignInPages } from './pages/sign-in.js';
import { LIVE_PATH, mountProbes, READY_PATH, type Lifecycle } from './probes.js';

/** No request of this API but uploads needs more; bigger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: string) => () =>
  jsonResponse({ result: 'error', msg: `Request body too large (limit: ${limit})`, code: 'BAD_REQUEST' }, 413);

/**
 * At most `maxBytes` of body. A declared length is checked from the headers alone (Node's parser
 * never delivers more than it declares): hono's bodyLimit looks at the request's body, which builds
 * a full fetch Request (stream, abort signal) and takes the body off the adapter's direct path to
 * text() and json(). Chunked bodies are counted by hono's bodyLimit as they arrive.
 */
function bodyLimitOf(maxBytes: number, label: string): MiddlewareHandler {
  const onError = tooLarge(label);
  const counted = bodyLimit({ maxSize: maxBytes, onError });
  return (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) return counted(c, next);
    return Number(c.req.header('content-length') ?? '0') > maxBytes ? Promise.resolve(onError()) : next();
  };
}

/** A body needs a length or a transfer encoding (RFC 9112 section 6.3). */
const mayHaveBody = (c: Context) => (c.req.header('content-length') ?? '0') !== '0' || c.req.header('transfer-encoding') !== undefined;

const ACCEPTS_COMPRESSION = /\b(?:gzip|deflate)\b/i;

const isMultipart = (request: Request) => /^multipart\/form-data/i.test(request.headers.get('content-type') ?? '');

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

const graphqlUnavailable = (message = UNAVAILABLE_MESSAGE) =>
  new Response(JSON.stringify({ errors: [{ message, extensions: { code: 'SERVICE_UNAVAILABLE' } }] }), {
    status: 503,
    headers: { 'Content-Type': 'application/json', 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });

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

/** The server-rendered pages' paths (sign-in and out, password reset, invitation acceptance). */
const PAGES_PATTERN = '/accounts/*';
const isPage = (path: string) => path.startsWith('/accounts/');

/** Sign-out needs no database to clear the browser's cookies: it is served during an outage. */
const isSignOut = (c: Context) => c.req.method === 'POST' && c.req.path === LOGOUT_PATH;

export interface HttpApp {
  http: Hono;
  /** The GraphQL door, which WebSocket connections reach too (src/graphql/websocket.ts). */
  graphql: GraphQLHandler;
  /** Whether a request (a WebSocket's handshake too) arrived over https; undefined: served in-process. */
  secureRequest(incoming: IncomingMessage | undefined): boolean;
}

/** `status`: the process's one status (src/server.ts shares it with the background work); a fresh one by default. */
export function createApp(app: ServerContext, lifecycle: Lifecycle = { draining: () => false }, status?: DatabaseStatus): HttpApp {
  const http = new Hono();
  const log = app.log ?? processLogger;
  // The request line's fields are fixed and hold no credential: it skips the redaction every other
  // line goes through (measured: about 5 % of a small request's CPU).
  const requestLine = log.child({}, { redact: [] });
  const database = status ?? new DatabaseStatus(app.sql, log);
  const graphql = createGraphQLHandler(app, database);
  const graphiql = graphiqlPage(GRAPHIQL_OPTIONS, app.config.dataDir, SESSION_BAR);
  const addressOf = clientAddressOf(app.config.trustedProxies);
  const untrustedForwarding = untrustedForwardingWarning(app.config.trustedProxies);
  const forwardedScheme = forwardedSchemeOf(app.config.trustedProxies);
  const secureByScheme = secureRequestOf(() => app.config.serverUrl, log);
  const secureRequest = (incoming: IncomingMessage | undefined) => secureByScheme(incoming ? forwardedScheme(incoming) : undefined);
  const memory = app.memoryBudget;

  if (app.metrics) http.use(httpMetrics(app.metrics, restRoutes));
  const routeOf = requestRoutes(restRoutes);
  const served = async (c: Context, next: Next, span?: Span) => {
    const requestId = requestIdFor(c.req.header('x-request-id'));
    const incoming = incomingOf(c);
    const client = incoming ? addressOf(incoming) : '';
    const trace = span && traceFieldsOf(span);
    const rateLimits = new RateLimitReport();
    c.set('clientAddress', client);
    c.set('secure', secureRequest(incoming));
    c.set('log', requestLogger(log, requestId, trace));
    c.set('rateLimits', rateLimits);
    const untrusted = incoming ? untrustedForwarding(incoming) : null;
    if (untrusted) c.get('log').warn(untrusted, UNTRUSTED_FORWARDING_WARNING);
    const started = performance.now();
    const received = { requestId, method: c.req.method, path: loggedPath(c.req.path) };
    requestLine.debug(trace ? { ...received, ...trace } : received, 'request received');
    await next();
    setResponseHeader(c, 'X-Request-Id', requestId);
    setRateLimitHeaders(c, rateLimits);
    // Draining: the connection closes after this answer, so that its client reconnects elsewhere.
    // A client that asks again at once on a kept-alive connection (a long poll, answered at once
    // while draining) would otherwise never leave it idle, and the drain would never end.
    if (lifecycle.draining()) setResponseHeader(c, 'Connection', 'close');
    const ms = Math.round(performance.now() - started);
    // Orchestrators probe every few seconds: their successes would drown the log.
    const level = isProbe(c.req.path) && c.res.ok ? 'debug' : 'info';
    const line = { requestId, method: c.req.method, path: loggedPath(c.req.path), status: c.res.status, ms, client };
    requestLine[level](trace ? { ...line, ...trace } : line, 'request');
    if (span) describeServerSpan(span, c.req.method, routeOf(c)[1], c.res.status);
  };
  // A caller's `traceparent` is believed from a trusted proxy only; anyone else's request starts a trace of its own.
  const traceparentTrusted = peerTrustedBy(app.config.trustedProxies);
  http.use((c, next) => {
    if (!tracing) return served(c, next);
    const incoming = incomingOf(c);
    const trusted = incoming !== undefined && traceparentTrusted(incoming);
    const caller = trusted ? { traceparent: c.req.header('traceparent'), tracestate: c.req.header('tracestate') } : {};
    return tracing.inServerSpan({ method: c.req.method, ...caller }, (span) => served(c, next, span));
  });
  const standardLimit = bodyLimitOf(MAX_BODY_BYTES, '1 MiB');
  // GraphQL multipart requests are parsed whole before the resolver runs: one largest file and 1 MiB more.
  const { maxFileUploadSizeMib, maxEmojiFileSizeMib } = app.config.uploads;
  const graphqlUploadMib = Math.max(maxFileUploadSizeMib, maxEmojiFileSizeMib) + 1;
  const graphqlUploadLimit = bodyLimitOf(graphqlUploadMib * 1024 * 1024, `${graphqlUploadMib} MiB`);
  http.use((c, next) => {
    // Most requests carry no body; checking for one through the request object would build a full
    // fetch Request (stream, abort signal) for each of them.
    if (!mayHaveBody(c)) return next();
    // Upload routes stream their bodies and enforce their own limits as the bytes arrive.
    if (streamsBody(restRoutes, c.req.method, c.req.path)) return next();
    if (c.req.path === '/graphql' && isMultipart(c.req.raw)) return graphqlUploadLimit(c, next);
    return standardLimit(c, next);
  });
  // gzip or deflate as the client accepts, streamed; bodies under 1 KiB that declare their length stay
  // as they are. Only for clients that accept either: the middleware rebuilds every response it
  // looks at as a stream (to add Vary), which made a large JSON body cost twice its serialization.
  const compression = compress();
  http.use((c, next) => (ACCEPTS_COMPRESSION.test(c.req.header('accept-encoding') ?? '') ? compression(c, next) : next()));
  const crossOrigin = crossOriginRules(app.config.allowedOrigins, () => app.config.serverUrl);
  // Forms and /json act on the browser's session: a state-changing request must come from a trusted origin.
  const trustedSource = (refusal: (reason: string) => Response) =>
    trustedSourceRequired(app.config.allowedOrigins, () => app.config.serverUrl, refusal);
  http.use('/accounts/*', trustedSource(csrfRefusal));
  http.use(`${JSON_PREFIX}/*`, trustedSource(csrfFailedResponse));
  http.use('/graphql', crossOrigin);
  http.use(`${API_PREFIX}/*`, crossOrigin);
  http.use(`${JSON_PREFIX}/*`, crossOrigin);
  // While the database is known to be down, answer at once rather than wait on connections.
  const refuse = (answer: () => Response) => {
    database.noteRefused();
    return answer();
  };
  const unavailableAtOnce: MiddlewareHandler = async (_c, next) => (database.down ? refuse(unavailableResponse) : next());
  http.use(`${API_PREFIX}/*`, unavailableAtOnce);
  http.use(`${JSON_PREFIX}/*`, unavailableAtOnce);
  http.use('/graphql', async (c, next) =>
    database.down && !c.req.header('accept')?.includes('text/html') ? refuse(graphqlUnavailable) : next(),
  );
  // Pages stay pages: the site's own 503 page.
  const pageUnavailable = () => unavailablePage(RETRY_AFTER_SECONDS);
  http.use(PAGES_PATTERN, async (c, next) => (database.down && !isSignOut(c) ? refuse(pageUnavailable) : next()));
  // The state only, to anyone: where the database is and what its driver said go to the log.
  http.get('/health', async () => ((await database.check()) ? jsonResponse({ status: 'ok' }) : unavailableStateResponse()));
  mountProbes(http, database, lifecycle);
  http.on(['GET', 'POST', 'OPTIONS'], '/graphql', async (c) => {
    if (wantsGraphiQL(c.req.raw)) return graphiql(c.req.raw);
    try {
      // Whatever a resolver reserved is held until the response (its JSON) is built.
      const scope = { clientAddress: clientAddress(c), log: c.get('log'), rateLimits: c.get('rateLimits') };
      return await memory.answering((answer) => graphql.handle(c.req.raw, { ...scope, answer }, c.get('secure')));
    } catch (error) {
      const unavailable = database.noteFailure(error, c.get('log'));
      if (unavailable) return graphqlUnavailable(unavailable);
      throw error;
    }
  });
  // On the main port only with a token; without one, /metrics is on METRICS_PORT alone (or off) and this port answers 404.
  const metrics = app.metrics && app.config.metrics.token ? metricsEndpoint(app.metrics, app.config.metrics.token) : null;
  if (metrics) http.get(METRICS_PATH, (c) => metrics(c.req.raw));
  mountAcceptancePages(http, app);
  mountSignInPages(http, app, database);
  mountPasswordResetPages(http, app);
  mountFileRoutes(http, app);
  const restScope = (c: Context) => ({
    clientAddress: clientAddress(c),
    log: c.get('log'),
    database,
    rateLimits: c.get('rateLimits'),
  });
  http.all(`${API_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app, restScope(c)));
  const jsonDoors = { https: sessionDoor(true), http: sessionDoor(false) };
  http.all(`${JSON_PREFIX}/*`, (c) => {
    const door = c.get('secure') ? jsonDoors.https : jsonDoors.http;
    return dispatchRest(restRoutes, c.req.raw, app, { ...restScope(c), door });
  });
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  http.onError((error, c) => {
    const requestLog = c.get('log') ?? log;
    const unavailable = database.noteFailure(error, requestLog);
    if (unavailable) return isPage(c.req.path) ? pageUnavailable() : unavailableResponse(unavailable);
    requestLog.error({ err: error }, 'unexpected error');
    return jsonResponse({ result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' }, 500);
  });
  return { http, graphql, secureRequest };
}
