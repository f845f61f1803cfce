// The HTTP application: GraphQL, the REST compatibility layer (at /api/v1, and at /json for browser
// sessions), the sign-in, password reset and invitation acceptance pages,
// health check and probes, JSON 404s; each request's id, address, scheme, rate limits' headers and log
// lines (src/http/request-context.ts), its body's limit (src/http/body-limit.ts), compression; 503s
// while the database is unreachable (JSON on the API, the site's page on its pages); the origin check
// of forms and /json. createApp lists the steps in the order a request meets them.
import type { IncomingMessage } from 'node:http';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { compress } from 'hono/compress';
import type { ServerContext } from '../server-context.js';
import { GRAPHIQL_OPTIONS } from '../graphql/graphiql-example.js';
import { graphiqlPage, wantsGraphiQL } from '../graphql/graphiql-page.js';
import { SESSION_BAR } from '../graphql/graphiql-session-bar.js';
import { createGraphQLHandler, type GraphQLHandler } from '../graphql/yoga.js';
import { logger as processLogger, type Logger } from '../logging.js';
import { METRICS_PATH, metricsEndpoint } from '../metrics/endpoint.js';
import { httpMetrics } from '../metrics/http.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, csrfFailedResponse, dispatchRest, JSON_PREFIX, sessionDoor } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { bodyLimits } from './body-limit.js';
import { clientAddress, forwardedSchemeOf } from './client-address.js';
import { secureRequestOf } from './cookies.js';
import { crossOriginRules, trustedSourceRequired } from './cross-origin.js';
import {
  DatabaseStatus,
  RETRY_AFTER_SECONDS,
  UNAVAILABLE_MESSAGE,
  unavailableResponse,
  unavailableStateResponse,
} from './database-status.js';
import { mountFileRoutes } from './files.js';
import { mountAcceptancePages } from './pages/acceptance.js';
import { unavailablePage } from './pages/layout.js';
import { mountPasswordResetPages } from './pages/password-reset.js';
import { csrfRefusal, LOGOUT_PATH, mountSignInPages } from './pages/sign-in.js';
import { mountProbes, type Lifecycle } from './probes.js';
import { requestContext } from './request-context.js';

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
  const database = status ?? new DatabaseStatus(app.sql, log);
  const graphql = createGraphQLHandler(app, database);
  const secureRequest = secureRequestOfIncoming(app, log);
  if (app.metrics) http.use(httpMetrics(app.metrics, restRoutes));
  http.use(requestContext(app.config.trustedProxies, log, secureRequest, lifecycle));
  http.use(bodyLimits(app.config.uploads));
  http.use(compressionForClientsThatAcceptIt());
  checkOrigins(http, app);
  refuseWhileDatabaseDown(http, database);
  mountHealthChecks(http, database, lifecycle);
  mountGraphQL(http, app, graphql, database);
  mountMetricsWithToken(http, app);
  mountAcceptancePages(http, app);
  mountSignInPages(http, app, database);
  mountPasswordResetPages(http, app);
  mountFileRoutes(http, app);
  mountRest(http, app, database);
  renderErrors(http, database, log);
  return { http, graphql, secureRequest };
}

/** The scheme a trusted proxy forwards, else SERVER_URL's. */
function secureRequestOfIncoming(app: ServerContext, log: Logger): HttpApp['secureRequest'] {
  const forwardedScheme = forwardedSchemeOf(app.config.trustedProxies);
  const secureByScheme = secureRequestOf(() => app.config.serverUrl, log);
  return (incoming) => secureByScheme(incoming ? forwardedScheme(incoming) : undefined);
}

const ACCEPTS_COMPRESSION = /\b(?:gzip|deflate)\b/i;

/**
 * gzip or deflate as the client accepts, streamed; bodies under 1 KiB that declare their length stay
 * as they are. Only for clients that accept either: the middleware rebuilds every response it
 * looks at as a stream (to add Vary), which made a large JSON body cost twice its serialization.
 */
