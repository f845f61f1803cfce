// The HTTP application: GraphQL, the REST compatibility layer (at /api/v1, and at /json for browser
// sessions), the sign-in, password reset and invitation acceptance pages,
// health check and probes, JSON 404s; a request id, the client's address and one log line per
// request; 503s while the database is unreachable (JSON on the API, the site's page on its pages).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { compress } from 'hono/compress';
import type { AppContext } from '../app-context.js';
import { graphiqlPage, wantsGraphiQL } from '../graphql/graphiql-page.js';
import { SESSION_BAR } from '../graphql/graphiql-session-bar.js';
import { createGraphQLHandler, GRAPHIQL_OPTIONS, type GraphQLHandler } from '../graphql/yoga.js';
import { logger as processLogger, requestIdFor, requestLogger, type Logger } from '../logging.js';
import { METRICS_PATH, metricsEndpoint } from '../metrics/endpoint.js';
import { httpMetrics } from '../metrics/http.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, dispatchRest, JSON_PREFIX, sessionDoor, streamsBody } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { clientAddressOf } from './client-address.js';
import { crossOriginRules } from './cross-origin.js';
import { mountFileRoutes } from './files.js';
import { DatabaseStatus, RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, unavailableResponse, unavailableStateResponse } from './database-status.js';
import { ACCEPTANCE_PATH, mountAcceptancePages } from './pages/acceptance.js';
import { mountPasswordResetPages, RESET_DONE_PATH, RESET_LINK_PATH } from './pages/password-reset.js';
import { unavailablePage } from './pages/layout.js';
import { LOGOUT_PATH, mountSignInPages } from './pages/sign-in.js';
import { LIVE_PATH, mountProbes, READY_PATH, type Lifecycle } from './probes.js';
import { memoryBudgetOf } from './memory-budget.js';

/** No request of this API but uploads needs more; bigger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: string) => () => jsonResponse({ result: 'error', msg: `Request body too large (limit: ${limit})`, code: 'BAD_REQUEST' }, 413);

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
  }
}

/** The client's address (the peer's, or as trusted proxies name it); empty when served in-process. */
export const clientAddress = (c: Context): string => c.get('clientAddress') ?? '';

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

/** The server-rendered pages' paths (sign-in and out, password reset, invitation acceptance). */
const PAGES_PATTERN = '/accounts/*';
const isPage = (path: string) => path.startsWith('/accounts/');

/** Sign-out needs no database to clear the browser's cookies: it is served during an outage. */
const isSignOut = (c: Context) => c.req.method === 'POST' && c.req.path === LOGOUT_PATH;

export interface HttpApp {
  http: Hono;
  /** The GraphQL door, which WebSocket connections reach too (src/graphql/websocket.ts). */
  graphql: GraphQLHandler;
}

/** `status`: the process's one status (src/server.ts shares it with the background work); a fresh one by default. */
export function createApp(app: AppContext, lifecycle: Lifecycle = { draining: () => false }, status?: DatabaseStatus): HttpApp {
  const http = new Hono();
  const log = app.log ?? processLogger;
  // The request line's fields are fixed and hold no credential: it skips the redaction every other
  // line goes through (measured: about 5 % of a small request's CPU).
  const requestLine = log.child({}, { redact: [] });
  const database = status ?? new DatabaseStatus(app.sql, log);
  const graphql = createGraphQLHandler(app, database);
  const graphiql = graphiqlPage(GRAPHIQL_OPTIONS, app.config.dataDir, SESSION_BAR);
  const addressOf = clientAddressOf(app.config.trustedProxies);
  const memory = memoryBudgetOf(app);

  if (app.metrics) http.use(httpMetrics(app.metrics, restRoutes));
  http.use(async (c, next) => {
    const requestId = requestIdFor(c.req.header('x-request-id'));
    const incoming = incomingOf(c);
    const client = incoming ? addressOf(incoming) : '';
    c.set('clientAddress', client);
    c.set('log', requestLogger(log, requestId));
    const started = performance.now();
    requestLine.debug({ requestId, method: c.req.method, path: loggedPath(c.req.path) }, 'request received');
    await next();
    setResponseHeader(c, 'X-Request-Id', requestId);
    // Draining: the connection closes after this answer, so that its client reconnects elsewhere.
    // A client that asks again at once on a kept-alive connection (a long poll, answered at once
    // while draining) would otherwise never leave it idle, and the drain would never end.
    if (lifecycle.draining()) setResponseHeader(c, 'Connection', 'close');
    const ms = Math.round(performance.now() - started);
    // Orchestrators probe every few seconds: their successes would drown the log.
    const level = isProbe(c.req.path) && c.res.ok ? 'debug' : 'info';
    requestLine[level]({ requestId, method: c.req.method, path: loggedPath(c.req.path), status: c.res.status, ms, client }, 'request');
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
  http.use('/graphql', crossOrigin);
  http.use(`${API_PREFIX}/*`, crossOrigin);
  http.use(`${JSON_PREFIX}/*`, crossOrigin);
  // While the database is known to be down, answer at once rather than wait on connections.
  const refuse = (answer: () => Response) => {
    database.noteRefused();
    return answer();
  };
  const unavailableAtOnce: MiddlewareHandler = async (c, next) => (database.down ? refuse(unavailableResponse) : next());
  http.use(`${API_PREFIX}/*`, unavailableAtOnce);
  http.use(`${JSON_PREFIX}/*`, unavailableAtOnce);
  http.use('/graphql', async (c, next) => (database.down && !c.req.header('accept')?.includes('text/html') ? refuse(graphqlUnavailable) : next()));
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
      return await memory.answering((answer) => graphql.handle(c.req.raw, { clientAddress: clientAddress(c), log: c.get('log'), answer }));
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
  http.all(`${API_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app, { clientAddress: clientAddress(c), log: c.get('log'), database }));
  const jsonDoor = sessionDoor(app.config.serverUrl);
  http.all(`${JSON_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app, { clientAddress: clientAddress(c), log: c.get('log'), database, door: jsonDoor }));
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  http.onError((error, c) => {
    const requestLog = c.get('log') ?? log;
    const unavailable = database.noteFailure(error, requestLog);
    if (unavailable) return isPage(c.req.path) ? pageUnavailable() : unavailableResponse(unavailable);
    requestLog.error({ err: error }, 'unexpected error');
    return jsonResponse({ result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' }, 500);
  });
  return { http, graphql };
}
