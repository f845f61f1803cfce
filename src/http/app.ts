// The HTTP application: GraphQL, the REST compatibility layer, the invitation acceptance pages,
// health check, JSON 404s.
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppContext } from '../app-context.js';
import { createGraphQLHandler } from '../graphql/yoga.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, dispatchRest, streamsBody } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { crossOriginRules } from './cross-origin.js';
import { mountAcceptancePages } from './pages/acceptance.js';
import { mountFileRoutes } from './files.js';

/** No request of this API but uploads needs more; bigger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (limit: string) => () => jsonResponse({ result: 'error', msg: `Request body too large (limit: ${limit})`, code: 'BAD_REQUEST' }, 413);

const isMultipart = (request: Request) => /^multipart\/form-data/i.test(request.headers.get('content-type') ?? '');

/** The peer's address (no proxy headers are trusted); empty when served in-process. */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? '';
}

export function createApp(app: AppContext): Hono {
  const http = new Hono();
  const graphql = createGraphQLHandler(app);

  const standardLimit = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge('1 MiB') });
  // GraphQL multipart requests are parsed whole before the resolver runs: one largest file and 1 MiB more.
  const { maxFileUploadSizeMib, maxEmojiFileSizeMib } = app.config.uploads;
  const graphqlUploadMib = Math.max(maxFileUploadSizeMib, maxEmojiFileSizeMib) + 1;
  const graphqlUploadLimit = bodyLimit({ maxSize: graphqlUploadMib * 1024 * 1024, onError: tooLarge(`${graphqlUploadMib} MiB`) });
  http.use((c, next) => {
    // Upload routes stream their bodies and enforce their own limits as the bytes arrive.
    if (streamsBody(restRoutes, c.req.raw)) return next();
    if (c.req.path === '/graphql' && isMultipart(c.req.raw)) return graphqlUploadLimit(c, next);
    return standardLimit(c, next);
  });
  const crossOrigin = crossOriginRules(app.config.allowedOrigins, () => app.config.serverUrl);
  http.use('/graphql', crossOrigin);
  http.use(`${API_PREFIX}/*`, crossOrigin);
  http.get('/health', async () => {
    await app.prisma.$queryRaw`SELECT 1`;
    return jsonResponse({ status: 'ok' });
  });
  http.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => graphql.handle(c.req.raw, clientAddress(c)));
  mountAcceptancePages(http, app);
  mountFileRoutes(http, app);
  http.all(`${API_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app));
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  return http;
}