function compressionForClientsThatAcceptIt(): MiddlewareHandler {
  const compression = compress();
  return (c, next) => (ACCEPTS_COMPRESSION.test(c.req.header('accept-encoding') ?? '') ? compression(c, next) : next());
}

/** Forms and /json act on the browser's session: a state-changing request must come from a trusted origin. */
function checkOrigins(http: Hono, app: ServerContext): void {
  const crossOrigin = crossOriginRules(app.config.allowedOrigins, () => app.config.serverUrl);
  const trustedSource = (refusal: (reason: string) => Response) =>
    trustedSourceRequired(app.config.allowedOrigins, () => app.config.serverUrl, refusal);
  http.use('/accounts/*', trustedSource(csrfRefusal));
  http.use(`${JSON_PREFIX}/*`, trustedSource(csrfFailedResponse));
  http.use('/graphql', crossOrigin);
  http.use(`${API_PREFIX}/*`, crossOrigin);
  http.use(`${JSON_PREFIX}/*`, crossOrigin);
}

const graphqlUnavailable = (message = UNAVAILABLE_MESSAGE) =>
  new Response(JSON.stringify({ errors: [{ message, extensions: { code: 'SERVICE_UNAVAILABLE' } }] }), {
    status: 503,
    headers: { 'Content-Type': 'application/json', 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });

/** Pages stay pages: the site's own 503 page. */
const pageUnavailable = () => unavailablePage(RETRY_AFTER_SECONDS);

/** The server-rendered pages' paths (sign-in and out, password reset, invitation acceptance). */
const PAGES_PATTERN = '/accounts/*';
const isPage = (path: string) => path.startsWith('/accounts/');

/** Sign-out needs no database to clear the browser's cookies: it is served during an outage. */
const isSignOut = (c: Context) => c.req.method === 'POST' && c.req.path === LOGOUT_PATH;

/** While the database is known to be down, answer at once rather than wait on connections. */
function refuseWhileDatabaseDown(http: Hono, database: DatabaseStatus): void {
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
  http.use(PAGES_PATTERN, async (c, next) => (database.down && !isSignOut(c) ? refuse(pageUnavailable) : next()));
}

/** /health, /livez and /readyz. */
function mountHealthChecks(http: Hono, database: DatabaseStatus, lifecycle: Lifecycle): void {
  // The state only, to anyone: where the database is and what its driver said go to the log.
  http.get('/health', async () => ((await database.check()) ? jsonResponse({ status: 'ok' }) : unavailableStateResponse()));
  mountProbes(http, database, lifecycle);
}

/** /graphql: the GraphiQL page for a browser asking for HTML, the GraphQL door for everyone else. */
function mountGraphQL(http: Hono, app: ServerContext, graphql: GraphQLHandler, database: DatabaseStatus): void {
  const graphiql = graphiqlPage(GRAPHIQL_OPTIONS, app.config.dataDir, SESSION_BAR);
  const memory = app.memoryBudget;
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
}

/** On the main port only with a token; without one, /metrics is on METRICS_PORT alone (or off) and this port answers 404. */
function mountMetricsWithToken(http: Hono, app: ServerContext): void {
  const metrics = app.metrics && app.config.metrics.token ? metricsEndpoint(app.metrics, app.config.metrics.token) : null;
  if (metrics) http.get(METRICS_PATH, (c) => metrics(c.req.raw));
}

/** The REST layer at /api/v1 (Basic auth) and at /json (the browser's session, by the request's scheme). */
function mountRest(http: Hono, app: ServerContext, database: DatabaseStatus): void {
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
}

/** JSON 404s; an unreachable database's 503 (a page on the pages); any other error a logged 500. */
function renderErrors(http: Hono, database: DatabaseStatus, log: Logger): void {
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  http.onError((error, c) => {
    const requestLog = c.get('log') ?? log;
    const unavailable = database.noteFailure(error, requestLog);
    if (unavailable) return isPage(c.req.path) ? pageUnavailable() : unavailableResponse(unavailable);
    requestLog.error({ err: error }, 'unexpected error');
    return jsonResponse({ result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' }, 500);
  });
}
